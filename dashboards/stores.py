"""Read-only access to a home's stores for the dashboard's pages.

Which home the dashboard shows is chosen once, in the sidebar, and every page reads it from here. Reading never
creates or changes anything: a home folder that does not exist is shown as "nothing built yet" instead of being
created, and the catalog is opened read-only under the home's shared lock, so a page waits for a running build
rather than reading half of it.
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import pandas as pd
import streamlit as st

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.decisions.store import MERGE, SUPERSESSION, DecisionsStore, Verdict
from engramrag.extract.textutil import normalise_label
from engramrag.metrics.lifecycle import (
    LifecycleMetrics,
    ModelPrice,
    Prices,
    load_prices,
    read_lifecycle_metrics,
)
from engramrag.resolve.queue import merge_queue
from engramrag.revise.history import HistoryEntry, entity_history, known_subjects
from engramrag.revise.queue import supersession_queue
from engramrag.revise.supersession import decision_key
from engramrag.store import DEFAULT_HOME, Home

HOME_KEY = "engram_home"
PRICES_ENV = "ENGRAM_PRICES"
# Long enough that moving between pages does not re-read the catalog, short enough that a finished build shows.
CACHE_SECONDS = 30


def default_home_dir(argv: Sequence[str] | None = None) -> str:
    """``--home DIR`` given after ``streamlit run dashboards/app.py --``, else ENGRAM_HOME, else ``.engram``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--home")
    known, _ = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return known.home or os.environ.get("ENGRAM_HOME") or DEFAULT_HOME


def choose_home() -> Path:
    """Draw the sidebar's home picker and return the chosen folder (resolved, possibly not existing)."""
    if HOME_KEY not in st.session_state:
        st.session_state[HOME_KEY] = default_home_dir()
    st.sidebar.text_input(
        "Home folder",
        key=HOME_KEY,
        help="The folder `engram build --home` wrote to. Defaults to --home, then ENGRAM_HOME, then .engram.",
    )
    chosen = current_home_dir()
    if not chosen.is_dir():
        st.sidebar.caption(f"`{chosen}` does not exist yet.")
    return chosen


def current_home_dir() -> Path:
    """The folder picked in the sidebar, or the default one when a page runs on its own."""
    raw = st.session_state.get(HOME_KEY) or default_home_dir()
    return Path(str(raw)).expanduser().resolve()


def existing_home(path: Path) -> Home | None:
    """The home at ``path`` if the folder exists; never creates it (``Home.at`` would)."""
    return Home(path) if path.is_dir() else None


def configured_prices() -> Prices:
    """Model prices from the file named by ENGRAM_PRICES (JSON or YAML), or none."""
    path = os.environ.get(PRICES_ENV, "").strip()
    return load_prices(path) if path else {}


def page_header(title: str) -> tuple[Path, Home | None]:
    """Every page's top: its title, the home it reads, and the "nothing built" message (then None)."""
    st.title(title)
    path = current_home_dir()
    st.caption(f"Home: `{path}`")
    home = existing_home(path)
    if home is None:
        st.info(nothing_built_message(path))
    return path, home


def nothing_built_message(path: Path) -> str:
    return (
        f"Nothing is built in `{path}` yet. Run `engram build --vault VAULT --home {path}` "
        "(or pick another home folder in the sidebar), then reload this page."
    )


def lifecycle_metrics(home: Home) -> LifecycleMetrics | None:
    """The lifecycle tables of ``home``, cached briefly and re-read as soon as the catalog file changes."""
    prices = configured_prices()
    price_key = tuple(sorted((model, price.input_per_million, price.output_per_million)
                             for model, price in prices.items()))
    return _cached_metrics(str(home.root), _stamp(home.catalog_path), price_key)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def _cached_metrics(root: str, catalog_stamp: tuple[int, int], price_key: tuple) -> LifecycleMetrics | None:
    # catalog_stamp is only part of the cache key: a new build changes it, so the tables are read again.
    prices = {model: ModelPrice(input_price, output_price) for model, input_price, output_price in price_key}
    return read_lifecycle_metrics(Home(Path(root)), prices)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


# --- The review pages: who decides, what they decide on, and what the catalog says about a document. ---------

OPERATOR_KEY = "engram_operator"
OPERATOR_ENV = "ENGRAM_OPERATOR"
CONFIRMATION_KEY = "engram_review_confirmation"
NEXT_BUILD = "It takes effect at the next build (`engram build`, or the decisions sensor when Dagster is running)."
NEIGHBOURHOOD_LIMIT = 25


