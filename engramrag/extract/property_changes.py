"""Sentences that state a new value of a property, as key-value statements about the document (so version
chains read them like ``Owner: X`` lines):

- "Kevin Han is the ledger service on-call lead from now on." / "X is now the billing service owner."
  (only when the words end with a declared single-valued property: ``extract.properties``);
- "Eunji Lim takes over the notifications service from Nari Seo." (the thing's owner);
- "Figma seats changed from 9 to 15.", "The notifications service has moved from SendGrid to Mailgun (email
  vendor).", "Project Harbor deadline moved from 2024-05-31 to 2024-06-30.";
- "Partner feeds is at 21 now (was 15).";
- "배송 서비스는 이번 주부터 조대니얼이 맡는다." (담당자), "지도 제공자를 Kakao Maps에서 Naver Maps로 바꿨다.",
  "결제 서비스 담당자가 김민지에서 이서연으로 변경되었다."

The statement's label is the key as a person would write it ("ledger service on-call lead"), its span the
sentence; the old value of a "from A to B" sentence is not a statement (the earlier note holds it).
"""

from __future__ import annotations

import re

from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.properties import SINGLE_VALUED, property_of
from engramrag.extract.textutil import sentences, snake_case, span_at
from engramrag.vault.document import Document

NAME = r"[A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*){0,3}"
LIST_MARK = r"^(?:[-*+]\s+|\d+[.)]\s+)?"
IS_THE = re.compile(
    LIST_MARK + rf"(?P<value>{NAME})\s+is\s+(?:now\s+)?(?:the\s+)?(?:new\s+)?(?P<key>[A-Za-z][\w .'’/-]{{2,60}}?)"
    r"(?:\s*,?\s*(?:from now on|going forward|effective immediately|starting (?:today|this week)|now))?\s*[.!]?$"
)
TAKES_OVER = re.compile(
    LIST_MARK + rf"(?P<value>{NAME})\s+(?:takes|took|has taken|will take)\s+over\s+(?:the\s+)?"
    rf"(?P<key>[\w .'’-]{{2,60}}?)(?:\s+from\s+{NAME})?\s*[.!]?$"
)
CHANGED = re.compile(
    LIST_MARK + r"(?:[Tt]he\s+|[Oo]ur\s+)?(?P<key>[\w .'’/-]{2,60}?)\s+(?:has\s+|have\s+)?"
    r"(?:changed|moved|went|switched|increased|decreased|grew|dropped|was moved|was changed)"
    r"\s+from\s+(?P<old>[^.;]+?)\s+to\s+"
    r"(?P<value>[^;()]+?)(?:\s*\((?P<note>[^)]{2,40})\))?\s*[.!]?$"
)
AT_NOW = re.compile(
    LIST_MARK + r"(?:[Tt]he\s+|[Oo]ur\s+)?(?P<key>[\w .'’/-]{2,60}?)\s+(?:is|are)\s+(?:at|now at)\s+(?P<value>[^\s(,]+)"
    r"(?:\s+now)?(?:\s*\(was\s+[^)]+\))?\s*[.!]?$"
)
KO_TAKES = re.compile(
    LIST_MARK + r"(?P<key>[^,.]+?)(?:\([^)]*\))?(?:은|는)\s+(?:이번\s*주부터|오늘부터|앞으로|이제부터|이제|지금부터|"
    r"[0-9월일\s]+부터)?\s*(?P<value>[^\s,.]+?)(?:이|가)\s+맡(?:는다|습니다|기로\s+했다|게\s+되었다|았다|아요)"
)
KO_CHANGED = re.compile(
    LIST_MARK + r"(?P<key>.+?)(?:을|를|이|가)\s+(?P<old>[^,.]+?)에서\s+(?P<value>[^,.]+?)(?:으로|로)\s*"
    r"(?:바꿨|바꿈|바뀌|변경|교체|조정|전환|옮겼|이전)"
)
OWNER = SINGLE_VALUED["owner"][0]


def extract_property_changes(document: Document, builder: ExtractionBuilder, prose: str) -> None:
    for start, end in sentences(prose, document.body_start):
        found = _change(document.text[start:end].strip())
        if found is None:
            continue
        key, value = found
        key = " ".join(key.split()).strip(" .,")
        value = " ".join(value.split()).strip(" .,")
        if not key or not value or len(key) > 60:
            continue
        builder.statement(DOCUMENT_KEY, snake_case(key), key, value, object_is_entity=False,
                          span=span_at(document, start, end))  # fmt: skip


def _change(sentence: str) -> tuple[str, str] | None:
    """(key, new value) of a sentence that states a change, or None."""
    if match := IS_THE.match(sentence):
        key = _of_form(match.group("key"))
        return (key, match.group("value")) if property_of(key, SINGLE_VALUED) else None
    if match := TAKES_OVER.match(sentence):
        return f"{match.group('key')} {OWNER}", match.group("value")
    if match := CHANGED.match(sentence):
        note = match.group("note")
        key = f"{match.group('key')} {note}" if note and property_of(note, SINGLE_VALUED) else match.group("key")
        return key, match.group("value")
    if match := AT_NOW.match(sentence):
        return match.group("key"), match.group("value")
    if match := KO_TAKES.match(sentence):
        return f"{match.group('key')} 담당자", match.group("value")
    if match := KO_CHANGED.match(sentence):
        return match.group("key"), match.group("value")
    return None


def _of_form(key: str) -> str:
    """"owner of the billing service" -> "billing service owner"."""
    head, sep, tail = key.partition(" of ")
    if not sep:
        head, sep, tail = key.partition(" for ")
    return f"{tail.removeprefix('the ').strip()} {head.strip()}" if sep else key
