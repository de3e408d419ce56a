"""The declared single-valued properties: a fact with one value at a time (who owns a thing, its price, its
vendor...), named by the words at the end of a key ("Billing service owner", "결제 서비스 담당자"). Read by the
prose sentences that state a change (``extract.property_changes``) and by the version chains
(``revise.versions``, where users extend the table).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache

from engramrag.extract.textutil import normalise_label

KEY_SEPARATORS = re.compile(r"[\s_\-]+")
POSSESSIVE = re.compile(r"(?:'s|’s|의)$")

SINGLE_VALUED: dict[str, tuple[str, ...]] = {
    "owner": ("owner", "owned by", "owns", "own", "maintainer", "dri", "responsible", "in charge", "runs", "담당자",
              "담당", "책임자", "오너", "관리자", "맡"),
    "lead": ("lead", "leader", "on-call lead", "on call lead", "on-call", "oncall", "리드", "리더", "당번", "팀장"),
    "price": ("price", "pricing", "cost", "fee", "가격", "요금", "비용", "단가"),
    "vendor": ("vendor", "provider", "supplier", "벤더", "업체", "공급사", "공급업체", "제공자", "제공 업체"),
    "status": ("status", "state", "상태"),
    "deadline": ("deadline", "due", "due date", "launch date", "release date", "마감", "마감일", "기한", "출시일"),
    "count": ("count", "headcount", "seats", "인원", "인원수", "좌석"),
    "budget": ("budget", "예산"),
    "location": ("location", "region", "위치", "리전"),
    "manager": ("manager", "매니저"),
}  # fmt: skip


def property_of(key: str, table: Mapping[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(property, the key's words before it) when ``key`` ends with a single-valued property's word."""
    return property_finder(table)(key)


def property_finder(table: Mapping[str, tuple[str, ...]]) -> Callable[[str], tuple[str, str] | None]:
    """:func:`property_of` for one ``table``, which a caller asking of many keys passes once."""
    frozen = tuple((name, tuple(aliases)) for name, aliases in table.items())
    return lambda key: _property_of(key, frozen)


@lru_cache(maxsize=65536)
def _property_of(key: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, str] | None:
    words = KEY_SEPARATORS.sub(" ", normalise_label(key)).strip()
    best: tuple[int, str, str] | None = None
    for alias_words, name, hangul in _alias_forms(table):
        ends = words == alias_words or words.endswith(" " + alias_words) or (
            hangul and words.endswith(alias_words) and len(words) > len(alias_words)
        )
        if ends and (best is None or len(alias_words) > best[0]):
            best = (len(alias_words), name, POSSESSIVE.sub("", words[: -len(alias_words)].strip()).strip())
    return (best[1], best[2]) if best else None


@lru_cache(maxsize=64)
def _alias_forms(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[str, str, bool], ...]:
    """Each alias of the table in the form keys are compared in, once per table."""
    forms = []
    for name, aliases in table:
        for alias in aliases:
            alias_words = KEY_SEPARATORS.sub(" ", normalise_label(alias)).strip()
            forms.append((alias_words, name, _is_hangul(alias_words)))
    return tuple(forms)


def _is_hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)
