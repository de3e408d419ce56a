"""Temporal retrieval set ("temporal"): one platform team's notes from January to September 2024, ~30% Korean,
in which facts change and old notes stay behind.

The vault holds people pages (``aliases: [MJ, 김민지]``), service, project and vendor pages that go stale (an
``updated:`` date and key-value lines such as ``Owner: Minji Kim``, ``Price: $21 per seat``, ``담당자: 김민지``,
``Deadline: 2024-05-31``, ``On-call lead: ...``), dated meetings (the date in the file name, in front matter
``date:`` or in the first heading; English ``meetings/`` and Korean ``회의록/``), monthly status reports, ADRs
(``adr/0007-use-stripe-for-card-payments.md``, Nygard ``## Status`` sections and MADR ``* Status:`` lines), a
``DECISIONS.md`` log (``## D-3: ...``, "Supersedes D-3", "D-3을 대체한다"), runbooks and policies with newer
versions, incident reviews, and notes under ``learned/`` written later that repeat a fact (often an outdated
one) and cite the note they learned it from with a wiki link.

Facts change over time: service owners, on-call leads, vendors, counts, prices and seats, contract owners,
project deadlines, leads and statuses, the team's head and headcount, decisions (ADR chains, DECISIONS.md
entries) and documents (runbooks, policies). Some changes are declared (front matter ``supersedes:`` /
``superseded_by:``, "This replaces [[old]].", ADR status lines, "Supersedes D-3"), others are only stated by
a later dated note (``Billing service owner: Daniel Cho`` in a meeting, or prose). Every note has a date from
its front matter, its file name or its first heading, never from the file's modification time.

Each fact keeps which notes state which of its values; a note that states several values of one fact (the
DECISIONS.md log) answers no question about it. Question groups (:class:`TemporalQuestion`):

- ``current``: the latest value ("Who owns the billing service now?", "지금 결제 서비스 담당자는?"); gold: the
  notes stating it, stale: the notes stating older values (learned notes that repeat an old value included);
- ``still``: whether an older (or the current) value still holds ("Does MJ still own billing?"); same gold
  and stale as ``current``;
- ``as_of``: the value at a month strictly between two changes ("Who owned billing in March 2024?"); gold:
  the notes stating the value valid then, stale: the notes stating later values (learned notes left out);
- ``replaced``: the successor of a record or value ("What replaced ADR-7?", "D-3을 대체한 결정은?", "Who took
  over billing from MJ?"); gold: the successor's notes, stale: the replaced one's;
- ``unanswerable``: things the vault never mentions; :func:`absent_terms` gives each one's distinguishing
  words, none of which occurs in a vault file.

The same seed always gives byte-identical files; only the standard library is used.

    python -m eval.sets.temporal_notes OUT [--seed N]
"""

from __future__ import annotations

import argparse
import calendar
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from eval.sets.base import Question, RetrievalSet, finish_set, summary
from eval.sets.chat_logs import EN_MONTHS

NAME = "temporal"
FIRST_DAY = date(2024, 1, 8)
LAST_DAY = date(2024, 9, 27)
KOREAN_SHARE = 0.3
QUOTAS = {"current": 36, "still": 32, "as_of": 40, "replaced": 32, "unanswerable": 24}
GROUPS = tuple(QUOTAS)
MAX_CHANGES_PER_MEETING = 3


@dataclass(frozen=True)
class TemporalQuestion(Question):
    """A question about a time: ``stale`` notes hold an outdated answer and must not outrank the gold;
    ``as_of`` is the ISO date an ``as_of`` question asks about (for reporting only: the text states it)."""

    stale: tuple[str, ...] = ()
    as_of: str | None = None


# --- Korean particles --------------------------------------------------------------------------------------

_DIGIT_FINAL = {"0": True, "1": True, "2": False, "3": True, "4": False, "5": False, "6": True, "7": True,
                "8": True, "9": False}


def _has_final(word: str) -> bool:
    """Whether ``word`` is read with a final consonant: Hangul by its last syllable, digits by their Korean
    reading (삼, 칠: yes; 이, 사: no), Latin words ending in l/m/n (Adyen, Kafka: no)."""
    last = word.rstrip(" )")[-1]
    if "가" <= last <= "힣":
        return (ord(last) - 0xAC00) % 28 != 0
    if last.isdigit():
        return _DIGIT_FINAL[last]
    return last.lower() in "lmn"


def josa(word: str, after_consonant: str, after_vowel: str) -> str:
    return word + (after_consonant if _has_final(word) else after_vowel)


def subj(word: str) -> str:
    return josa(word, "이", "가")


def topic(word: str) -> str:
    return josa(word, "은", "는")


def obj(word: str) -> str:
    return josa(word, "을", "를")


def copula(word: str) -> str:
    return josa(word, "이야", "야")


def ro(word: str) -> str:
    last = word.rstrip()[-1]
    rieul = "가" <= last <= "힣" and (ord(last) - 0xAC00) % 28 == 8
    return word + ("으로" if _has_final(word) and not rieul else "로")


# --- pools -------------------------------------------------------------------------------------------------

PEOPLE = [  # English name, Korean name, alias
    ("Minji Kim", "김민지", "MJ"), ("Daniel Cho", "조대니얼", "Dan"), ("Jiwoo Park", "박지우", "JW"),
    ("Seojun Lee", "이서준", "SJ"), ("Hyejin Choi", "최혜진", "Jin"), ("Tom Becker", "톰 베커", "TB"),
    ("Priya Nair", "프리야 나이르", "PN"), ("Yuna Jung", "정유나", "YJ"), ("Dohyun Kang", "강도현", "DK"),
    ("Sora Yoon", "윤소라", "SY"), ("Kevin Han", "한케빈", "KH"), ("Eunji Lim", "임은지", "EJ"),
    ("Marco Rossi", "마르코 로시", "Marco"), ("Haneul Shin", "신하늘", "Sky"), ("Taeyang Oh", "오태양", "Sunny"),
    ("Nari Seo", "서나리", "Nari"), ("Alex Moreno", "알렉스 모레노", "AM"), ("Jisoo Hwang", "황지수", "JS"),
]
ROLES = [("Backend Engineer", "백엔드 엔지니어"), ("Senior Backend Engineer", "시니어 백엔드 엔지니어"),
         ("Site Reliability Engineer", "SRE 엔지니어"), ("Data Engineer", "데이터 엔지니어"),
         ("Frontend Engineer", "프론트엔드 엔지니어"), ("Product Manager", "프로덕트 매니저"),
         ("QA Engineer", "QA 엔지니어"), ("Engineering Manager", "엔지니어링 매니저")]
OFFICES = [("Seoul, Gangnam office", "서울 강남 오피스"), ("Seoul, Seongsu office", "서울 성수 오피스"),
           ("Busan office", "부산 오피스"), ("remote", "원격 근무")]
FOCUS = [("payments", "결제"), ("observability", "관측성"), ("search quality", "검색 품질"),
         ("developer tooling", "개발 도구"), ("data pipelines", "데이터 파이프라인"), ("security reviews", "보안 점검"),
         ("performance", "성능"), ("API design", "API 설계"), ("mobile backend", "모바일 백엔드")]

