"""Supersession proposals: which dated decision plausibly replaces which.

Decisions come from DECISIONS.md sections and ADR files (the catalog's ``decisions`` table). For each pair of
dated decisions about the same subject, the later one is proposed as superseding the earlier. A person accepts
or rejects the proposal; an accepted one becomes quads in the later document's analysis graph
(:func:`supersedes_quads`), and the earlier decision stays, marked superseded, still answering for its period.
This is not general temporal reasoning: it only orders dated decisions that share a subject.

Signals, strongest first:

- **explicit**: a ``Supersedes:`` or ``Superseded by:`` field that names the other decision (by file name,
  ``ADR-0002``, ``2026-02-10: Title`` or the title). One decision is often recorded twice, as an ADR and as a
  DECISIONS.md entry (same date, and the same title or the entry's ``ADR:`` link); an explicit field of one record
  also holds for the others of the same decision. Two records of the same decision are never proposed.
- **title**: the content words the titles share ("Use DuckDB for the catalog", "Move the catalog to
  PostgreSQL": the catalog), as a Jaccard similarity. Without an explicit field, a proposal needs at least
  ``min_title_similarity``: sharing entities alone (a product, a team) does not make two decisions rivals.
- **subjects**: the entities the decision's statements link to or that are mentioned inside its lines (people,
  quantities and other decisions excluded), as an IDF-weighted Jaccard similarity, so a name every decision
  mentions counts for little.
- **status**: the earlier decision is marked superseded, deprecated, 폐기 or 대체됨.

The score is the noisy-OR of the weighted signals. Pairs decided on the same day are flagged ``same_day`` and
not ordered (earlier/later follow the keys) unless an explicit field gives the order.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

import pandas as pd
import pyoxigraph as ox

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import iso_date, normalise_label
from engramrag.ontology.graphs import (
    CREATED_BY,
    DERIVED_FROM,
    LABEL,
    OBJECT,
    PREDICATE,
    SOFTWARE_AGENT,
    STATEMENT,
    SUBJECT,
    TYPE,
)
from engramrag.ontology.vocab import (
    ENGRAM,
    PAV,
    PROV,
    XSD,
    agent_iri,
    analysis_graph_iri,
    document_iri,
    entity_iri,
    extractor_iri,
    statement_iri,
)
from engramrag.revise.references import ReferenceIndex
from engramrag.vault.ids import short_hash

VERSION = "1"
WORD = re.compile(r"\w+")
KOREAN_PARTICLE = re.compile(r"(?<=[\uac00-\ud7a3])(?:으로|에서|에게|로|을|를|은|는|이|가|의|에|와|과|도)$")
# Words that say how something was decided, not what about: "Use X for the catalog" and "Move the catalog to Y"
# share only "catalog".
TITLE_STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "and", "or", "as", "from", "into", "we",
        "will", "is", "are", "be", "use", "using", "used", "adopt", "adopting", "keep", "move", "moving", "switch",
        "choose", "host", "record", "decide", "decision",
        "사용", "채택", "도입", "유지", "결정", "전환", "이전", "선택",
    }
)  # fmt: skip

SUPERSEDES = ox.NamedNode(str(ENGRAM.supersedes))
CURATED_BY = ox.NamedNode(str(PAV.curatedBy))
VERDICT = ox.NamedNode(str(ENGRAM.reviewVerdict))
ACCEPTED_AT = ox.NamedNode(str(ENGRAM.acceptedAt))
PERSON = ox.NamedNode(str(PROV.Person))
DATE_TIME = ox.NamedNode(str(XSD.dateTime))
PROPOSER = ox.NamedNode(str(extractor_iri("supersession", VERSION)))


@dataclass(frozen=True)
class SupersessionConfig:
    """How supersession proposals are found and scored; weights are each signal's contribution on its own."""

    explicit_weight: float = field(
        default=1.0, metadata={"help": "A Supersedes/Superseded by field of one decision naming the other."}
    )
    same_record_weight: float = field(
        default=0.9,
        metadata={"help": "An explicit field of another record of the same decision (an ADR and its DECISIONS.md "
                  "entry)."},
    )
    title_weight: float = field(default=0.6, metadata={"help": "Times the Jaccard similarity of title words."})
    subject_weight: float = field(
        default=0.5, metadata={"help": "Times the IDF-weighted Jaccard similarity of the subject entities."}
    )
    status_weight: float = field(
        default=0.3, metadata={"help": "The earlier decision's status says it was superseded or deprecated."}
    )
    min_title_similarity: float = field(
        default=0.25,
        metadata={"help": "Title similarity a pair needs without an explicit field: the same object of decision."},
    )
    min_score: float = field(default=0.3, metadata={"help": "Proposals scoring below this are dropped."})
    excluded_kinds: tuple[str, ...] = field(
        default=("Person", "Quantity", "Decision"),
        metadata={"help": "Entity kinds that say who or when, not what a decision is about."},
    )
    superseded_statuses: tuple[str, ...] = field(
        default=("superseded", "deprecated", "replaced", "obsolete", "retired", "폐기", "대체"),
        metadata={"help": "Status words (matched inside the status) that mark a decision as replaced."},
    )


