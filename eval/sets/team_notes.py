"""Team-notes retrieval set ("team"): one engineering team's wiki, about 40% of it in Korean.

The vault holds people pages (aliases: the other script's name, a nickname, a chat handle), services
("Payments Gateway", acronym "PGW" in the aliases and sometimes the first line only), projects with bird
codenames ("Project Heron (PH)"), dated meetings (weekly syncs, architecture reviews, retros, planning) with
attendees and decisions, runbooks, ADRs (``adr/0001-....md`` with Status/Context/Decision), policies, a
glossary, a team page and an index. The team's name and the words "team", "meeting", "project", "service"
are in nearly every note, so they are hubs that decide nothing.

Every fact a question needs is stated in one note only: an owner and its on-call rotation only in the
service note, a manager, office and start date only in the person note, a project's lead and dependency only
in the project note, a meeting's decision only in that meeting. Question groups:

- ``single-doc``: one note, reached through an alias, acronym or codename ("Who is on call for PGW?");
- ``multi-hop``: a chain of two or three notes ("Who owns the service that Project Heron depends on?" =
  the project note + the service note; + the owner's person note for their manager);
- ``meeting``: a decision found by topic, month and kind of meeting ("... cache in the March 2025 sync?");
- ``unanswerable``: plausible questions about things the vault never mentions (a project that does not
  exist, a policy never written). :func:`absent_terms` gives each one's distinguishing words; no vault file
  contains them.

A question is in Korean when the note it starts from is. The same seed always gives byte-identical files;
only the standard library is used.

    python -m eval.sets.team_notes OUT [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import ClassVar

from eval.sets.base import Question, RetrievalSet, finish_set, summary
from eval.sets.chat_logs import EN_MONTHS, josa
from eval.synthetic_vault import FOREIGN_PEOPLE, GIVEN, PLACES, ROLES, ROOMS, SURNAMES

NAME = "team"
KOREAN_SHARE = 0.4
PEOPLE = 32
SERVICES = 20
PROJECTS = 14
MEETINGS = 60
RUNBOOKS = 22
ADRS = 20
QUOTAS = {  # questions per kind
    "person": 16, "service": 18, "project": 10, "runbook": 8, "adr": 8, "misc": 7, "meeting": 28, "multi-hop": 52,
    "unanswerable": 30,
}

TEAMS = [("Orbit", "오르빗"), ("Atlas", "아틀라스"), ("Nimbus", "님버스"), ("Polaris", "폴라리스"),
         ("Meridian", "메리디안")]
COMPANIES = [("Gaon Commerce", "가온커머스", "gaon"), ("Hanbit Mobility", "한빛모빌리티", "hanbit"),
             ("Saebyeol Pay", "새별페이", "saebyeol")]
NICKNAMES = [
    "JK", "Minnie", "Danny", "Hyunnie", "Sunny", "Ace", "Kiki", "Yuna", "Teddy", "Coco", "Lulu", "Ziggy", "Pip",
    "Bo", "Nova", "Juno", "Ollie", "Remy", "Skye", "Toto", "Vee", "Zed", "Gigi", "Moe", "Nia", "Rex", "Tess", "Lex",
    "Dex", "Mimi", "Boomer", "Sparky", "Bubbles", "Jojo", "Kiwi", "Pogo",
]
FOCUS = [
    ("결제 흐름", "payment flows"), ("검색 품질", "search quality"), ("배포 파이프라인", "the deploy pipeline"),
    ("데이터 모델링", "data modelling"), ("관측성", "observability"), ("보안 점검", "security reviews"),
    ("성능 튜닝", "performance tuning"), ("API 설계", "API design"), ("비용 관리", "cloud costs"),
    ("테스트 자동화", "test automation"), ("파트너 연동", "partner integrations"),
    ("모바일 백엔드", "the mobile backend"),
]
WEEKDAYS = [("월요일", "Monday"), ("화요일", "Tuesday"), ("수요일", "Wednesday"), ("목요일", "Thursday"),
            ("금요일", "Friday")]

SERVICE_POOL = [  # English name, Korean name, acronym, what it does (en, ko)
    ("Payments Gateway", "결제 게이트웨이", "PGW", "takes card and bank-transfer payments at checkout",
     "체크아웃에서 카드·계좌이체 결제를 받는다"),
    ("Identity Broker", "인증 브로커", "IDB", "signs users and partners in and issues sessions",
     "사용자와 파트너 로그인을 처리하고 세션을 발급한다"),
    ("Search Indexer", "검색 인덱서", "SIX", "keeps the product search index in step with the catalogue",
     "상품 검색 색인을 카탈로그와 맞춰 둔다"),
    ("Document Store", "문서 저장소", "DST", "stores contracts, receipts and uploaded files",
     "계약서, 영수증, 업로드 파일을 보관한다"),
    ("Rate Limiter", "요청 제한기", "RLM", "enforces per-key request quotas at the edge",
     "엣지에서 키별 요청 한도를 적용한다"),
    ("Event Bus", "이벤트 버스", "EVB", "carries domain events between services",
     "서비스 사이에 도메인 이벤트를 전달한다"),
    ("Feature Flag Service", "기능 플래그 서비스", "FFS", "decides which users see which features",
     "어떤 사용자에게 어떤 기능을 보여줄지 정한다"),
    ("Ledger Service", "원장 서비스", "LGS", "books every money movement twice, as debit and credit",
     "모든 금액 이동을 차변과 대변으로 기록한다"),
    ("Media Transcoder", "미디어 트랜스코더", "MTC", "converts uploaded videos into streaming formats",
     "업로드된 영상을 스트리밍 형식으로 변환한다"),
    ("Address Normalizer", "주소 정규화기", "ANZ", "turns free-text addresses into road-name addresses",
     "자유 형식 주소를 도로명 주소로 바꾼다"),
    ("Shipment Tracker", "배송 추적기", "SHT", "collects carrier scans and shows where a parcel is",
     "택배사 스캔 기록을 모아 배송 위치를 보여준다"),
    ("Pricing Engine", "가격 엔진", "PRE", "computes prices, discounts and coupons for a basket",
     "장바구니의 가격, 할인, 쿠폰을 계산한다"),
    ("Report Builder", "리포트 빌더", "RPB", "renders the monthly partner reports",
     "월간 파트너 리포트를 만든다"),
    ("Audit Log Service", "감사 로그 서비스", "ALS", "keeps a tamper-evident trail of admin actions",
     "관리자 작업의 위변조 방지 기록을 남긴다"),
    ("Session Cache", "세션 캐시", "SCX", "holds login sessions and short-lived tokens",
     "로그인 세션과 단기 토큰을 보관한다"),
    ("Webhook Dispatcher", "웹훅 디스패처", "WHD", "delivers signed webhooks to partner systems",
     "파트너 시스템에 서명된 웹훅을 보낸다"),
    ("Geo Lookup", "지오 룩업", "GEO", "maps coordinates to districts and delivery zones",
     "좌표를 행정구역과 배송 권역으로 바꾼다"),
    ("Image Resizer", "이미지 리사이저", "IMR", "serves product images in every size the apps need",
     "앱에 필요한 크기로 상품 이미지를 제공한다"),
    ("Token Service", "토큰 서비스", "TKS", "issues and rotates API keys for partners",
     "파트너 API 키를 발급하고 교체한다"),
    ("Invoice Renderer", "청구서 렌더러", "INR", "turns orders into tax invoices as PDF",
     "주문을 세금계산서 PDF로 만든다"),
    ("Catalog API", "카탈로그 API", "CAPI", "serves product data to the apps and partners",
     "앱과 파트너에 상품 데이터를 제공한다"),
    ("Job Scheduler", "작업 스케줄러", "JSC", "runs nightly batch jobs and retries failed ones",
     "야간 배치 작업을 실행하고 실패한 작업을 재시도한다"),
    ("Metrics Collector", "지표 수집기", "MCL", "scrapes service metrics and forwards them to storage",
     "서비스 지표를 수집해 저장소로 보낸다"),
    ("Consent Manager", "동의 관리자", "CMG", "records which marketing messages a user agreed to",
     "사용자가 동의한 마케팅 수신 항목을 기록한다"),
]
STORES = ["PostgreSQL", "Redis", "ClickHouse", "MinIO", "OpenSearch", "DuckDB", "SQLite", "Kafka"]
LANGUAGES = ["Go", "Python", "Rust", "TypeScript", "Kotlin", "Java"]
SLOS = ["99.5%", "99.9%", "99.95%", "99.99%"]
CODENAMES = [  # birds that are not also languages, names or common words
    ("팔콘", "Falcon"), ("맥파이", "Magpie"), ("헤론", "Heron"), ("오스프리", "Osprey"), ("케스트럴", "Kestrel"),
    ("펠리컨", "Pelican"), ("스패로우", "Sparrow"), ("크레인", "Crane"), ("레이븐", "Raven"),
    ("앨버트로스", "Albatross"),
    ("콘도르", "Condor"), ("이그렛", "Egret"), ("핀치", "Finch"), ("가넷", "Gannet"), ("아이비스", "Ibis"),
    ("오리올", "Oriole"), ("퍼핀", "Puffin"), ("스탈링", "Starling"), ("플로버", "Plover"), ("커모런트", "Cormorant"),
]
GOALS = [
    ("cut checkout latency in half", "결제 지연 시간을 절반으로 줄이기"),
    ("launch same-day delivery tracking", "당일 배송 추적 기능 출시"),
    ("replace the legacy reporting stack", "레거시 리포트 시스템 교체"),
    ("support multi-currency invoices", "다중 통화 청구서 지원"),
    ("roll out single sign-on for partners", "파트너용 SSO 도입"),
    ("add Korean address autocomplete", "한국 주소 자동완성 추가"),
    ("move media storage off the old NAS", "미디어 저장소를 구형 NAS에서 이전"),
    ("build a self-serve analytics portal", "셀프 서비스 분석 포털 구축"),
    ("introduce usage-based pricing", "사용량 기반 요금제 도입"),
    ("consolidate audit trails for compliance", "컴플라이언스를 위한 감사 기록 통합"),
    ("bring search indexing under one minute", "검색 색인 시간을 1분 이내로 단축"),
    ("ship partner webhooks v2", "파트너 웹훅 v2 출시"),
    ("reduce image bandwidth costs", "이미지 전송 비용 절감"),
    ("track marketing consent per channel", "채널별 마케팅 동의 이력 관리"),
    ("automate the monthly settlement", "월 정산 자동화"),
    ("unify feature rollout across the apps", "앱 전반의 기능 배포 방식 통합"),
]
PROJECT_STATUS = [("active", "진행 중"), ("pilot", "파일럿"), ("planning", "기획 중"), ("paused", "보류")]

TOPICS = [  # id, English / Korean heading, how a question names it (en, ko), decision (en, ko) with {svc} and {n}
    ("cache", "Caching", "캐시", "cache", "캐시", (5, 10, 15, 30, 60),
     "set the cache TTL for {svc} to {n} minutes", "{svc} 캐시 TTL을 {n}분으로 정한다"),
    ("logs", "Log retention", "로그 보존", "log retention", "로그 보존 기간", (14, 30, 45, 90),
     "keep {svc} application logs for {n} days", "{svc} 애플리케이션 로그를 {n}일 동안 보관한다"),
    ("load", "Load testing", "부하 테스트", "load testing", "부하 테스트", (500, 1000, 2000, 5000),
     "load-test {svc} at {n} requests per second before each release",
     "릴리스 전마다 {svc}에 초당 {n}건으로 부하 테스트를 한다"),
    ("backups", "Database backups", "DB 백업", "database backups", "DB 백업", (1, 4, 6, 12, 24),
     "back up the {svc} database every {n} hours", "{svc} 데이터베이스를 {n}시간마다 백업한다"),
    ("deprecation", "API deprecation", "API 지원 종료", "the old API version", "구버전 API", (1, 2, 3),
     "retire version {n} of the {svc} API within two quarters", "{svc} API {n}버전을 두 분기 안에 종료한다"),
    ("cadence", "Release cadence", "배포 주기", "release cadence", "배포 주기", (1, 2, 3, 4),
     "release {svc} every {n} weeks", "{svc}는 {n}주마다 배포한다"),
    ("budget", "Error budget", "에러 버짓", "the error budget", "에러 버짓", (50, 75, 90),
     "freeze feature work on {svc} once {n}% of the error budget is spent",
     "{svc} 에러 버짓을 {n}% 쓰면 기능 개발을 멈춘다"),
    ("alerts", "Latency alerts", "지연 알림", "latency alerts", "지연 알림", (200, 300, 500, 800),
     "page for {svc} when p95 latency stays above {n} ms for five minutes",
     "{svc} p95 지연이 5분 동안 {n} ms를 넘으면 호출한다"),
    ("pool", "Connection pool", "커넥션 풀", "the connection pool", "커넥션 풀", (20, 40, 60, 100),
     "raise the {svc} connection pool to {n} connections", "{svc} 커넥션 풀을 {n}개로 늘린다"),
    ("limits", "Rate limits", "요청 한도", "partner rate limits", "파트너 요청 한도", (60, 120, 300, 600),
     "limit partner traffic to {svc} at {n} requests per minute per key",
     "{svc}에 대한 파트너 요청을 키당 분당 {n}건으로 제한한다"),
    ("upgrades", "Dependency upgrades", "의존성 업그레이드", "dependency upgrades", "의존성 업그레이드", (2, 4, 6, 8),
     "upgrade the {svc} dependencies every {n} weeks", "{svc} 의존성을 {n}주마다 올린다"),
    ("flags", "Stale feature flags", "오래된 기능 플래그", "old feature flags", "오래된 기능 플래그", (30, 60, 90),
     "delete {svc} feature flags older than {n} days", "{svc}에서 {n}일 넘은 기능 플래그를 지운다"),
]
MEETING_KINDS = [  # id, English, Korean, weight
    ("sync", "weekly sync", "주간회의", 5), ("review", "architecture review", "아키텍처 리뷰", 2),
    ("retro", "retro", "회고", 2), ("planning", "planning", "스프린트 계획", 2),
]
UPDATES = [  # status lines in a meeting, about a service (en, ko)
    ("{svc}: the migration is half done; no user-facing changes yet.", "{svc}: 이전 작업 절반 완료. 사용자 영향 없음."),
    ("{svc}: two flaky tests fixed, the build is green again.", "{svc}: 불안정한 테스트 두 개 수정, 빌드 정상."),
    ("{svc}: the p95 went up after Tuesday's deploy; still looking.", "{svc}: 화요일 배포 후 p95 상승. 원인 확인 중."),
    ("{svc}: the new dashboard is live for the team.", "{svc}: 팀용 새 대시보드 공개."),
    ("{svc}: the on-call had a quiet week.", "{svc}: 이번 주 온콜 조용했음."),
    ("{svc}: the project backlog was groomed, ten tickets closed.", "{svc}: 프로젝트 백로그 정리, 티켓 10개 종료."),
    ("{svc}: the partner asked for a new field; estimate next meeting.",
     "{svc}: 파트너가 새 필드 요청. 다음 회의에서 산정."),
]
ADR_POOL = [  # tool, purpose (en, ko), why (en, ko), alternatives
    ("OpenTelemetry", "distributed tracing", "분산 추적",
     "one vendor-neutral SDK for every language we use", "우리가 쓰는 모든 언어에 벤더 중립 SDK 하나로 충분하다",
     ["Jaeger client libraries", "a commercial APM agent"]),
    ("Argo CD", "deployments", "배포",
     "deploys become pull requests and drift is visible", "배포가 풀 리퀘스트가 되고 설정 차이가 보인다",
     ["Flux", "scripted kubectl apply"]),
    ("Keycloak", "partner single sign-on", "파트너 SSO",
     "it speaks SAML and OIDC and runs on our own cluster", "SAML과 OIDC를 모두 지원하고 우리 클러스터에서 돈다",
     ["a hosted identity provider", "our own login pages"]),
    ("GitHub Actions", "continuous integration", "CI",
     "the runners sit next to the code and cost less than the old CI", "코드 옆에서 돌고 기존 CI보다 싸다",
     ["the self-hosted build server", "a hosted CI product"]),
    ("Terraform", "cloud resources", "클라우드 리소스 관리",
     "every bucket and database is reviewed as code", "버킷과 데이터베이스를 모두 코드로 리뷰할 수 있다",
     ["Pulumi", "clicking in the console"]),
    ("Loki", "log aggregation", "로그 수집",
     "it indexes labels only, so storage stays cheap", "레이블만 색인해서 저장 비용이 낮다",
     ["OpenSearch", "keeping logs on the nodes"]),
    ("Trino", "ad-hoc analytics", "임시 분석 쿼리",
     "analysts query PostgreSQL and object storage in one SQL",
     "분석가가 PostgreSQL과 오브젝트 스토리지를 한 SQL로 조회한다",
     ["nightly CSV exports", "a managed warehouse"]),
    ("FastAPI", "new Python services", "신규 파이썬 서비스",
     "typed request models and generated OpenAPI documents", "타입이 있는 요청 모델과 자동 OpenAPI 문서",
     ["Django", "Flask"]),
    ("gRPC", "calls between internal services", "내부 서비스 간 호출",
     "schemas are checked at build time and calls are faster than JSON", "빌드할 때 스키마를 확인하고 JSON보다 빠르다",
     ["REST with JSON", "messages on the event bus only"]),
    ("Renovate", "dependency updates", "의존성 업데이트",
     "it groups minor updates and opens one pull request a week", "작은 업데이트를 묶어 주 1회 풀 리퀘스트를 연다",
     ["Dependabot", "manual upgrades each quarter"]),
    ("Helm", "packaging services", "서비스 패키징",
     "one chart per service with values per environment", "서비스마다 차트 하나, 환경마다 값 파일 하나",
     ["Kustomize", "raw manifests"]),
    ("Sentry", "error tracking", "에러 추적",
     "stack traces are grouped and linked to the release that caused them",
     "스택 트레이스를 묶고 원인 릴리스와 연결한다",
     ["reading logs by hand", "a hosted log search"]),
    ("Playwright", "end-to-end tests", "E2E 테스트",
     "tests run headless in CI against Chromium and WebKit", "CI에서 Chromium과 WebKit으로 헤드리스 실행된다",
     ["Selenium", "manual QA passes"]),
    ("Ruff", "Python linting", "파이썬 린트",
     "one fast tool replaces four linters", "빠른 도구 하나가 린터 네 개를 대신한다",
     ["flake8 with plugins", "pylint"]),
    ("MinIO", "internal object storage", "사내 오브젝트 스토리지",
     "an S3 API on our own servers, which the contracts require", "계약상 필요한 대로 자체 서버에서 S3 API를 쓴다",
     ["a public cloud bucket", "an NFS share"]),
    ("Polars", "batch data jobs", "배치 데이터 작업",
     "the nightly jobs ran four times faster than with pandas", "야간 작업이 pandas보다 네 배 빨랐다",
     ["pandas", "Spark"]),
    ("Protobuf", "event schemas", "이벤트 스키마",
     "producers and consumers share one versioned schema", "생산자와 소비자가 버전 있는 스키마 하나를 공유한다",
     ["JSON Schema", "free-form JSON"]),
    ("HashiCorp Vault", "secrets", "시크릿 관리",
     "short-lived database credentials instead of shared passwords", "공유 비밀번호 대신 짧게 쓰는 DB 자격 증명",
     ["Kubernetes secrets only", "an encrypted file in the repository"]),
    ("Kubernetes HPA", "autoscaling", "오토스케일링",
     "replicas follow CPU and queue length without manual steps", "CPU와 큐 길이에 따라 복제본 수가 자동으로 바뀐다",
     ["fixed replica counts", "a cron job that scales at peak hours"]),
    ("Grafana", "dashboards", "대시보드",
     "one place for metrics, logs and traces, already used by the SRE group",
     "지표·로그·추적을 한곳에서 보고 SRE 그룹도 이미 쓴다",
     ["Kibana", "a hosted dashboard product"]),
    ("Redis Streams", "short-lived job queues", "단기 작업 큐",
     "we already run Redis and the queues are small", "이미 Redis를 운영 중이고 큐가 작다",
     ["RabbitMQ", "a database table polled every second"]),
    ("dbt", "analytics models", "분석 모델",
     "SQL models are versioned, tested and documented together", "SQL 모델을 버전 관리하고 테스트·문서화한다",
     ["stored procedures", "notebooks"]),
]
ADR_STATUS = [("Accepted", "승인됨", 6), ("Proposed", "제안됨", 2), ("Deprecated", "폐기됨", 2)]
MEMBER_ROLES = [role for role in ROLES if role[1] not in ("Tech Lead", "Engineering Manager")]
SYMPTOMS = [  # slug, en, ko, first step (en, ko)
    ("high-latency", "high latency", "응답 지연",
     "open the {svc} p95 panel in Grafana and compare it with the database panel; if the database is slow, "
     "follow the database runbook first",
     "Grafana에서 {svc} p95 패널을 열고 DB 패널과 비교한다. DB가 느리면 DB 런북부터 따른다"),
    ("error-spike", "error spike", "에러율 급증",
     "check the last {svc} deploy; if the errors began within 15 minutes of it, roll it back",
     "마지막 {svc} 배포를 확인하고, 배포 후 15분 안에 에러가 시작됐으면 롤백한다"),
    ("disk-full", "disk full", "디스크 부족",
     "delete the rotated logs under /var/log/{slug} and confirm that log rotation ran last night",
     "/var/log/{slug} 아래 회전된 로그를 지우고 어젯밤 로그 회전이 돌았는지 확인한다"),
    ("queue-backlog", "queue backlog", "큐 적체",
     "scale the {svc} workers to {n} replicas and watch the backlog graph for ten minutes",
     "{svc} 워커를 {n}개로 늘리고 10분 동안 적체 그래프를 본다"),
    ("certificate-expiry", "certificate expiry", "인증서 만료",
     "renew the {svc} certificate through cert-manager and restart the ingress pods",
     "cert-manager로 {svc} 인증서를 갱신하고 인그레스 파드를 재시작한다"),
    ("memory-leak", "memory leak", "메모리 누수",
     "take a heap profile from one {svc} pod before restarting anything",
     "아무것도 재시작하기 전에 {svc} 파드 하나에서 힙 프로파일을 뜬다"),
]

UNANSWERABLE = {  # (question, distinguishing words no vault file contains); {person} {service} {project}
    "en": [
        ("Who leads Project Nightingale?", ("nightingale",)),
        ("What is the goal of Project Hummingbird?", ("hummingbird",)),
        ("When is Project Flamingo due?", ("flamingo",)),
        ("Who is on call for the Fax Relay service?", ("fax",)),
        ("Who owns the Loyalty Points service?", ("loyalty",)),
        ("What's our parental leave policy?", ("parental",)),
        ("How long is the sabbatical after five years?", ("sabbatical",)),
        ("How much is the relocation bonus?", ("relocation",)),
        ("What's the expense reimbursement limit for conferences?", ("reimbursement",)),
        ("Is there a dress code for client visits?", ("dress",)),
        ("When did we migrate to Cassandra?", ("cassandra",)),
        ("Why did we pick Snowflake for analytics?", ("snowflake",)),
        ("Who set up Splunk for the team?", ("splunk",)),
        ("Which Datadog monitors does {service} have?", ("datadog",)),
        ("Who maintains the Jenkins pipelines?", ("jenkins",)),
        ("What did we decide at the Singapore offsite?", ("singapore", "offsite")),
        ("Who is our contact at the Tokyo branch?", ("tokyo",)),
        ("What's the budget for the hackathon?", ("hackathon",)),
        ("Which mainframe does {service} talk to?", ("mainframe",)),
        ("Who approved the blockchain pilot?", ("blockchain",)),
        ("What is {person}'s salary band?", ("salary",)),
        ("When is {person}'s birthday?", ("birthday",)),
        ("Which GraphQL gateway does {project} use?", ("graphql",)),
        ("What's the roadmap for the iOS app?", ("ios",)),
        ("Who is the Scrum Master of the team?", ("scrum",)),
        ("What was the team's velocity last quarter?", ("velocity",)),
        ("Where is the disaster recovery site in Frankfurt?", ("frankfurt",)),
        ("Which Cobol batch does {service} still run?", ("cobol",)),
    ],
    "ko": [
        ("나이팅게일 프로젝트 리드는 누구야?", ("나이팅게일",)),
        ("허밍버드 프로젝트 목표가 뭐야?", ("허밍버드",)),
        ("팩스 중계 서비스 온콜은 누구야?", ("팩스",)),
        ("포인트 적립 서비스 담당자가 누구야?", ("적립",)),
        ("육아휴직 정책이 어떻게 돼?", ("육아휴직",)),
        ("안식년 제도는 몇 년 차부터야?", ("안식년",)),
        ("카산드라로 옮긴 게 언제야?", ("카산드라",)),
        ("스노우플레이크를 고른 이유가 뭐야?", ("스노우플레이크",)),
        ("싱가포르 워크숍에서 뭘 결정했어?", ("싱가포르",)),
        ("해커톤 예산이 얼마야?", ("해커톤",)),
        ("{person} 연봉 등급이 어떻게 돼?", ("연봉",)),
        ("{person} 생일이 언제야?", ("생일",)),
        ("{service}는 어떤 메인프레임이랑 연동돼?", ("메인프레임",)),
        ("블록체인 파일럿은 누가 승인했어?", ("블록체인",)),
        ("아이폰 앱 로드맵은 어떻게 돼?", ("아이폰",)),
        ("우리 팀 스크럼 마스터가 누구야?", ("스크럼",)),
        ("프랑크푸르트 재해복구 센터는 어디 있어?", ("프랑크푸르트",)),
        ("고객 방문 때 복장 규정이 있어?", ("복장",)),
        ("젠킨스 파이프라인은 누가 관리해?", ("젠킨스",)),
        ("{project}에서 쓰는 그래프QL 게이트웨이는 뭐야?", ("그래프ql", "graphql")),
    ],
}


# --- the model -----------------------------------------------------------------------------------------------


class _Page:
    """A generated note with a slug: where it lives, its name in either language, and a wiki link to it."""

    FOLDER: ClassVar[str]
    slug: str
    ko: str
    en: str

    def name(self, korean: bool) -> str:
        return self.ko if korean else self.en

    def link(self, korean: bool) -> str:
        return f"[[{self.slug}|{self.name(korean)}]]"

    @property
    def path(self) -> str:
        return f"{self.FOLDER}/{self.slug}.md"


@dataclass(eq=False)
class Person(_Page):
    FOLDER: ClassVar[str] = "people"

    ko: str
    en: str
    first_en: str
    nick: str
    handle: str
    slug: str
    role: tuple[str, str]
    office: tuple[str, str]
    floor: int
    joined: date
    focus: list[tuple[str, str]]
    days: list[tuple[str, str]]
    korean: bool
    manager: Person | None = None


@dataclass(eq=False)
class Service(_Page):
    FOLDER: ClassVar[str] = "services"

    en: str
    ko: str
    acr: str
    does: tuple[str, str]
    slug: str
    owner: Person
    oncall: tuple[Person, Person]
    store: str
    language: str
    slo: str
    korean: bool
    acronym_in_text: bool
    depends: list[Service] = field(default_factory=list)
    runbooks: list[Runbook] = field(default_factory=list)


@dataclass(eq=False)
class Project(_Page):
    FOLDER: ClassVar[str] = "projects"

    ko: str
    en: str
    acr: str
    slug: str
    lead: Person
    members: list[Person]
    service: Service
    goal: tuple[str, str]
    status: tuple[str, str]
    start: date
    target: date
    budget: int  # million KRW
    korean: bool

    def name(self, korean: bool) -> str:
        return f"{self.ko} 프로젝트" if korean else f"Project {self.en}"


@dataclass(eq=False)
class Runbook:
    service: Service
    symptom: tuple
    minutes: int
    replicas: int
    korean: bool

    @property
    def slug(self) -> str:
        return f"{self.service.slug}-{self.symptom[0]}"

    @property
    def path(self) -> str:
        return f"runbooks/{self.slug}.md"


@dataclass(eq=False)
class Decision:
    topic: tuple
    service: Service
    value: int


@dataclass(eq=False)
class Meeting:
    day: date
    kind: tuple
    korean: bool
    attendees: list[Person]
    decisions: list[Decision]
    updates: list[tuple[Person, str]]
    actions: list[tuple[Person, str, date]]
    adr: Adr | None = None

    @property
    def path(self) -> str:
        if self.korean:
            return f"회의록/{self.day.isoformat()}-{self.kind[2].replace(' ', '-')}.md"
        return f"meetings/{self.day.isoformat()}-{self.kind[1].replace(' ', '-')}.md"

    @property
    def stem(self) -> str:
        return self.path.rsplit("/", 1)[1][:-3]


@dataclass(eq=False)
class Adr:
    number: int
    entry: tuple
    service: Service
    status: tuple
    day: date
    deciders: list[Person]
    korean: bool
    meeting: Meeting | None = None

    @property
    def title_en(self) -> str:
        return f"Use {self.entry[0]} for {self.entry[1]}"

    @property
    def path(self) -> str:
        slug = "".join(c if c.isalnum() else "-" for c in self.title_en.lower()).strip("-")
        while "--" in slug:
            slug = slug.replace("--", "-")
        return f"adr/{self.number:04d}-{slug}.md"


@dataclass
class Team:
    en: str
    ko: str
    company: tuple[str, str, str]
    weekday: tuple[str, str]
    sync_time: str
    room: tuple[str, str]
    channel: str
    head: Person
    people: list[Person]
    services: list[Service]
    projects: list[Project]
    meetings: list[Meeting]
    runbooks: list[Runbook]
    adrs: list[Adr]
    policy_values: dict[str, object]
    korean_notes: dict[str, bool]  # policies, glossary, team page, index

    def name(self, korean: bool) -> str:
        return f"{self.ko}팀" if korean else f"{self.en} team"


# --- generation ----------------------------------------------------------------------------------------------


def _slugify(text: str) -> str:
    out = "".join(c if c.isalnum() and c.isascii() else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")


def _korean_flags(count: int, rng: random.Random) -> list[bool]:
    """Exactly ``KOREAN_SHARE`` of ``count`` notes are Korean, in a seeded order."""
    korean = round(count * KOREAN_SHARE)
    return rng.sample([True] * korean + [False] * (count - korean), count)


def _people(rng: random.Random) -> list[Person]:
    names: list[tuple[str, str, str]] = []  # ko, en, first_en
    for ko, en in rng.sample(FOREIGN_PEOPLE, 4):
        names.append((ko, en, en.split()[0]))
    combos = [(s, g) for s in SURNAMES for g in GIVEN]
    used_given: set[str] = set()
    for (s_ko, s_en), (g_ko, g_en) in rng.sample(combos, len(combos)):
        if len(names) == PEOPLE:
            break
        if g_en in used_given or any(en.split()[0] == g_en for _, en, _ in names):
            continue
        used_given.add(g_en)
        names.append((s_ko + g_ko, f"{g_en} {s_en}", g_en))
    rng.shuffle(names)
    nicks = rng.sample(NICKNAMES, PEOPLE)
    offices = rng.sample(PLACES, 4)
    korean = _korean_flags(PEOPLE, rng)
    people = []
    for index, (ko, en, first) in enumerate(names):
        surname = en.split()[-1].lower()
        role = ("엔지니어링 매니저", "Engineering Manager") if index == 0 else (
            ("테크 리드", "Tech Lead") if index < 5 else rng.choice(MEMBER_ROLES))
        people.append(Person(
            ko=ko, en=en, first_en=first, nick=nicks[index], handle=f"@{first[0].lower()}{surname}",
            slug=_slugify(en), role=role, office=rng.choice(offices), floor=rng.randint(2, 12),
            joined=date(2018, 1, 1) + timedelta(days=rng.randint(0, 7 * 365)), focus=rng.sample(FOCUS, 2),
            days=sorted(rng.sample(WEEKDAYS, 2), key=WEEKDAYS.index), korean=korean[index]))
    for index, person in enumerate(people[1:], start=1):
        person.manager = people[0] if index < 5 else people[rng.randint(1, 4)]
    handles = Counter(p.handle for p in people)
    for person in people:
        if handles[person.handle] > 1:
            person.handle += str(person.joined.year % 100)
    return people


def _team(rng: random.Random) -> Team:
    en, ko = rng.choice(TEAMS)
    people = _people(rng)
    engineers = people[1:]
    services = []
    for entry, korean in zip(rng.sample(SERVICE_POOL, SERVICES), _korean_flags(SERVICES, rng), strict=True):
        owner = rng.choice(engineers)
        primary, secondary = rng.sample([p for p in engineers if p is not owner], 2)
        services.append(Service(
            en=entry[0], ko=entry[1], acr=entry[2], does=(entry[3], entry[4]), slug=_slugify(entry[0]), owner=owner,
            oncall=(primary, secondary), store=rng.choice(STORES), language=rng.choice(LANGUAGES),
            slo=rng.choice(SLOS), korean=korean, acronym_in_text=rng.random() < 0.5))
    for index, service in enumerate(services):
        later = services[index + 1:]
        service.depends = rng.sample(later, min(len(later), rng.randint(0, 2)))
    projects, used_acronyms = [], set()
    for (c_ko, c_en), goal, service, korean in zip(rng.sample(CODENAMES, PROJECTS), rng.sample(GOALS, PROJECTS),
                                                   rng.sample(services, PROJECTS), _korean_flags(PROJECTS, rng),
                                                   strict=True):
        acr = "P" + c_en[0]
        if acr in used_acronyms or acr in {s.acr for s in services}:
            acr = "P" + c_en[:2].upper()
        used_acronyms.add(acr)
        lead = rng.choice(people[1:5] + rng.sample(engineers, 3))
        start = date(2024, 6, 3) + timedelta(days=rng.randint(0, 420))
        projects.append(Project(
            ko=c_ko, en=c_en, acr=acr, slug=f"project-{c_en.lower()}", lead=lead,
            members=rng.sample([p for p in engineers if p is not lead], rng.randint(2, 4)), service=service,
            goal=goal, status=rng.choice(PROJECT_STATUS), start=start,
            target=start + timedelta(days=rng.randint(90, 300)), budget=rng.randrange(20, 400, 5), korean=korean))
    runbooks = []
    pairs = [(s, sym) for s in services for sym in SYMPTOMS]
    chosen = sorted(rng.sample(pairs, RUNBOOKS), key=lambda p: (services.index(p[0]), p[1][0]))
    for (service, symptom), korean in zip(chosen, _korean_flags(RUNBOOKS, rng), strict=True):
        runbook = Runbook(service, symptom, rng.choice((10, 15, 20, 30, 45)), rng.choice((4, 6, 8, 12)), korean)
        service.runbooks.append(runbook)
        runbooks.append(runbook)
    meetings = _meetings(rng, people, services)
    adrs = _adrs(rng, people, services, meetings)
    weekday = rng.choice(WEEKDAYS)
    policy_values = {
        "ack": rng.choice((5, 10, 15)), "handoff": rng.choice(WEEKDAYS), "allowance": rng.choice((30, 50, 70)),
        "freeze_day": rng.choice(WEEKDAYS[3:]), "freeze_hour": rng.choice((14, 15, 16)),
        "canary": rng.choice((5, 10, 20)), "canary_minutes": rng.choice((15, 30, 60)),
        "postmortem_days": rng.choice((2, 3, 5)), "access_review": rng.choice(("quarterly", "every six months")),
        "access_approver": rng.choice(engineers[:4]),
    }
    singles = ("on-call-policy", "deploy-policy", "access-policy", "incident-policy", "glossary", "team", "index")
    korean_notes = dict(zip(singles, _korean_flags(len(singles), rng), strict=True))
    return Team(en, ko, rng.choice(COMPANIES), weekday, rng.choice(("10:00", "10:30", "14:00")), rng.choice(ROOMS),
                f"#{en.lower()}-team", people[0], people, services, projects, meetings, runbooks, adrs,
                policy_values, korean_notes)


def _meetings(rng: random.Random, people: list[Person], services: list[Service]) -> list[Meeting]:
    meetings = []
    day = date(2024, 9, 2)
    kinds = [kind for kind in MEETING_KINDS for _ in range(kind[3])]
    for korean in _korean_flags(MEETINGS, rng):
        day += timedelta(days=rng.randint(5, 12))
        while day.weekday() > 4:
            day += timedelta(days=1)
        attendees = rng.sample(people, rng.randint(4, 7))
        decisions = [Decision(topic, rng.choice(services), rng.choice(topic[5]))
                     for topic in rng.sample(TOPICS, rng.randint(1, 2))]
        updates = [(rng.choice(attendees), rng.choice(services)) for _ in range(rng.randint(2, 3))]
        actions = [(rng.choice(attendees), rng.choice(services), day + timedelta(days=rng.randint(3, 14)))
                   for _ in range(rng.randint(1, 3))]
        meeting = Meeting(day, rng.choice(kinds), korean, attendees, decisions, [], [])
        meeting.updates = [(person, rng.choice(UPDATES)[1 if meeting.korean else 0].format(
            svc=service.name(meeting.korean))) for person, service in updates]
        meeting.actions = [(person, service.name(meeting.korean), due) for person, service, due in actions]
        meetings.append(meeting)
    return meetings


def _adrs(rng: random.Random, people: list[Person], services: list[Service], meetings: list[Meeting]) -> list[Adr]:
    """ADR-0001 records the practice itself; the others each come out of one meeting (at most one per meeting)."""
    statuses = [status for status in ADR_STATUS for _ in range(status[2])]
    hosts = sorted(rng.sample(range(len(meetings)), ADRS - 1))
    adrs = []
    flags = _korean_flags(ADRS - 1, rng)
    for number, (entry, host) in enumerate(zip(rng.sample(ADR_POOL, ADRS - 1), hosts, strict=True), start=2):
        meeting = meetings[host]
        adr = Adr(number, entry, rng.choice(services), rng.choice(statuses),
                  meeting.day + timedelta(days=rng.randint(2, 9)), rng.sample(meeting.attendees, 3),
                  flags[number - 2], meeting)
        meeting.adr = adr
        adrs.append(adr)
    return adrs


# --- writing -------------------------------------------------------------------------------------------------


def _yaml(value: str) -> str:
    if any(char in value for char in ":#,[]{}&*!|>'\"%@`") or value != value.strip():
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def _front(title: str, author: Person, korean: bool, day: date, tags: list[str], aliases: list[str] = (),
           extra: str = "") -> str:
    lines = ["---", f"title: {_yaml(title)}", f"author: {author.name(korean)}", f"date: {day.isoformat()}",
             f"tags: [{', '.join(tags)}]"]
    if aliases:
        lines.append(f"aliases: [{', '.join(_yaml(a) for a in aliases)}]")
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n---\n\n"


def _relative(target: str, source: str) -> str:
    here, there = source.split("/")[:-1], target.split("/")
    return "/".join([".."] * len(here) + there)


def _long_date(day: date, korean: bool) -> str:
    return f"{day.year}년 {day.month}월 {day.day}일" if korean else f"{day.day} {EN_MONTHS[day.month - 1]} {day.year}"


def _footer(team: Team, korean: bool) -> str:
    if korean:
        return f"\n---\n{team.name(True)} 노트. 문의는 슬랙 {team.channel} 채널로. 팀 홈: [[team|{team.name(True)}]]\n"
    return f"\n---\nPart of the {team.name(False)} notes. Questions go to {team.channel}. Team home: [[team]]\n"


def _person_note(team: Team, p: Person) -> str:
    k = p.korean
    aliases = [p.en if k else p.ko, p.nick, p.handle]
    head = _front(p.name(k), team.head, k, p.joined, ["person", team.en.lower()], aliases)
    manager = p.manager.link(k) if p.manager else ("없음 (팀 책임자)" if k else "none (head of the team)")
    focus = [f[0] if k else f[1] for f in p.focus]
    days = [d[0] if k else d[1] for d in p.days]
    if k:
        body = (f"# {p.ko}\n\n역할: {p.role[0]}\n소속: {team.name(True)}\n보고 대상: {manager}\n"
                f"근무지: {p.office[0]} {p.floor}층\n입사일: {p.joined.isoformat()}\n\n## 소개\n\n"
                f"{_topic(p.ko)} {p.joined.year}년 {p.joined.month}월에 {team.name(True)}에 "
                f"합류했다. 주로 {focus[0]}{'과' if _has_final(focus[0]) else '와'} {focus[1]} 쪽 일을 한다.\n"
                f"사무실에는 보통 {days[0]}과 {days[1]}에 나오고, 나머지는 재택이다.\n\n## 같이 일하는 법\n\n"
                "- 급하지 않은 질문은 슬랙 스레드로.\n- 코드 리뷰는 주로 오전에 본다.\n"
                f"- 팀 회의와 프로젝트 회의에는 웬만하면 참석한다.\n")
    else:
        body = (f"# {p.en}\n\nRole: {p.role[1]}\nTeam: {team.name(False)}\nReports to: {manager}\n"
                f"Office: {p.office[1]}, floor {p.floor}\nJoined: {p.joined.isoformat()}\n\n## About\n\n"
                f"{p.first_en} joined the {team.name(False)} in {EN_MONTHS[p.joined.month - 1]} {p.joined.year} "
                f"and mostly works on {focus[0]} and {focus[1]}.\n"
                f"In the office on {days[0]}s and {days[1]}s, remote the rest of the week.\n\n## Working with "
                f"{p.first_en}\n\n- Async questions in a Slack thread, please.\n- Reviews pull requests in the "
                "morning.\n- Joins the team meeting and most project meetings.\n")
    return head + body + _footer(team, k)


def _has_final(word: str) -> bool:
    return josa(word, "1", "") != word


def _service_note(team: Team, s: Service) -> str:
    k = s.korean
    aliases = [s.acr, s.en if k else s.ko]
    head = _front(s.name(k), s.owner, k, date(2024, 3, 4), ["service", team.en.lower()], aliases)
    deps = ", ".join(d.link(k) for d in s.depends) or ("없음" if k else "none")
    runbooks = "\n".join(f"- [{r.symptom[2] if k else r.symptom[1]}](../{r.path})" for r in s.runbooks) or (
        "- 아직 없음" if k else "- none yet")
    name = f"{s.name(k)} ({s.acr})" if s.acronym_in_text else s.name(k)
    repo = f"git.{team.company[2]}.dev/{team.en.lower()}/{s.slug}"
    if k:
        body = (f"# {s.ko}\n\n{name}{'은' if _has_final(name) else '는'} {s.does[1]}. {team.name(True)}이 운영하는 "
                f"서비스다.\n\n오너: {s.owner.link(True)}\n온콜: {s.oncall[0].link(True)} (1차), "
                f"{s.oncall[1].link(True)} (2차)\n의존 서비스: {deps}\n데이터 저장소: {s.store}\n언어: {s.language}\n"
                f"가용성 목표: {s.slo}\n저장소: `{repo}`\n\n## 운영\n\n"
                f"- 대시보드: Grafana의 \"{team.en} / {s.en}\" 폴더.\n"
                "- 배포는 팀 표준 파이프라인으로 한다 ([[deploy-policy]] 참고).\n- 장애 때는 아래 런북부터 본다.\n\n"
                f"## 런북\n\n{runbooks}\n")
    else:
        body = (f"# {s.en}\n\nThe {name} {s.does[0]}. It is run by the {team.name(False)}.\n\n"
                f"Owner: {s.owner.link(False)}\nOn-call: {s.oncall[0].link(False)} (primary), "
                f"{s.oncall[1].link(False)} (secondary)\nDepends on: {deps}\nData store: {s.store}\n"
                f"Language: {s.language}\nAvailability target: {s.slo}\nRepository: `{repo}`\n\n## Operations\n\n"
                f"- Dashboards: the Grafana folder \"{team.en} / {s.en}\".\n- Deploys go through the team's standard "
                "pipeline (see [[deploy-policy]]).\n- In an incident, start with the runbooks below.\n\n"
                f"## Runbooks\n\n{runbooks}\n")
    return head + body + _footer(team, k)


def _project_note(team: Team, p: Project) -> str:
    k = p.korean
    aliases = [p.en, p.acr, f"{p.ko} 프로젝트" if not k else f"Project {p.en}"]
    if k:
        aliases[2] = f"Project {p.en}"
    head = _front(p.name(k), p.lead, k, p.start, ["project", team.en.lower()], aliases,
                  f"status: {p.status[0]}")
    members = ", ".join(m.link(k) for m in p.members)
    if k:
        body = (f"# {p.ko} 프로젝트 ({p.acr})\n\n목표: {p.goal[1]}.\n\n리드: {p.lead.link(True)}\n참여: {members}\n"
                f"상태: {p.status[1]}\n시작일: {p.start.isoformat()}\n목표일: {p.target.isoformat()}\n"
                f"예산: {p.budget}백만 원\n의존 서비스: {p.service.link(True)}\n\n## 배경\n\n"
                f"{team.company[1]}의 요청으로 {team.name(True)}이 맡은 프로젝트다. "
                "진행 상황은 주간회의에서 공유한다.\n\n## 위험 요소\n\n"
                "- 의존 서비스 일정이 밀리면 프로젝트 전체가 밀린다.\n- 파트너 쪽 테스트 환경이 불안정하다.\n")
    else:
        body = (f"# Project {p.en} ({p.acr})\n\nGoal: {p.goal[0]}.\n\nLead: {p.lead.link(False)}\n"
                f"Members: {members}\nStatus: {p.status[0]}\nStart: {p.start.isoformat()}\n"
                f"Target date: {p.target.isoformat()}\nBudget: KRW {p.budget} million\n"
                f"Depends on: {p.service.link(False)}\n\n## Background\n\n{team.company[0]} asked the "
                f"{team.name(False)} for this project. Progress is reported in the weekly sync.\n\n## Risks\n\n"
                "- If the service we depend on slips, the whole project slips.\n- The partner's test environment is "
                "unreliable.\n")
    return head + body + _footer(team, k)


def _runbook_note(team: Team, r: Runbook) -> str:
    k, s = r.korean, r.service
    slug, en, ko, first_en, first_ko = r.symptom
    title = f"{s.name(k)}: {ko if k else en}"
    head = _front(title, s.owner, k, date(2024, 5, 6), ["runbook", team.en.lower()])
    alert = s.en.replace(" ", "") + "".join(w.capitalize() for w in slug.split("-"))
    first = (first_ko if k else first_en).format(svc=s.name(k), slug=s.slug, n=r.replicas)
    if k:
        body = (f"# {title}\n\n서비스: {s.link(True)}\n알림: `{alert}`\n심각도: SEV2\n\n## 첫 단계\n\n1. {first}.\n"
                "2. 최근 설정 변경이 있었는지 팀 채널에서 확인한다.\n"
                "3. 조치한 내용을 장애 채널에 시간순으로 남긴다.\n\n"
                f"## 에스컬레이션\n\n{r.minutes}분 안에 해결되지 않으면 {s.link(True)}의 온콜을 호출한다.\n")
    else:
        body = (f"# {title}\n\nService: {s.link(False)}\nAlert: `{alert}`\nSeverity: SEV2\n\n## First steps\n\n"
                f"1. {first[0].upper() + first[1:]}.\n2. Ask in the team channel whether any config changed recently.\n"
                "3. Write what you did, with times, in the incident channel.\n\n## Escalation\n\n"
                f"If it is not fixed within {r.minutes} minutes, page the on-call of {s.link(False)}.\n")
    return head + body + _footer(team, k)


def _meeting_title(team: Team, m: Meeting) -> str:
    if m.korean:
        return f"{m.day.isoformat()} {team.ko} {m.kind[2]}"
    return f"{team.en} {m.kind[1]} {m.day.isoformat()}"


def _meeting_note(team: Team, m: Meeting) -> str:
    k = m.korean
    title = _meeting_title(team, m)
    head = _front(title, m.attendees[0], k, m.day, ["meeting", m.kind[0], team.en.lower()])
    attendees = ", ".join(p.ko if k else p.first_en for p in m.attendees)
    updates = "\n".join(f"- ({p.ko if k else p.first_en}) {text}" for p, text in m.updates)
    decisions = []
    for d in m.decisions:
        heading = d.topic[2] if k else d.topic[1]
        text = (d.topic[7] if k else d.topic[6]).format(svc=d.service.name(k), n=d.value)
        if k:
            decisions.append(f"### {heading}\n\n{d.service.link(True)} 관련 논의.\n→ **결정:** {text}.\n")
        else:
            decisions.append(f"### {heading}\n\nDiscussed for {d.service.link(False)}.\n→ **Decision:** {text}.\n")
    if m.adr:
        adr = m.adr
        purpose = adr.entry[2] if k else adr.entry[1]
        link = f"[ADR-{adr.number:04d}]({_relative(adr.path, m.path)})"
        if k:
            decisions.append(f"### {purpose}\n\n{purpose}에 {adr.entry[0]} 도입을 논의했다.\n→ **결정:** 도입한다. "
                             f"{_subj(adr.deciders[0].ko)} {link}를 쓴다.\n")
        else:
            decisions.append(f"### {purpose.capitalize()}\n\nWe discussed adopting {adr.entry[0]} for {purpose}.\n"
                             f"→ **Decision:** adopt it; {adr.deciders[0].first_en} writes {link}.\n")
    actions = "\n".join(f"- [ ] {p.ko if k else p.first_en}: {svc} {'후속 작업' if k else 'follow-up'} "
                        f"({'기한' if k else 'due'} {due.isoformat()})" for p, svc, due in m.actions)
    if k:
        body = (f"# {title}\n\n일시: {_long_date(m.day, True)}\n장소: {team.room[0]} 회의실\n참석자: {attendees}\n\n"
                f"## 진행 상황\n\n{updates}\n\n## 결정 사항\n\n" + "\n".join(decisions) +
                f"\n## 할 일\n\n{actions}\n")
    else:
        body = (f"# {title}\n\nDate: {_long_date(m.day, False)}\nRoom: {team.room[1]}\nAttendees: {attendees}\n\n"
                f"## Updates\n\n{updates}\n\n## Decisions\n\n" + "\n".join(decisions) +
                f"\n## Action items\n\n{actions}\n")
    return head + body + _footer(team, k)


def _adr_note(team: Team, a: Adr) -> str:
    k = a.korean
    tool, purpose_en, purpose_ko, why_en, why_ko, alternatives = a.entry
    title = f"ADR-{a.number:04d}: {purpose_ko}에 {tool} 사용" if k else f"ADR-{a.number:04d}: {a.title_en}"
    head = _front(title, a.deciders[0], k, a.day, ["adr", team.en.lower()], extra=f"status: {a.status[0].lower()}")
    deciders = ", ".join(p.name(k) for p in a.deciders)
    alts = "\n".join(f"- {alt}" for alt in alternatives)
    if k:
        body = (f"# {purpose_ko}에 {tool} 사용\n\n- 상태: {a.status[1]}\n- 날짜: {a.day.isoformat()}\n"
                f"- 결정자: {deciders}\n"
                f"- 첫 적용 서비스: {a.service.link(True)}\n\n## 배경\n\n{team.name(True)}은 {purpose_ko} 방식이 "
                "서비스마다 달라서 운영 부담이 컸다. 한 가지로 정할 필요가 있었다.\n\n## 결정\n\n"
                f"{purpose_ko}에 {tool}{'을' if _has_final(tool) else '를'} 쓴다. 이유: {why_ko}.\n"
                f"{a.service.name(True)}에 먼저 적용하고 나머지 서비스는 차례로 옮긴다.\n\n## 검토한 대안\n\n{alts}\n\n"
                "## 결과\n\n- 팀 전체가 같은 방식을 쓴다.\n- 처음 몇 주는 학습 비용이 든다.\n")
    else:
        body = (f"# {a.title_en}\n\n- Status: {a.status[0]}\n- Date: {a.day.isoformat()}\n- Deciders: {deciders}\n"
                f"- First service: {a.service.link(False)}\n\n## Context\n\nEvery service of the {team.name(False)} "
                f"handled {purpose_en} its own way, and the operations cost kept growing. We needed one way.\n\n"
                f"## Decision\n\nWe will use {tool} for {purpose_en}, because {why_en}.\n"
                f"{a.service.name(False)} adopts it first; the other services follow one by one.\n\n"
                f"## Alternatives considered\n\n{alts}\n\n## Consequences\n\n- The whole team works the same way.\n"
                "- Some learning cost in the first weeks.\n")
    return head + body + _footer(team, k)


def _first_adr(team: Team) -> str:
    head = _front("ADR-0001: Record architecture decisions", team.head, False, date(2024, 2, 5),
                  ["adr", team.en.lower()], extra="status: accepted")
    body = ("# Record architecture decisions\n\n- Status: Accepted\n- Date: 2024-02-05\n"
            f"- Deciders: {team.head.en}\n\n## Context\n\nDecisions of the {team.name(False)} were scattered over "
            "chat threads and meeting notes.\n\n## Decision\n\nWe record each significant decision as an ADR in "
            "`adr/`, numbered, with Status, Context, Decision and Consequences. A meeting that takes a decision "
            "links the ADR.\n\n## Consequences\n\n- New people can read why things are the way they are.\n")
    return head + body + _footer(team, False)


def _policy_notes(team: Team) -> dict[str, str]:
    v, out = team.policy_values, {}
    texts = {
        "on-call-policy": (
            ("온콜 정책", f"- 교대: 매주 {v['handoff'][0]} 오전 10시에 다음 사람에게 넘긴다.\n"
             f"- 호출을 받으면 {v['ack']}분 안에 응답(ack)한다.\n- 온콜 수당: 하루 {v['allowance']},000원.\n"
             "- 1차가 응답하지 않으면 2차에게 자동으로 넘어간다.\n"),
            ("On-call policy", f"- Handoff: every {v['handoff'][1]} at 10:00 to the next person.\n"
             f"- Acknowledge a page within {v['ack']} minutes.\n- On-call allowance: KRW {v['allowance']},000 per "
             "day.\n- If the primary does not answer, the page goes to the secondary.\n")),
        "deploy-policy": (
            ("배포 정책", f"- 배포 동결: 매주 {v['freeze_day'][0]} {v['freeze_hour']}시 이후에는 배포하지 않는다.\n"
             f"- 카나리: 트래픽 {v['canary']}%로 {v['canary_minutes']}분 지켜본 뒤 전체 배포.\n"
             "- 서비스 오너 또는 온콜 한 명의 승인이 필요하다.\n"),
            ("Deploy policy", f"- Freeze window: no deploys after {v['freeze_hour']}:00 on {v['freeze_day'][1]}s.\n"
             f"- Canary: {v['canary']}% of traffic for {v['canary_minutes']} minutes, then everything.\n"
             "- Needs one approval from the service owner or the on-call.\n")),
        "access-policy": (
            ("접근 권한 정책", "- 운영 DB와 관리자 화면 접근은 티켓으로 요청한다.\n"
             f"- 승인: {v['access_approver'].ko}.\n"
             f"- 권한 검토: {'분기마다' if v['access_review'] == 'quarterly' else '반년마다'}.\n"),
            ("Access policy", "- Ask for production database and admin access with a ticket.\n"
             f"- Approver: {v['access_approver'].en}.\n- Access is reviewed {v['access_review']}.\n")),
        "incident-policy": (
            ("장애 회고 정책", f"- SEV1, SEV2 장애는 {v['postmortem_days']}영업일 안에 회고 문서를 쓴다.\n"
             "- 회고는 비난 없이(blameless) 쓴다.\n- 후속 조치는 다음 주간회의에서 점검한다.\n"),
            ("Incident review policy", f"- Write the postmortem of a SEV1 or SEV2 within {v['postmortem_days']} "
             "business days.\n- Postmortems are blameless.\n- Follow-ups are checked in the next weekly sync.\n")),
    }
    for slug, ((ko_title, ko_body), (en_title, en_body)) in texts.items():
        k = team.korean_notes[slug]
        title = ko_title if k else en_title
        intro = (f"{team.name(True)}의 모든 서비스에 적용되는 정책이다.\n\n" if k
                 else f"Applies to every service of the {team.name(False)}.\n\n")
        out[f"policies/{slug}.md"] = (_front(title, team.head, k, date(2024, 4, 1), ["policy", team.en.lower()])
                                      + f"# {title}\n\n{intro}{ko_body if k else en_body}" + _footer(team, k))
    return out


def _glossary(team: Team) -> str:
    k = team.korean_notes["glossary"]
    title = "용어집" if k else "Glossary"
    head = _front(title, team.head, k, date(2024, 2, 12), ["reference", "glossary", team.en.lower()],
                  ["Glossary" if k else "용어집", "Acronyms"])
    services = "\n".join(f"- **{s.acr}** — {s.link(k)}" for s in sorted(team.services, key=lambda s: s.acr))
    projects = "\n".join(f"- **{p.acr}** — {p.link(k)}" for p in sorted(team.projects, key=lambda p: p.acr))
    if k:
        terms = ("- **SEV1** — 전체 사용자에게 영향이 있는 장애. 결제가 안 되면 무조건 SEV1.\n"
                 "- **SEV2** — 일부 기능이나 일부 파트너에게 영향이 있는 장애.\n- **SEV3** — 사용자 영향 없는 문제.\n"
                 "- **에러 버짓** — 가용성 목표가 허용하는 실패의 양.\n")
        body = f"# 용어집\n\n## 서비스 약어\n\n{services}\n\n## 프로젝트 약어\n\n{projects}\n\n## 용어\n\n{terms}"
    else:
        terms = ("- **SEV1** — an outage that hits all users. Payments failing is always SEV1.\n"
                 "- **SEV2** — an outage of one feature or one partner.\n- **SEV3** — a problem with no user impact.\n"
                 "- **Error budget** — the failures an availability target allows.\n")
        body = (f"# Glossary\n\n## Service acronyms\n\n{services}\n\n## Project acronyms\n\n{projects}\n\n"
                f"## Terms\n\n{terms}")
    return head + body + _footer(team, k)


def _team_page(team: Team) -> str:
    k = team.korean_notes["team"]
    title = team.name(k)
    head = _front(title, team.head, k, date(2024, 1, 15), ["team", team.en.lower()],
                  [team.name(not k), f"{team.en} platform team"])
    members = ", ".join(p.link(k) for p in team.people)
    if k:
        body = (f"# {title}\n\n{team.company[1]}의 플랫폼 서비스를 만드는 팀이다.\n\n팀장: {team.head.link(True)}\n"
                f"슬랙: {team.channel}\n\n## 회의\n\n- 주간회의: 매주 {team.weekday[0]} {team.sync_time}, "
                f"{team.room[0]} 회의실\n- 회고: 격주 금요일\n- 스프린트 계획: 매월 첫 월요일\n\n"
                f"## 팀원\n\n{members}\n")
    else:
        body = (f"# {title}\n\nThe team builds the platform services of {team.company[0]}.\n\n"
                f"Head of team: {team.head.link(False)}\nSlack: {team.channel}\n\n## Meetings\n\n"
                f"- Weekly sync: every {team.weekday[1]} at {team.sync_time}, room {team.room[1]}\n"
                "- Retro: every other Friday\n- Planning: first Monday of the month\n\n## Members\n\n" + members + "\n")
    return head + body


def _index(team: Team) -> str:
    k = team.korean_notes["index"]
    head = _front(f"{team.name(k)} 홈" if k else f"{team.name(k)} home", team.head, k, date(2024, 1, 15),
                  ["index", team.en.lower()])
    sections = [("서비스" if k else "Services", [s.link(k) for s in team.services]),
                ("프로젝트" if k else "Projects", [p.link(k) for p in team.projects]),
                ("정책" if k else "Policies", ["[[on-call-policy]]", "[[deploy-policy]]", "[[access-policy]]",
                                               "[[incident-policy]]"]),
                ("참고" if k else "Reference", ["[[glossary]]", "[[team]]"])]
    body = f"# {team.name(k)}\n\n" + "".join(f"## {name}\n\n" + "\n".join(f"- {x}" for x in items) + "\n\n"
                                             for name, items in sections)
    return head + body.rstrip() + "\n"


def _files(team: Team) -> dict[str, str]:
    files = {p.path: _person_note(team, p) for p in team.people}
    files |= {s.path: _service_note(team, s) for s in team.services}
    files |= {p.path: _project_note(team, p) for p in team.projects}
    files |= {r.path: _runbook_note(team, r) for r in team.runbooks}
    files |= {m.path: _meeting_note(team, m) for m in team.meetings}
    files |= {a.path: _adr_note(team, a) for a in team.adrs}
    files["adr/0001-record-architecture-decisions.md"] = _first_adr(team)
    files |= _policy_notes(team)
    files["glossary.md"] = _glossary(team)
    files["team.md"] = _team_page(team)
    files["index.md"] = _index(team)
    return files


# --- questions -----------------------------------------------------------------------------------------------


def _subj(word: str) -> str:
    return josa(word, "이", "가")


def _topic(word: str) -> str:
    return josa(word, "은", "는")


def _when(day: date, korean: bool) -> str:
    return f"{day.year}년 {day.month}월" if korean else f"{EN_MONTHS[day.month - 1]} {day.year}"


def _person_alias(p: Person, rng: random.Random) -> tuple[bool, str]:
    """(ask in Korean?, an alias of the person's note): the nickname or handle in the note's language, or the
    name in the other script, asked in that script's language (a cross-lingual lookup)."""
    alias = rng.choice([p.nick, p.handle, p.en if p.korean else p.ko, p.nick])
    return (alias == p.ko) if alias in (p.ko, p.en) else p.korean, alias


def _service_ref(s: Service, rng: random.Random) -> tuple[bool, str]:
    """(ask in Korean?, the acronym, or the name in the other script asked in that language)."""
    return (s.korean, s.acr) if rng.random() < 0.7 else (not s.korean, s.name(not s.korean))


def _project_ref(p: Project, rng: random.Random) -> str:
    return rng.choice([p.acr, p.name(p.korean), p.acr])


def _candidates(team: Team, rng: random.Random) -> dict[str, list[tuple[str, str, tuple[str, ...], str]]]:
    """Possible questions per kind: (group, text, gold, language)."""
    out: dict[str, list] = {kind: [] for kind in QUOTAS}

    def q(kind: str, group: str, korean: bool, text: str, *notes: object) -> None:
        out[kind].append((group, text, tuple(n.path for n in notes), "ko" if korean else "en"))

    for p in team.people:
        k, a = _person_alias(p, rng)
        options = [(f"Who does {a} report to?", f"{a}의 상사는 누구야?")] if p.manager else []
        options += [(f"Which office does {a} work from?", f"{_topic(a)} 어느 사무실에서 일해?"),
                    (f"When did {a} join the team?", f"{a} 입사일이 언제야?"),
                    (f"What is {a}'s role on the team?", f"{a}의 역할이 뭐야?")]
        q("person", "single-doc", k, rng.choice(options)[1 if k else 0], p)
    for s in team.services:
        k, a = _service_ref(s, rng)
        options = [(f"Who is on call for {a}?", f"{a} 온콜 담당자가 누구야?"),
                   (f"Who owns {a}?", f"{a} 오너는 누구야?"),
                   (f"What database does {a} use?", f"{_topic(a)} 어떤 데이터 저장소를 써?"),
                   (f"What is the availability target of {a}?", f"{a}의 가용성 목표가 몇 퍼센트야?"),
                   (f"Which repository holds the {a} code?", f"{a} 코드는 어느 저장소에 있어?")]
        q("service", "single-doc", k, rng.choice(options)[1 if k else 0], s)
    for p in team.projects:
        k, a = p.korean, _project_ref(p, rng)
        options = [(f"What is the goal of {a}?", f"{a}의 목표가 뭐야?"), (f"Who leads {a}?", f"{a} 리드는 누구야?"),
                   (f"When is {a} due?", f"{a} 목표일이 언제야?"),
                   (f"What's the budget of {a}?", f"{a} 예산이 얼마야?")]
        q("project", "single-doc", k, rng.choice(options)[1 if k else 0], p)
    for r in team.runbooks:
        k, s = r.korean, r.service
        a, sym = s.acr, r.symptom[2] if r.korean else r.symptom[1]
        options = [(f"What's the first thing to do when a {a} {sym} alert fires?",
                    f"{a} {sym} 알림이 오면 제일 먼저 뭘 해?"),
                   (f"After how many minutes should a {a} {sym} be escalated?",
                    f"{a} {sym}는 몇 분 안에 안 풀리면 에스컬레이션해?")]
        q("runbook", "single-doc", k, rng.choice(options)[1 if k else 0], r)
    for adr in team.adrs:
        k, (tool, p_en, p_ko, *_rest) = adr.korean, adr.entry
        options = [(f"Why did we choose {tool} for {p_en}?", f"{p_ko}에 {tool} 고른 이유가 뭐야?"),
                   (f"Which alternatives to {tool} did we consider for {p_en}?",
                    f"{p_ko} 도구로 {tool} 말고 검토한 대안은?"),
                   (f"Is the decision to use {tool} for {p_en} still accepted?",
                    f"{p_ko}에 {tool} 쓰기로 한 결정의 상태는?")]
        q("adr", "single-doc", k, rng.choice(options)[1 if k else 0], adr)
    misc = [("on-call-policy", "How quickly must the on-call acknowledge a page?",
             "온콜은 호출 받고 몇 분 안에 응답해야 해?"),
            ("on-call-policy", "How much is the on-call allowance per day?", "온콜 수당은 하루에 얼마야?"),
            ("deploy-policy", "When does the deploy freeze start each week?", "매주 배포 동결은 언제부터야?"),
            ("access-policy", "Who approves production database access?", "운영 DB 접근 권한은 누가 승인해?"),
            ("incident-policy", "How soon after a SEV1 must the postmortem be written?",
             "SEV1 장애 회고는 며칠 안에 써야 해?"),
            ("glossary", "What counts as a SEV1?", "SEV1은 어떤 장애를 말해?"),
            ("team", "When is the team's weekly sync?", "팀 주간회의는 언제 해?")]
    paths = {"glossary": "glossary.md", "team": "team.md"}
    for slug, en, ko in misc:
        k = team.korean_notes[slug]
        gold = (paths.get(slug, f"policies/{slug}.md"),)
        out["misc"].append(("single-doc", ko if k else en, gold, "ko" if k else "en"))
    # meeting decisions: (topic, month, kind) must pick out one meeting
    seen = Counter((d.topic[0], m.day.year, m.day.month, m.kind[0]) for m in team.meetings for d in m.decisions)
    for m in team.meetings:
        for d in m.decisions:
            if seen[(d.topic[0], m.day.year, m.day.month, m.kind[0])] > 1:
                continue
            k = m.korean
            text = (f"{_when(m.day, True)} {m.kind[2]}에서 {d.topic[4]} 관련해서 뭐라고 결정했어?" if k else
                    f"What did we decide about {d.topic[3]} in the {_when(m.day, False)} {m.kind[1]}?")
            q("meeting", "meeting", k, text, m)
    # multi-hop chains
    for p in team.projects:
        k, a, s = p.korean, _project_ref(p, rng), p.service
        q("multi-hop", "multi-hop", k, f"{_subj(a)} 의존하는 서비스의 오너는 누구야?" if k else
          f"Who owns the service that {a} depends on?", p, s)
        q("multi-hop", "multi-hop", k, f"{a} 뒤에 있는 서비스의 1차 온콜은 누구야?" if k else
          f"Who is the primary on-call for the service behind {a}?", p, s)
        q("multi-hop", "multi-hop", k, f"{_subj(a)} 쓰는 서비스는 어떤 데이터 저장소를 써?" if k else
          f"What database does the service {a} relies on use?", p, s)
        if p.lead.manager:
            q("multi-hop", "multi-hop", k, f"{a} 리드의 상사는 누구야?" if k else
              f"Who does the lead of {a} report to?", p, p.lead)
        q("multi-hop", "multi-hop", k, f"{a} 리드는 어느 사무실에서 일해?" if k else
          f"Which office does the {a} lead work from?", p, p.lead)
        if s.owner.manager:
            q("multi-hop", "multi-hop", k, f"{_subj(a)} 의존하는 서비스 오너의 상사는 누구야?" if k else
              f"Who does the owner of the service behind {a} report to?", p, s, s.owner)
    for s in team.services:
        k, a = s.korean, s.acr
        if s.owner.manager:
            q("multi-hop", "multi-hop", k, f"{a} 오너의 상사는 누구야?" if k else
              f"Who is the manager of the person who owns {a}?", s, s.owner)
        q("multi-hop", "multi-hop", k, f"{a} 오너는 어느 사무실에서 근무해?" if k else
          f"Where is the owner of {a} based?", s, s.owner)
    for p in team.people:
        if p.manager:
            k, a = _person_alias(p, rng)
            q("multi-hop", "multi-hop", k, f"{a}의 상사는 어느 사무실에서 일해?" if k else
              f"Which office is {a}'s manager in?", p, p.manager)
    seen_adr = Counter((m.day.year, m.day.month, m.kind[0]) for m in team.meetings if m.adr)
    for m in team.meetings:
        if m.adr and seen_adr[(m.day.year, m.day.month, m.kind[0])] == 1:
            k = m.korean
            q("multi-hop", "multi-hop", k, f"{_when(m.day, True)} {m.kind[2]}에서 도입하기로 한 도구의 ADR 상태는?" if k
              else f"What is the status of the ADR for the tool we agreed to adopt in the {_when(m.day, False)} "
              f"{m.kind[1]}?", m, m.adr)
    for adr in team.adrs:
        k, (tool, p_en, p_ko, *_rest) = adr.korean, adr.entry
        object_tool = josa(tool, "을", "를")
        q("multi-hop", "multi-hop", k, f"{p_ko}에 {object_tool} 처음 적용한 서비스의 오너는 누구야?" if k else
          f"Who owns the first service that adopted {tool} for {p_en}?", adr, adr.service)
    for r in team.runbooks:
        k, sym = r.korean, r.symptom[2] if r.korean else r.symptom[1]
        q("multi-hop", "multi-hop", k, f"{r.service.acr} {sym} 런북대로 해도 안 풀리면 누구를 호출해?" if k else
          f"Who gets paged when the {r.service.acr} {sym} runbook does not fix it in time?", r, r.service)
    return out


def _questions(team: Team, rng: random.Random) -> tuple[list[Question], dict[str, tuple[str, ...]]]:
    candidates = _candidates(team, rng)
    chosen: list[tuple[str, str, tuple[str, ...], str]] = []
    for kind, quota in QUOTAS.items():
        if kind == "multi-hop":  # spread over the kinds of chain: round robin over the question shapes
            pool = rng.sample(candidates[kind], len(candidates[kind]))
            shapes: dict[tuple, list] = {}
            for item in pool:
                shapes.setdefault((len(item[2]), item[2][0].split("/")[0], item[2][-1].split("/")[0]), []).append(item)
            picked: list = []
            while len(picked) < quota and any(shapes.values()):
                for items in shapes.values():
                    if items and len(picked) < quota:
                        picked.append(items.pop())
            chosen += picked
        elif kind != "unanswerable":
            chosen += rng.sample(candidates[kind], min(quota, len(candidates[kind])))
    questions = [Question(f"team-{i + 1:03d}", text, gold, group, lang)
                 for i, (group, text, gold, lang) in enumerate(chosen)]
    absent: dict[str, tuple[str, ...]] = {}
    korean = round(QUOTAS["unanswerable"] * KOREAN_SHARE)
    pool = [("en", t) for t in rng.sample(UNANSWERABLE["en"], QUOTAS["unanswerable"] - korean)]
    pool += [("ko", t) for t in rng.sample(UNANSWERABLE["ko"], korean)]
    for lang, (template, words) in rng.sample(pool, len(pool)):
        person, service, project = rng.choice(team.people), rng.choice(team.services), rng.choice(team.projects)
        k = lang == "ko"
        text = template.format(person=person.name(k), service=service.acr if rng.random() < 0.5 else service.name(k),
                               project=project.name(k))
        qid = f"team-{len(questions) + 1:03d}"
        questions.append(Question(qid, text, (), "unanswerable", lang))
        absent[qid] = words
    return questions, absent


def generate(seed: int = 0) -> tuple[dict[str, str], list[Question], dict[str, tuple[str, ...]]]:
    """The vault's files (path -> text), the questions and each unanswerable question's absent words."""
    rng = random.Random(f"team-{seed}")
    team = _team(rng)
    files = _files(team)
    questions, absent = _questions(team, rng)
    return files, questions, absent


def absent_terms(seed: int = 0) -> dict[str, tuple[str, ...]]:
    """For each unanswerable question id: the words that no file of the vault contains."""
    return generate(seed)[2]


def build_set(vault: Path, seed: int = 0) -> RetrievalSet:
    """Write the team vault into ``vault`` (only changed files are rewritten) and return its questions."""
    files, questions, absent = generate(seed)
    description = ("one team's notes (people, services, projects, meetings, runbooks, ADRs, policies), ~40% Korean; "
                   "aliases, acronyms and codenames, facts stated once")
    return finish_set(NAME, Path(vault), files, questions, absent, description)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the vault into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(summary(build_set(args.out, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