SERVICES = [  # key, English, Korean, short, does (en, ko), vendor (label en, label ko, values, ADR chain key),
    # count (label en, label ko, question noun en, noun ko, unit ko, start, steps)
    ("billing-service", "Billing service", "결제 서비스", "billing",
     ("charges merchants and issues the monthly invoices", "가맹점 결제와 월 청구서 발행을 맡는다"),
     ("Payment vendor", "결제 대행사", ("Stripe", "Adyen"), "payments"),
     ("Merchants on the new checkout", "신규 결제 화면 가맹점 수", "merchants on the new checkout",
      "신규 결제 화면 가맹점", "곳", (90, 160), (120, 260))),
    ("notifications-service", "Notifications service", "알림 서비스", "notifications",
     ("sends email, push and in-app notifications", "이메일, 푸시, 앱 내 알림을 보낸다"),
     ("Email vendor", "이메일 발송 업체", ("SendGrid", "Mailgun", "Amazon SES"), None), None),
    ("search-service", "Search service", "검색 서비스", "search",
     ("serves product search and autocomplete", "상품 검색과 자동완성을 제공한다"),
     ("Hosting provider", "호스팅 업체", ("Elastic Cloud", "Aiven"), None),
     ("Index shards", "색인 샤드 수", "shards in the search index", "검색 색인 샤드", "개", (8, 13), (4, 9))),
    ("identity-service", "Identity service", "인증 서비스", "identity",
     ("signs customers and partners in and issues sessions", "고객과 파트너 로그인을 처리하고 세션을 발급한다"),
     ("Login provider", "로그인 제공자", ("Auth0", "Keycloak"), "login"), None),
    ("ledger-service", "Ledger service", "원장 서비스", "ledger",
     ("books every money movement as debit and credit", "모든 금액 이동을 차변과 대변으로 기록한다"), None,
     ("Nightly reconciliation jobs", "야간 정산 작업 수", "nightly reconciliation jobs in the ledger",
      "야간 정산 작업", "개", (6, 11), (3, 7))),
    ("shipping-service", "Shipping service", "배송 서비스", "shipping",
     ("books carriers and tracks parcels", "택배사를 예약하고 배송을 추적한다"),
     ("Maps provider", "지도 제공자", ("Kakao Maps", "Naver Maps"), None),
     ("Carrier integrations", "택배사 연동 수", "carrier integrations in shipping", "택배사 연동", "곳", (3, 6), (1,
                                                                                                      3))),
    ("reporting-service", "Reporting service", "리포트 서비스", "reporting",
     ("renders the partner and finance reports", "파트너 리포트와 재무 리포트를 만든다"), None,
     ("Scheduled reports", "예약 리포트 수", "scheduled reports", "예약 리포트", "개", (30, 45), (8, 20))),
    ("media-service", "Media service", "미디어 서비스", "media",
     ("stores product images and video and serves them to the apps", "상품 이미지와 영상을 저장하고 앱에 제공한다"),
     ("CDN", "CDN", ("Cloudflare", "Fastly"), "cdn"), None),
    ("catalog-service", "Catalog service", "카탈로그 서비스", "catalog",
     ("holds product data and partner feeds", "상품 데이터와 파트너 피드를 관리한다"), None,
     ("Partner feeds", "파트너 피드 수", "partner feeds in the catalog", "카탈로그 파트너 피드", "개", (12, 20), (3,
                                                                                                  8))),
    ("flags-service", "Feature flag service", "기능 플래그 서비스", "feature flags",
     ("decides which users see which features", "어떤 사용자에게 어떤 기능을 보여줄지 정한다"),
     ("Flag platform", "플래그 플랫폼", ("LaunchDarkly", "Unleash"), "flags"), None),
]
PROJECTS = [  # key, English, Korean, goal (en, ko)
    ("atlas", "Project Atlas", "아틀라스 프로젝트", ("rebuild the checkout flow", "결제 화면 재구축")),
    ("beacon", "Project Beacon", "비콘 프로젝트", ("move every notification to one template system",
                                             "알림 템플릿 통합")),
    ("compass", "Project Compass", "컴퍼스 프로젝트", ("live parcel tracking for customers",
                                                "고객용 실시간 배송 추적")),
    ("delta", "Project Delta", "델타 프로젝트", ("move the ledger to the v2 schema", "원장 v2 스키마 이전")),
    ("echo", "Project Echo", "에코 프로젝트", ("improve search relevance", "검색 정확도 개선")),
    ("forge", "Project Forge", "포지 프로젝트", ("a self-service developer platform", "셀프 서비스 개발 플랫폼")),
    ("harbor", "Project Harbor", "하버 프로젝트", ("clean up data retention", "데이터 보존 정리")),
]
PROJECT_STATUS = [("on track", "정상 진행"), ("at risk", "지연 위험"), ("blocked", "중단"), ("in beta", "베타")]
TOOLS = [  # key, name, unit (en, ko), price pairs, seats range
    ("pagerduty", "PagerDuty", ("seat", "좌석"), ((21, 25), (19, 23)), (28, 40)),
    ("jira", "Jira", ("seat", "좌석"), ((7.75, 8.6), (8.15, 9.05)), (40, 60)),
    ("figma", "Figma", ("seat", "좌석"), ((45, 40), (40, 45)), (8, 14)),
    ("datadog", "Datadog", ("host", "호스트"), ((15, 18), (18, 23)), (60, 90)),
    ("github", "GitHub", ("seat", "좌석"), ((21, 19), (19, 21)), (40, 60)),
    ("notion", "Notion", ("seat", "좌석"), ((10, 12), (8, 10)), (45, 65)),
]
ADR_CHAINS = [  # key, topic (en, ko), values: (tool, title en, title ko), the service whose vendor it is
    ("payments", ("card payments", "카드 결제"),
     [("Stripe", "Use Stripe for card payments", "카드 결제에 Stripe 사용"),
      ("Adyen", "Move card payments to Adyen", "카드 결제를 Adyen으로 이전")], "billing-service"),
    ("login", ("customer login", "고객 로그인"),
     [("Auth0", "Use Auth0 for customer login", "고객 로그인에 Auth0 사용"),
      ("Keycloak", "Self-host Keycloak for customer login", "고객 로그인에 Keycloak 자체 운영")], "identity-service"),
    ("cdn", ("media delivery", "미디어 전송"),
     [("Cloudflare", "Serve media through Cloudflare", "미디어 전송에 Cloudflare 사용"),
      ("Fastly", "Serve media through Fastly", "미디어 전송을 Fastly로 이전")], "media-service"),
    ("flags", ("feature flags", "기능 플래그"),
     [("LaunchDarkly", "Use LaunchDarkly for feature flags", "기능 플래그에 LaunchDarkly 사용"),
      ("Unleash", "Self-host Unleash for feature flags", "기능 플래그에 Unleash 자체 운영")], "flags-service"),
    ("search-engine", ("product search", "상품 검색"),
     [("Elasticsearch", "Use Elasticsearch for product search", "상품 검색에 Elasticsearch 사용"),
      ("OpenSearch", "Move product search to OpenSearch", "상품 검색을 OpenSearch로 이전")], None),
    ("events", ("domain events", "도메인 이벤트"),
     [("Kafka", "Use Kafka for domain events", "도메인 이벤트에 Kafka 사용"),
      ("NATS JetStream", "Use NATS JetStream for domain events", "도메인 이벤트에 NATS JetStream 사용")], None),
    ("internal-calls", ("calls between internal services", "내부 서비스 간 호출"),
     [("REST with JSON", "Use REST with JSON between services", "서비스 간 호출에 REST와 JSON 사용"),
      ("gRPC", "Use gRPC between internal services", "내부 서비스 간 호출에 gRPC 사용")], None),
    ("reports", ("report generation", "리포트 생성"),
     [("nightly batch jobs", "Build reports with nightly batch jobs", "야간 배치로 리포트 생성"),
      ("Apache Flink", "Stream reports with Apache Flink", "Apache Flink로 리포트 스트리밍")], None),
    ("sessions", ("session storage", "세션 저장소"),
     [("PostgreSQL", "Store sessions in PostgreSQL", "세션을 PostgreSQL에 저장"),
      ("Redis", "Move sessions to Redis", "세션을 Redis로 이전"),
      ("Valkey", "Move sessions from Redis to Valkey", "세션을 Redis에서 Valkey로 이전")], None),
]
STATIC_ADRS = [  # title en, title ko, what (en, ko)
    ("Record architecture decisions", "아키텍처 결정 기록", ("we write an ADR for every decision that is hard to undo",
                                                       "되돌리기 어려운 결정마다 ADR을 쓴다")),
    ("Use PostgreSQL for the ledger", "원장에 PostgreSQL 사용", ("the ledger needs transactions and row locks",
                                                           "원장에는 트랜잭션과 행 잠금이 필요하다")),
    ("Keep all services in one monorepo", "모든 서비스를 하나의 모노레포로 관리",
     ("one pull request can change a service and its clients together",
      "서비스와 클라이언트를 한 PR로 함께 바꿀 수 있다")),
    ("Use OpenTelemetry for tracing", "분산 추적에 OpenTelemetry 사용",
     ("one vendor-neutral SDK for every language we use", "모든 언어에 벤더 중립 SDK 하나")),
    ("Manage infrastructure with Terraform", "Terraform으로 인프라 관리",
     ("every bucket and database is reviewed as code", "버킷과 데이터베이스를 코드로 리뷰한다")),
    ("Lint Python with Ruff", "파이썬 린트에 Ruff 사용", ("one fast tool replaces four linters",
                                                  "빠른 도구 하나가 린터 넷을 대신한다")),
    ("Deploy with Argo CD", "Argo CD로 배포", ("deploys become pull requests and drift is visible",
                                          "배포가 PR이 되고 설정 차이가 보인다")),
    ("Version event schemas with Protobuf", "이벤트 스키마를 Protobuf로 버전 관리",
     ("producers and consumers share one versioned schema", "생산자와 소비자가 버전 있는 스키마 하나를 공유한다")),
]
D_CHAINS = [  # key, values (entry title en, ko), questions: current, as_of (with {month}), per value: still, instead
    ("freeze", [("Deploy freeze starts Thursday 18:00", "배포 동결은 목요일 18시부터"),
                ("Deploy freeze starts Friday 12:00", "배포 동결은 금요일 12시부터")],
     {"current": (["When does the weekly deploy freeze start these days?",
                   "At the moment, from when are deploys frozen each week?"],
                  ["요즘 배포 동결은 매주 언제부터 시작해?", "지금 배포 동결 시작 시간이 언제야?"]),
      "as_of": (["When did the deploy freeze start each week in {month}?"], ["{kmonth}에는 배포 동결이 언제부터였어?"]),
      "still": [(["Does the deploy freeze still start on Thursday evening?"], ["배포 동결 아직 목요일 저녁부터야?"]),
                (["Is the deploy freeze still from Friday noon?"], ["배포 동결은 여전히 금요일 정오부터야?"])],
      "instead": [(["What did we decide instead of the Thursday evening deploy freeze?"],
                   ["목요일 저녁 배포 동결 대신 뭘로 정했어?"])]}),
    ("sprint", [("Sprints last two weeks", "스프린트는 2주"), ("Sprints last three weeks", "스프린트는 3주")],
     {"current": (["How long are our sprints now?", "What's the sprint length as things stand?"],
                  ["지금 스프린트 기간이 얼마야?", "요즘 스프린트는 몇 주짜리야?"]),
      "as_of": (["How long was a sprint in {month}?"], ["{kmonth}에는 스프린트가 몇 주였어?"]),
      "still": [(["Are sprints still two weeks long?"], ["스프린트 아직 2주야?"]),
                (["Do sprints still run for three weeks?"], ["스프린트는 여전히 3주야?"])],
      "instead": [(["What replaced the two-week sprint decision?"], ["2주 스프린트 결정은 뭘로 바뀌었어?"])]}),
    ("reviews", [("One approval for every change", "모든 변경에 리뷰 승인 1개"),
                 ("Two approvals for billing and ledger changes", "결제·원장 변경에는 리뷰 승인 2개")],
     {"current": (["How many review approvals does a billing change need now?",
                   "What's the code review approval rule today?"],
                  ["지금 결제 코드 변경에는 리뷰 승인이 몇 개 필요해?", "요즘 코드 리뷰 승인 규칙이 어떻게 돼?"]),
      "as_of": (["How many approvals did a billing change need in {month}?"],
                ["{kmonth}에는 결제 변경에 리뷰 승인이 몇 개 필요했어?"]),
      "still": [(["Is one review approval still enough for every change?"], ["아직 모든 변경에 리뷰 승인 1개면 돼?"]),
                (["Do billing and ledger changes still need two approvals?"],
                 ["결제·원장 변경은 여전히 승인 2개가 필요해?"])],
      "instead": [(["What did we decide instead of one approval for every change?"],
                   ["리뷰 승인 1개 규칙 대신 뭘로 정했어?"])]}),
    ("oncall-shift", [("On-call shifts last one week", "온콜 교대는 1주 단위"),
                      ("On-call shifts last two weeks", "온콜 교대는 2주 단위")],
     {"current": (["How long is an on-call shift at the moment?", "How long do on-call shifts last these days?"],
                  ["지금 온콜 교대는 몇 주 단위야?", "요즘 온콜 한 번 서면 얼마나 해?"]),
      "as_of": (["How long was an on-call shift in {month}?"], ["{kmonth}에는 온콜 교대가 몇 주 단위였어?"]),
      "still": [(["Are on-call shifts still one week long?"], ["온콜 교대 아직 1주 단위야?"]),
                (["Do on-call shifts still last two weeks?"], ["온콜 교대는 여전히 2주야?"])],
      "instead": [(["What replaced the one-week on-call shift?"], ["1주 온콜 교대 결정은 뭘로 대체됐어?"])]}),
    ("postmortem", [("Postmortems within five working days", "장애 회고는 영업일 5일 안에"),
                    ("Postmortems within three working days", "장애 회고는 영업일 3일 안에")],
     {"current": (["How soon after an incident is the postmortem due now?",
                   "What's the deadline for a postmortem these days?"],
                  ["지금 장애 회고는 며칠 안에 써야 해?", "요즘 장애 회고 기한이 며칠이야?"]),
      "as_of": (["Within how many days was a postmortem due in {month}?"],
                ["{kmonth}에는 장애 회고를 며칠 안에 써야 했어?"]),
      "still": [(["Do we still get five working days to write a postmortem?"],
                 ["장애 회고 아직 영업일 5일 안에 쓰면 돼?"]),
                (["Is the postmortem deadline still three working days?"], ["장애 회고 기한은 여전히 3일이야?"])],
      "instead": [(["What did we decide instead of five days for postmortems?"],
                   ["장애 회고 5일 규칙 대신 뭘로 정했어?"])]}),
    ("staging", [("Staging data is refreshed every week", "스테이징 데이터는 매주 갱신"),
                 ("Staging data is refreshed every night", "스테이징 데이터는 매일 밤 갱신")],
     {"current": (["How often is the staging data refreshed now?",
                   "As things stand, how often do we refresh staging data?"],
                  ["지금 스테이징 데이터는 얼마나 자주 갱신해?", "요즘 스테이징 데이터 갱신 주기가 어떻게 돼?"]),
      "as_of": (["How often was staging data refreshed in {month}?"],
                ["{kmonth}에는 스테이징 데이터를 얼마나 자주 갱신했어?"]),
      "still": [(["Is staging data still refreshed only once a week?"], ["스테이징 데이터 아직 매주 한 번 갱신해?"]),
                (["Is staging still refreshed every night?"], ["스테이징은 여전히 매일 밤 갱신돼?"])],
      "instead": [(["What replaced the weekly staging refresh?"], ["주간 스테이징 갱신 결정은 뭘로 바뀌었어?"])]}),
    ("design-docs", [("Design docs are written in English", "설계 문서는 영어로 작성"),
                     ("Design docs may be written in Korean or English", "설계 문서는 한국어나 영어로 작성")],
     {"current": (["Which language do design docs have to be in now?",
                   "Can I write a design doc in Korean these days?"],
                  ["지금 설계 문서는 어떤 언어로 써야 해?", "요즘 설계 문서 한국어로 써도 돼?"]),
      "as_of": (["Which language did design docs have to be in in {month}?"],
                ["{kmonth}에는 설계 문서를 어떤 언어로 써야 했어?"]),
      "still": [(["Do design docs still have to be in English?"], ["설계 문서는 아직 영어로만 써야 해?"]),
                (["Are Korean design docs still allowed?"], ["설계 문서 여전히 한국어로 써도 돼?"])],
      "instead": [(["What did we decide instead of English-only design docs?"],
                   ["영어 설계 문서 결정 대신 뭘로 정했어?"])]}),
]
STATIC_DECISIONS = [("Use Conventional Commits in every repository", "모든 저장소에 Conventional Commits 사용"),
                    ("Keep one CHANGELOG per service", "서비스마다 CHANGELOG 하나 유지"),
                    ("Log timestamps in UTC", "로그 시각은 UTC로 기록"),
                    ("Tag every cloud resource with its owning team", "모든 클라우드 리소스에 담당 팀 태그"),
                    ("Weekly sync on Mondays at 10:00", "주간회의는 월요일 10시"),
                    ("Feature work stops when the error budget is spent", "에러 버짓을 다 쓰면 기능 개발 중단")]