def default_operator() -> str:
    """ENGRAM_OPERATOR, else the login name (as `engram review decide --by` defaults), so that a verdict names a
    person without anyone typing it; empty when neither is known."""
    try:
        return os.environ.get(OPERATOR_ENV) or getpass.getuser()
    except (OSError, KeyError):
        return ""


def operator_input() -> str:
    """Draw the sidebar's "your name" box and return the stripped name every verdict is recorded with.

    Its value survives moving to another page and back (``persist_state``), so a reviewer types it once."""
    if OPERATOR_KEY not in st.session_state:
        st.session_state[OPERATOR_KEY] = default_operator()
    name = st.sidebar.text_input(
        "Your name", key=OPERATOR_KEY, persist_state="session",
        help=f"Recorded with each verdict in the decisions store. Defaults to {OPERATOR_ENV}, else your login name.",
    )
    return (name or "").strip()


def escape_markdown(text: str) -> str:
    """``text`` shown literally by ``st.markdown``: labels and titles come from notes and may hold ``*`` or ``#``."""
    return re.sub(r"([\\`*_{}\[\]<>()#+\-.!|$~:])", r"\\\1", text)


def confirm(message: str, ok: bool = True) -> None:
    """Keep a message for the next run of the page: buttons record in callbacks, which run before the page."""
    st.session_state[CONFIRMATION_KEY] = (message, ok)


def show_confirmation() -> None:
    """Show (once) what the last click recorded, as a toast and a lasting banner."""
    kept = st.session_state.pop(CONFIRMATION_KEY, None)
    if kept is None:
        return
    message, ok = kept
    if ok:
        st.success(message, icon=":material/check_circle:")
        st.toast(message, icon=":material/check_circle:")
    else:
        st.error(message, icon=":material/error:")


def record_verdict(home: Home, topic: str, left: str, right: str, verdict: str, operator: str,
                   context: dict | None = None) -> Verdict:
    """Write one person's verdict: the only write the dashboard makes, and only to the decisions store."""
    return DecisionsStore.for_home(home).decide(topic, left, right, verdict, operator, context=context)


def undo_verdict(home: Home, topic: str, left: str, right: str, operator: str) -> Verdict | None:
    """Undo the pair's current verdict; the row stays in the history, marked undone by ``operator``."""
    return DecisionsStore.for_home(home).undo(topic, left, right, operator)


def recent_verdicts(home: Home, topic: str, limit: int | None = 10) -> list[Verdict]:
    """The newest current verdicts of a topic, newest first (what a reviewer may want to take back); all of
    them when ``limit`` is None."""
    return list(reversed(DecisionsStore.for_home(home).current(topic)))[:limit]


def pending_merges(home: Home) -> pd.DataFrame:
    """``merge_queue(home)``: pairs nobody decided, best first. Cached while neither the catalog nor any current
    merge verdict changes, so typing in the filter or paging does not re-read and re-parse every candidate."""
    return _cached_queue(MERGE, str(home.root), _stamp(home.catalog_path), _verdicts_key(home, MERGE))


def supersession_proposals(home: Home) -> pd.DataFrame:
    """``supersession_queue(home, include_decided=True)``: every proposal with its current verdict, cached alike."""
    return _cached_queue(SUPERSESSION, str(home.root), _stamp(home.catalog_path), _verdicts_key(home, SUPERSESSION))


def _verdicts_key(home: Home, topic: str) -> tuple[tuple[str, ...], ...]:
    # The current verdicts themselves, not a revision counter: a replaced decisions file restarts its ids.
    current = DecisionsStore.for_home(home).current(topic)
    return tuple((v.left_key, v.right_key, v.verdict, v.decided_at) for v in current)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False, max_entries=16)
def _cached_queue(topic: str, root: str, catalog_stamp: tuple[int, int], verdicts: tuple) -> pd.DataFrame:
    # catalog_stamp and verdicts are only part of the cache key.
    home = Home(Path(root))
    return merge_queue(home) if topic == MERGE else supersession_queue(home, include_decided=True)


