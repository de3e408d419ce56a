"""A deterministic synthetic vault of a small team's notes, for build benchmarks.

``generate_vault(target, documents, seed)`` writes exactly ``documents`` Markdown notes: people, projects,
tools, client organisations, places, meetings, tasks, design notes, incident reviews, ADRs in ``adr/`` and
one ``DECISIONS.md`` whose sections grow with the vault. About 40% of the notes are Korean and 60% English.
Notes carry YAML front matter (title, author, date, tags, aliases), headings, ``[[wiki links]]`` and
``[Markdown](links.md)`` to other generated notes, key–value lines (``Owner: X`` / ``담당자: X``), quoted
names and numbers with units. Bodies are 1–6 KB with a log-normal spread (median about 2.3 KB).

The same ``documents`` and ``seed`` always give byte-identical files. Only the standard library is used.

    python -m eval.synthetic_vault OUT --documents 10000 [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import posixpath
import random
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

KOREAN_SHARE = 0.4
MIN_BYTES = 1_000
MAX_BYTES = 6_000
START = date(2024, 1, 8)
MAX_LOG_ENTRIES = 80
DAYS = 900  # notes are dated from 2024-01-08 over about two and a half years

# --- vocabularies ------------------------------------------------------------------------------------------

SURNAMES = [
    ("김", "Kim"), ("이", "Lee"), ("박", "Park"), ("최", "Choi"), ("정", "Jung"), ("강", "Kang"), ("조", "Cho"),
    ("윤", "Yoon"), ("장", "Jang"), ("임", "Lim"), ("한", "Han"), ("오", "Oh"), ("서", "Seo"), ("신", "Shin"),
    ("권", "Kwon"), ("황", "Hwang"), ("안", "Ahn"), ("송", "Song"), ("류", "Ryu"), ("홍", "Hong"),
]
GIVEN = [
    ("민지", "Minji"), ("지훈", "Jihoon"), ("현우", "Hyunwoo"), ("서연", "Seoyeon"), ("도윤", "Doyoon"),
    ("하은", "Haeun"), ("준호", "Junho"), ("수빈", "Subin"), ("예린", "Yerin"), ("태양", "Taeyang"),
    ("유진", "Yujin"), ("성민", "Sungmin"), ("지원", "Jiwon"), ("은지", "Eunji"), ("동현", "Donghyun"),
    ("혜진", "Hyejin"), ("재원", "Jaewon"), ("소희", "Sohee"), ("승훈", "Seunghoon"), ("나연", "Nayeon"),
    ("우진", "Woojin"), ("다은", "Daeun"), ("건우", "Gunwoo"), ("채원", "Chaewon"), ("시우", "Siwoo"),
    ("지아", "Jia"), ("민준", "Minjun"), ("서윤", "Seoyun"), ("예준", "Yejun"), ("하린", "Harin"),
]
FOREIGN_PEOPLE = [
    ("사라 리", "Sarah Lee"), ("다니엘 최", "Daniel Choi"), ("마리아 곤잘레스", "Maria Gonzalez"),
    ("톰 베커", "Tom Becker"), ("프리야 나이르", "Priya Nair"), ("루카스 마르탱", "Lucas Martin"),
    ("엠마 슈미트", "Emma Schmidt"), ("켄지 사토", "Kenji Sato"), ("올리비아 브라운", "Olivia Brown"),
    ("라울 메타", "Rahul Mehta"), ("안나 노박", "Anna Novak"), ("데이비드 오", "David Oh"),
]
ROLES = [
    ("데이터 엔지니어", "Data Engineer"), ("백엔드 개발자", "Backend Engineer"), ("ML 엔지니어", "ML Engineer"),
    ("프로덕트 매니저", "Product Manager"), ("SRE", "Site Reliability Engineer"), ("테크 리드", "Tech Lead"),
    ("프론트엔드 개발자", "Frontend Engineer"), ("데이터 분석가", "Data Analyst"), ("디자이너", "Designer"),
    ("보안 엔지니어", "Security Engineer"), ("QA 엔지니어", "QA Engineer"),
    ("엔지니어링 매니저", "Engineering Manager"),
]
TEAMS = [
    ("플랫폼팀", "Platform team"), ("검색팀", "Search team"), ("데이터팀", "Data team"), ("인프라팀", "Infra team"),
    ("고객성공팀", "Customer success"), ("ML팀", "ML team"), ("프로덕트팀", "Product team"),
]
BIRDS = [
    ("팔콘", "Falcon"), ("맥파이", "Magpie"), ("헤론", "Heron"), ("오스프리", "Osprey"), ("케스트럴", "Kestrel"),
    ("펠리컨", "Pelican"), ("스패로우", "Sparrow"), ("크레인", "Crane"), ("아울", "Owl"), ("레이븐", "Raven"),
    ("스위프트", "Swift"), ("렌", "Wren"), ("앨버트로스", "Albatross"), ("콘도르", "Condor"), ("이그렛", "Egret"),
    ("핀치", "Finch"), ("가넷", "Gannet"), ("아이비스", "Ibis"), ("제이", "Jay"), ("카이트", "Kite"),
    ("라크", "Lark"), ("멀린", "Merlin"), ("오리올", "Oriole"), ("퍼핀", "Puffin"), ("로빈", "Robin"),
    ("스탈링", "Starling"), ("턴", "Tern"), ("플로버", "Plover"), ("샌드파이퍼", "Sandpiper"),
    ("커뮤런트", "Cormorant"),
]
PROJECT_SUFFIXES = [("", ""), (" 2", " 2"), (" 넥스트", " Next"), (" 라이트", " Lite"), (" 클라우드", " Cloud")]
TOOLS = [
    ("PostgreSQL", "포스트그레스", "database"), ("DuckDB", "덕DB", "database"),
    ("Kubernetes", "쿠버네티스", "platform"),
    ("Grafana", "그라파나", "monitoring"), ("Prometheus", "프로메테우스", "monitoring"),
    ("Dagster", "대그스터", "orchestration"),
    ("LanceDB", "랜스DB", "database"), ("Streamlit", "스트림릿", "frontend"), ("Redis", "레디스", "database"),
    ("Kafka", "카프카", "messaging"), ("Airflow", "에어플로우", "orchestration"), ("Terraform", "테라폼", "infra"),
    ("Ansible", "앤서블", "infra"), ("GitHub Actions", "깃허브 액션", "ci"), ("Sentry", "센트리", "monitoring"),
    ("OpenSearch", "오픈서치", "search"), ("MinIO", "미니오", "storage"), ("Nginx", "엔진엑스", "platform"),
    ("Docker", "도커", "platform"), ("Helm", "헬름", "infra"), ("Argo CD", "아르고 CD", "ci"),
    ("HashiCorp Vault", "볼트", "security"), ("Keycloak", "키클록", "security"), ("FastAPI", "FastAPI", "backend"),
    ("Django", "장고", "backend"), ("React", "리액트", "frontend"), ("TypeScript", "타입스크립트", "language"),
    ("Rust", "러스트", "language"), ("Go", "Go", "language"), ("Spark", "스파크", "analytics"),
    ("Trino", "트리노", "analytics"), ("dbt", "dbt", "analytics"), ("Superset", "슈퍼셋", "analytics"),
    ("Metabase", "메타베이스", "analytics"), ("Jupyter", "주피터", "analytics"), ("PyTorch", "파이토치", "ml"),
    ("ONNX Runtime", "ONNX 런타임", "ml"), ("Tesseract", "테서랙트", "ml"), ("Loki", "로키", "monitoring"),
    ("Jaeger", "예거", "monitoring"), ("RabbitMQ", "래빗MQ", "messaging"), ("Celery", "셀러리", "backend"),
    ("SQLite", "SQLite", "database"), ("ClickHouse", "클릭하우스", "database"), ("Jira", "지라", "process"),
    ("Confluence", "컨플루언스", "process"), ("Slack", "슬랙", "process"), ("Playwright", "플레이라이트", "ci"),
    ("pytest", "pytest", "ci"), ("Ruff", "러프", "ci"), ("Polars", "폴라스", "analytics"),
    ("Oxigraph", "옥시그래프", "database"),
]
ORG_PREFIXES = [
    ("대한", "Daehan"), ("한빛", "Hanbit"), ("미래", "Mirae"), ("가온", "Gaon"), ("새별", "Saebyeol"),
    ("백두", "Baekdu"), ("아리랑", "Arirang"), ("다산", "Dasan"), ("하늘", "Haneul"), ("바다", "Bada"),
    ("세종", "Sejong"), ("청솔", "Cheongsol"), ("푸른", "Purun"), ("온누리", "Onnuri"), ("한울", "Hanul"),
]
ORG_KINDS = [
    ("물류", "Logistics"), ("은행", "Bank"), ("보험", "Insurance"), ("제약", "Pharma"), ("리테일", "Retail"),
    ("에너지", "Energy"), ("미디어", "Media"), ("병원", "Hospital"), ("텔레콤", "Telecom"), ("모터스", "Motors"),
    ("식품", "Foods"), ("증권", "Securities"),
]
PLACES = [
    ("판교 오피스", "Pangyo office"), ("서울 본사", "Seoul HQ"), ("부산 지사", "Busan branch"),
    ("대전 데이터센터", "Daejeon data center"), ("성수 스튜디오", "Seongsu studio"),
    ("제주 워크숍장", "Jeju workshop site"),
    ("강남 공유오피스", "Gangnam shared office"), ("인천 물류센터", "Incheon logistics center"),
    ("광주 연구소", "Gwangju lab"), ("송도 캠퍼스", "Songdo campus"),
]
ROOMS = [("한라", "Halla"), ("백두", "Baekdu"), ("설악", "Seorak"), ("지리", "Jiri"), ("태백", "Taebaek")]

TOPICS = [
    ("수집 파이프라인", "ingestion pipeline"), ("검색 지연 시간", "search latency"),
    ("카탈로그 마이그레이션", "catalog migration"),
    ("OCR 정확도", "OCR accuracy"), ("비용 절감", "cost reduction"), ("접근 권한", "access control"),
    ("모니터링 대시보드", "monitoring dashboard"), ("배포 자동화", "deployment automation"),
    ("백업 정책", "backup policy"),
    ("온콜 로테이션", "on-call rotation"), ("데이터 품질", "data quality"), ("리뷰 화면", "review screen"),
    ("벡터 인덱스", "vector index"), ("요금 청구", "billing"), ("로그 보존 기간", "log retention"),
    ("장애 대응", "incident response"), ("스키마 변경", "schema change"), ("캐시 전략", "caching strategy"),
    ("평가 데이터셋", "evaluation dataset"), ("보안 점검", "security review"), ("API 버전 관리", "API versioning"),
    ("용량 계획", "capacity planning"), ("문서 분류", "document classification"), ("사용자 피드백", "user feedback"),
]
STATUS_EN = ["Accepted", "Proposed", "Accepted", "Deprecated", "Accepted"]
STATUS_KO = ["승인됨", "제안됨", "승인됨", "폐기됨", "승인됨"]
TASK_STATUS = [
    ("진행 중", "In progress"), ("완료", "Done"), ("대기", "Blocked"), ("할 일", "To do"), ("검토 중", "In review"),
]
QUOTED_EN = [
    "Documenting Architecture Decisions", "Designing Data-Intensive Applications", "The Site Reliability Workbook",
    "Accelerate", "Team Topologies", "Working Backwards", "A Philosophy of Software Design", "Release It!",
    "Shape Up", "The Phoenix Project", "Database Internals", "Observability Engineering",
]
QUOTED_KO = [
    "데이터 중심 애플리케이션 설계", "사이트 신뢰성 엔지니어링", "팀 토폴로지", "클린 아키텍처", "함께 자라기",
    "구글 엔지니어는 이렇게 일한다",
]


@dataclass(eq=False)
class Person:
    ko: str
    en: str
    role: tuple[str, str]
    team: tuple[str, str]
    handle: str
    note: Note | None = None


@dataclass(eq=False)
class Note:
    kind: str
    path: str  # vault-relative, POSIX
    title: str
    korean: bool
    day: date
    author: Person
    tags: list[str]
    aliases: list[str] = field(default_factory=list)
    subject: object = None  # the person, project, tool, org, place or topic a note is about
    project: Project | None = None

    stem: str = ""

    def __post_init__(self) -> None:
        self.stem = posixpath.splitext(posixpath.basename(self.path))[0]


@dataclass(eq=False)
class Project:
    ko: str
    en: str
    slug: str
    owner: Person
    client: Org | None = None
    note: Note | None = None
    members: list[Person] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)


@dataclass(eq=False)
class Tool:
    en: str
    ko: str
    category: str
    slug: str
    note: Note | None = None


@dataclass(eq=False)
class Org:
    ko: str
    en: str
    slug: str
    note: Note | None = None


@dataclass(eq=False)
class Place:
    ko: str
    en: str
    slug: str
    note: Note | None = None


# --- allocation --------------------------------------------------------------------------------------------

SHARES = [  # kind, share of the vault, minimum once the vault has room for it, maximum
    ("person", 0.03, 4, 400),
    ("project", 0.012, 2, 150),
    ("tool", 0.01, 3, len(TOOLS)),
    ("org", 0.006, 1, len(ORG_PREFIXES) * len(ORG_KINDS)),
    ("place", 0.003, 1, len(PLACES)),
    ("adr", 0.02, 2, 9999),
]
REST = [("meeting", 0.40), ("task", 0.30), ("design", 0.20), ("incident", 0.10)]


def allocate(documents: int) -> dict[str, int]:
    """How many notes of each kind a vault of ``documents`` notes gets; the counts add up to ``documents``."""
    counts = {kind: 0 for kind, *_ in SHARES} | {kind: 0 for kind, _ in REST} | {"decisions": 0}
    if documents <= 0:
        return counts
    counts["decisions"] = 1
    left = documents - 1
    for kind, share, minimum, maximum in SHARES:
        wanted = min(maximum, max(minimum, round(documents * share)))
        counts[kind] = min(wanted, left // 2) if documents < 60 else wanted
        left -= counts[kind]
    for index, (kind, share) in enumerate(REST):
        counts[kind] = left if index == len(REST) - 1 else int(left * share / sum(s for _, s in REST[index:]))
        left -= counts[kind]
    return counts


def _lognormal_size(rng: random.Random) -> int:
    while True:
        size = int(math.exp(rng.gauss(math.log(2300), 0.45)))
        if MIN_BYTES <= size <= MAX_BYTES:
            return size


def _slug(text: str) -> str:
    out = []
    for char in text.lower():
        if char.isalnum():
            out.append(char)
        elif out and out[-1] != "-":
            out.append("-")
    return "".join(out).strip("-")


class _Random(random.Random):
    """``random.Random`` with cheaper ``choice``, ``randrange`` and ``randint`` (one ``random()`` call each)."""

    def choice(self, seq):
        return seq[int(self.random() * len(seq))]

    def randrange(self, start, stop=None, step=1):
        if stop is None:
            start, stop = 0, start
        return start + int(self.random() * (stop - start))

    def randint(self, a, b):
        return a + int(self.random() * (b - a + 1))


class _Builder:
    def __init__(self, documents: int, seed: int):
        self.rng = _Random(seed)
        self.counts = allocate(documents)
        self.notes: list[Note] = []
        self.stems: set[str] = set()
        self.people: list[Person] = []
        self.projects: list[Project] = []
        self.tools: list[Tool] = []
        self.orgs: list[Org] = []
        self.places: list[Place] = []
        self.by_kind: dict[str, list[Note]] = {}
        self.adrs: list[Note] = []

    # entities ------------------------------------------------------------------------------------------

    def cast(self) -> None:
        rng = self.rng
        people_total = max(self.counts["person"], 3)
        names = [(s_ko + g_ko, f"{g_en} {s_en}") for s_ko, s_en in SURNAMES for g_ko, g_en in GIVEN]
        rng.shuffle(names)
        foreign = list(FOREIGN_PEOPLE)
        rng.shuffle(foreign)
        chosen = []
        for index in range(people_total):
            chosen.append(foreign.pop() if foreign and index % 9 == 4 else names.pop())
        for ko, en in chosen:
            handle = "@" + en.split()[0].lower() + (str(rng.randint(2, 99)) if rng.random() < 0.3 else "")
            self.people.append(Person(ko, en, rng.choice(ROLES), rng.choice(TEAMS), handle))

        tools = list(TOOLS)
        rng.shuffle(tools)
        for en, ko, category in tools[: max(self.counts["tool"], 3)]:
            self.tools.append(Tool(en, ko, category, _slug(en)))

        orgs = [(p_ko + k_ko, f"{p_en} {k_en}") for p_ko, p_en in ORG_PREFIXES for k_ko, k_en in ORG_KINDS]
        rng.shuffle(orgs)
        for ko, en in orgs[: max(self.counts["org"], 1)]:
            self.orgs.append(Org(ko, en, _slug(en)))

        places = list(PLACES)
        rng.shuffle(places)
        for ko, en in places[: max(self.counts["place"], 1)]:
            self.places.append(Place(ko, en, _slug(en)))

        projects = [(b_ko + s_ko, b_en + s_en) for s_ko, s_en in PROJECT_SUFFIXES for b_ko, b_en in BIRDS]
        for ko, en in projects[: max(self.counts["project"], 1)]:
            owner = rng.choice(self.people)
            project = Project(ko, en, _slug(en), owner, rng.choice(self.orgs) if rng.random() < 0.8 else None)
            others = rng.sample(self.people, min(len(self.people), rng.randint(2, 6)))
            project.members = [owner, *(person for person in others if person is not owner)]
            project.tools = rng.sample(self.tools, min(len(self.tools), rng.randint(2, 5)))
            self.projects.append(project)

    # notes ---------------------------------------------------------------------------------------------

    def _add(self, kind: str, folder: str, stem: str, **fields) -> Note:
        base, number = stem, 2
        while stem in self.stems:
            stem = f"{base}-{number}"
            number += 1
        self.stems.add(stem)
        note = Note(kind=kind, path=f"{folder}/{stem}.md" if folder else f"{stem}.md", **fields)
        self.notes.append(note)
        self.by_kind.setdefault(kind, []).append(note)
        return note

    def _day(self) -> date:
        return START + timedelta(days=self.rng.randrange(DAYS))

    def _korean(self) -> bool:
        return self.rng.random() < KOREAN_SHARE

    def plan(self) -> None:
        rng, counts = self.rng, self.counts
        if counts["decisions"]:
            self._add("decisions", "", "DECISIONS", title="Decision log", korean=False, day=START,
                      author=self.people[0], tags=["decisions"], aliases=["Decisions", "결정 기록", "decision log"])
        for person in self.people[: counts["person"]]:
            korean = self._korean()
            stem = person.ko.replace(" ", "-") if korean else _slug(person.en)
            person.note = self._add(
                "person", "people", stem, title=person.ko if korean else person.en, korean=korean,
                day=self._day(), author=person, tags=["people", _slug(person.team[1])],
                aliases=[person.en if korean else person.ko, person.en.split()[0], person.handle], subject=person)
        for project in self.projects[: counts["project"]]:
            korean = self._korean()
            project.note = self._add(
                "project", "projects", project.slug,
                title=f"프로젝트 {project.ko}" if korean else f"Project {project.en}", korean=korean,
                day=self._day(), author=project.owner, tags=["project", project.slug],
                aliases=[project.en, project.ko, f"Project {project.en}"], subject=project, project=project)
        for tool in self.tools[: counts["tool"]]:
            korean = self._korean()
            tool.note = self._add(
                "tool", "tools", tool.slug, title=tool.en, korean=korean, day=self._day(),
                author=rng.choice(self.people), tags=["tool", tool.category], aliases=[tool.ko], subject=tool)
        for org in self.orgs[: counts["org"]]:
            korean = self._korean()
            org.note = self._add(
                "org", "orgs", org.ko if korean else org.slug, title=org.ko if korean else org.en, korean=korean,
                day=self._day(), author=rng.choice(self.people), tags=["client"], aliases=[org.en, org.ko], subject=org)
        for place in self.places[: counts["place"]]:
            korean = self._korean()
            place.note = self._add(
                "place", "places", place.ko.replace(" ", "-") if korean else place.slug,
                title=place.ko if korean else place.en, korean=korean, day=self._day(),
                author=rng.choice(self.people), tags=["place"], aliases=[place.en, place.ko], subject=place)

        adr_days = sorted(self._day() for _ in range(counts["adr"]))
        for number, day in enumerate(adr_days, start=1):
            korean = self._korean()
            tool, topic = rng.choice(self.tools), rng.choice(TOPICS)
            if korean:
                title = f"{number}. {topic[0]}에 {tool.en} 사용"
                stem = f"{number:04d}-{_slug(topic[1])}-{tool.slug}"
            else:
                title = f"{number}. Use {tool.en} for {topic[1]}"
                stem = f"{number:04d}-use-{tool.slug}-for-{_slug(topic[1])}"
            self.adrs.append(self._add(
                "adr", "adr", stem, title=title, korean=korean, day=day, author=rng.choice(self.people),
                tags=["adr", tool.category], subject=(tool, topic), project=rng.choice(self.projects)))

        for _ in range(counts["meeting"]):
            korean, day, project = self._korean(), self._day(), rng.choice(self.projects)
            kind = rng.choice(["weekly", "weekly", "weekly", "review", "client", "planning", "retro"])
            labels = {"weekly": ("주간회의", "Weekly sync"), "review": ("설계 리뷰", "Design review"),
                      "client": ("고객사 미팅", "Client meeting"), "planning": ("분기 계획", "Quarterly planning"),
                      "retro": ("회고", "Retrospective")}[kind]
            label = labels[0] if korean else labels[1]
            folder = f"회의록/{day.year}" if korean else f"meetings/{day.year}"
            stem = f"{day.isoformat()}-{_slug(project.en)}-{label.replace(' ', '-').lower()}"
            title = f"{day.isoformat()} {project.ko if korean else project.en} {label}"
            self._add("meeting", folder, stem, title=title, korean=korean, day=day, author=rng.choice(project.members),
                      tags=["회의록" if korean else "meeting", _slug(labels[1]), project.slug], subject=kind,
                      project=project)
        for _ in range(counts["task"]):
            korean, project, topic = self._korean(), rng.choice(self.projects), rng.choice(TOPICS)
            verb_ko, verb_en = rng.choice([("개선", "Improve"), ("정리", "Clean up"), ("도입", "Introduce"),
                                           ("점검", "Audit"), ("자동화", "Automate"), ("문서화", "Document")])
            title = f"{topic[0]} {verb_ko}" if korean else f"{verb_en} {topic[1]}"
            stem = title.replace(" ", "-") if korean else _slug(title)
            folder = f"작업/{project.slug}" if korean else f"tasks/{project.slug}"
            self._add("task", folder, stem, title=title, korean=korean, day=self._day(),
                      author=rng.choice(project.members), tags=["task", project.slug], subject=topic, project=project)
        for _ in range(counts["design"]):
            korean, project, topic = self._korean(), rng.choice(self.projects), rng.choice(TOPICS)
            title = f"{project.ko} {topic[0]} 설계" if korean else f"{project.en} {topic[1]} design"
            stem = title.replace(" ", "-") if korean else _slug(title)
            self._add("design", f"projects/{project.slug}", stem, title=title, korean=korean, day=self._day(),
                      author=rng.choice(project.members), tags=["design", project.slug], subject=topic, project=project)
        for _ in range(counts["incident"]):
            korean, day, project = self._korean(), self._day(), rng.choice(self.projects)
            topic = rng.choice(TOPICS)
            title = f"{day.isoformat()} " + (f"{topic[0]} 장애 회고" if korean else f"{topic[1]} incident review")
            stem = title.replace(" ", "-") if korean else _slug(title)
            self._add("incident", "장애" if korean else "incidents", stem, title=title, korean=korean, day=day,
                      author=rng.choice(project.members), tags=["incident", project.slug], subject=topic,
                      project=project)

    # rendering -----------------------------------------------------------------------------------------

    def wiki(self, note: Note | None, label: str | None = None) -> str:
        if note is None:
            return label or ""
        if label is None or self.rng.random() < 0.35:
            return f"[[{note.stem}]]"
        return f"[[{note.stem}|{label}]]"

    def md(self, source: Note, target: Note | None, label: str) -> str:
        if target is None:
            return label
        return f"[{label}]({_relative(target.path, source.path)})"

    def person_ref(self, source: Note, person: Person, korean: bool) -> str:
        name = person.ko if korean else person.en
        roll = self.rng.random()
        if person.note is None or roll < 0.45:
            return name
        if roll < 0.85:
            return self.wiki(person.note, name)
        return self.md(source, person.note, name)

    def entity_ref(self, source: Note, entity, korean: bool) -> str:
        if isinstance(entity, Tool):
            name = entity.en
        else:
            name = entity.ko if korean else entity.en
            if isinstance(entity, Project):
                name = f"프로젝트 {entity.ko}" if korean and self.rng.random() < 0.4 else (
                    name if korean else f"Project {entity.en}")
        roll = self.rng.random()
        if entity.note is None or roll < 0.4:
            return name
        if roll < 0.8:
            return self.wiki(entity.note, name)
        return self.md(source, entity.note, name)

    def any_note_ref(self, source: Note, korean: bool) -> str:
        target = self.rng.choice(self.notes)
        if target is source:
            return ""
        return self.wiki(target, target.title) if self.rng.random() < 0.7 else self.md(source, target, target.title)

    def number(self, korean: bool) -> str:
        rng = self.rng
        pick = rng.randrange(10)
        if pick == 0:
            return f"{rng.randint(8, 900)} ms"
        if pick == 1:
            return f"{rng.randint(1, 64) * 0.5:g} GB"
        if pick == 2:
            return f"{rng.randint(2, 120) * 10:,}만 원" if korean else f"KRW {rng.randint(2, 400) * 500_000:,}"
        if pick == 3:
            return f"{rng.randint(50, 999) / 10:g}%"
        if pick == 4:
            return f"{rng.randint(1, 40)}일" if korean else f"{rng.randint(1, 40)} days"
        if pick == 5:
            return f"{rng.randint(2, 500) * 1000:,}건" if korean else f"{rng.randint(2, 500) * 1000:,} documents"
        if pick == 6:
            return f"{rng.randint(1, 48)}시간" if korean else f"{rng.randint(1, 48)} hours"
        if pick == 7:
            return f"{rng.randint(1, 32)} vCPU"
        if pick == 8:
            return f"USD {rng.randint(1, 90) * 100:,}"
        return f"{rng.randint(2, 600)} TB" if rng.random() < 0.2 else f"{rng.randint(10, 9000):,} req/s"

    def sentence(self, note: Note, korean: bool) -> str:
        rng = self.rng
        project = note.project or rng.choice(self.projects)
        person = self.person_ref(note, rng.choice(project.members), korean)
        other = self.person_ref(note, rng.choice(self.people), korean)
        tool = self.entity_ref(note, rng.choice(project.tools or self.tools), korean)
        topic = rng.choice(TOPICS)
        number = self.number(korean)
        proj = self.entity_ref(note, project, korean)
        pick = rng.randrange(16)
        if korean:
            return [
                lambda: f"{person}이(가) {topic[0]} 작업을 맡아 {number}까지 줄이는 것을 목표로 한다.",
                lambda: f"{tool} 도입 후 {topic[0]} 지표가 {number} 수준으로 개선됐다.",
                lambda: f"{proj}의 {topic[0]} 문제는 {other}와 함께 다음 주까지 정리하기로 했다.",
                lambda: f"{person}은(는) \"{rng.choice(QUOTED_KO)}\"를 참고해서 {topic[0]} 방식을 바꾸자고 제안했다.",
                lambda: f"현재 {topic[0]} 비용은 월 {self.number(True)} 정도이고, {tool} 설정으로 더 줄일 수 있다.",
                lambda: f"{other}의 말로는 {proj}에서 {number}가 넘으면 경고를 보내야 한다.",
                lambda: f"지난 회의에서 논의한 {topic[0]} 건은 {self.any_note_ref(note, True)} 문서에 정리되어 있다.",
                lambda: f"{tool}을(를) {rng.randint(1, 17)}.{rng.randint(0, 12)} 버전으로 올리는 일은 {person} 담당.",
                lambda: f"{proj} 팀은 {topic[0]} 검토를 위해 {number} 규모의 테스트를 돌렸다.",
                lambda: f"{person}와 {other}는 {tool} 대신 다른 도구를 쓰는 방안도 비교했지만 결론은 유지였다.",
                lambda: f"고객사는 {topic[0]}에 대해 {number} 이내를 요구했다.",
                lambda: f"참고: {self.any_note_ref(note, True)}, {self.any_note_ref(note, True)}.",
                lambda: f"{tool} 대시보드에서 {topic[0]} 그래프를 보면 {number} 근처에서 튀는 구간이 있다.",
                lambda: f"이 부분은 아직 확정되지 않았으니 {other}에게 먼저 물어볼 것.",
                lambda: f"{person}이(가) 작성한 초안은 {self.any_note_ref(note, True)}에 있다.",
                lambda: f"{rng.choice(TASK_STATUS)[0]} 상태인 {topic[0]} 작업이 {rng.randint(2, 14)}개 남아 있다.",
            ][pick]()
        return [
            lambda: f"{person} owns the {topic[1]} work and wants to bring it down to {number}.",
            lambda: f"After moving to {tool}, our {topic[1]} numbers improved to about {number}.",
            lambda: f"{person} and {other} agreed to sort out the {topic[1]} issue in {proj} by next week.",
            lambda: f"{person} suggested we follow \"{rng.choice(QUOTED_EN)}\" for the {topic[1]} approach.",
            lambda: f"The {topic[1]} costs about {self.number(False)} a month; tuning {tool} could cut that.",
            lambda: f"According to {other}, {proj} should alert once we pass {number}.",
            lambda: f"The {topic[1]} discussion from last time is written up in {self.any_note_ref(note, False)}.",
            lambda: f"{person} will upgrade {tool} to {rng.randint(1, 17)}.{rng.randint(0, 12)} next window.",
            lambda: f"The {proj} team ran a {number} load test for the {topic[1]} review.",
            lambda: f"{person} compared {tool} with two alternatives, but we are keeping it for now.",
            lambda: f"The client asked for {topic[1]} within {number}.",
            lambda: f"See also {self.any_note_ref(note, False)} and {self.any_note_ref(note, False)}.",
            lambda: f"On the {tool} dashboard the {topic[1]} graph spikes around {number}.",
            lambda: f"This part is not settled yet, so check with {other} first.",
            lambda: f"The first draft by {person} is in {self.any_note_ref(note, False)}.",
            lambda: f"There are {rng.randint(2, 14)} {topic[1]} tasks still marked \"{rng.choice(TASK_STATUS)[1]}\".",
        ][pick]()

    def paragraph(self, note: Note, korean: bool, sentences: tuple[int, int] = (2, 5)) -> str:
        count = self.rng.randint(*sentences)
        return " ".join(self.sentence(note, korean) for _ in range(count))

    def bullets(self, note: Note, korean: bool, count: int) -> str:
        return "\n".join(f"- {self.sentence(note, korean)}" for _ in range(count))

    def front_matter(self, note: Note) -> str:
        author = note.author.ko if note.korean else note.author.en
        lines = ["---", f"title: {_yaml(note.title)}", f"author: {_yaml(author)}", f"date: {note.day.isoformat()}",
                 f"tags: [{', '.join(_yaml(tag) for tag in note.tags)}]"]
        if note.aliases:
            lines.append(f"aliases: [{', '.join(_yaml(alias) for alias in note.aliases)}]")
        lines.append("---")
        return "\n".join(lines) + "\n\n"

    def render(self, note: Note, decisions: list[tuple[date, Note, str]]) -> str:
        korean, rng = note.korean, self.rng
        target = _lognormal_size(rng)
        parts = [self.front_matter(note), f"# {note.title}\n\n"]
        parts.append(getattr(self, f"_head_{note.kind}")(note, korean, decisions))
        size = sum(len(part.encode()) for part in parts)
        headings = ["메모", "추가 논의", "참고", "추가 의견", "후속 조치"] if korean else [
            "Notes", "Further discussion", "References", "Open questions", "Follow-ups"]
        while size < target:
            block = f"\n## {rng.choice(headings)}\n\n" if rng.random() < 0.35 else ""
            if rng.random() < 0.65:
                block += self.paragraph(note, korean)
            else:
                block += self.bullets(note, korean, rng.randint(2, 5))
            block += "\n"
            if size + len(block.encode()) > MAX_BYTES - 100:
                break
            parts.append("\n" + block if not block.startswith("\n") else block)
            size += len(parts[-1].encode())
        parts.append(f"\n{' '.join('#' + tag for tag in note.tags[:2])}\n")
        return "".join(parts)

    # per kind opening blocks ----------------------------------------------------------------------------

    def _head_person(self, note: Note, korean: bool, _decisions) -> str:
        person: Person = note.subject
        owns = [p for p in self.projects if p.owner is person] or [self.rng.choice(self.projects)]
        place = self.rng.choice(self.places)
        if korean:
            lines = [f"역할: {person.role[0]}", f"팀: {person.team[0]}", f"슬랙: {person.handle}",
                     f"근무지: {self.entity_ref(note, place, True)}", "",
                     f"{person.ko}은(는) {person.team[0]}의 {person.role[0]}이다.", "", "## 담당", ""]
        else:
            lines = [f"Role: {person.role[1]}", f"Team: {person.team[1]}", f"Slack: {person.handle}",
                     f"Location: {self.entity_ref(note, place, False)}", "",
                     f"{person.en} is a {person.role[1]} in the {person.team[1]}.", "", "## Owns", ""]
        lines += [f"- {self.entity_ref(note, project, korean)}" for project in owns[:6]]
        return "\n".join(lines) + "\n"

    def _head_project(self, note: Note, korean: bool, _decisions) -> str:
        project: Project = note.subject
        client = self.entity_ref(note, project.client, korean) if project.client else ("사내" if korean else "internal")
        budget = self.number(korean) if korean else f"KRW {self.rng.randint(20, 900) * 1_000_000:,}"
        members = ", ".join(self.person_ref(note, member, korean) for member in project.members)
        tools = ", ".join(self.entity_ref(note, tool, korean) for tool in project.tools)
        status = self.rng.choice(TASK_STATUS)
        if korean:
            lines = [f"담당자: {self.person_ref(note, project.owner, True)}", f"고객사: {client}",
                     f"상태: {status[0]}", f"예산: {budget}", f"시작일: {note.day.isoformat()}", "",
                     "## 구성원", "", members, "", "## 사용 도구", "", tools]
        else:
            lines = [f"Owner: {self.person_ref(note, project.owner, False)}", f"Client: {client}",
                     f"Status: {status[1]}", f"Budget: {budget}", f"Start: {note.day.isoformat()}", "",
                     "## Team", "", members, "", "## Stack", "", tools]
        return "\n".join(lines) + "\n"

    def _head_tool(self, note: Note, korean: bool, _decisions) -> str:
        tool: Tool = note.subject
        users = [p for p in self.projects if tool in p.tools][:5]
        version = f"{self.rng.randint(1, 17)}.{self.rng.randint(0, 12)}"
        owner = self.person_ref(note, self.rng.choice(self.people), korean)
        used = ", ".join(self.entity_ref(note, p, korean) for p in users) or "-"
        if korean:
            lines = [f"분류: {tool.category}", f"버전: {version}", f"담당자: {owner}", f"사용 프로젝트: {used}", "",
                     f"{tool.en}({tool.ko})는 팀에서 {tool.category} 용도로 쓴다."]
        else:
            lines = [f"Category: {tool.category}", f"Version: {version}", f"Owner: {owner}", f"Used by: {used}", "",
                     f"We use {tool.en} for {tool.category}."]
        return "\n".join(lines) + "\n"

    def _head_org(self, note: Note, korean: bool, _decisions) -> str:
        org: Org = note.subject
        projects = [p for p in self.projects if p.client is org][:5]
        contact = self.rng.choice(self.people)
        used = ", ".join(self.entity_ref(note, p, korean) for p in projects) or "-"
        if korean:
            lines = [f"업종: {org.ko[-2:]}", f"계약 담당자: {self.person_ref(note, contact, True)}",
                     f"프로젝트: {used}", f"계약 금액: {self.number(True)}"]
        else:
            lines = [f"Industry: {org.en.split()[-1]}", f"Account owner: {self.person_ref(note, contact, False)}",
                     f"Projects: {used}", f"Contract value: KRW {self.rng.randint(50, 2000) * 1_000_000:,}"]
        return "\n".join(lines) + "\n"

    def _head_place(self, note: Note, korean: bool, _decisions) -> str:
        room = self.rng.choice(ROOMS)
        if korean:
            lines = [f"주소: 경기도 성남시 분당구 판교역로 {self.rng.randint(1, 300)}", f"회의실: {room[0]} 회의실",
                     f"수용 인원: {self.rng.randint(8, 120)}명"]
        else:
            lines = [f"Address: {self.rng.randint(1, 300)} Pangyoyeok-ro, Seongnam", f"Meeting room: {room[1]} room",
                     f"Capacity: {self.rng.randint(8, 120)} people"]
        return "\n".join(lines) + "\n"

    def _head_adr(self, note: Note, korean: bool, decisions) -> str:
        tool, topic = note.subject
        index = int(note.stem[:4]) - 1
        status_pick = self.rng.randrange(len(STATUS_EN))
        superseding = None
        if index + 1 < len(self.adrs) and self.rng.random() < 0.15:
            superseding = self.adrs[self.rng.randrange(index + 1, len(self.adrs))]
        chosen = self.rng.sample(self.people, min(3, len(self.people)))
        deciders = ", ".join(self.person_ref(note, p, korean) for p in chosen)
        if korean:
            status = f"{superseding.title}에 의해 대체됨" if superseding else STATUS_KO[status_pick]
            lines = [f"날짜: {note.day.isoformat()}", f"결정자: {deciders}", "", "## 상태", "", status]
            if superseding:
                lines.append(f"\n대체 문서: {self.md(note, superseding, superseding.title)}")
            lines += ["", "## 맥락", "", self.paragraph(note, True, (2, 4)), "", "## 결정", "",
                      f"{topic[0]}에는 {self.entity_ref(note, tool, True)}를 사용한다. {self.sentence(note, True)}",
                      "", "## 결과", "", self.bullets(note, True, 3)]
        else:
            status = f"Superseded by {superseding.title}" if superseding else STATUS_EN[status_pick]
            lines = [f"Date: {note.day.isoformat()}", f"Deciders: {deciders}", "", "## Status", "", status]
            if superseding:
                lines.append(f"\nSuperseded by: {self.md(note, superseding, superseding.title)}")
            lines += ["", "## Context", "", self.paragraph(note, False, (2, 4)), "", "## Decision", "",
                      f"We will use {self.entity_ref(note, tool, False)} for {topic[1]}. {self.sentence(note, False)}",
                      "", "## Consequences", "", self.bullets(note, False, 3)]
        decisions.append((note.day, note, status))
        return "\n".join(lines) + "\n"

    def _head_meeting(self, note: Note, korean: bool, _decisions) -> str:
        rng = self.rng
        project: Project = note.project
        attendees = rng.sample(project.members, min(len(project.members), rng.randint(3, 6)))
        room, place = rng.choice(ROOMS), rng.choice(self.places)
        names = ", ".join(self.person_ref(note, p, korean) for p in attendees)
        hour = rng.randint(9, 17)
        if korean:
            lines = [f"일시: {note.day.year}년 {note.day.month}월 {note.day.day}일 {hour}:00–{hour}:50",
                     f"장소: {self.entity_ref(note, place, True)} {room[0]} 회의실", f"참석자: {names}",
                     f"작성자: {note.author.ko}", "", "## 진행 상황", ""]
            for person in attendees[:4]:
                lines += [f"### {person.ko}", "", self.bullets(note, True, rng.randint(1, 3)), ""]
            lines += ["## 할 일", ""]
            for person in attendees[:3]:
                due = note.day + timedelta(days=rng.randint(3, 21))
                lines.append(f"- [ ] {person.ko}: {rng.choice(TOPICS)[0]} 정리 — {due.month}/{due.day}")
        else:
            lines = [f"Date: {note.day.isoformat()} {hour}:00–{hour}:50",
                     f"Location: {self.entity_ref(note, place, False)}, {room[1]} room", f"Attendees: {names}",
                     f"Notes by: {note.author.en}", "", "## Updates", ""]
            for person in attendees[:4]:
                lines += [f"### {person.en}", "", self.bullets(note, False, rng.randint(1, 3)), ""]
            lines += ["## Action items", ""]
            for person in attendees[:3]:
                due = note.day + timedelta(days=rng.randint(3, 21))
                lines.append(f"- [ ] {person.en}: follow up on {rng.choice(TOPICS)[1]} — due {due.isoformat()}")
        return "\n".join(lines) + "\n"

    def _head_task(self, note: Note, korean: bool, _decisions) -> str:
        rng = self.rng
        project: Project = note.project
        owner = self.person_ref(note, rng.choice(project.members), korean)
        status = rng.choice(TASK_STATUS)
        due = note.day + timedelta(days=rng.randint(7, 60))
        if korean:
            lines = [f"담당자: {owner}", f"상태: {status[0]}", f"마감: {due.isoformat()}",
                     f"프로젝트: {self.entity_ref(note, project, True)}", f"예상 공수: {rng.randint(1, 15)}일", "",
                     "## 배경", "", self.paragraph(note, True, (1, 3)), "", "## 계획", "",
                     "\n".join(f"{i}. {self.sentence(note, True)}" for i in range(1, rng.randint(3, 5)))]
        else:
            lines = [f"Owner: {owner}", f"Status: {status[1]}", f"Due: {due.isoformat()}",
                     f"Project: {self.entity_ref(note, project, False)}", f"Estimate: {rng.randint(1, 15)} days", "",
                     "## Background", "", self.paragraph(note, False, (1, 3)), "", "## Plan", "",
                     "\n".join(f"{i}. {self.sentence(note, False)}" for i in range(1, rng.randint(3, 5)))]
        return "\n".join(lines) + "\n"

    def _head_design(self, note: Note, korean: bool, _decisions) -> str:
        project: Project = note.project
        reviewer = self.person_ref(note, self.rng.choice(self.people), korean)
        if korean:
            lines = [f"작성자: {note.author.ko}", f"검토자: {reviewer}",
                     f"프로젝트: {self.entity_ref(note, project, True)}", "", "## 목표", "",
                     self.paragraph(note, True, (2, 3)), "", "## 제안", "",
                     self.bullets(note, True, 3)]
        else:
            lines = [f"Author: {note.author.en}", f"Reviewer: {reviewer}",
                     f"Project: {self.entity_ref(note, project, False)}", "", "## Goals", "",
                     self.paragraph(note, False, (2, 3)), "", "## Proposal", "", self.bullets(note, False, 3)]
        return "\n".join(lines) + "\n"

    def _head_incident(self, note: Note, korean: bool, _decisions) -> str:
        rng = self.rng
        minutes = rng.randint(4, 300)
        if korean:
            lines = [f"발생: {note.day.isoformat()} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                     f"영향 시간: {minutes}분", f"심각도: SEV{rng.randint(1, 3)}",
                     f"대응자: {self.person_ref(note, rng.choice(note.project.members), True)}", "",
                     "## 타임라인", "", self.bullets(note, True, 3), "", "## 원인", "",
                     self.paragraph(note, True, (2, 3))]
        else:
            lines = [f"Started: {note.day.isoformat()} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                     f"Duration: {minutes} minutes", f"Severity: SEV{rng.randint(1, 3)}",
                     f"Responder: {self.person_ref(note, rng.choice(note.project.members), False)}", "",
                     "## Timeline", "", self.bullets(note, False, 3), "", "## Root cause", "",
                     self.paragraph(note, False, (2, 3))]
        return "\n".join(lines) + "\n"

    def decision_log(self, note: Note, decisions: list[tuple[date, Note, str]]) -> str:
        """DECISIONS.md: about one dated section per 50 notes (at most 80), linking the latest ADRs."""
        rng = self.rng
        wanted = min(MAX_LOG_ENTRIES, max(3, len(self.notes) // 50))
        entries = sorted(decisions, key=lambda entry: (entry[0], entry[1].path))[-wanted:]
        for _ in range(wanted - len(entries)):
            entries.append((self._day(), None, rng.choice(STATUS_EN)))
        entries.sort(key=lambda entry: (entry[0], entry[1].path if entry[1] else ""))
        parts = [self.front_matter(note), "# Decision log\n\n",
                 "Short, dated decisions of the team. Larger architecture decisions also get an ADR in `adr/`; "
                 "this log links to them. Newest at the bottom.\n"]
        headings: set[str] = set()
        for day, adr, status in entries:
            deciders = ", ".join(p.en for p in rng.sample(self.people, min(3, len(self.people))))
            if adr is not None:
                heading = adr.title.split(". ", 1)[1]
                link = f"ADR: {self.md(note, adr, 'ADR-' + adr.stem[:4])}\n"
            else:
                heading = f"{rng.choice(['Adopt', 'Drop', 'Standardise on', 'Pilot'])} {rng.choice(self.tools).en} " \
                          f"for {rng.choice(TOPICS)[1]}"
                link = ""
            if heading in headings:  # a decision taken again later gets a heading of its own
                heading += f" (revisited {day.isoformat()})"
            headings.add(heading)
            parts.append(f"\n## {day.isoformat()}: {heading}\n\nStatus: {status}\nDate: {day.isoformat()}\n"
                         f"Deciders: {deciders}\n{link}\n{self.paragraph(note, False, (2, 3))}\n")
        return "".join(parts)


def _relative(target: str, source: str) -> str:
    """The path of vault-relative ``target`` as seen from the folder of vault-relative ``source``."""
    here, there = source.split("/")[:-1], target.split("/")
    common = 0
    while common < len(here) and common < len(there) - 1 and here[common] == there[common]:
        common += 1
    return "/".join([".."] * (len(here) - common) + there[common:])


def _yaml(value: str) -> str:
    if any(char in value for char in ":#,[]{}&*!|>'\"%@`") or value != value.strip():
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def generate_vault(target: Path, documents: int, seed: int = 7) -> None:
    """Write a vault of exactly ``documents`` notes into ``target`` (created; existing notes are overwritten)."""
    target = Path(target)
    builder = _Builder(documents, seed)
    builder.cast()
    builder.plan()
    decisions: list[tuple[date, Note, str]] = []
    texts: dict[str, str] = {}
    log_note = None
    for note in builder.notes:
        if note.kind == "decisions":
            log_note = note
            continue
        texts[note.path] = builder.render(note, decisions)
    if log_note is not None:
        texts[log_note.path] = builder.decision_log(log_note, decisions)
    folders: set[Path] = set()
    for relative, text in texts.items():
        path = target / relative
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
        path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.synthetic_vault", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="Folder to write the vault into.")
    parser.add_argument("--documents", "-n", type=int, default=1000, help="Number of notes (default 1000).")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    generate_vault(args.out, args.documents, args.seed)
    elapsed = time.perf_counter() - started
    print(f"wrote {args.documents} notes to {args.out} in {elapsed:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