DOCS = [  # key, folder, name (en, ko), contents per version (en, ko), questions
    ("billing-refunds", "runbooks", ("billing refunds runbook", "환불 처리 런북"),
     [("To re-run a failed refund, open the Stripe dashboard, find the charge and press Refund again.",
       "실패한 환불은 Stripe 대시보드에서 결제 건을 찾아 환불을 다시 누른다."),
      ("To re-run a failed refund, open the Adyen Customer Area, find the payment and start a new refund.",
       "실패한 환불은 Adyen Customer Area에서 결제 건을 찾아 새 환불을 시작한다.")],
     {"current": (["How do I re-run a failed refund at the moment?"], ["지금은 실패한 환불을 어떻게 다시 처리해?"]),
      "still": (["Do we still re-run failed refunds from the Stripe dashboard?"],
                ["실패한 환불 아직 Stripe 대시보드에서 다시 해?"]),
      "as_of": (["How did we re-run a failed refund in {month}?"],
                ["{kmonth}에는 실패한 환불을 어디서 다시 처리했어?"]),
      "replaced": (["Which runbook replaced the old billing refunds runbook?"],
                   ["예전 환불 런북을 대체한 문서는 뭐야?"])}),
    ("deploy-policy", "policies", ("deploy policy", "배포 정책"),
     [("Every deploy needs one approval. No deploys after 16:00.",
       "모든 배포에는 승인 1개가 필요하다. 16시 이후에는 배포하지 않는다."),
      ("Billing and ledger deploys need two approvals. No deploys after 17:00 on Fridays.",
       "결제·원장 배포에는 승인 2개가 필요하다. 금요일 17시 이후에는 배포하지 않는다.")],
     {"current": (["What's the latest cut-off time for deploys these days?"], ["요즘 배포는 몇 시까지 할 수 있어?"]),
      "still": (["Is 16:00 still the last time we can deploy?"], ["아직 16시 이후에는 배포 못 해?"]),
      "as_of": (["Until what time could we deploy in {month}?"], ["{kmonth}에는 몇 시까지 배포할 수 있었어?"]),
      "replaced": (["What superseded the original deploy policy?"], ["처음 배포 정책을 대체한 문서는?"])}),
    ("access-policy", "policies", ("access policy", "접근 정책"),
     [("Production database access is approved by the team lead and lasts one day.",
       "운영 DB 접근은 팀 리드가 승인하고 하루 동안 유효하다."),
      ("Production database access is approved by the security officer and expires after eight hours.",
       "운영 DB 접근은 보안 담당자가 승인하고 8시간 뒤 만료된다.")],
     {"current": (["Who approves production database access now?"], ["지금 운영 DB 접근은 누가 승인해?"]),
      "still": (["Does the team lead still approve production database access?"],
                ["운영 DB 접근 아직 팀 리드가 승인해?"]),
      "as_of": (["Who approved production database access in {month}?"],
                ["{kmonth}에는 운영 DB 접근을 누가 승인했어?"]),
      "replaced": (["Which document replaced the first access policy?"], ["예전 접근 정책을 대체한 문서는 뭐야?"])}),
    ("on-call-handbook", "policies", ("on-call handbook", "온콜 핸드북"),
     [("Acknowledge a page within 15 minutes. The secondary is paged after 30 minutes.",
       "호출은 15분 안에 응답한다. 30분이 지나면 2차 담당자를 호출한다."),
      ("Acknowledge a page within 5 minutes. The secondary is paged after 15 minutes.",
       "호출은 5분 안에 응답한다. 15분이 지나면 2차 담당자를 호출한다.")],
     {"current": (["How fast do I have to acknowledge a page now?"], ["지금 온콜 호출은 몇 분 안에 응답해야 해?"]),
      "still": (["Is the page acknowledgement window still 15 minutes?"], ["호출 응답 기한 아직 15분이야?"]),
      "as_of": (["Within how many minutes did we have to acknowledge a page in {month}?"],
                ["{kmonth}에는 호출에 몇 분 안에 응답해야 했어?"]),
      "replaced": (["What replaced the old on-call handbook?"], ["예전 온콜 핸드북을 대체한 문서는?"])}),
    ("search-reindex", "runbooks", ("search reindex runbook", "검색 재색인 런북"),
     [("Start the reindex from the ops console and watch the shard graph.",
       "운영 콘솔에서 재색인을 시작하고 샤드 그래프를 지켜본다."),
      ("Run make reindex from the search repository; it pauses the partner feeds first.",
       "검색 저장소에서 make reindex를 실행한다. 파트너 피드를 먼저 멈춘다.")],
     {"current": (["How do I start a search reindex these days?"], ["요즘 검색 재색인은 어떻게 시작해?"]),
      "still": (["Do we still start search reindexing from the ops console?"],
                ["검색 재색인 아직 운영 콘솔에서 시작해?"]),
      "as_of": (["How did we start a search reindex in {month}?"], ["{kmonth}에는 검색 재색인을 어떻게 시작했어?"]),
      "replaced": (["Is there a newer search reindex runbook? Which one replaced the first?"],
                   ["검색 재색인 런북 새 버전은 뭐야?"])}),
    ("release-checklist", "guides", ("release checklist", "릴리스 체크리스트"),
     [("Announce the release in #releases one day ahead.", "릴리스 하루 전에 #releases 채널에 공지한다."),
      ("Announce the release in #releases two hours ahead and attach the changelog.",
       "릴리스 두 시간 전에 #releases 채널에 공지하고 변경 내역을 첨부한다.")],
     {"current": (["How far ahead do we announce a release at the moment?"], ["지금 릴리스 공지는 얼마나 미리 해?"]),
      "still": (["Do we still announce releases a whole day ahead?"], ["릴리스 공지 아직 하루 전에 해?"]),
      "as_of": (["How far ahead did we announce releases in {month}?"],
                ["{kmonth}에는 릴리스를 얼마나 미리 공지했어?"]),
      "replaced": (["What replaced the first release checklist?"], ["예전 릴리스 체크리스트를 대체한 문서는?"])}),
]

EN_UPDATES = [
    "{svc}: the flaky integration test is fixed and the build is green again.",
    "{svc}: p95 latency went up after Tuesday's deploy; still looking into it.",
    "{svc}: dashboards moved to the new Grafana folder.",
    "{svc}: quiet week, no pages.",
    "{svc}: the dependency upgrades are merged.",
    "{svc}: log volume is down a fifth after the sampling change.",
    "{svc}: the staging environment was rebuilt from scratch.",
    "{svc}: two customer tickets about timeouts, both closed.",
    "{proj}: the demo went well; two follow-ups for design.",
    "{proj}: the test plan was reviewed with QA.",
    "{proj}: waiting on legal review of the partner contract.",
    "{proj}: the backlog was groomed, ten tickets closed.",
]
KO_UPDATES = [
    "{svc}: 불안정한 통합 테스트 수정, 빌드 정상.",
    "{svc}: 화요일 배포 후 p95 지연 상승. 원인 확인 중.",
    "{svc}: 대시보드를 새 Grafana 폴더로 옮김.",
    "{svc}: 이번 주 호출 없음.",
    "{svc}: 의존성 업그레이드 병합 완료.",
    "{svc}: 샘플링 변경 후 로그 양 20% 감소.",
    "{svc}: 스테이징 환경 재구성.",
    "{proj}: 데모 잘 끝남. 디자인 후속 작업 2건.",
    "{proj}: QA와 테스트 계획 리뷰.",
    "{proj}: 파트너 계약 법무 검토 대기 중.",
    "{proj}: 백로그 정리, 티켓 10개 종료.",
]
EN_TASKS = ["update the runbook", "write the migration plan", "check the alert thresholds", "book the load test",
            "clean up the old dashboards", "reply to the partner", "draft the quarterly goals",
            "review the cost report", "schedule the game day", "rotate the API keys"]
KO_TASKS = ["런북 업데이트", "이전 계획 작성", "알림 임계값 확인", "부하 테스트 일정 잡기", "오래된 대시보드 정리",
            "파트너 회신", "분기 목표 초안 작성", "비용 리포트 검토", "장애 훈련 일정 잡기", "API 키 교체"]
RETRO_GOOD = [("the release went out without a rollback", "롤백 없이 릴리스 완료"),
              ("pairing on the hard tickets helped", "어려운 티켓 페어 작업이 도움이 됨"),
              ("the new CI cache halved build times", "새 CI 캐시로 빌드 시간 절반"),
              ("on-call handovers were clear", "온콜 인수인계가 명확했음")]
RETRO_BAD = [("too many meetings on Wednesday", "수요일 회의가 너무 많음"),
             ("flaky end-to-end tests again", "E2E 테스트가 또 불안정"),
             ("estimates were far off for the migration", "이전 작업 추정이 크게 빗나감"),
             ("the staging environment was down for a day", "스테이징 환경이 하루 동안 중단")]
REVIEW_TOPICS = [("the retry policy of the webhooks", "웹훅 재시도 정책"), ("the shape of the audit log",
                                                                     "감사 로그 구조"),
                 ("caching product images at the edge", "엣지 상품 이미지 캐시"),
                 ("the schema of the order events", "주문 이벤트 스키마"),
                 ("rate limits for partner APIs", "파트너 API 요청 한도"),
                 ("splitting the reporting database", "리포트 DB 분리")]
INCIDENTS = [("checkout-errors", "Checkout errors after a config push",
              "a bad config push made the checkout return errors",
              "billing-service"),
             ("search-timeouts", "Search timeouts during the sale",
              "the search cluster ran out of heap during the sale",
              "search-service"),
             ("email-delays", "Delayed order emails", "a stuck queue delayed order emails by two hours",
              "notifications-service"),
             ("login-outage", "Login outage", "an expired signing key stopped logins for twenty minutes",
              "identity-service"),
             ("image-404s", "Missing product images", "a cache purge removed product images for an hour",
              "media-service"),
             ("ledger-drift", "Ledger drift in reconciliation",
              "two reconciliation jobs ran at once and double-booked refunds",
              "ledger-service")]
RUNBOOKS = [  # service key, slug, title en, title ko, steps en, steps ko
    ("billing-service", "billing-webhook-backlog", "Billing webhook backlog", "결제 웹훅 적체",
     "Scale the webhook workers to six replicas and watch the backlog graph for ten minutes.",
     "웹훅 워커를 6개로 늘리고 10분 동안 적체 그래프를 본다."),
    ("search-service", "search-high-latency", "Search high latency", "검색 응답 지연",
     "Open the p95 panel, compare it with the cluster heap panel and restart the slowest node last.",
     "p95 패널과 클러스터 힙 패널을 비교하고 가장 느린 노드는 마지막에 재시작한다."),
    ("notifications-service", "notifications-bounces", "Email bounce spike", "이메일 반송 급증",
     "Check the bounce dashboard by domain and pause the campaign that causes most bounces.",
     "도메인별 반송 대시보드를 보고 반송이 가장 많은 캠페인을 멈춘다."),
    ("identity-service", "identity-key-rotation", "Signing key rotation", "서명 키 교체",
     "Create the new key, publish it in the JWKS, wait one hour, then switch signing.",
     "새 키를 만들어 JWKS에 게시하고 한 시간 기다린 뒤 서명을 전환한다."),
    ("ledger-service", "ledger-reconciliation", "Reconciliation failure", "정산 실패",
     "Re-run the failed job with --dry-run first and compare the totals with the bank file.",
     "실패한 작업을 먼저 --dry-run으로 다시 돌리고 합계를 은행 파일과 비교한다."),
    ("shipping-service", "shipping-carrier-down", "Carrier API down", "택배사 API 장애",
     "Switch the carrier to manual booking in the admin and tell customer support.",
     "관리 화면에서 해당 택배사를 수동 예약으로 바꾸고 고객센터에 알린다."),
    ("reporting-service", "reporting-late-reports", "Late partner reports", "파트너 리포트 지연",
     "Check the scheduler queue, re-run the report for the partner and send it by hand.",
     "스케줄러 큐를 확인하고 해당 파트너 리포트를 다시 만들어 직접 보낸다."),
    ("media-service", "media-disk-full", "Media disk full", "미디어 디스크 부족",
     "Delete the rotated logs under /var/log/media and confirm the nightly rotation ran.",
     "/var/log/media 아래 회전된 로그를 지우고 야간 로그 회전이 돌았는지 확인한다."),
    ("catalog-service", "catalog-feed-stuck", "Partner feed stuck", "파트너 피드 멈춤",
     "Find the feed in the import table, reset its cursor and trigger one run by hand.",
     "임포트 테이블에서 피드를 찾아 커서를 초기화하고 한 번 수동으로 실행한다."),
    ("flags-service", "flags-stale-cache", "Stale flag cache", "플래그 캐시 갱신 안 됨",
     "Flush the flag cache in every region and check that the SDKs reconnect.",
     "모든 리전의 플래그 캐시를 비우고 SDK가 다시 연결되는지 확인한다."),
]

UNANSWERABLE = {  # (question, distinguishing words no vault file contains)
    "en": [
        ("Who owns the loyalty points service now?", ("loyalty",)),
        ("Is Braintree still our payment vendor?", ("braintree",)),
        ("What did we pay per seat for Zoom in March 2024?", ("zoom",)),
        ("Who was the on-call lead for the fax gateway in May 2024?", ("fax",)),
        ("What did we decide instead of using Solr?", ("solr",)),
        ("When is Project Nightingale due these days?", ("nightingale",)),
        ("Are we still on Twilio for text messages?", ("twilio",)),
        ("Who leads the warehouse robotics project at the moment?", ("warehouse", "robotics")),
        ("How many Salesforce licences do we have right now?", ("salesforce",)),
        ("Who owned the recommendations engine in February 2024?", ("recommendations",)),
        ("Is Mixpanel still our product analytics tool?", ("mixpanel",)),
        ("What replaced the old VPN policy?", ("vpn",)),
        ("As of June 2024, which bank handled our payouts?", ("payouts",)),
        ("What's the current budget for the Jeju offsite?", ("jeju",)),
        ("Who is in charge of the chatbot these days?", ("chatbot",)),
        ("Is the hackathon still planned for October?", ("hackathon",)),
        ("What was the price of a Tableau licence in April 2024?", ("tableau",)),
        ("Which ADR superseded the decision to use MongoDB?", ("mongodb",)),
        ("Who took over the crypto wallet integration?", ("crypto", "wallet")),
        ("How many drivers were on the courier app in July 2024?", ("courier", "drivers")),
    ],
    "ko": [
        ("요즘 포인트 적립 서비스 담당자는 누구야?", ("적립",)),
        ("2024년 4월에 물류 창고 담당자는 누구였어?", ("창고",)),
        ("아직 브레인트리로 결제 받아?", ("브레인트리",)),
        ("현재 챗봇 서비스 오너는 누구예요?", ("챗봇",)),
        ("2024년 3월 기준 사내 카페 운영 업체는 어디였어?", ("카페",)),
        ("나이팅게일 프로젝트 마감일이 지금 언제야?", ("나이팅게일",)),
        ("해커톤은 아직 10월에 해?", ("해커톤",)),
        ("VPN 정책을 대체한 문서는 뭐야?", ("vpn",)),
        ("태블로 라이선스 지금 몇 개 있어?", ("태블로",)),
        ("2024년 6월에는 제주 워크숍 예산이 얼마였어?", ("제주",)),
    ],
}


# --- the model ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Person:
    en: str
    ko: str
    alias: str
    slug: str
    role: tuple[str, str]
    office: tuple[str, str]
    focus: tuple[str, str]
    korean: bool
    joined: date

    @property
    def first(self) -> str:
        return self.en.split()[0]


@dataclass(eq=False)
class Note:
    path: str
    korean: bool
    day: date
    heading: str
    front: list[tuple[str, str]] = field(default_factory=list)
    intro: list[str] = field(default_factory=list)
    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    series: str = ""
    changes: int = 0

    @property
    def stem(self) -> str:
        return self.path.rsplit("/", 1)[-1][:-3]

    def section(self, name: str) -> list[str]:
        for heading, lines in self.sections:
            if heading == name:
                return lines
        lines: list[str] = []
        self.sections.append((name, lines))
        return lines

    def render(self) -> str:
        head = ""
        if self.front:
            head = "---\n" + "".join(f"{key}: {value}\n" for key, value in self.front) + "---\n"
        body = f"# {self.heading}\n\n"
        body += "".join(paragraph + "\n\n" for paragraph in self.intro)
        for name, lines in self.sections:
            body += f"## {name}\n\n" + "\n".join(lines) + "\n\n"
        return head + body.rstrip() + "\n"


