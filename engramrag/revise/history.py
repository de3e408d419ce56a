"""An entity's timeline: each single-valued property's values in date order, with the quote, document and date
of each, which one is current and why (``property_values``, written by ``lifecycle.timeline``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.extract.textutil import normalise_label
from engramrag.store import Home


@dataclass(frozen=True)
class HistoryEntry:
    subject: str
    property: str
    value: str
    doc: str
    date: str | None
    date_source: str | None
    line: int | None
    quote: str
    version: int
    current: bool
    restated: bool
    why: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def entity_history(home: Home, name: str, prop: str | None = None) -> list[HistoryEntry]:
    """The values of ``name``'s single-valued properties (one property with ``prop``), by property then date.
    ``name`` is matched as written in any note, through the aliases a chain was joined by ("MJ", "김민지")."""
    wanted = normalise_label(name)
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "property_values"):
            return []
        rows = catalog.execute(
            """
            SELECT subject, property, value, path, doc_date, date_source, line_start, quote, version, current,
                   restated, why
            FROM property_values
            WHERE subject_key IN (SELECT subject_key FROM property_values
                                  WHERE subject_key = ? OR lower(subject) = ?)
              AND (? IS NULL OR property = ? OR split_part(property, ':', 1) = ?)
            ORDER BY property, coalesce(doc_date, ''), path
            """,
            [wanted, wanted, prop, prop, prop],
        ).fetchall()
    return [HistoryEntry(*row[:6], int(row[6]) if row[6] is not None else None, *row[7:]) for row in rows]


def known_subjects(home: Home, limit: int = 20) -> list[str]:
    """Subjects with more than one version, most versions first: what to suggest when a name matched nothing."""
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "property_values"):
            return []
        rows = catalog.execute(
            "SELECT any_value(subject), count(DISTINCT value_key) AS values FROM property_values "
            "GROUP BY subject_key HAVING values > 1 ORDER BY values DESC, 1 LIMIT ?",
            [limit],
        ).fetchall()
    return [row[0] for row in rows]
