"""Time in the lifecycle: notes their authors declared replaced, and versions of changing facts.

Recomputed from the live catalog at every build (after the resolution overlay, whose merges join a subject's
names): ``property_values`` holds every value of a single-valued property with its version, and
``document_supersessions`` the pairs (earlier note, later note) that search reads to label and rank. What each note
says alone (its aliases, declarations, links and candidate values) is read and derived again only for the notes that
changed since the last run (``lifecycle.timeline_notes``); names and chains, which join notes, are computed whole.

- ``declared``: the later (or earlier) note says so (``revise.declarations``), attributed to its author and
  written in the declaring note's assertion graph;
- ``later_value``: a later note changed a single-valued property's value (``revise.versions``), a machine
  proposal written in the later note's analysis graph with both quotes;
- ``accepted``: either kind, accepted by a person.

A person's verdict (decisions store, topic ``supersession``) wins: a rejected pair is left out. The quads this
step wrote last time are recorded, so a withdrawn declaration or a rejected pair loses its edge.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyoxigraph as ox

from engramrag.catalog.connection import catalog_writer, read_frame, refill_table, registered
from engramrag.catalog.live_aliases import live_aliases
from engramrag.catalog.live_labels import live_labels
from engramrag.decisions.store import SUPERSESSION, DecisionsStore, Verdict
from engramrag.lifecycle.freshness import code_version
from engramrag.lifecycle.step_quads import record_swap, swap_step_quads
from engramrag.lifecycle.timeline_names import vault_names
from engramrag.lifecycle.timeline_notes import NOTE_DIGEST, TITLES_DIGEST, KeptLinks, KeptNotes, NoteFacts
from engramrag.ontology.graphs import (
    AUTHORED_BY,
    CREATED_BY,
    DERIVED_FROM,
    LABEL,
    LINE_START,
    OBJECT,
    PREDICATE,
    QUOTE,
    SOFTWARE_AGENT,
    STATEMENT,
    SUBJECT,
    TYPE,
    XSD_DATE,
    XSD_INTEGER,
)
from engramrag.ontology.quadstore import QuadSwap, lined
from engramrag.ontology.vocab import (
    ENGRAM,
    PROV,
    agent_iri,
    analysis_graph_iri,
    document_graphs,
    document_iri,
    extractor_iri,
)
from engramrag.revise.declarations import (
    Declaration,
    declared_by,
    declared_references,
    document_pair,
    find_declarations,
)
from engramrag.revise.observations import ObservedNotes
from engramrag.revise.versions import (
    NOT_PROPERTIES,
    ValueRow,
    ValueSupersession,
    VersionConfig,
    chains_of,
    label_clusters,
    link_targets,
    note_aliases,
    stated_values_by_note,
)
from engramrag.run_memo import LastKept, RunMemo
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.ids import short_hash

VERSION = "1"
PROPOSER = ox.NamedNode(str(extractor_iri("timeline", VERSION)))
SUPERSEDES = ox.NamedNode(str(ENGRAM.supersedes))
VERDICT = ox.NamedNode(str(ENGRAM.reviewVerdict))
REPLACED_QUOTE = ox.NamedNode(str(ENGRAM.replacedQuote))
VALID_FROM = ox.NamedNode(str(ENGRAM.validFrom))
PROPERTY = ox.NamedNode(str(ENGRAM.property))
AGENT = ox.NamedNode(str(PROV.Agent))

SUPERSESSION_COLUMNS = [
    "earlier_doc_id", "later_doc_id", "earlier_path", "later_path", "earlier_date", "later_date", "since", "reason",
    "form", "decided_by", "subject", "property", "earlier_value", "later_value", "earlier_quote", "later_quote",
    "earlier_current", "property_words", "left_key", "right_key",
]  # fmt: skip
VALUE_COLUMNS = list(ValueRow._fields)  # the columns of ``property_values``


@dataclass
class TimelineSummary:
    declared: int  # declarations applied
    values: int  # property values read
    chains: int  # (subject, property) pairs with more than one version
    proposed: int  # later_value pairs applied (not rejected)
    rejected: int  # pairs a person rejected, left out
    quads_added: int  # quads written to the store this run (new ones, and owned ones a re-extraction dropped)
    quads_removed: int
    notes_derived: int = 0  # notes whose own facts were derived (new or changed since the last run)
    notes_kept: int = 0  # notes whose facts were kept from the last run
    notes_observed: int = 0  # notes whose values were observed anew (against the vault's names)
    observations_kept: int = 0  # notes whose observations were kept: the names were the last run's
    outcome_reused: bool = False  # every input was the last run's: its outcome was taken, nothing recomputed


def refresh_timeline(
    home: Home, config: VaultConfig, version_config: VersionConfig | None = None, derive_all: bool = False
) -> TimelineSummary:
    """Recompute ``property_values`` and ``document_supersessions`` and swap this step's quads. ``derive_all`` (the
    consistency pass) reads every note again instead of the facts kept from the last run. A resident process whose
    last run wrote the tables from the same inputs (see :class:`_Inputs`) takes that run's outcome instead of
    computing it again: a one-note edit that changes no note's facts changes nothing here (0.9 of the timeline's
    1.2 s at 10,000 notes)."""
    version_config = version_config or VersionConfig()
    vault = _read(home, config, version_config, derive_all)
    documents = vault.documents
    verdicts = {v.pair: v for v in DecisionsStore.for_home(home).current(SUPERSESSION)}
    inputs = _Inputs.of(vault, verdicts)
    last = None if derive_all else _last_outcomes.get(str(home.catalog_path))
    reused = last is not None and last.token == vault.outcome_token and last.inputs.same_as(inputs)
    outcome = last.outcome if last is not None and reused else _computed(vault, verdicts, version_config)
    # A note's graphs are rewritten only when it is extracted again, which makes it one of the notes derived now.
    every = derive_all or len(vault.derived) == len(documents)
    rewritten = None if every else _graphs_of(documents, vault.derived)
    swap = QuadSwap([], [], [], 0, [])
    if not reused or rewritten is None or not outcome.graphs.isdisjoint(rewritten):
        token = uuid.uuid4().hex
        with catalog_writer(home, config.bucket_count) as catalog:
            swap = swap_step_quads(home, catalog, "timeline_quads", outcome.quads, rewritten)
            catalog.execute("BEGIN")
            if not reused:
                refill_table(catalog, "document_supersessions", outcome.rows)
                refill_table(catalog, "property_values", outcome.values)
                catalog.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [OUTCOME_KEY, token])
            record_swap(home, catalog, "timeline_quads", swap)
            catalog.execute("COMMIT")
        if not reused:  # trusted by the next run only once the tables and the token are committed
            _last_outcomes.put(str(home.catalog_path), _LastOutcome(token, inputs, outcome))
    if vault.derived or len(vault.kept.facts) != len(documents):
        vault.kept.updated(vault.digests, vault.derived).save(home.timeline_path)
    vault.links.save_if_grown(home.timeline_path)
    return TimelineSummary(
        declared=outcome.declared, values=outcome.values.num_rows, chains=outcome.chains, proposed=outcome.proposed,
        rejected=outcome.rejected, quads_added=swap.inserted, quads_removed=len(swap.released),
        notes_derived=len(vault.derived), notes_kept=len(vault.facts) - len(vault.derived),
        # A taken outcome observed nothing anew: every note's observations are the last run's.
        notes_observed=0 if reused else outcome.notes_observed,
        observations_kept=len(vault.facts) if reused else outcome.observations_kept, outcome_reused=reused,
    )  # fmt: skip


def _computed(vault: _Vault, verdicts: dict[tuple[str, str], Verdict], version_config: VersionConfig) -> _Outcome:
    """The tables' rows and the quads, from what the run read."""
    table = version_config.table()
    documents, facts = vault.documents, vault.facts
    declarations = find_declarations(documents, {doc_id: f.declared for doc_id, f in facts.items()})
    replaced_notes = [(d.earlier_doc_id, d.later_doc_id) for d in declarations]
    names = vault_names(
        zip(documents["title"], [facts[doc_id].aliases for doc_id in documents["doc_id"]], strict=True),
        vault.labels, vault.aliased, label_clusters(vault.labels, vault.clusters),
    )
    observed = ObservedNotes()
    values, replaced = chains_of(
        documents, {doc_id: f.values for doc_id, f in facts.items()}, names,
        dict(zip(documents["path"], [facts[doc_id].link_targets for doc_id in documents["doc_id"]], strict=True)),
        version_config, replaced_notes, vault.links.resolved, observed,
        # A note's facts are a function of its digest and the settings the kept facts were derived with.
        {doc_id: (vault.kept.context, digest) for doc_id, digest in vault.digests.items()},
    )  # fmt: skip
    docs = documents.set_index("doc_id")
    authors = {path: declared_by(path, author) for path, author in zip(documents["path"], documents["author"],
                                                                          strict=True)}  # fmt: skip
    rows: list[dict] = []
    quads: list[tuple[str, ox.Quad]] = []  # by N-Quads line, as the step's record holds them
    rejected = 0
    for declaration in declarations:
        keys = document_pair(docs.at[declaration.earlier_doc_id, "path"], docs.at[declaration.later_doc_id, "path"])
        verdict = verdicts.get(keys)
        if verdict is not None and verdict.verdict == "reject":
            rejected += 1
            continue
        author = authors[declaration.declared_in]
        rows.append(_declared_row(declaration, docs, keys, verdict, author))
        quads += lined(_declared_quads(declaration, docs, verdict, author)).items()
    with _VALUE_QUADS.run() as made:
        for pair in replaced:
            verdict = verdicts.get(pair.keys)
            if verdict is not None and verdict.verdict == "reject":
                rejected += 1
                continue
            rows.append(_value_row(pair, verdict, table))
            quads += made((pair, verdict is not None), lambda: list(lined(_value_quads(pair, verdict)).items()))  # noqa: B023
    by_line = dict(quads)
    return _Outcome(
        rows=pd.DataFrame(rows, columns=SUPERSESSION_COLUMNS), values=_value_frame(values), quads=by_line,
        graphs=frozenset(quad.graph_name for quad in by_line.values()),
        declared=sum(r["form"] != "property" for r in rows), proposed=sum(r["form"] == "property" for r in rows),
        chains=len({(v.subject_key, v.property) for v in values if v.version > 0}), rejected=rejected,
        notes_observed=observed.observed, observations_kept=observed.notes - observed.observed,
    )  # fmt: skip