@dataclass(eq=False)
class Subject:
    """A thing with a page that states some of its facts: a service, project, vendor or the team."""

    key: str
    kind: str  # service | project | tool | team | adr | decision | doc
    en: str
    ko: str
    short: str  # how an English question names it ("billing")
    korean: bool
    pages: list[Note] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Value:
    payload: Any
    start: date
    holders: list[Note] = field(default_factory=list)
    learned: list[Note] = field(default_factory=list)


@dataclass(eq=False)
class Fact:
    key: str
    kind: str  # owner oncall vendor count price seats contract deadline lead status head headcount adr decision doc
    subject: Subject
    values: list[Value]
    info: dict[str, Any] = field(default_factory=dict)

    def at(self, day: date) -> int:
        """Index of the value valid on ``day``."""
        index = 0
        for i, value in enumerate(self.values):
            if value.start <= day:
                index = i
        return index


def _front_value(text: str) -> str:
    needs_quotes = any(c in text for c in ":#[]{}\"'") or text[:1] in "-*&!%@`|>?" or text.strip() != text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"' if needs_quotes else text


def _link(note: Note, label: str | None = None) -> str:
    return f"[[{note.stem}|{label}]]" if label else f"[[{note.stem}]]"


def _month(day: date, korean: bool) -> str:
    return f"{day.year}년 {day.month}월" if korean else f"{EN_MONTHS[day.month - 1]} {day.year}"