def catalog_frame(home: Home, sql: str, parameters: Sequence[object] = (), needs: str | None = None) -> pd.DataFrame:
    """A read-only query on the catalog (waiting while a build writes it); empty when nothing is built yet or when
    the table ``needs`` does not exist (a catalog from before that table)."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return pd.DataFrame()
        if needs and not has_table(catalog, needs):
            return pd.DataFrame()
        return catalog.execute(sql, list(parameters)).df()


def blocked_merges(home: Home) -> pd.DataFrame:
    """Joins the last build's overlay refused: a person's distinct through a third key, or kinds that clash."""
    return catalog_frame(
        home,
        "SELECT left_key, right_key, source, cause, reason, score, verdict_id FROM resolution_blocked "
        "ORDER BY source DESC, left_key, right_key",
        needs="resolution_blocked",
    )


def dated_decisions(home: Home) -> pd.DataFrame:
    """The vault's decision records (live documents), each with its stable supersession key."""
    frame = catalog_frame(
        home,
        "SELECT d.path, x.title, x.decided_on, x.status, x.line_start, x.line_end FROM decisions x "
        "JOIN documents d USING (doc_id) WHERE NOT d.gone ORDER BY x.decided_on NULLS LAST, d.path, x.title",
    )
    if frame.empty:
        return pd.DataFrame(columns=["key", "path", "title", "decided_on", "status", "line_start", "line_end"])
    return frame.assign(key=[decision_key(p, t) for p, t in zip(frame["path"], frame["title"], strict=True)])


def document_index(home: Home) -> pd.DataFrame:
    """Every live document (doc_id, path, title, statements, entities), by path."""
    return catalog_frame(
        home, "SELECT doc_id, path, title, statements, entities FROM documents WHERE NOT gone ORDER BY path"
    )


@dataclass(frozen=True)
class DocumentProvenance:
    """What the catalog knows about one document: its text, its statements, who extracted them and its entities.

    ``statements`` carries readable ``subject_label``/``object_label`` beside the keys; ``entities`` carries each
    mention's stable key, the cluster the resolution overlay put it in (``cluster_key``, empty when alone) and
    that cluster's other members (``cluster_members``)."""

    doc_id: str
    path: str
    title: str
    text: str
    statements: pd.DataFrame
    extraction: pd.DataFrame
    entities: pd.DataFrame