@dataclass(frozen=True)
class _Outcome:
    """What a run computes and writes: the two tables' rows, the step's quads by N-Quads line, and its counts."""

    rows: pd.DataFrame  # document_supersessions
    values: pa.Table  # property_values
    quads: dict[str, ox.Quad]
    graphs: frozenset[ox.NamedNode]  # the graphs the quads are in
    declared: int
    proposed: int
    chains: int
    rejected: int
    notes_observed: int
    observations_kept: int


@dataclass(frozen=True, eq=False)
class _Inputs:
    """Everything an outcome is a function of. The kept links are not among them: a cache of how links resolve over
    the same paths and titles, which the documents hold."""

    context: str  # the code and the version settings (``KeptNotes.context``)
    documents: pd.DataFrame  # the live notes without their digests
    facts: dict[str, NoteFacts]
    labels: list[str]
    aliased: set[tuple[str, tuple[str, ...]]]
    clusters: pd.DataFrame
    verdicts: dict[tuple[str, str], Verdict]

    @classmethod
    def of(cls, vault: _Vault, verdicts: dict[tuple[str, str], Verdict]) -> _Inputs:
        return cls(vault.kept.context, vault.documents.drop(columns="digest"), vault.facts, vault.labels,
                   vault.aliased, vault.clusters, verdicts)  # fmt: skip

    def same_as(self, other: _Inputs) -> bool:
        # Kept facts are the very objects of the last run (``KeptNotes.parsed``): most comparisons are identities.
        return (
            self.context == other.context and self.labels == other.labels and self.aliased == other.aliased
            and self.verdicts == other.verdicts and self.documents.equals(other.documents)
            and self.clusters.equals(other.clusters) and self.facts == other.facts
        )  # fmt: skip