def _weekday_dates(weekday: int, start: date, end: date, every: int = 7) -> list[date]:
    day = start + timedelta(days=(weekday - start.weekday()) % 7)
    out = []
    while day <= end:
        out.append(day)
        day += timedelta(days=every)
    return out


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th ``weekday`` of a month (n = -1: the last)."""
    days = [d for d in range(1, calendar.monthrange(year, month)[1] + 1) if date(year, month, d).weekday() == weekday]
    return date(year, month, days[n])


class Vault:
    """The whole generated vault: people, notes, subjects and facts, built step by step from one seeded rng."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.notes: dict[str, Note] = {}
        self.people: list[Person] = []
        self.meetings: list[Note] = []
        self.reports: list[Note] = []
        self.subjects: dict[str, Subject] = {}
        self.facts: list[Fact] = []
        self.adrs: dict[str, list[Note]] = {}  # chain key -> ADR notes per value
        self.adr_numbers: dict[int, int] = {}  # id(note) -> number
        self.d_numbers: dict[tuple[str, int], int] = {}  # (chain, value index) -> D number
        self.docs: dict[str, list[Note]] = {}
        self.declarations: Counter[str] = Counter()
        self.page_declared: set[tuple[str, int]] = set()

    # --- helpers -------------------------------------------------------------------------------------------

    def add(self, note: Note) -> Note:
        if note.path in self.notes:
            raise ValueError(f"{note.path} is generated twice")
        if any(other.stem == note.stem for other in self.notes.values()):
            raise ValueError(f"two notes are called {note.stem!r}")
        self.notes[note.path] = note
        return note

    def name(self, person: Person, korean: bool, alias: float = 0.2) -> str:
        if self.rng.random() < alias:
            return person.alias
        return person.ko if korean else person.en

    def day_between(self, start: date, end: date) -> date:
        return start + timedelta(days=self.rng.randrange((end - start).days + 1))

    # --- people --------------------------------------------------------------------------------------------

    def make_people(self) -> None:
        rng = self.rng
        korean = set(rng.sample(range(len(PEOPLE)), round(len(PEOPLE) * 0.3)))
        for i, (en, ko, alias) in enumerate(PEOPLE):
            slug = en.lower().replace(" ", "-")
            person = Person(en, ko, alias, slug, rng.choice(ROLES[:7]), rng.choice(OFFICES), rng.choice(FOCUS),
                            i in korean, date(rng.choice((2019, 2020, 2021, 2022, 2023)), rng.randint(1, 12), 1))
            self.people.append(person)
        self.head = self.people[3]
        self.head.role = ROLES[7]

    def people_notes(self) -> None:
        rng = self.rng
        for p in self.people:
            k = p.korean
            other = p.en if k else p.ko
            front = [("title", _front_value(p.ko if k else p.en)), ("aliases", f"[{p.alias}, {other}]"),
                     ("tags", "[person]"),
                     ("created" if rng.random() < 0.5 else "updated", self.day_between(date(2024, 1, 8), date(2024, 2,
                                                                                                              28)).isoformat())]
            note = Note(f"people/{p.slug}.md", k, date(2024, 1, 8), p.ko if k else p.en, front)
            if k:
                note.intro = [f"{p.ko}({p.en}, 별명 {p.alias}). 플랫폼팀 {p.role[1]}.",
                              f"근무지: {p.office[1]}\n입사: {p.joined.year}년 {p.joined.month}월\n"
                              f"관심 분야: {p.focus[1]}\n슬랙: @{p.slug}"]
            else:
                note.intro = [f"{p.en} ({p.ko}), also called {p.alias}. {p.role[0]} on the platform team.",
                              f"Office: {p.office[0]}\nJoined: {EN_MONTHS[p.joined.month - 1]} {p.joined.year}\n"
                              f"Focus: {p.focus[0]}\nSlack: @{p.slug}"]
            self.add(note)

    # --- meetings ------------------------------------------------------------------------------------------

    def make_meetings(self) -> None:
        rng = self.rng
        plan: list[tuple[date, str, bool]] = []
        plan += [(d, "weekly-sync", False) for d in _weekday_dates(0, FIRST_DAY, LAST_DAY, 14)]
        plan += [(d, "주간회의", True) for d in _weekday_dates(2, date(2024, 1, 17), LAST_DAY, 14)]
        for month in range(1, 10):
            plan += [(_nth_weekday(2024, month, 1, 0), "planning", False),
                     (_nth_weekday(2024, month, 3, 2), "architecture-review", False),
                     (_nth_weekday(2024, month, 4, -1), "retro", False),
                     (_nth_weekday(2024, month, 2, 1), "payments-sync", False),
                     (_nth_weekday(2024, month, 0, 1), "월간계획", True),
                     (_nth_weekday(2024, month, 1, -1), "회고", True)]
        titles = {"weekly-sync": "Weekly sync", "planning": "Planning", "architecture-review": "Architecture review",
                  "retro": "Retro", "payments-sync": "Payments sync", "주간회의": "플랫폼 주간회의",
                  "월간계획": "월간 계획 회의", "회고": "플랫폼 회고"}
        for day, series, korean in sorted(plan):
            if day < FIRST_DAY or day > LAST_DAY:
                continue
            title = titles[series]
            folder = "회의록" if korean else "meetings"
            style = rng.choices(("file", "front", "heading"), (0.7, 0.15, 0.15))[0]
            week = day.isocalendar()[1]
            if style == "file":
                path, heading, front = f"{folder}/{day.isoformat()}-{series}.md", title, [("tags", "[meeting]")]
            elif style == "front":
                path = f"{folder}/{series}-{week:02d}주차.md" if korean else f"{folder}/{series}-w{week:02d}.md"
                heading, front = title, [("date", day.isoformat()), ("tags", "[meeting]")]
            else:  # the date only in the first heading: no title in front matter, so the heading is the title
                path = f"{folder}/{series}-{week:02d}주차.md" if korean else f"{folder}/{series}-w{week:02d}.md"
                heading = (f"{title} {day.year}년 {day.month}월 {day.day}일" if korean and rng.random() < 0.6
                           else f"{title} {day.isoformat()}")
                front = [("tags", "[meeting]")]
            note = Note(path, korean, day, heading, front, series=series)
            attendees = rng.sample(self.people, rng.randint(4, 7))
            names = ", ".join(self.name(p, korean) for p in attendees)
            note.intro = [f"참석: {names}" if korean else f"Attendees: {names}"]
            self._meeting_body(note, attendees)
            self.meetings.append(self.add(note))

    def _meeting_body(self, note: Note, attendees: list[Person]) -> None:
        rng, k = self.rng, note.korean
        services = [s for s in self.subjects.values() if s.kind == "service"]
        projects = [s for s in self.subjects.values() if s.kind == "project"]
        if note.series in ("retro", "회고"):
            good, bad = rng.sample(RETRO_GOOD, 2), rng.sample(RETRO_BAD, 2)
            note.section("잘된 점" if k else "What went well").extend(f"- {g[k]}" for g in good)
            note.section("개선할 점" if k else "What to improve").extend(f"- {b[k]}" for b in bad)
        elif note.series == "architecture-review":
            t = rng.choice(REVIEW_TOPICS)
            who = self.name(rng.choice(attendees), False)
            note.section("Discussion").append(f"- We went through {t[0]}; no decision yet, {who} will write up the "
                                              "options.")
        else:
            lines = note.section("업데이트" if k else "Updates")
            for _ in range(rng.randint(2, 4)):
                template = rng.choice(KO_UPDATES if k else EN_UPDATES)
                svc, proj = rng.choice(services), rng.choice(projects)
                lines.append("- " + template.format(svc=svc.ko if k else svc.en, proj=proj.ko if k else proj.en))
        tasks = note.section("할 일" if k else "Action items")
        for person in rng.sample(attendees, 2):
            due = note.day + timedelta(days=rng.randint(3, 12))
            task = rng.choice(KO_TASKS if k else EN_TASKS)
            tasks.append(f"- [ ] {self.name(person, k)}: {task} ({due.isoformat()}까지)" if k else
                         f"- [ ] {self.name(person, k)}: {task} by {due.isoformat()}")

    def meeting_after(self, day: date, korean: bool, series: Sequence[str] | None = None,
                      exclude: Sequence[Note] = ()) -> Note:
        """The first meeting on or after ``day`` in the language (and series) wanted, with room for a change."""
        for candidate in sorted(self.meetings + self.reports, key=lambda n: (n.day, n.path)):
            if candidate.day < day or candidate.korean != korean or candidate in exclude:
                continue
            if series is not None and candidate.series not in series:
                continue
            if candidate.changes < MAX_CHANGES_PER_MEETING:
                return candidate
        raise ValueError(f"no meeting after {day}")

    def make_reports(self) -> None:
        for month in range(1, 10):
            day = _nth_weekday(2024, month, 4, -1)
            note = Note(f"status/{day.year}-{day.month:02d}.md", False, day, f"Monthly status {day.isoformat()}",
                        [("tags", "[status]")], series="status")
            note.intro = ["What the platform team shipped and where things stand this month."]
            self.reports.append(self.add(note))

    # --- subjects and their facts -------------------------------------------------------------------------

    def make_subjects(self) -> None:
        rng = self.rng
        korean_services = set(rng.sample([s[0] for s in SERVICES], 3))
        for key, en, ko, short, does, vendor, count in SERVICES:
            self.subjects[key] = Subject(key, "service", en, ko, short, key in korean_services,
                                         info={"does": does, "vendor": vendor, "count": count,
                                               "repo": f"git.internal/platform/{key.removesuffix('-service')}",
                                               "language": rng.choice(("Go", "Python", "Kotlin", "TypeScript"))})
        korean_projects = set(rng.sample([p[0] for p in PROJECTS], 2))
        for key, en, ko, goal in PROJECTS:
            self.subjects[key] = Subject(key, "project", en, ko, en, key in korean_projects, info={"goal": goal})
        korean_tools = set(rng.sample([t[0] for t in TOOLS], 2))
        for key, name, unit, prices, seats in TOOLS:
            self.subjects[key] = Subject(key, "tool", name, name, name, key in korean_tools,
                                         info={"unit": unit, "prices": prices, "seats": seats})
        self.subjects["team"] = Subject("team", "team", "platform team", "플랫폼팀", "the platform team", False)

    def _change_days(self, values: int, first: tuple[date, date] = (date(2024, 3, 4), date(2024, 6, 21))) -> list[date]:
        days = [self.day_between(*first)]
        while len(days) < values - 1:
            start = days[-1] + timedelta(days=70)
            if start > date(2024, 9, 6):
                break
            days.append(self.day_between(start, date(2024, 9, 6)))
        return days

    def _people_sequence(self, n: int) -> list[Person]:
        out = [self.rng.choice(self.people)]
        while len(out) < n:
            nxt = self.rng.choice(self.people)
            if nxt is not out[-1] and nxt not in out:
                out.append(nxt)
        return out

    def make_facts(self) -> None:
        """Every fact's timeline: values with the day they were decided (snapped to a note later)."""
        rng = self.rng
        for subject in self.subjects.values():
            specs: list[tuple[str, list[Any], dict[str, Any]]] = []
            if subject.kind == "service":
                n = rng.choice((2, 2, 3))
                specs.append(("owner", self._people_sequence(n), {}))
                if rng.random() < 0.6:
                    specs.append(("oncall", self._people_sequence(rng.choice((2, 3))), {}))
                vendor = subject.info["vendor"]
                if vendor is not None:
                    label_en, label_ko, names, chain = vendor
                    specs.append(("vendor", list(names), {"label": (label_en, label_ko), "chain": chain}))
                count = subject.info["count"]
                if count is not None:
                    label_en, label_ko, noun_en, noun_ko, unit, start, step = count
                    n = rng.choice((2, 3, 3))
                    numbers = [rng.randint(*start)]
                    while len(numbers) < n:
                        numbers.append(numbers[-1] + rng.randint(*step))
                    specs.append(("count", numbers, {"label": (label_en, label_ko), "noun": (noun_en, noun_ko),
                                                      "unit": unit}))
            elif subject.kind == "project":
                specs.append(("deadline", [None] * rng.choice((2, 2, 3)), {}))
                if rng.random() < 0.5:
                    specs.append(("lead", self._people_sequence(2), {}))
                if rng.random() < 0.7:
                    statuses = [PROJECT_STATUS[0]]
                    statuses.append(rng.choice(PROJECT_STATUS[1:]))
                    if rng.random() < 0.5:
                        statuses.append(PROJECT_STATUS[0] if statuses[-1] != PROJECT_STATUS[0] else PROJECT_STATUS[3])
                    specs.append(("status", statuses, {}))
            elif subject.kind == "tool":
                prices = rng.choice(subject.info["prices"])
                specs.append(("price", list(prices), {"unit": subject.info["unit"]}))
                if rng.random() < 0.7:
                    seats = [rng.randint(*subject.info["seats"])]
                    for _ in range(rng.choice((1, 2))):
                        seats.append(seats[-1] + rng.choice((-4, -2, 3, 5, 6, 8)))
                    specs.append(("seats", seats, {"unit": subject.info["unit"]}))
                if rng.random() < 0.4:
                    specs.append(("contract", self._people_sequence(2), {}))
            else:  # the team
                heads = [self.head, rng.choice([p for p in self.people if p is not self.head])]
                specs.append(("head", heads, {}))
                size = rng.randint(13, 16)
                specs.append(("headcount", [size, size + rng.randint(1, 3), size + rng.randint(4, 5)], {}))
            for kind, payloads, info in specs:
                if info.get("chain"):
                    continue  # an ADR chain decides it: made with the ADRs
                days = self._change_days(len(payloads))
                payloads = payloads[: len(days) + 1]
                if kind == "deadline":  # each one a month end well after the change that sets it
                    payloads = []
                    for when in [days[0] - timedelta(days=20), *days]:
                        floor = max(when + timedelta(days=rng.randint(40, 75)),
                                    payloads[-1] + timedelta(days=25) if payloads else when)
                        payloads.append(date(floor.year, floor.month, calendar.monthrange(floor.year, floor.month)[1]))
                values = [Value(payloads[0], date(2024, 1, 1))] + [Value(p, d) for p, d in zip(payloads[1:], days,
                                                                                               strict=True)]
                self.facts.append(Fact(f"{subject.key}:{kind}", kind, subject, values, info))
            for _kind, _payloads, info in specs:
                if info.get("chain"):
                    self._chain_fact(info["chain"], subject, info)

    def _chain_fact(self, chain_key: str, service: Subject | None, info: dict[str, Any]) -> Fact:
        """A fact decided by a chain of ADRs: the first in 2023, each later one at an architecture review."""
        chain = next(c for c in ADR_CHAINS if c[0] == chain_key)
        reviews = [m for m in self.meetings if m.series == "architecture-review"]
        picks = [self.rng.choice([m for m in reviews if date(2024, 3, 1) <= m.day <= date(2024, 6, 30)])]
        while len(picks) < len(chain[2]) - 1:
            picks.append(self.rng.choice([m for m in reviews if m.day >= picks[-1].day + timedelta(days=62)]))
        first = date(2023, self.rng.randint(3, 11), self.rng.randint(1, 28))
        values = [Value(chain[2][0][0], first)] + [Value(v[0], m.day) for v, m in zip(chain[2][1:], picks, strict=True)]
        if service is None:
            subject = Subject(chain_key, "adr", chain[1][0], chain[1][1], chain[1][0], False)
            self.subjects[chain_key] = subject
            fact = Fact(f"adr:{chain_key}", "adr", subject, values, {"chain": chain_key, "reviews": picks})
        else:
            fact = Fact(f"{service.key}:vendor", "vendor", service, values,
                        {**info, "chain": chain_key, "reviews": picks})
        self.facts.append(fact)
        return fact

    # --- rendering values ----------------------------------------------------------------------------------

    def value_text(self, fact: Fact, payload: Any, korean: bool) -> str:
        kind = fact.kind
        if isinstance(payload, Person):
            return self.name(payload, korean)
        if kind == "count":
            return f"{payload}"
        if kind == "seats":
            return f"{payload}"
        if kind == "headcount":
            return f"{payload}명" if korean else f"{payload}"
        if kind == "price":
            unit = fact.info["unit"]
            amount = f"${payload:.2f}" if isinstance(payload, float) else f"${payload}"
            return f"{unit[1]}당 {amount}" if korean else f"{amount} per {unit[0]}"
        if kind == "deadline":
            return payload.isoformat()
        if kind == "status":
            return payload[1] if korean else payload[0]
        return str(payload)

    def label(self, fact: Fact, korean: bool) -> str:
        """The key of the fact's key-value line on its subject's page."""
        labels = {"owner": ("Owner", "담당자"), "oncall": ("On-call lead", "온콜 리드"), "price": ("Price", "가격"),
                  "seats": ("Seats", "좌석 수"), "contract": ("Contract owner", "계약 담당자"),
                  "deadline": ("Deadline", "마감일"), "lead": ("Lead", "리드"), "status": ("Status", "상태"),
                  "head": ("Head of team", "팀장"), "headcount": ("Headcount", "인원")}
        if fact.kind in ("vendor", "count"):
            return fact.info["label"][korean]
        if fact.kind == "seats" and fact.info["unit"][0] == "host":
            return ("Hosts", "호스트 수")[korean]
        return labels[fact.kind][korean]

    def subject_name(self, subject: Subject, korean: bool) -> str:
        return subject.ko if korean else subject.en

    def change_line(self, fact: Fact, index: int, korean: bool) -> str:
        """How a later note states the new value: a key-value line or prose, in the note's language."""
        rng, s = self.rng, fact.subject
        new = self.value_text(fact, fact.values[index].payload, korean)
        old = self.value_text(fact, fact.values[index - 1].payload, korean)
        name = self.subject_name(s, korean)
        if korean and not s.korean and rng.random() < 0.5:
            name = f"{s.ko}({s.en})"
        label = self.label(fact, korean)
        keyed = f"{name} {label}: {new}" if korean else f"{name} {label[0].lower() + label[1:]}: {new}"
        if fact.kind in ("count", "seats", "price", "headcount"):
            keyed = f"{name} {label}: {new}" if korean else f"{name} {label.lower()}: {new}"
        if fact.kind == "head":
            keyed = f"플랫폼팀 팀장: {new}" if korean else f"Head of the platform team: {new}"
        if fact.kind == "headcount":
            keyed = f"플랫폼팀 인원: {new}" if korean else f"Platform team headcount: {new}"
        if rng.random() < 0.55:
            return keyed
        seat_unit = fact.info["unit"] if fact.kind == "seats" else ("seat", "좌석")
        count_unit = fact.info["unit"] if fact.kind == "count" else ""
        prose = {
            "owner": (f"{new} takes over the {name.lower()} from {old}.",
                      f"{topic(name)} 이번 주부터 {subj(new)} 맡는다."),
            "oncall": (f"{new} is the {name.lower()} on-call lead from now on.", f"{name} 온콜 리드는 앞으로 {new}."),
            "vendor": (f"The {name.lower()} has moved from {old} to {new} ({label.lower()}).",
                       f"{name} {obj(label)} {old}에서 {ro(new)} 바꿨다."),
            "count": (f"{label} is at {new} now (was {old}).", f"{label}: {new}{count_unit} (이전 {old})."),
            "price": (f"{name} renewed: the price is {new} (was {old}).", f"{name} 갱신: 가격은 {new} (이전 {old})."),
            "seats": (f"{name} {seat_unit[0]}s changed from {old} to {new}.",
                      f"{name} {seat_unit[1]}을 {old}개에서 {new}개로 조정."),
            "contract": (f"{new} takes over the {name} contract from {old}.", f"{name} 계약은 {subj(new)} 맡는다."),
            "deadline": (f"{name} deadline moved from {old} to {new}.", f"{name} 마감일을 {old}에서 {ro(new)} 옮겼다."),
            "lead": (f"{new} now leads {name}.", f"{name} 리드가 {ro(new)} 바뀌었다."),
            "status": (f"{name} is {new} now.", f"{name} 현황: {new}."),
            "head": (f"{new} is the new head of the platform team.", f"플랫폼팀 팀장은 이제 {new}."),
            "headcount": (f"The team is {new} people now.", f"팀 인원은 이제 {new}."),
        }
        return prose[fact.kind][korean]

    # --- pages ---------------------------------------------------------------------------------------------

    def plan_versions(self) -> None:
        """Each service, project, vendor and the team gets a page dated in January; about a third get a second
        version on the day of one of their changes (a vendor's at its renewal, when the price changes), which
        states that change: it is not placed in a meeting."""
        rng = self.rng
        for subject in self.subjects.values():
            if subject.kind not in ("service", "project", "tool", "team"):
                continue
            facts = [f for f in self.facts if f.subject is subject]
            versions = [self.day_between(date(2024, 1, 8), date(2024, 1, 26))]
            changes = [(f, i) for f in facts if not f.info.get("chain") for i in range(1, len(f.values))]
            declared = None
            if subject.kind == "tool":  # prices change at the yearly renewal: a new contract note
                declared = (next(f for f in facts if f.kind == "price"), 1)
            elif changes and rng.random() < 0.35:
                declared = rng.choice(changes)
            if declared is not None:
                versions.append(declared[0].values[declared[1]].start)
                self.page_declared.add((declared[0].key, declared[1]))
            subject.info["versions"] = versions

    def make_pages(self) -> None:
        """The page versions, each stating the values valid on its day."""
        for subject in self.subjects.values():
            if subject.kind not in ("service", "project", "tool", "team"):
                continue
            facts = [f for f in self.facts if f.subject is subject]
            for number, day in enumerate(subject.info["versions"]):
                page = self._page(subject, facts, day, number)
                subject.pages.append(self.add(page))
                for fact in facts:
                    fact.values[fact.at(day)].holders.append(page)
            if len(subject.pages) == 2:
                self._declare_version(*subject.pages)

    def _declare_version(self, old: Note, new: Note) -> None:
        form = self.rng.choices(("front", "both", "text"), (0.35, 0.35, 0.3))[0]
        if form in ("front", "both"):
            new.front.append(("supersedes", f'"{_link(old)}"'))
            self.declarations["front_matter_supersedes"] += 1
        if form == "both":
            old.front.append(("superseded_by", f'"{_link(new)}"'))
            self.declarations["front_matter_superseded_by"] += 1
        if form == "text":
            if new.korean:
                new.intro.insert(0, f"이 문서는 {obj(_link(old))} 대체한다.")
                self.declarations["text_replaces_ko"] += 1
            else:
                new.intro.insert(0, f"This replaces {_link(old)}.")
                self.declarations["text_replaces"] += 1

    def _page(self, subject: Subject, facts: list[Fact], day: date, number: int) -> Note:
        k = subject.korean
        title = self.subject_name(subject, k)
        slug = {"service": "services", "project": "projects", "tool": "vendors", "team": ""}[subject.kind]
        if subject.kind == "team":
            path = "team.md" if number == 0 else "team-2024.md"
        elif subject.kind == "tool":
            path = f"vendors/{subject.key}.md" if number == 0 else f"vendors/{subject.key}-renewal-{day.year}.md"
        else:
            path = f"{slug}/{subject.key}.md" if number == 0 else f"{slug}/{subject.key}-v2.md"
        heading = title if subject.kind != "tool" or number == 0 else (
            f"{title} 계약 갱신" if k else f"{title} renewal")
        if subject.kind == "team":
            heading = "Platform team"
        front = [("title", _front_value(heading)), ("updated", day.isoformat()),
                 ("tags", f"[{subject.kind}]")]
        note = Note(path, k, day, heading, front)
        lines = [f"{self.label(f, k)}: {self.value_text(f, f.values[f.at(day)].payload, k)}" for f in facts]
        if subject.kind == "service":
            does = subject.info["does"][k]
            note.intro = [f"{topic(title)} {does}." if k else f"The {title.lower()} {does}."]
            lines += [f"저장소: {subject.info['repo']}" if k else f"Repository: {subject.info['repo']}",
                      f"언어: {subject.info['language']}" if k else f"Language: {subject.info['language']}"]
            runbook = next((r for r in RUNBOOKS if r[0] == subject.key), None)
            if runbook:
                note.section("런북" if k else "Runbooks").append(f"- [[{runbook[1]}]]")
        elif subject.kind == "project":
            goal = subject.info["goal"][k]
            note.intro = [f"목표: {goal}" if k else f"Goal: {goal}."]
        elif subject.kind == "tool":
            note.intro = ([f"{title} 사용 계약 정리." if number == 0 else f"{day.year}년 {title} 계약 갱신 내용."]
                          if k else
                          [f"What we pay for {title} and who manages it." if number == 0 else
                           f"The {title} contract as renewed in {EN_MONTHS[day.month - 1]} {day.year}."])
            renewal = subject.info["versions"][-1] if number == 0 else day.replace(year=day.year + 1)
            lines.append(f"갱신일: {renewal.isoformat()}" if k else f"Renewal: {renewal.isoformat()}")
        else:
            note.intro = ["The platform team builds the services behind checkout, search and notifications."]
            members = ", ".join(_link(Note(f"people/{p.slug}.md", False, day, p.en), p.en) for p in self.people[:10])
            note.section("Members").append(members + ", ...")
        note.section("현황" if k else "Facts")[:0] = lines
        note.sections.insert(0, note.sections.pop())
        return note

    # --- changes stated by later notes --------------------------------------------------------------------

    def place_changes(self) -> None:
        """Every change not stated by a page version goes into the first fitting note after its day: a
        meeting (or status report for counts and project statuses) in the subject's language, one in ten in
        the other language. The value starts on that note's day."""
        rng = self.rng
        for fact in self.facts:
            if fact.info.get("chain"):
                continue
            s = fact.subject
            used: list[Note] = []
            for index in range(1, len(fact.values)):
                value = fact.values[index]
                if (fact.key, index) in self.page_declared:  # a page version states it, on its day
                    continue
                korean = s.korean if rng.random() < 0.9 else not s.korean
                series: tuple[str, ...] = ("주간회의", "월간계획")
                if not korean:
                    series = ("weekly-sync", "planning")
                    if fact.kind in ("count", "status"):
                        series = ("status", "weekly-sync")
                    if s.key in ("billing-service", "ledger-service", "atlas", "delta"):
                        series = (*series, "payments-sync")
                    if fact.kind in ("head", "headcount"):
                        series = ("weekly-sync", "planning")
                note = self.meeting_after(value.start, korean, series, exclude=used)
                note.changes += 1
                used.append(note)
                value.start = note.day
                value.holders.append(note)
                line = self.change_line(fact, index, korean)
                name = "Numbers" if fact.kind == "count" else "Projects"
                section = note.section("업데이트" if korean else (name if note.series == "status" else "Updates"))
                section.insert(rng.randint(0, len(section)), f"- {line}")
            self._check_order(fact)

    def _check_order(self, fact: Fact) -> None:
        for earlier, later in zip(fact.values, fact.values[1:], strict=False):
            if later.start <= earlier.start:
                raise ValueError(f"{fact.key}: values out of order")

    def report_values(self) -> None:
        """The monthly status reports list every English count and project status valid on their day."""
        for report in self.reports:
            lines = report.section("Projects")
            numbers = report.section("Numbers")
            for fact in self.facts:
                if fact.subject.korean or fact.kind not in ("count", "status"):
                    continue
                value = fact.values[fact.at(report.day)]
                if report in value.holders:
                    continue
                if value.start > report.day:
                    continue
                text = self.value_text(fact, value.payload, False)
                if fact.kind == "status":
                    lines.append(f"- {fact.subject.en}: {text}")
                else:
                    numbers.append(f"- {self.label(fact, False)}: {text}")
                value.holders.append(report)
            if not lines:
                lines.append("- Nothing to report on projects this month.")
            if not numbers:
                report.sections.remove(("Numbers", numbers))

    # --- ADRs ---------------------------------------------------------------------------------------------

    @staticmethod
    def adr_number(note: Note) -> int:
        return int(note.path.split("/")[1].split("-")[0])

    def make_adrs(self) -> None:
        rng = self.rng
        for chain_key, *_ in ADR_CHAINS:
            if not any(f.info.get("chain") == chain_key for f in self.facts):
                self._chain_fact(chain_key, None, {})
        records: list[tuple[date, str, Any]] = []
        for i, entry in enumerate(STATIC_ADRS):
            day = date(2023, 2, 1) if i == 0 else date(rng.choice((2023, 2023, 2024)), rng.randint(1, 12),
                                                       rng.randint(1, 28))
            if day > date(2024, 8, 30):
                day = date(2023, day.month, day.day)
            records.append((day, f"static-{i}", entry))
        for fact in self.facts:
            chain_key = fact.info.get("chain")
            if chain_key:
                for index, value in enumerate(fact.values):
                    records.append((value.start, f"{chain_key}-{index}", (fact, index)))
        records.sort(key=lambda r: (r[0], r[1]))
        numbered = {key: number for number, (_day, key, _entry) in enumerate(records, start=1)}
        chains: dict[str, list[tuple[int, date, Fact, int]]] = {}
        for day, key, entry in records:
            if key.startswith("static-"):
                self._static_adr(numbered[key], day, entry)
            else:
                fact, index = entry
                chains.setdefault(fact.info["chain"], []).append((numbered[key], day, fact, index))
        for chain_key, items in chains.items():
            chain = next(c for c in ADR_CHAINS if c[0] == chain_key)
            notes = []
            korean = rng.random() < 0.3
            style = rng.choice(("nygard", "madr"))
            for position, (number, day, fact, index) in enumerate(items):
                previous = items[position - 1] if position else None
                following = items[position + 1] if position + 1 < len(items) else None
                note = self._chain_adr(chain, number, day, fact, index, previous, following, korean, style)
                notes.append(self.add(note))
                fact.values[index].holders.insert(0, note)
            self.adrs[chain_key] = notes
            fact = items[0][2]
            for index, review in enumerate(fact.info["reviews"], start=1):
                number = items[index][0]
                line = (f"- Agreed: {fact.values[index].payload} for {chain[1][0]} from now on, replacing "
                        f"{fact.values[index - 1].payload}; see ADR-{number}.")
                review.section("Decisions").append(line)
                review.changes += 1
                fact.values[index].holders.append(review)

    def _adr_path(self, number: int, title: str) -> str:
        slug = "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")
        while "--" in slug:
            slug = slug.replace("--", "-")
        return f"adr/{number:04d}-{slug}.md"

    def _static_adr(self, number: int, day: date, entry: tuple) -> None:
        title_en, title_ko, why = entry
        korean = self.rng.random() < 0.3
        title = title_ko if korean else title_en
        note = Note(self._adr_path(number, title_en), korean, day, f"{number}. {title}",
                    [("title", _front_value(f"{number}. {title}")), ("date", day.isoformat()), ("tags", "[adr]")])
        if korean:
            note.sections = [("상태", ["승인됨"]), ("배경", [f"{why[1]}."]), ("결정", [f"{title}."])]
        else:
            note.intro = [f"Date: {day.isoformat()}"]
            note.sections = [("Status", ["Accepted"]), ("Context", [f"{why[0][0].upper() + why[0][1:]}."]),
                             ("Decision", [f"We will {title_en[0].lower() + title_en[1:]}."])]
        self.add(note)

    def _chain_adr(self, chain: tuple, number: int, day: date, fact: Fact, index: int, previous: tuple | None,
                   following: tuple | None, korean: bool, style: str) -> Note:
        tool, title_en, title_ko = chain[2][index]
        topic_en, topic_ko = chain[1]
        title = title_ko if korean else title_en
        path = self._adr_path(number, title_en)
        deciders = ", ".join(self.name(p, korean, 0) for p in self.rng.sample(self.people, 2))
        service = fact.subject if fact.kind == "vendor" else None
        note = Note(path, korean, day, f"{number}. {title}" if style == "nygard" else title,
                    [("title", _front_value(f"{number}. {title}" if style == "nygard" else title)),
                     ("date", day.isoformat()), ("tags", "[adr]")])
        prev_tool = chain[2][index - 1][0] if index else None
        context_en = (f"The {service.en.lower()} needs a choice for {topic_en}." if service else
                      f"We need one way to handle {topic_en} across the services.")
        context_ko = (f"{service.ko}에 {topic_ko} 방식이 필요하다." if service else
                      f"서비스 전반의 {topic_ko} 방식을 하나로 정해야 한다.")
        if prev_tool:
            context_en += f" {prev_tool} no longer fits: costs went up and the team spent too much time on it."
            context_ko += f" {prev_tool}는 비용이 늘고 운영 부담이 커서 더 맞지 않는다."

        def ref(item: tuple) -> tuple[str, str]:
            other_number = item[0]
            other_title = chain[2][item[3]][1]
            return f"ADR-{other_number}", f"{self._adr_path(other_number, other_title).removeprefix('adr/')}"

        if style == "nygard":
            status: list[str]
            if korean:
                status = [f"{ro(ref(following)[0])} 대체됨" if following else "승인됨"]
                if previous:
                    status.append(f"{obj(ref(previous)[0])} 대체한다.")
                self.declarations["adr_status_ko"] += 1
                note.sections = [("상태", status), ("배경", [context_ko]), ("결정",
                                                                        [f"{topic_ko}에는 {obj(tool)} 쓴다."]),
                                 ("결정한 사람", [deciders])]
            else:
                status = [f"Superseded by {ref(following)[0]}" if following else "Accepted"]
                if previous:
                    name, target = ref(previous)
                    status.append(f"Supersedes [{name}]({target})" if self.rng.random() < 0.5 else f"Supersedes {name}")
                self.declarations["nygard_status"] += 1
                note.intro = [f"Date: {day.isoformat()}"]
                note.sections = [("Status", status), ("Context", [context_en]),
                                 ("Decision", [f"We will use {tool} for {topic_en}."]),
                                 ("Consequences",
                                  [f"Deciders: {deciders}. Everything new for {topic_en} uses {tool}."])]
        else:
            lines = []
            if following:
                name, target = ref(following)
                padded = f"ADR-{int(name.split('-')[1]):04d}"
                lines.append(f"* Status: superseded by [{padded}]({target})" if not korean else
                             f"* 상태: [{padded}]({target})로 대체됨")
                if self.rng.random() < 0.5:
                    note.front.append(("status", _front_value(f"superseded by {padded}")))
                    self.declarations["madr_front_status"] += 1
                self.declarations["madr_status"] += 1
            else:
                lines.append("* 상태: 승인됨" if korean else "* Status: accepted")
            if previous:
                name, target = ref(previous)
                padded = f"ADR-{int(name.split('-')[1]):04d}"
                lines.append(f"* Supersedes: [{padded}]({target})" if not korean else f"* 대체: [{padded}]({target})")
            lines += [f"* {'결정자' if korean else 'Deciders'}: {deciders}",
                      f"* {'날짜' if korean else 'Date'}: {day.isoformat()}"]
            note.intro = ["\n".join(lines)]
            options = [v[0] for v in chain[2]]
            if korean:
                note.sections = [("배경과 문제", [context_ko]), ("검토한 선택지", [f"* {o}" for o in options]),
                                 ("결정", [f"선택: \"{tool}\". {topic_ko}에 가장 적합하다."])]
            else:
                note.sections = [("Context and Problem Statement", [context_en]),
                                 ("Considered Options", [f"* {o}" for o in options]),
                                 ("Decision Outcome",
                                  [f"Chosen option: \"{tool}\", because it fits {topic_en} best today."])]
        return note

    # --- DECISIONS.md -------------------------------------------------------------------------------------

    def make_decisions(self) -> None:
        """DECISIONS.md: every team decision as ``## D-n: title`` with its date and the meeting that took it;
        a later decision says "Supersedes D-3" (or "D-3을 대체한다")."""
        rng = self.rng
        entries: list[tuple[date, str, Any]] = []
        for i, (en, ko) in enumerate(STATIC_DECISIONS):
            meeting = rng.choice([m for m in self.meetings if m.series in ("planning", "월간계획", "retro")])
            entries.append((meeting.day, f"static-{i}", (en, ko, meeting)))
        for key, values, questions in D_CHAINS:
            subject = Subject(key, "decision", values[0][0], values[0][1], key, False, info={"questions": questions})
            self.subjects[f"decision:{key}"] = subject
            korean = rng.random() < 0.3
            first = rng.choice([m for m in self.meetings if m.korean == korean and m.day < date(2024, 2, 20)
                                and m.series not in ("architecture-review",)])
            second = self.meeting_after(self.day_between(date(2024, 4, 1), date(2024, 7, 26)), korean, exclude=[first])
            fact = Fact(f"decision:{key}", "decision", subject,
                        [Value(values[0], first.day, [first]), Value(values[1], second.day, [second])],
                        {"questions": questions})
            self.facts.append(fact)
            for index, meeting in enumerate((first, second)):
                meeting.changes += 1
                entries.append((meeting.day, f"{key}-{index}", (fact, index, meeting)))
        entries.sort(key=lambda e: (e[0], e[1]))
        number = {key: n for n, (_d, key, _e) in enumerate(entries, start=1)}
        for key, *_ in D_CHAINS:
            self.d_numbers[(key, 0)] = number[f"{key}-0"]
            self.d_numbers[(key, 1)] = number[f"{key}-1"]
        log = Note("DECISIONS.md", False, LAST_DAY, "Decisions",
                   [("title", "Decisions"), ("updated", max(e[0] for e in entries).isoformat())])
        log.intro = ["Team decisions, newest last. A decision that changes an earlier one says which one it "
                     "supersedes."]
        for day, key, entry in entries:
            n = number[key]
            if key.startswith("static-"):
                en, ko, meeting = entry
                lines = [f"Date: {day.isoformat()}", f"Decided in: {_link(meeting)}"]
                log.sections.append((f"D-{n}: {en}", lines))
                continue
            fact, index, meeting = entry
            chain_key = key.rsplit("-", 1)[0]
            en, ko = fact.values[index].payload
            title = ko if meeting.korean else en
            lines = [f"Date: {day.isoformat()}", f"Decided in: {_link(meeting)}"]
            if index == 1:
                old = self.d_numbers[(chain_key, 0)]
                if meeting.korean:
                    lines.append(f"D-{obj(str(old))} 대체한다.")
                    self.declarations["decisions_ko"] += 1
                else:
                    lines.append(f"Supersedes D-{old}")
                    self.declarations["decisions_supersedes"] += 1
            log.sections.append((f"D-{n}: {title}", lines))
            decision_line = (f"- 결정 (D-{n}): {ko}." if meeting.korean else f"- Decision (D-{n}): {en}.")
            if index == 1:
                old = self.d_numbers[(chain_key, 0)]
                decision_line += (f" D-{obj(str(old))} 대체한다." if meeting.korean else f" This replaces D-{old}.")
            meeting.section("결정" if meeting.korean else "Decisions").append(decision_line)
        for fact in self.facts:
            if fact.kind == "decision":
                for value in fact.values:
                    value.holders.append(log)  # it states both values: a holder of none (see neutral notes)
        self.add(log)

    # --- versioned documents -------------------------------------------------------------------------------

    def make_docs(self) -> None:
        rng = self.rng
        for key, folder, names, contents, questions in DOCS:
            korean = rng.random() < 0.3
            first_day = self.day_between(date(2023, 11, 1), date(2024, 1, 31))
            second_day = self.day_between(date(2024, 3, 11), date(2024, 7, 19))
            subject = Subject(key, "doc", names[0], names[1], names[0], korean, info={"questions": questions})
            self.subjects[f"doc:{key}"] = subject
            notes = []
            for number, day in enumerate((first_day, second_day)):
                title = names[korean][0].upper() + names[korean][1:]
                path = f"{folder}/{key}.md" if number == 0 else f"{folder}/{key}-v2.md"
                front = [("title", _front_value(title)), ("updated", day.isoformat()), ("tags", f"[{folder}]")]
                note = Note(path, korean, day, title, front)
                text = contents[number][korean]
                note.sections = [("절차" if korean else "Steps", [text]),
                                 ("참고" if korean else "See also", ["- [[team]]"])]
                notes.append(self.add(note))
            self._declare_version(*notes)
            self.docs[key] = notes
            fact = Fact(f"doc:{key}", "doc", subject, [Value(contents[0], first_day, [notes[0]]),
                                                         Value(contents[1], second_day, [notes[1]])],
                        {"questions": questions})
            self.facts.append(fact)

    # --- distractors ---------------------------------------------------------------------------------------

    def make_distractors(self) -> None:
        rng = self.rng
        for slug, title, what, service_key in INCIDENTS:
            day = self.day_between(date(2024, 2, 1), date(2024, 9, 13))
            service = self.subjects[service_key]
            people = rng.sample(self.people, 2)
            note = Note(f"incidents/{day.isoformat()}-{slug}.md", False, day, f"Incident review: {title}",
                        [("tags", "[incident]")])
            note.intro = [f"Summary: {what}. Affected: {service.en}."]
            note.sections = [("Timeline", [f"- 10:02 alert fired for the {service.en.lower()}",
                                           f"- 10:09 {self.name(people[0], False)} acknowledged",
                                           f"- 10:41 {self.name(people[1], False)} confirmed the fix"]),
                             ("Follow-ups", ["- add an alert on the config checksum", "- write down the manual steps"])]
            self.add(note)
        for service_key, slug, title_en, title_ko, steps_en, steps_ko in RUNBOOKS:
            service = self.subjects[service_key]
            k = service.korean
            day = self.day_between(date(2023, 10, 2), date(2024, 8, 30))
            note = Note(f"runbooks/{slug}.md", k, day, title_ko if k else title_en,
                        [("title", _front_value(title_ko if k else title_en)), ("updated", day.isoformat()),
                         ("tags", "[runbook]")])
            note.intro = [f"{service.ko} 런북." if k else f"Runbook of the {service.en.lower()}."]
            note.sections = [("절차" if k else "Steps", [steps_ko if k else steps_en]),
                             ("에스컬레이션" if k else "Escalation",
                              ["서비스 담당자에게 연락한다(서비스 페이지 참고)." if k else
                               "Page the service owner (see the service page)."])]
            self.add(note)
        glossary = Note("glossary.md", False, date(2024, 2, 5), "Glossary",
                        [("title", "Glossary"), ("updated", "2024-02-05")])
        glossary.sections = [("Terms", ["- **SEV1**: an outage that hits every customer.",
                                        "- **ADR**: an architecture decision record, under adr/.",
                                        "- **D-n**: an entry of [[DECISIONS]].",
                                        "- **Error budget**: the failures an availability target allows."])]
        self.add(glossary)
        index = Note("index.md", False, date(2024, 1, 15), "Platform team home",
                     [("title", "Platform team home"), ("updated", "2024-01-15")])
        index.sections = [("Services", [f"- {_link(s.pages[0], s.en)}" for s in self.subjects.values()
                                        if s.kind == "service"]),
                          ("Projects", [f"- {_link(s.pages[0], s.en)}" for s in self.subjects.values()
                                        if s.kind == "project"]),
                          ("Reference", ["- [[DECISIONS]]", "- [[glossary]]", "- [[team]]"])]
        self.add(index)

    # --- learned notes -------------------------------------------------------------------------------------

    def make_learned(self) -> None:
        """Notes an assistant wrote late in the period that repeat one fact, citing the note it came from:
        mostly an outdated value (the old page), sometimes the current one."""
        rng = self.rng
        candidates = [f for f in self.facts if f.kind not in ("decision", "doc") and len(f.values) > 1]
        for fact in rng.sample(candidates, min(16, len(candidates))):
            last = len(fact.values) - 1
            index = rng.randrange(last) if rng.random() < 0.65 else last
            value = fact.values[index]
            source = value.holders[0]
            if fact.values[-1].start + timedelta(days=10) > LAST_DAY:
                continue
            day = self.day_between(fact.values[-1].start + timedelta(days=10), LAST_DAY)
            k = source.korean
            name = self.subject_name(fact.subject, k)
            text = self.value_text(fact, value.payload, k)
            label = self.label(fact, k) if fact.kind != "adr" else ("사용 기술" if k else "technology")
            slug = f"{fact.subject.key}-{fact.kind}"
            title = f"{name} {label}" if k else f"{name[0].upper()}{name[1:]} {label.lower()}"
            note = Note(f"learned/{day.isoformat()}-{slug}.md", k, day, title,
                        [("title", _front_value(title)), ("date", day.isoformat()), ("source", f'"{_link(source)}"'),
                         ("tags", "[learned]")])
            if k:
                note.intro = [f"{name} {label}: {text}.", f"출처: {_link(source)}"]
            else:
                note.intro = [f"{title}: {text}.", f"Learned from {_link(source)}."]
            self.add(note)
            value.learned.append(note)