def document_provenance(home: Home, doc_id: str) -> DocumentProvenance | None:
    """The provenance of one document, or None when it is not (or no longer) in the catalog."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return None
        found = catalog.execute("SELECT path, title, text FROM documents WHERE doc_id = ?", [doc_id]).fetchone()
        if found is None:
            return None
        statements = catalog.execute(
            "SELECT statement_id, subject, predicate, coalesce(label, predicate) AS relation, object, "
            "object_is_entity, role, extractor, char_start, char_end, line_start, line_end FROM statements "
            "WHERE doc_id = ? ORDER BY line_start NULLS LAST, char_start NULLS LAST, statement_id",
            [doc_id],
        ).df()
        extraction = catalog.execute(
            "SELECT extractor, extractor_version, model, status, latency_ms, tokens_in, tokens_out, quads, error, "
            "finished_at, run_id FROM extraction_runs WHERE doc_id = ? ORDER BY finished_at DESC",
            [doc_id],
        ).df()
        entities = catalog.execute(
            "SELECT entity_key, label, kind, aliases, mentions, first_line FROM entities WHERE doc_id = ? "
            "ORDER BY first_line NULLS LAST, label",
            [doc_id],
        ).df()
        clusters = catalog.execute("SELECT entity_key, cluster_key FROM entity_clusters").df()
    path, title, text = found
    labels = dict(zip(entities["entity_key"], entities["label"], strict=True))
    statements["subject_label"] = statements["subject"].map(lambda key: labels.get(key, key))
    statements["object_label"] = [
        labels.get(obj, obj) if is_entity else obj
        for obj, is_entity in zip(statements["object"], statements["object_is_entity"], strict=True)
    ]
    cluster_of = dict(zip(clusters["entity_key"], clusters["cluster_key"], strict=True))
    members: dict[str, list[str]] = {}
    for key, cluster_key in cluster_of.items():
        members.setdefault(cluster_key, []).append(key)
    stable = entities["label"].map(normalise_label)
    entities["stable_key"] = stable
    entities["cluster_key"] = stable.map(lambda key: cluster_of.get(key, ""))
    entities["cluster_members"] = [
        sorted(k for k in members.get(cluster_key, []) if k != key) if cluster_key else []
        for key, cluster_key in zip(stable, entities["cluster_key"], strict=True)
    ]
    return DocumentProvenance(doc_id, path, title or path, text, statements, extraction, entities)


@dataclass(frozen=True)
class Neighbourhood:
    """An entity's relations one hop out across documents, as the retrieval graph joins them.

    ``nodes``: node key -> (most used label, kind); the centre is ``centre``. ``edges``: (source node, target
    node, relation, statements saying it, whether all of them are machine analysis). ``left_out``: neighbours
    beyond the limit."""

    centre: str
    nodes: dict[str, tuple[str, str]]
    edges: list[tuple[str, str, str, int, bool]]
    left_out: int


def entity_neighbourhood(
    home: Home, label: str, limit: int = NEIGHBOURHOOD_LIMIT, include_analysis: bool = True
) -> Neighbourhood:
    """The neighbourhood of the node a mention labelled ``label`` belongs to, at most ``limit`` nodes; without
    ``include_analysis`` only what authors asserted (no machine co-occurrence)."""
    mentions, relations = _mention_graph(str(home.root), _stamp(home.catalog_path))
    if not include_analysis:
        relations = relations[relations["role"] == "assertion"]
    stable = normalise_label(label)
    node_of = dict(zip(mentions["stable_key"], mentions["node_key"], strict=True))
    around = neighbourhood(mentions, relations, node_of.get(stable, stable), limit)
    if around.centre in around.nodes:  # name the centre as the reader picked it, not by its cluster's commonest label
        around.nodes[around.centre] = (label, around.nodes[around.centre][1])
    return around


def neighbourhood(mentions: pd.DataFrame, relations: pd.DataFrame, centre: str, limit: int) -> Neighbourhood:
    """Pure part of :func:`entity_neighbourhood` over ``mentions`` (node_key, label, kind) and ``relations``
    (subject_node, object_node, relation, role). Neighbours linked by what authors asserted come first, then by how
    many statements link them, so a cap of ``limit`` drops the weakest co-occurrences first."""
    touching = relations[(relations["subject_node"] == centre) | (relations["object_node"] == centre)]
    touching = touching[touching["subject_node"] != touching["object_node"]]
    touching = touching.assign(
        other=touching["object_node"].where(touching["subject_node"] == centre, touching["subject_node"]),
        asserted=touching["role"] == "assertion",
    )
    ranked = touching.groupby("other").agg(asserted=("asserted", "sum"), total=("role", "size")).reset_index()
    ranked = ranked.sort_values(["asserted", "total", "other"], ascending=[False, False, True])
    kept = set(ranked["other"].head(max(0, limit - 1)))
    touching = touching[touching["other"].isin(kept)]
    grouped = touching.groupby(["subject_node", "object_node", "relation"], as_index=False).agg(
        count=("role", "size"), asserted=("asserted", "any")
    )
    edges = [
        (row.subject_node, row.object_node, row.relation, int(row.count), not bool(row.asserted))
        for row in grouped.itertuples(index=False)
    ]
    nodes = {}
    for node_key, group in mentions[mentions["node_key"].isin(kept | {centre})].groupby("node_key"):
        kinds = group["kind"].value_counts()
        specific = [kind for kind in kinds.index if kind != "Concept"]
        nodes[node_key] = (group["label"].value_counts().index[0], specific[0] if specific else "Concept")
    return Neighbourhood(centre, nodes, edges, max(0, len(ranked) - len(kept)))


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def _mention_graph(root: str, catalog_stamp: tuple[int, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    # Every live mention with its node, and every entity-to-entity statement between nodes: read once per build.
    home = Home(Path(root))
    mentions = catalog_frame(
        home,
        "SELECT e.doc_id, e.entity_key, e.label, e.kind FROM entities e JOIN documents d USING (doc_id) "
        "WHERE NOT d.gone",
    )
    statements = catalog_frame(
        home,
        "SELECT s.doc_id, s.subject, s.object, coalesce(s.label, s.predicate) AS relation, s.role FROM statements s "
        "JOIN documents d USING (doc_id) WHERE NOT d.gone AND s.object_is_entity",
    )
    clusters = catalog_frame(home, "SELECT entity_key, cluster_key FROM entity_clusters")
    cluster_of = dict(zip(clusters.get("entity_key", []), clusters.get("cluster_key", []), strict=True))
    if mentions.empty or statements.empty:
        mentions = mentions.reindex(columns=["doc_id", "entity_key", "label", "kind"])
        statements = statements.reindex(columns=["doc_id", "subject", "object", "relation", "role"])
    mentions["stable_key"] = mentions["label"].map(normalise_label)
    mentions["node_key"] = mentions["stable_key"].map(lambda key: cluster_of.get(key, key))
    mentions = mentions[mentions["node_key"] != ""]
    node_of = {(d, k): n for d, k, n in zip(mentions["doc_id"], mentions["entity_key"], mentions["node_key"],
                                            strict=True)}
    relations = statements.assign(
        subject_node=[node_of.get(pair) for pair in zip(statements["doc_id"], statements["subject"], strict=True)],
        object_node=[node_of.get(pair) for pair in zip(statements["doc_id"], statements["object"], strict=True)],
    ).dropna(subset=["subject_node", "object_node"])
    return mentions, relations[["subject_node", "object_node", "relation", "role"]].reset_index(drop=True)


# --- The entity timeline page: each property's values over time, and which notes replaced which. ------------

HISTORY_SUBJECTS = 50
HISTORY_COLUMNS = [field.name for field in fields(HistoryEntry)]
SUPERSESSION_COLUMNS = [
    "earlier_path", "later_path", "earlier_date", "later_date", "since", "reason", "form", "decided_by", "subject",
    "property", "earlier_value", "later_value", "earlier_quote", "later_quote",
]


@dataclass(frozen=True)
class EntityTimeline:
    """What the catalog says about one entity's changing properties.

    ``entries``: one row per value (the fields of ``revise.history.HistoryEntry``), by property then date.
    ``supersessions``: the ``document_supersessions`` rows touching the documents of ``entries`` that are about
    this entity and its properties (a declared or accepted replacement of a whole note has no subject, and is
    kept), ordered by the date from which the later note holds."""

    name: str
    entries: pd.DataFrame
    supersessions: pd.DataFrame

    @property
    def names(self) -> list[str]:
        """How the notes write the entity (its aliases across the chain), in order of first appearance."""
        return list(dict.fromkeys(self.entries["subject"]))

    @property
    def properties(self) -> list[str]:
        """The property names shown, without a qualifier (``status:beta`` is ``status``), in table order."""
        return list(dict.fromkeys(property_name(prop) for prop in self.entries["property"]))

    def only(self, prop: str | None) -> EntityTimeline:
        """The same timeline for one property name (``None``: all of them)."""
        if not prop:
            return self
        entries = self.entries[self.entries["property"].map(property_name) == prop]
        supersessions = self.supersessions[
            self.supersessions["property"].isna() | (self.supersessions["property"].map(
                lambda value: property_name(value) if isinstance(value, str) else None) == prop)
        ]
        return EntityTimeline(self.name, entries.reset_index(drop=True), supersessions.reset_index(drop=True))


def property_name(prop: str) -> str:
    """A property without its qualifier: ``status:beta`` -> ``status`` (as ``engram history --property`` matches)."""
    return prop.split(":", 1)[0]


def history_subjects(home: Home, limit: int = HISTORY_SUBJECTS) -> list[str] | None:
    """``revise.history.known_subjects``: entities with more than one value, most first; None when the home has no
    value timeline at all (nothing built, or a catalog from before ``property_values``)."""
    return _cached_subjects(str(home.root), _stamp(home.catalog_path), limit)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def _cached_subjects(root: str, catalog_stamp: tuple[int, int], limit: int) -> list[str] | None:
    home = Home(Path(root))
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "property_values"):
            return None
    return known_subjects(home, limit)


def entity_timeline(home: Home, name: str) -> EntityTimeline:
    """``revise.history.entity_history(home, name)`` as a frame, with the supersessions of its documents; cached
    until the catalog changes, so choosing a property or hovering the chart does not read the catalog again."""
    return _cached_timeline(str(home.root), _stamp(home.catalog_path), name)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False, max_entries=64)
def _cached_timeline(root: str, catalog_stamp: tuple[int, int], name: str) -> EntityTimeline:
    home = Home(Path(root))
    entries = pd.DataFrame([entry.to_json() for entry in entity_history(home, name)], columns=HISTORY_COLUMNS)
    paths = sorted(set(entries["doc"]))
    supersessions = pd.DataFrame(columns=SUPERSESSION_COLUMNS)
    if paths:
        found = catalog_frame(
            home,
            f"SELECT {', '.join(SUPERSESSION_COLUMNS)} FROM document_supersessions "
            "WHERE list_contains(?::VARCHAR[], earlier_path) OR list_contains(?::VARCHAR[], later_path) "
            "ORDER BY coalesce(since, later_date, ''), property NULLS FIRST, earlier_path, later_path",
            [paths, paths],
            needs="document_supersessions",
        )
        if not found.empty:
            subjects = {normalise_label(subject) for subject in entries["subject"]}
            properties = set(entries["property"])
            about = [
                not isinstance(subject, str) or (normalise_label(subject) in subjects and prop in properties)
                for subject, prop in zip(found["subject"], found["property"], strict=True)
            ]
            supersessions = found[about].reset_index(drop=True)
    return EntityTimeline(name, entries, supersessions)