@dataclass(frozen=True)
class _LastOutcome:
    token: str  # written to ``meta`` (OUTCOME_KEY) with the tables: trusted only while the catalog still names it
    inputs: _Inputs
    outcome: _Outcome


OUTCOME_KEY = "document_timeline outcome"
_last_outcomes: LastKept[_LastOutcome] = LastKept()  # per catalog file: this process's last written outcome


def _graphs_of(documents: pd.DataFrame, doc_ids: Iterable[str]) -> set[ox.NamedNode]:
    """The named graphs of the given notes (``documents``: doc_id, path)."""
    path_of = dict(zip(documents["doc_id"], documents["path"], strict=True))
    return {ox.NamedNode(str(graph)) for doc_id in doc_ids for graph in document_graphs(path_of[doc_id])}


@dataclass(frozen=True)
class _Vault:
    """What the timeline reads: the live notes (no text), each note's facts, and the names of the entities."""

    documents: pd.DataFrame  # doc_id, path, title, author, agent_authored, doc_date, date_source, digest
    digests: dict[str, str]  # per doc id, the digest of what its facts are derived from (``NOTE_DIGEST``)
    facts: dict[str, NoteFacts]  # per doc id
    derived: dict[str, NoteFacts]  # the notes derived in this run (new or changed since the kept ones)
    kept: KeptNotes
    links: KeptLinks  # wiki links resolved by earlier runs over the same paths and titles
    labels: list[str]  # every distinct entity label
    aliased: set[tuple[str, tuple[str, ...]]]  # each distinct (label, aliases) with aliases
    clusters: pd.DataFrame  # entity_key, cluster_key
    outcome_token: str | None  # the token written with the tables the catalog holds (``OUTCOME_KEY``)