# --- questions ---------------------------------------------------------------------------------------------


@dataclass
class Candidate:
    group: str
    language: str
    text: str
    gold: tuple[str, ...]
    stale: tuple[str, ...]
    as_of: str | None
    fact: str


def _paths(notes: Sequence[Note]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.path for n in notes))


def _neutral(fact: Fact) -> set[str]:
    """Notes stating more than one value of the fact: they answer no question about it."""
    seen = Counter(path for value in fact.values for path in set(_paths(value.holders + value.learned)))
    return {path for path, n in seen.items() if n > 1}


QUESTION_TEMPLATES: dict[str, dict[str, tuple[list[str], list[str]]]] = {
    "owner": {
        "current": (["Who owns the {s} now?", "Who's responsible for {short} these days?",
                     "Who is the current owner of the {s}?", "As things stand, who owns {short}?",
                     "Who should I go to about the {s} at the moment?", "Who owns the {s}?"],
                    ["지금 {s} 담당자는 누구야?", "요즘 {s_topic} 누가 맡고 있어?", "현재 {s} 오너가 누구예요?",
                     "{s} 담당자 누구야?"]),
        "still": (["Does {v} still own the {s}?", "Is {v} still in charge of {short}?",
                   "Is {v} still the owner of the {s}, or did that change?"],
                  ["아직 {v_subj} {s} 담당하나요?", "{s_topic} 여전히 {v} 담당이야?",
                   "{v_subj} 아직도 {s_obj} 맡고 있어?"]),
        "as_of": (["Who owned the {s} in {month}?", "Back in {month}, who was responsible for {short}?",
                   "As of {iso}, who owned the {s}?", "Who was the {s} owner during {month}?"],
                  ["{kmonth}에는 누가 {s} 담당이었어?", "{kmonth} 기준 {s} 담당자는?",
                   "{kmonth} 당시 {s_topic} 누가 맡았어?"]),
        "replaced": (["Who took over the {s} from {v}?", "Who replaced {v} as owner of the {s}?",
                      "After {v}, who became responsible for {short}?"],
                     ["{v} 다음으로 {s_obj} 맡은 사람은?", "{s} 담당이 {v}에서 누구로 바뀌었어?"]),
    },
    "oncall": {
        "current": (["Who is the on-call lead for the {s} right now?", "Who leads on-call for {short} at the moment?",
                     "Who's the {s} on-call lead these days?"],
                    ["지금 {s} 온콜 리드는 누구야?", "요즘 {s} 온콜은 누가 이끌어?"]),
        "still": (["Is {v} still the on-call lead for {short}?", "Does {v} still lead the {s} on-call?"],
                  ["아직 {v_subj} {s} 온콜 리드야?", "{s} 온콜 리드는 여전히 {v_cop}?"]),
        "as_of": (["Who was the on-call lead for the {s} in {month}?", "In {month}, who led on-call for {short}?"],
                  ["{kmonth} {s} 온콜 리드는 누구였어?", "{kmonth}에는 {s} 온콜을 누가 이끌었어?"]),
        "replaced": (["Who replaced {v} as the {s} on-call lead?"], ["{s} 온콜 리드는 {v} 다음에 누가 맡았어?"]),
    },
    "vendor": {
        "current": (["Which {label} does the {s} use now?", "What's the {s}'s {label} these days?",
                     "What {label} are we on for {short} at the moment?"],
                    ["현재 {s} {label_topic} 어디야?", "요즘 {s_topic} {label_ro} 어디 써?"]),
        "still": (["Is {v} still our {label} for {short}?", "Are we still on {v} for the {s}?",
                   "Does the {s} still use {v}?"],
                  ["{s} {label} 아직 {v_cop}?", "{s_topic} 여전히 {v_obj} 쓰나요?"]),
        "as_of": (["Which {label} did the {s} use in {month}?", "What was the {s}'s {label} as of {iso}?"],
                  ["{kmonth}에는 {s} {label_subj} 어디였어?", "{kmonth} 기준 {s} {label_topic}?"]),
        "replaced": (["What did we switch to after {v} for the {s}?", "What replaced {v} as the {s}'s {label}?",
                      "What did we decide instead of using {v} for {short}?"],
                     ["{s} {label}는 {v} 다음에 뭐로 바꿨어?", "{v} 대신 {s}에는 뭘 쓰기로 했어?"]),
    },
    "adr": {
        "current": (["What do we use for {s} now?", "What's our current choice for {s}?",
                     "Which technology do we use for {s} these days?"],
                    ["지금 {s}에는 뭘 써?", "요즘 {s_topic} 뭐로 해?"]),
        "still": (["Are we still using {v} for {s}?", "Is {v} still what we use for {s}?"],
                  ["{s}에 아직 {v} 써?", "{s_topic} 여전히 {v_cop}?"]),
        "as_of": (["What did we use for {s} in {month}?", "As of {iso}, which technology handled {s}?"],
                  ["{kmonth}에는 {s}에 뭘 썼어?"]),
        "replaced": (["What did we decide instead of using {v} for {s}?",
                      "Which decision superseded the {v} one for {s}?"],
                     ["{v} 대신 {s}에 뭘 쓰기로 했어?"]),
    },
    "count": {
        "current": (["How many {noun} are there now?", "What's the number of {noun} at the moment?"],
                    ["지금 {noun} 수는 몇 {unit_cop}?", "현재 {noun_topic} 몇 {unit_cop}?"]),
        "still": (["Are there still {v} {noun}?", "Is it still {v} {noun}?"], ["{noun} 아직 {v}{unit_cop}?"]),
        "as_of": (["How many {noun} were there in {month}?", "As of {iso}, how many {noun} were there?"],
                  ["{kmonth} {noun} 수는 몇 {unit_past}?"]),
    },
    "price": {
        "current": (["What's the current price per {unit} for {s}?",
                     "How much are we paying per {s} {unit} these days?",
                     "What does a {s} {unit} cost us now?"],
                    ["지금 {s} {kunit}당 가격이 얼마야?", "요즘 {s} 가격 {kunit}당 얼마 내고 있어?"]),
        "still": (["Are we still paying {v} for {s}?", "Is {s} still {v}?"], ["{s} 아직 {v_cop}?"]),
        "as_of": (["What did a {s} {unit} cost in {month}?", "How much was {s} per {unit} as of {iso}?"],
                  ["{kmonth}에는 {s} {kunit}당 얼마였어?"]),
    },
    "seats": {
        "current": (["How many {s} {unit}s do we have now?", "How many {s} {unit}s are we paying for at the moment?"],
                    ["지금 {s} {kunit} 몇 개야?", "현재 {s} {kunit} 수는?"]),
        "still": (["Do we still have {v} {s} {unit}s?"], ["{s} {kunit} 아직 {v}개야?"]),
        "as_of": (["How many {s} {unit}s did we have in {month}?"], ["{kmonth}에 {s} {kunit} 수는 몇 개였어?"]),
    },
    "contract": {
        "current": (["Who manages the {s} contract now?", "Who looks after the {s} contract these days?"],
                    ["지금 {s} 계약 담당자는 누구야?"]),
        "still": (["Is {v} still the contract owner for {s}?"], ["{s} 계약은 아직 {v} 담당이야?"]),
        "as_of": (["Who owned the {s} contract in {month}?"], ["{kmonth}에는 {s} 계약을 누가 맡았어?"]),
        "replaced": (["Who took over the {s} contract from {v}?"], ["{v} 다음으로 {s} 계약을 맡은 사람은?"]),
    },
    "deadline": {
        "current": (["When is {s} due now?", "What's the latest deadline for {s}?",
                     "When do we have to ship {s}, as things stand?"],
                    ["{s} 마감일이 지금 언제야?", "요즘 {s} 마감 언제로 잡혀 있어?"]),
        "still": (["Is {s} still due on {v}?", "Is the {s} deadline still {v}?"], ["{s} 마감 아직 {v_cop}?"]),
        "as_of": (["What was the deadline for {s} in {month}?", "As of {iso}, when was {s} due?"],
                  ["{kmonth} 기준 {s} 마감일은 언제였어?"]),
        "replaced": (["{s} was due on {v}. What was the deadline moved to?"], ["{s} 마감일 {v}에서 언제로 바뀌었어?"]),
    },
    "lead": {
        "current": (["Who leads {s} at the moment?", "Who is running {s} now?"], ["요즘 {s} 리드는 누구야?"]),
        "still": (["Is {v} still leading {s}?"], ["{s} 리드 아직 {v_cop}?"]),
        "as_of": (["Who led {s} in {month}?"], ["{kmonth}에는 {s} 리드가 누구였어?"]),
        "replaced": (["Who took over {s} from {v}?"], ["{v} 다음에 {s} 리드는 누가 맡았어?"]),
    },
    "status": {
        "current": (["What's the status of {s} right now?", "How is {s} doing these days?"],
                    ["{s} 지금 상태가 어때?", "요즘 {s} 현황은?"]),
        "still": (["Is {s} still {v}?"], ["{s} 아직 {v} 상태야?"]),
        "as_of": (["What was the status of {s} in {month}?"], ["{kmonth}에 {s} 상태는 어땠어?"]),
    },
    "head": {
        "current": (["Who heads the platform team now?", "Who is the head of the platform team these days?"],
                    ["지금 플랫폼팀 팀장은 누구야?"]),
        "still": (["Is {v} still head of the platform team?"], ["플랫폼팀 팀장 아직 {v_cop}?"]),
        "as_of": (["Who was head of the platform team in {month}?"], ["{kmonth}에는 플랫폼팀 팀장이 누구였어?"]),
        "replaced": (["Who took over the platform team from {v}?"], ["{v} 다음으로 플랫폼팀 팀장은 누가 됐어?"]),
    },
    "headcount": {
        "current": (["How many people are on the platform team now?", "What's the team's headcount at the moment?"],
                    ["지금 플랫폼팀 인원은 몇 명이야?"]),
        "still": (["Is the platform team still {v} people?"], ["플랫폼팀 아직 {v}명이야?"]),
        "as_of": (["How many people were on the platform team in {month}?"], ["{kmonth} 플랫폼팀 인원은 몇 명이었어?"]),
    },
}


