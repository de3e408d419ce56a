"""Gazetteer-free, conservative kind heuristics, and the key vocabularies of front matter and key–value lines.

Everything defaults to Concept; a kind is only guessed from the shape of the label (CamelCase, acronyms,
digits → Artifact; Inc/Team/팀 → Organization; Office/시/구 → Place; amounts and dates → Quantity).
"""

from __future__ import annotations

import re

from engramrag.extract.korean import looks_like_korean_name
from engramrag.extract.quantities import is_quantity
from engramrag.extract.textutil import normalise_label

FRONT_MATTER_KINDS = {
    "person": "Person", "people": "Person", "사람": "Person", "인물": "Person",
    "tool": "Artifact", "software": "Artifact", "library": "Artifact", "product": "Artifact",
    "service": "Artifact", "artifact": "Artifact", "도구": "Artifact",
    "project": "Project", "프로젝트": "Project",
    "team": "Organization", "org": "Organization", "organization": "Organization",
    "organisation": "Organization", "company": "Organization", "팀": "Organization", "회사": "Organization",
    "조직": "Organization",
    "meeting": "Event", "event": "Event", "회의": "Event", "미팅": "Event",
    "decision": "Decision", "adr": "Decision", "결정": "Decision",
    "task": "Task", "todo": "Task", "할일": "Task",
    "place": "Place", "office": "Place", "location": "Place", "장소": "Place",
    "concept": "Concept", "glossary": "Concept", "term": "Concept", "개념": "Concept",
}  # fmt: skip

# Keys of key–value lines and front matter whose value is an entity of a known kind.
KEY_KINDS = {
    **{key: "Person" for key in (
        "owner", "owners", "author", "authors", "assignee", "assignees", "reviewer", "reviewers", "lead",
        "manager", "maintainer", "maintainers", "contact", "driver", "decider", "deciders", "approver",
        "approvers", "attendees", "participants", "members", "담당자", "담당", "작성자", "리뷰어", "검토자",
        "승인자", "참석자", "참여자", "팀원", "멤버", "책임자")},
    **{key: "Organization" for key in ("team", "org", "organization", "company", "client", "팀", "회사", "조직")},
    **{key: "Project" for key in ("project", "projects", "프로젝트")},
    **{key: "Artifact" for key in ("tool", "tools", "stack", "repo", "repository", "library", "도구")},
    **{key: "Place" for key in ("location", "place", "office", "where", "장소", "위치")},
}  # fmt: skip
DATE_KEYS = frozenset(
    (
        "date", "due", "due_date", "deadline", "created", "updated", "decided", "start", "end", "start_date",
        "end_date", "날짜", "일자", "마감", "마감일", "기한", "시작일", "종료일",
    )
)  # fmt: skip
STATUS_KEYS = frozenset(["status", "state", "상태", "진행_상태"])

ORGANIZATION_WORDS = frozenset(
    (
        "inc", "inc.", "corp", "corp.", "corporation", "ltd", "ltd.", "llc", "gmbh", "co.", "team", "company",
        "foundation", "university", "lab", "labs", "group", "institute", "agency", "department",
    )
)  # fmt: skip
ORGANIZATION_SUFFIXES_KO = (
    "팀", "회사", "주식회사", "재단", "연구소", "본부", "그룹", "협회", "위원회", "부서", "사업부",
)  # fmt: skip
PLACE_WORDS = frozenset(("office", "city", "street", "building", "campus", "hq", "room", "station"))
PLACE_NAMES = frozenset(("seoul", "busan", "pangyo", "tokyo"))
PLACE_NAMES_KO = ("서울", "부산", "판교", "성수", "강남", "제주", "대전", "대구", "광주", "인천", "울산", "세종")
PLACE_SUFFIXES_KO = ("특별시", "광역시", "시", "구", "군", "동", "역")
NOT_PLACES_KO = (
    "연구", "요구", "도구", "기구", "친구", "추구", "탐구", "입구", "출구", "활동", "행동", "자동", "이동", "변동",
    "운동", "작동", "가동", "연동", "공동", "지시", "표시", "게시", "동시", "즉시", "무시", "실시", "개시", "감시",
    "제시", "역시", "다시", "혹시",
)  # fmt: skip
CAMEL = re.compile(r"[a-z][A-Z]")
ACRONYM = re.compile(r"^[A-Z][A-Z0-9&]+s?$")
DOTTED = re.compile(r"^[\w-]+\.[A-Za-z]{1,5}$")
PERSON_WORD = re.compile(r"^[A-Z][a-z]+(?:-[A-Z]?[a-z]+)?$")


def kind_from_type(value: object) -> str | None:
    """The core kind named by a front matter ``type``/``kind`` value, if it is one we know."""
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, str):
        return None
    return FRONT_MATTER_KINDS.get(normalise_label(value))


def key_kind(key: str) -> str | None:
    return KEY_KINDS.get(_key_form(key))


def is_date_key(key: str) -> bool:
    return _key_form(key) in DATE_KEYS


def is_status_key(key: str) -> bool:
    return _key_form(key) in STATUS_KEYS


def _key_form(key: str) -> str:
    return re.sub(r"[\s-]+", "_", normalise_label(key))


def guess_kind(label: str) -> str:
    """Concept unless the label's shape says Quantity, Organization, Place or Artifact."""
    if is_quantity(label):
        return "Quantity"
    words = label.split()
    if len(words) >= 2 and words[-1].casefold() in ORGANIZATION_WORDS:
        return "Organization"
    compact = label.replace(" ", "")
    if len(compact) > 1 and compact.endswith(ORGANIZATION_SUFFIXES_KO):
        return "Organization"
    if _is_place(label, words, compact):
        return "Place"
    if any(CAMEL.search(w) or ACRONYM.match(w) or DOTTED.match(w) or any(c.isdigit() for c in w) for w in words):
        return "Artifact"
    return "Concept"


def _is_place(label: str, words: list[str], compact: str) -> bool:
    if (len(words) >= 2 and words[-1].casefold() in PLACE_WORDS) or label.casefold() in PLACE_NAMES:
        return True
    if compact in PLACE_NAMES_KO or (compact.startswith(PLACE_NAMES_KO) and compact.endswith(PLACE_SUFFIXES_KO)):
        return True
    last = words[-1] if words else label
    return 3 <= len(last) <= 5 and last.endswith(PLACE_SUFFIXES_KO) and not last.endswith(NOT_PLACES_KO)


def looks_like_person_name(label: str) -> bool:
    """Two or three plain Title-case words (``Minji Park``), or a Korean name (``박민지``)."""
    if looks_like_korean_name(label):
        return True
    words = label.split()
    return (
        2 <= len(words) <= 3
        and all(PERSON_WORD.match(word) for word in words)
        and words[-1].casefold() not in ORGANIZATION_WORDS | PLACE_WORDS | PLACE_NAMES
    )