@dataclass(frozen=True)
class DecisionSide:
    key: str  # decision_key(path, title)
    doc_id: str
    path: str
    entity_key: str
    title: str
    decided_on: str | None
    status: str | None
    line_start: int | None  # None: a decision whose record could not be located in the text
    line_end: int | None
    quote: str  # the exact source lines line_start..line_end; empty when not located


@dataclass(frozen=True)
class SupersessionProposal:
    earlier: DecisionSide
    later: DecisionSide
    score: float
    same_day: bool
    explicit: bool
    title_similarity: float
    subject_similarity: float
    shared_subjects: tuple[str, ...]
    reasons: tuple[str, ...]
    # The path of the record whose own Supersedes/Superseded-by field states this pair: an author's declaration,
    # applied on build without review (a person's rejection still wins). None for an inferred proposal.
    declared_in: str | None = None


@dataclass
class _Record:
    side: DecisionSide
    date: str | None
    supersedes: list[str]
    superseded_by: list[str]
    title_words: frozenset[str]
    subjects: set[str]
    linked_stems: set[str]  # note names its own fields link to (``ADR: [[0004-...]]``)


def decision_key(path: str, title: str) -> str:
    """Stable across rebuilds: the decision's document path and normalised title."""
    return f"{path}#{normalise_label(title)}"


def propose_supersessions(
    decisions: pd.DataFrame,
    documents: pd.DataFrame,
    statements: pd.DataFrame,
    entities: pd.DataFrame,
    config: SupersessionConfig | None = None,
) -> list[SupersessionProposal]:
    """Proposals (earlier, later), best first, from the catalog tables ``decisions``, ``documents`` (doc_id, path,
    text), ``statements`` (doc_id, subject, predicate, object, object_is_entity, line_start) and ``entities``
    (doc_id, entity_key, label, kind)."""
    config = config or SupersessionConfig()
    records = _records(decisions, documents, statements, entities, config)
    group = _same_decision_groups(records)
    explicit = _explicit_edges(records, group)
    idf = _idf([record.subjects for record in records])
    proposals = []
    for a, b in sorted(_pairs(records, explicit, config)):
        if group[a] == group[b]:
            continue
        proposal = _propose(records, a, b, explicit, idf, config)
        if proposal is not None:
            proposals.append(proposal)
    return sorted(proposals, key=lambda p: (-p.score, p.earlier.key, p.later.key))