def _full_months(start: date, end: date) -> list[date]:
    """First days of the months that lie wholly within (start, end)."""
    out = []
    month = date(start.year, start.month, 1)
    while month < end:
        last = date(month.year, month.month, calendar.monthrange(month.year, month.month)[1])
        if month > start and last < end:
            out.append(month)
        month = last + timedelta(days=1)
    return out


class Asker:
    """Candidate questions of every fact, in both groups' phrasings."""

    def __init__(self, vault: Vault, rng: random.Random) -> None:
        self.v = vault
        self.rng = rng
        self.out: list[Candidate] = []

    def fill(self, template: str, fact: Fact, korean: bool, value: Any = None, month: date | None = None,
             iso: date | None = None) -> str:
        v, s = self.v, fact.subject
        name = s.ko if korean else s.en
        if fact.kind in ("owner", "oncall", "vendor"):
            name = s.ko if korean else s.en.lower()
        short = s.short if fact.kind in ("owner", "oncall", "vendor") else name
        text = None
        if value is not None:
            if isinstance(value, Person):
                text = v.name(value, korean, 0.25)
            else:
                text = v.value_text(fact, value, korean)
                if fact.kind in ("count", "seats", "headcount"):
                    text = str(value)
        values = {
            "s": name, "short": short, "s_topic": topic(name), "s_obj": obj(name),
            "v": text or "", "v_subj": subj(text) if text else "", "v_obj": obj(text) if text else "",
            "v_cop": copula(text) if text else "",
            "month": _month(month, False) if month else "", "kmonth": _month(month, True) if month else "",
            "iso": iso.isoformat() if iso else "",
        }
        if fact.kind == "vendor":
            values["label"] = fact.info["label"][korean] if korean else fact.info["label"][0].lower()
            values |= {"label_topic": topic(values["label"]), "label_subj": subj(values["label"]),
                       "label_ro": ro(values["label"])}
        if fact.kind == "count":
            values["noun"] = fact.info["noun"][korean]
            values["noun_topic"] = topic(fact.info["noun"][korean])
            values["unit_cop"] = copula(fact.info["unit"])
            values["unit_past"] = fact.info["unit"] + ("이었어" if _has_final(fact.info["unit"]) else "였어")
        if fact.kind in ("price", "seats"):
            values["unit"], values["kunit"] = fact.info["unit"]
        return template.format(**values)

    def add(self, group: str, korean: bool, text: str, gold: Sequence[str], stale: Sequence[str],
            fact: Fact, as_of: date | None = None) -> None:
        gold, stale = tuple(dict.fromkeys(gold)), tuple(p for p in dict.fromkeys(stale) if p not in gold)
        if gold and stale:
            self.out.append(Candidate(group, "ko" if korean else "en", text, gold, stale,
                                      as_of.isoformat() if as_of else None, fact.key))

    def language(self, notes: Sequence[Note]) -> bool:
        return notes[0].korean if notes else False

    def fact_questions(self, fact: Fact) -> None:
        rng = self.rng
        neutral = _neutral(fact)

        def keep(notes: Sequence[Note]) -> list[str]:
            return [p for p in _paths(notes) if p not in neutral]

        last = len(fact.values) - 1
        latest = fact.values[-1]
        older_notes = [n for value in fact.values[:-1] for n in value.holders + value.learned]
        gold_current = keep(latest.holders + latest.learned)
        stale_current = keep(older_notes)
        korean = self.language(latest.holders)
        if fact.kind in ("decision", "doc"):
            templates = fact.info["questions"]
            self._custom(fact, templates, gold_current, stale_current, keep)
            return
        tpl = QUESTION_TEMPLATES[fact.kind]
        self.add("current", korean, self.fill(rng.choice(tpl["current"][korean]), fact, korean),
                 gold_current, stale_current, fact)
        asked = rng.randrange(last) if rng.random() < 0.75 else last
        self.add("still", korean, self.fill(rng.choice(tpl["still"][korean]), fact, korean,
                                            fact.values[asked].payload), gold_current, stale_current, fact)
        for index in range(last):
            value, following = fact.values[index], fact.values[index + 1]
            holders = [n for n in value.holders]
            first_known = min(n.day for n in holders) if holders else value.start
            months = [m for m in _full_months(max(value.start, first_known), following.start) if m >= date(2024, 2, 1)]
            if months:
                month = rng.choice(months)
                language = self.language(holders)
                phrase = rng.choice(tpl["as_of"][language])
                day = month.replace(day=rng.randint(10, 20)) if "{iso}" in phrase else month.replace(day=15)
                later = [n for v in fact.values[index + 1:] for n in v.holders]
                self.add("as_of", language, self.fill(phrase, fact, language, month=month, iso=day),
                         keep(holders), keep(later), fact, day)
            if "replaced" in tpl:
                language = self.language(following.holders)
                self.add("replaced", language, self.fill(rng.choice(tpl["replaced"][language]), fact, language,
                                                         value.payload), keep(following.holders), keep(value.holders),
                         fact)
        if fact.info.get("chain"):
            adrs = self.v.adrs[fact.info["chain"]]
            for index in range(last):
                number = self.v.adr_number(adrs[index])
                language = adrs[index + 1].korean if rng.random() < 0.8 else not adrs[index + 1].korean
                text = (rng.choice([f"ADR-{obj(str(number))} 대체한 결정은?",
                                    f"ADR-{number}은 어떤 ADR로 바뀌었어?"]) if language
                        else rng.choice([f"What replaced ADR-{number}?", f"Which ADR superseded ADR-{number}?",
                                         f"Is ADR-{number} still in force, or what replaced it?"]))
                self.add("replaced", language, text, keep(fact.values[index + 1].holders),
                         keep(fact.values[index].holders), fact)

    def _custom(self, fact: Fact, templates: dict[str, Any], gold: list[str], stale: list[str],
                keep: Callable[[Sequence[Note]], list[str]]) -> None:
        rng = self.rng
        first, second = fact.values
        korean = self.language(second.holders)
        self.add("current", korean, rng.choice(templates["current"][korean]), gold, stale, fact)
        if fact.kind == "decision":
            asked = 0 if rng.random() < 0.75 else 1
            self.add("still", korean, rng.choice(templates["still"][asked][korean]), gold, stale, fact)
            number = self.v.d_numbers[(fact.subject.key, 0)]
            log = ["DECISIONS.md"]
            text = (rng.choice([f"D-{obj(str(number))} 대체한 결정은?",
                                f"D-{number}은 지금도 유효해? 뭘로 바뀌었어?"]) if korean else
                    rng.choice([f"What replaced D-{number}?", f"Which decision superseded D-{number}?"]))
            self.add("replaced", korean, text, log + keep(second.holders), keep(first.holders), fact)
            instead = templates["instead"][0]
            other = not korean if rng.random() < 0.3 else korean
            self.add("replaced", other, rng.choice(instead[other]), log + keep(second.holders), keep(first.holders),
                     fact)
        else:
            self.add("still", korean, rng.choice(templates["still"][korean]), gold, stale, fact)
            self.add("replaced", korean, rng.choice(templates["replaced"][korean]), keep(second.holders),
                     keep(first.holders), fact)
        months = _full_months(first.start, second.start)
        if months:
            month = rng.choice(months)
            language = self.language(first.holders)
            text = rng.choice(templates["as_of"][language]).format(month=_month(month, False), kmonth=_month(month,
                                                                                                             True))
            self.add("as_of", language, text, keep(first.holders), keep(second.holders), fact, month.replace(day=15))