def _read(home: Home, config: VaultConfig, version_config: VersionConfig, derive_all: bool) -> _Vault:
    context = short_hash(code_version(), repr(version_config))
    kept = KeptNotes(context, {}, {}) if derive_all else KeptNotes.load(home.timeline_path, context)
    with catalog_writer(home, config.bucket_count) as catalog:
        documents = _plain(read_frame(
            catalog,
            "SELECT doc_id, path, title, author, agent_authored, doc_date, date_source, "
            f"{NOTE_DIGEST} AS digest FROM documents WHERE NOT gone ORDER BY path",
        ))  # fmt: skip
        digests = dict(zip(documents["doc_id"], documents["digest"], strict=True))
        changed = pa.table({"doc_id": pa.array(kept.changed(digests), pa.string())})
        with registered(catalog, "changed_notes", changed):
            texts = _plain(read_frame(
                catalog, "SELECT doc_id, text, front_matter FROM documents JOIN changed_notes USING (doc_id)"
            ))
            # Only what can be the value of a property: the machine's co-occurrence pairs are most of the statements.
            statements = _plain(read_frame(
                catalog,
                "SELECT doc_id, statement_id, subject, predicate, label, object, object_is_entity, role, char_start, "
                "line_start, line_end FROM statements JOIN changed_notes USING (doc_id) "
                "WHERE role = 'assertion' AND NOT list_contains(?, predicate)",
                [sorted(NOT_PROPERTIES)],
            ))  # fmt: skip
            entities = _plain(read_frame(
                catalog, "SELECT doc_id, entity_key, label, aliases FROM entities JOIN changed_notes USING (doc_id)"
            ))
        labels = list(live_labels(catalog, home.catalog_path))
        aliased = live_aliases(catalog, home.catalog_path, digests, whole=derive_all)
        clusters = _plain(read_frame(catalog, "SELECT entity_key, cluster_key FROM entity_clusters"))
        titles = repr(catalog.execute(TITLES_DIGEST).fetchone())
        token = catalog.execute("SELECT value FROM meta WHERE key = ?", [OUTCOME_KEY]).fetchone()
    links_context = short_hash(context, titles)
    links = KeptLinks(links_context, {}, 0) if derive_all else KeptLinks.load(home.timeline_path, links_context)
    table = version_config.table()
    stated = stated_values_by_note(texts, statements, entities, table, version_config)
    derived = {
        doc_id: NoteFacts(
            note_aliases(matter), tuple(declared_references(str(text), matter)), link_targets(str(text)),
            tuple(stated[doc_id]),
        )
        for doc_id, text, matter in zip(texts["doc_id"], texts["text"], texts["front_matter"], strict=True)
    }  # fmt: skip
    facts = kept.parsed(d for d in documents["doc_id"] if d not in derived) | derived
    return _Vault(documents, digests, facts, derived, kept, links, labels, aliased, clusters,
                  token[0] if token else None)


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns: the chains iterate these frames row by row, which costs more on Arrow-backed strings."""
    return frame.astype({c: object for c in frame.columns if frame[c].dtype == "str"})


def _declared_row(declaration: Declaration, docs: pd.DataFrame, keys: tuple[str, str], verdict: Verdict | None,
                  author: str) -> dict:  # fmt: skip
    earlier, later = docs.loc[declaration.earlier_doc_id], docs.loc[declaration.later_doc_id]
    return {
        "earlier_doc_id": declaration.earlier_doc_id, "later_doc_id": declaration.later_doc_id,
        "earlier_path": earlier["path"], "later_path": later["path"], "earlier_date": _text(earlier["doc_date"]),
        "later_date": _text(later["doc_date"]), "since": _text(later["doc_date"]),
        "reason": "accepted" if verdict is not None else "declared", "form": declaration.form,
        "decided_by": verdict.operator if verdict is not None else author, "subject": None, "property": None,
        "earlier_value": None, "later_value": None, "earlier_quote": None,
        "later_quote": f"{declaration.declared_in}: {declaration.quote}", "earlier_current": False,
        "property_words": None,
        "left_key": keys[0], "right_key": keys[1],
    }  # fmt: skip


def _value_row(pair: ValueSupersession, verdict: Verdict | None, table: dict[str, tuple[str, ...]]) -> dict:
    earlier, later = pair.earlier, pair.later
    name = earlier.property.split(":", 1)[0]
    words = " ".join([*table.get(name, (name.replace("_", " "),)), *earlier.property.split(":", 1)[1:]])
    return {
        "earlier_doc_id": earlier.doc_id, "later_doc_id": later.doc_id, "earlier_path": earlier.path,
        "later_path": later.path, "earlier_date": earlier.doc_date, "later_date": later.doc_date,
        "since": pair.since, "reason": "accepted" if verdict is not None else "later_value", "form": "property",
        "decided_by": verdict.operator if verdict is not None else None, "subject": earlier.subject,
        "property": earlier.property, "earlier_value": earlier.value, "later_value": later.value,
        "earlier_quote": earlier.quote, "later_quote": later.quote, "earlier_current": earlier.current,
        "property_words": words,
        "left_key": pair.keys[0], "right_key": pair.keys[1],
    }  # fmt: skip


def _declared_quads(declaration: Declaration, docs: pd.DataFrame, verdict: Verdict | None, author: str
                    ) -> list[ox.Quad]:  # fmt: skip
    graph = ox.NamedNode(str(document_iri(declaration.declared_in)))
    later = ox.NamedNode(str(document_iri(docs.at[declaration.later_doc_id, "path"])))
    earlier = ox.NamedNode(str(document_iri(docs.at[declaration.earlier_doc_id, "path"])))
    node = ox.NamedNode(
        str(document_iri(declaration.declared_in))
        + "#statement-supersedes-" + short_hash(declaration.earlier_doc_id, declaration.later_doc_id)
    )
    person = ox.NamedNode(str(agent_iri(author)))
    triples = [
        *_statement(node, later, earlier, graph),
        (node, QUOTE, ox.Literal(declaration.quote)),
        (node, VERDICT, ox.Literal("accepted" if verdict is not None else "declared")),
        (node, AUTHORED_BY, person),
        (person, TYPE, AGENT),
        (person, LABEL, ox.Literal(author)),
    ]
    if declaration.line is not None:
        triples.append((node, LINE_START, ox.Literal(str(declaration.line), datatype=XSD_INTEGER)))
    return [ox.Quad(s, p, o, graph) for s, p, o in triples]


# The quads of each value pair with their N-Quads lines, by the pair and whether a person accepted it (all they depend
# on): 23,521 pairs at 100,000 notes, whose quads took 2.8 s to make again at every run and their lines 1 s.
_VALUE_QUADS: RunMemo[tuple[ValueSupersession, bool], list[tuple[str, ox.Quad]]] = RunMemo()


def _value_quads(pair: ValueSupersession, verdict: Verdict | None) -> list[ox.Quad]:
    graph = ox.NamedNode(str(analysis_graph_iri(pair.later.path)))
    later = ox.NamedNode(str(document_iri(pair.later.path)))
    earlier = ox.NamedNode(str(document_iri(pair.earlier.path)))
    node = ox.NamedNode(
        str(document_iri(pair.later.path)) + "#statement-replaces-value-"
        + short_hash(pair.earlier.path, pair.earlier.subject_key, pair.earlier.property)
    )
    triples = [
        *_statement(node, later, earlier, graph, pair.later.path),
        (node, PROPERTY, ox.Literal(f"{pair.earlier.subject} / {pair.earlier.property}")),
        (node, QUOTE, ox.Literal(pair.later.quote)),
        (node, REPLACED_QUOTE, ox.Literal(pair.earlier.quote)),
        (node, VERDICT, ox.Literal("accepted" if verdict is not None else "proposed")),
    ]
    if pair.since:
        triples.append((node, VALID_FROM, ox.Literal(pair.since, datatype=XSD_DATE)))
    return [ox.Quad(s, p, o, graph) for s, p, o in triples]


def _statement(node: ox.NamedNode, later: ox.NamedNode, earlier: ox.NamedNode, graph: ox.NamedNode,
               derived_from: str | None = None) -> list[tuple]:  # fmt: skip
    source = ox.NamedNode(str(document_iri(derived_from))) if derived_from else graph
    return [
        (later, SUPERSEDES, earlier),
        (node, TYPE, STATEMENT),
        (node, SUBJECT, later),
        (node, PREDICATE, SUPERSEDES),
        (node, OBJECT, earlier),
        (node, DERIVED_FROM, source),
        (node, CREATED_BY, PROPOSER),
        (PROPOSER, TYPE, SOFTWARE_AGENT),
        (PROPOSER, LABEL, ox.Literal(f"timeline {VERSION}")),
    ]


def _value_frame(values: list[ValueRow]) -> pa.Table:
    """The ``property_values`` rows, built column by column as Arrow arrays (a dict per row took 2 s at 100,000
    notes; a pandas frame of the same columns took about twice as long as Arrow)."""
    columns = list(zip(*values, strict=True)) if values else [()] * len(VALUE_COLUMNS)
    return pa.table(dict(zip(VALUE_COLUMNS, map(list, columns), strict=True)))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None