def _pairs(
    records: list[_Record], explicit: dict[tuple[int, int], tuple[bool, str, str | None]], config: SupersessionConfig
) -> set[tuple[int, int]]:
    """The pairs worth scoring: explicit ones, and those sharing a title word (a pair without an explicit field
    needs a title similarity above zero). Every pair only when that minimum is zero."""
    n = len(records)
    if config.min_title_similarity <= 0:
        return {(a, b) for a in range(n) for b in range(a + 1, n)}
    pairs = {(min(a, b), max(a, b)) for a, b in explicit}
    holders: dict[str, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        for word in record.title_words:
            holders[word].append(index)
    for members in holders.values():
        pairs.update((members[x], members[y]) for x in range(len(members)) for y in range(x + 1, len(members)))
    return pairs


def proposals_frame(proposals: Iterable[SupersessionProposal]) -> pd.DataFrame:
    """One row per proposal, the two sides' fields prefixed ``earlier_`` and ``later_``."""
    rows = []
    for proposal in proposals:
        row: dict[str, Any] = {}
        for side in ("earlier", "later"):
            row.update({f"{side}_{k}": v for k, v in asdict(getattr(proposal, side)).items()})
        row.update({k: v for k, v in asdict(proposal).items() if k not in ("earlier", "later")})
        rows.append(row)
    return pd.DataFrame(rows)


def supersedes_quads(
    accepted: Sequence[SupersessionProposal],
    accepted_by: str,
    accepted_at: str | None = None,
    verdict: str = "accepted",
) -> list[ox.Quad]:
    """The quads saying, for each accepted proposal, that the later decision supersedes the earlier one, in the
    LATER document's analysis graph: the plain edge (for graph queries and PageRank) and a Statement node with its
    provenance. The node is derived from the later document (the record that replaces), created by the proposer
    (``pav:createdBy``, as the provenance check requires of every statement) and curated by the person who accepted
    it (``pav:curatedBy``, ``engram:reviewVerdict "accepted"``, ``engram:acceptedAt`` when given). A proposal a
    model's verifier confirmed (``verdict="verified"``, ``revise.model_review``) is curated by that model, a
    software agent, not a person."""
    quads: list[ox.Quad] = []
    person = ox.NamedNode(str(agent_iri(accepted_by)))
    curator_type = SOFTWARE_AGENT if verdict == "verified" else PERSON
    for proposal in accepted:
        earlier, later = proposal.earlier, proposal.later
        # A declaration is what its author wrote: it goes in the declaring document's assertion graph.
        declaring = proposal.declared_in if verdict == "declared" and proposal.declared_in else later.path
        graph = ox.NamedNode(
            str(document_iri(declaring) if verdict == "declared" else analysis_graph_iri(later.path))
        )
        later_node = ox.NamedNode(str(entity_iri(later.path, later.entity_key)))
        earlier_node = ox.NamedNode(str(entity_iri(earlier.path, earlier.entity_key)))
        node = ox.NamedNode(str(statement_iri(later.path, "supersedes-" + short_hash(earlier.key, later.key))))
        triples = [
            (later_node, SUPERSEDES, earlier_node),
            (node, TYPE, STATEMENT),
            (node, SUBJECT, later_node),
            (node, PREDICATE, SUPERSEDES),
            (node, OBJECT, earlier_node),
            (node, DERIVED_FROM, ox.NamedNode(str(document_iri(declaring)))),
            (node, CREATED_BY, PROPOSER),
            (PROPOSER, TYPE, SOFTWARE_AGENT),
            (PROPOSER, LABEL, ox.Literal(f"supersession {VERSION}")),
            (node, CURATED_BY, person),
            (person, TYPE, curator_type),
            (person, LABEL, ox.Literal(accepted_by)),
            (node, VERDICT, ox.Literal(verdict)),
        ]
        if accepted_at:
            triples.append((node, ACCEPTED_AT, ox.Literal(accepted_at, datatype=DATE_TIME)))
        quads += [ox.Quad(s, p, o, graph) for s, p, o in triples]
    return list(dict.fromkeys(quads))


# --- records -----------------------------------------------------------------------------------------------


def _records(
    decisions: pd.DataFrame,
    documents: pd.DataFrame,
    statements: pd.DataFrame,
    entities: pd.DataFrame,
    config: SupersessionConfig,
) -> list[_Record]:
    docs = {str(d): (str(p), str(t)) for d, p, t in documents[["doc_id", "path", "text"]].itertuples(index=False)}
    entity_of = {
        (str(d), str(k)): (normalise_label(str(label)), str(kind))
        for d, k, label, kind in entities[["doc_id", "entity_key", "label", "kind"]].itertuples(index=False)
    }
    decision_entities = {(str(d), str(k)) for d, k in decisions[["doc_id", "entity_key"]].itertuples(index=False)}
    record_stems = {_stem(docs[str(d)][0]) for d in decisions["doc_id"] if str(d) in docs}
    by_doc: dict[str, list[tuple]] = defaultdict(list)
    columns = ["doc_id", "subject", "predicate", "object", "object_is_entity", "line_start"]
    for row in statements[columns].itertuples(index=False):
        by_doc[str(row.doc_id)].append(tuple(row))

    records, taken = [], set()
    ordered = decisions.sort_values(["doc_id", "line_start", "entity_key"], kind="stable")
    for row in ordered.to_dict("records"):
        doc_id, entity_key = str(row["doc_id"]), str(row["entity_key"])
        if doc_id not in docs:
            continue
        path, text = docs[doc_id]
        date = None if _missing(row.get("decided_on")) else iso_date(str(row["decided_on"]))
        key = decision_key(path, row["title"])
        if key in taken:  # the same title twice in one document: tell the records apart by date
            key = f"{key}@{date or entity_key}"
        taken.add(key)
        line_start, line_end, quote = _located(text, row.get("line_start"), row.get("line_end"))
        subjects, linked = set(), set()
        for _, subject, _predicate, obj, object_is_entity, line in by_doc[doc_id]:
            own = subject == entity_key
            inside = (
                line_start is not None and line is not None and not pd.isna(line)
                and line_start <= int(line) <= line_end
            )
            if not (own or inside):
                continue
            for mention, is_entity in ((subject, True), (obj, bool(object_is_entity))):
                if not is_entity or mention in (DOCUMENT_KEY, entity_key) or (doc_id, mention) in decision_entities:
                    continue
                label, kind = entity_of.get((doc_id, mention), ("", ""))
                if own and mention == obj and kind == "Document":
                    linked.add(label)
                if label and kind not in config.excluded_kinds and label not in record_stems:
                    subjects.add(label)
        side = DecisionSide(
            key=key,
            doc_id=doc_id,
            path=path,
            entity_key=entity_key,
            title=str(row["title"]),
            decided_on=date,
            status=None if _missing(row.get("status")) else str(row["status"]),
            line_start=line_start,
            line_end=line_end,
            quote=quote,
        )
        records.append(
            _Record(
                side=side,
                date=date,
                supersedes=_strings(row.get("supersedes")),
                superseded_by=_strings(row.get("superseded_by")),
                title_words=_title_words(side.title),
                subjects=subjects,
                linked_stems=linked,
            )
        )
    return records


def _located(text: str, line_start: Any, line_end: Any) -> tuple[int | None, int | None, str]:
    """The decision's lines and quote; for a decision that was never located (NULL lines) no lines and no quote,
    and only its own statements give it subjects."""
    if line_start is None or line_end is None or pd.isna(line_start) or pd.isna(line_end):
        return None, None, ""
    return _quote(text, int(line_start), int(line_end))


def _quote(text: str, line_start: int, line_end: int) -> tuple[int, int, str]:
    """The exact source lines of a decision, without the blank lines at either end (the span shrinks to match)."""
    lines = text.split("\n")
    line_start, line_end = max(1, line_start), min(len(lines), line_end)
    while line_start < line_end and not lines[line_start - 1].strip():
        line_start += 1
    while line_end > line_start and not lines[line_end - 1].strip():
        line_end -= 1
    return line_start, line_end, "\n".join(lines[line_start - 1 : line_end])


def _title_words(title: str) -> frozenset[str]:
    words = (KOREAN_PARTICLE.sub("", word) for word in WORD.findall(normalise_label(title)))
    return frozenset(word for word in words if word and word not in TITLE_STOPWORDS)


def _stem(path: str) -> str:
    return normalise_label(PurePosixPath(path).stem)


# --- explicit references -----------------------------------------------------------------------------------


def _same_decision_groups(records: list[_Record]) -> list[int]:
    """Records of one decision (same date, and the same title or a field linking the other's file) share a group."""
    parent = list(range(len(records)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    single = _single_record_stems(records)
    for a in range(len(records)):
        for b in range(a + 1, len(records)):
            ra, rb = records[a], records[b]
            if ra.date is None or ra.date != rb.date:
                continue
            same_title = normalise_label(ra.side.title) == normalise_label(rb.side.title)
            linked = single.get(_stem(rb.side.path)) == b and _stem(rb.side.path) in ra.linked_stems
            linked = linked or (single.get(_stem(ra.side.path)) == a and _stem(ra.side.path) in rb.linked_stems)
            if same_title or linked:
                parent[find(a)] = find(b)
    return [find(x) for x in range(len(records))]


def _single_record_stems(records: list[_Record]) -> dict[str, int]:
    """File name -> the record, for files holding exactly one decision (ADRs): a file reference names it."""
    counts = Counter(_stem(record.side.path) for record in records)
    return {_stem(r.side.path): i for i, r in enumerate(records) if counts[_stem(r.side.path)] == 1}


def _reference_index(records: list[_Record]) -> ReferenceIndex:
    """The records by file, title, identifier and date, each named by its position in ``records``."""
    index = ReferenceIndex()
    by_path: dict[str, list[tuple[str, str, str | None]]] = defaultdict(list)
    for position, record in enumerate(records):
        by_path[record.side.path].append((str(position), record.side.title, record.date))
    for path, held in by_path.items():
        index.add_version(path, held)
    return index


def _explicit_edges(
    records: list[_Record], group: list[int]
) -> dict[tuple[int, int], tuple[bool, str, str | None]]:
    """(earlier, later) -> (whether the field is the record's own rather than another record's of the same
    decision, the field as written, the path of the record that wrote it when it is its own)."""
    references = _reference_index(records)

    def resolve(reference: str, record: _Record) -> set[int]:
        return {int(found) for found in references.resolve(reference, record.side.path)}

    direct: dict[tuple[int, int], tuple[str, str]] = {}
    for later, record in enumerate(records):
        for reference in record.supersedes:
            for earlier in resolve(reference, record) - {later}:
                direct.setdefault(
                    (earlier, later), (f"{record.side.title!r} says it supersedes {reference!r}", record.side.path)
                )
    for earlier, record in enumerate(records):
        for reference in record.superseded_by:
            for later in resolve(reference, record) - {earlier}:
                direct.setdefault(
                    (earlier, later),
                    (f"{record.side.title!r} says it is superseded by {reference!r}", record.side.path),
                )
    members: dict[int, list[int]] = defaultdict(list)
    for index, root in enumerate(group):
        members[root].append(index)
    edges = {pair: (True, why, path) for pair, (why, path) in direct.items()}
    for (earlier, later), (why, _) in direct.items():
        for first in members[group[earlier]]:
            for second in members[group[later]]:
                if (first, second) not in edges and group[first] != group[second]:
                    edges[(first, second)] = (False, f"another record of the same decision: {why}", None)
    return edges


# --- scoring -----------------------------------------------------------------------------------------------


def _propose(
    records: list[_Record],
    a: int,
    b: int,
    explicit: dict[tuple[int, int], tuple[bool, str, str | None]],
    idf: dict[str, float],
    config: SupersessionConfig,
) -> SupersessionProposal | None:
    ra, rb = records[a], records[b]
    stated = explicit.get((a, b)) or explicit.get((b, a))
    if stated is None and (ra.date is None or rb.date is None):
        return None
    title = _jaccard(ra.title_words, rb.title_words)
    if stated is None and title < config.min_title_similarity:
        return None
    if (a, b) in explicit:
        earlier, later = a, b
    elif (b, a) in explicit:
        earlier, later = b, a
    elif ra.date != rb.date:
        earlier, later = (a, b) if ra.date < rb.date else (b, a)
    else:
        earlier, later = sorted((a, b), key=lambda x: records[x].side.key)
    same_day = ra.date is not None and ra.date == rb.date
    shared = ra.subjects & rb.subjects
    subject = _weighted_jaccard(ra.subjects, rb.subjects, idf)
    status = _is_superseded(records[earlier].side.status, config)

    reasons = []
    strength = 0.0
    if stated is not None:
        strength = config.explicit_weight if stated[0] else config.same_record_weight
        reasons.append(stated[1])
    if title:
        reasons.append(f"titles share {', '.join(sorted(ra.title_words & rb.title_words))} ({title:.2f})")
    if shared:
        reasons.append(f"both about {', '.join(sorted(shared, key=lambda s: (-idf[s], s))[:5])} ({subject:.2f})")
    if status:
        reasons.append(f"the earlier decision's status is {records[earlier].side.status!r}")
    if same_day:
        reasons.append("decided on the same day: the order is " + ("stated" if stated else "not known"))
    elif stated and records[earlier].date and records[later].date and records[earlier].date > records[later].date:
        reasons.append("the dates disagree with the stated order")
    remaining = 1.0
    for part in (strength, config.title_weight * title, config.subject_weight * subject,
                 config.status_weight if status else 0.0):  # fmt: skip
        remaining *= 1.0 - min(1.0, part)
    score = round(1.0 - remaining, 6)
    if score < config.min_score:
        return None
    return SupersessionProposal(
        earlier=records[earlier].side,
        later=records[later].side,
        score=score,
        same_day=same_day,
        explicit=stated is not None,
        title_similarity=round(title, 6),
        subject_similarity=round(subject, 6),
        shared_subjects=tuple(sorted(shared)),
        reasons=tuple(reasons),
        declared_in=stated[2] if stated is not None and (earlier, later) in explicit else None,
    )


def _is_superseded(status: str | None, config: SupersessionConfig) -> bool:
    text = (status or "").casefold()
    return any(marker in text for marker in config.superseded_statuses)


def _idf(sets: list[set[str]]) -> dict[str, float]:
    frequency = Counter(item for items in sets for item in items)
    return {item: math.log(1.0 + len(sets) / count) for item, count in frequency.items()}


def _weighted_jaccard(a: set[str], b: set[str], idf: dict[str, float]) -> float:
    union = sum(idf[x] for x in a | b)
    return sum(idf[x] for x in a & b) / union if union else 0.0


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _strings(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value if item is not None and str(item).strip()]


__all__ = [
    "DecisionSide",
    "SupersessionConfig",
    "SupersessionProposal",
    "decision_key",
    "proposals_frame",
    "propose_supersessions",
    "supersedes_quads",
]