def _select(candidates: list[Candidate], rng: random.Random) -> list[Candidate]:
    """Per group: the quota, about a third Korean, spreading the questions over the facts (a fact used less
    so far goes first) and never asking the same text twice."""
    chosen: list[Candidate] = []
    used: Counter[str] = Counter()
    texts: set[str] = set()
    for group, quota in QUOTAS.items():
        if group == "unanswerable":
            continue
        pool = [c for c in candidates if c.group == group]
        rng.shuffle(pool)
        korean_quota = round(quota * KOREAN_SHARE)
        picked: list[Candidate] = []
        for want_korean, limit in ((True, korean_quota), (False, quota)):
            while len(picked) < limit:
                options = [c for c in pool if (c.language == "ko") == want_korean and c not in picked
                           and c.text not in texts]
                if not options:
                    break
                best = min(options, key=lambda c: used[c.fact])
                picked.append(best)
                used[best.fact] += 1
                texts.add(best.text)
        while len(picked) < quota:  # not enough English: fill with Korean
            options = [c for c in pool if c not in picked and c.text not in texts]
            if not options:
                break
            best = min(options, key=lambda c: used[c.fact])
            picked.append(best)
            used[best.fact] += 1
            texts.add(best.text)
        chosen += picked
    return chosen


def generate(seed: int = 0) -> tuple[dict[str, str], list[TemporalQuestion], dict[str, tuple[str, ...]]]:
    """The vault's files (path -> text), the questions and each unanswerable question's absent words."""
    rng = random.Random(f"temporal-{seed}")
    vault = Vault(rng)
    vault.make_people()
    vault.make_subjects()
    vault.make_meetings()
    vault.make_reports()
    vault.make_facts()
    vault.plan_versions()
    vault.place_changes()
    vault.make_pages()
    vault.report_values()
    vault.make_adrs()
    vault.make_decisions()
    vault.make_docs()
    vault.people_notes()
    vault.make_distractors()
    for fact in vault.facts:
        for value in fact.values:
            value.holders.sort(key=lambda n: (n.day, n.path))
    vault.make_learned()
    files = {path: note.render() for path, note in sorted(vault.notes.items())}

    asker = Asker(vault, rng)
    for fact in vault.facts:
        asker.fact_questions(fact)
    picked = _select(asker.out, rng)
    questions = [TemporalQuestion(f"temporal-{i + 1:03d}", c.text, c.gold, c.group, c.language, c.stale, c.as_of)
                 for i, c in enumerate(picked)]
    absent: dict[str, tuple[str, ...]] = {}
    korean = round(QUOTAS["unanswerable"] * KOREAN_SHARE)
    pool = [("en", t) for t in rng.sample(UNANSWERABLE["en"], QUOTAS["unanswerable"] - korean)]
    pool += [("ko", t) for t in rng.sample(UNANSWERABLE["ko"], korean)]
    for language, (text, words) in rng.sample(pool, len(pool)):
        qid = f"temporal-{len(questions) + 1:03d}"
        questions.append(TemporalQuestion(qid, text, (), "unanswerable", language))
        absent[qid] = words
    return files, questions, absent


def absent_terms(seed: int = 0) -> dict[str, tuple[str, ...]]:
    """For each unanswerable question id: the words that no file of the vault contains."""
    return generate(seed)[2]


def build(vault: Path, seed: int = 0) -> RetrievalSet:
    """Write the temporal vault into ``vault`` (only changed files are rewritten) and return its questions."""
    files, questions, absent = generate(seed)
    for question in questions:
        overlap = set(question.gold) & set(question.stale)
        if overlap:
            raise ValueError(f"{question.id}: {sorted(overlap)[0]} is both gold and stale")
        missing = [path for path in question.stale if path not in files]
        if missing:
            raise ValueError(f"{question.id}: stale {missing[0]!r} is not a file of the set")
    description = ("one team's notes over January-September 2024 (services, projects, vendors, meetings, ADRs, "
                   "DECISIONS.md, runbooks, learned notes), ~30% Korean; facts change, old notes stay")
    return finish_set(NAME, Path(vault), files, questions, absent, description)


build_set = build  # the name eval.retrieval_benchmark looks for


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the vault into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(summary(build(args.out, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
