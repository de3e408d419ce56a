"""Entity resolution in the lifecycle: candidates into the catalog, then the overlay's clusters.

Candidates are scored from the key table of the live mentions; a run scores again only the blocked pairs that touch
a key whose row changed (or that blocking newly proposes) and keeps every other stored row (``resolve.scored_pairs``),
so an edit costs the key table and the blocking, not a rescoring of every pair.

The overlay combines the machine's confident pairs with what people decided in the decisions store and writes the
clusters the retrieval index joins mentions by. Only the keys a pair or a verdict names can join a cluster, so it reads
just those keys' kinds from the key table the candidates wrote. Quads are never rewritten: a merge lives only in
``entity_clusters`` and in the index built from it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import pandas as pd

from engramrag.catalog.connection import catalog_writer, insert_frame, refill_table, registered
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.embed.base import Embedder
from engramrag.lifecycle.freshness import code_version
from engramrag.resolve.blocking import blocked_rows, surface_pairs
from engramrag.resolve.candidates import Candidate, CandidateConfig, score_pairs
from engramrag.resolve.clusters import Clustering, cluster
from engramrag.resolve.embedding_lists import ListCache, NeighbourLists, PairCuts, vector_digests
from engramrag.resolve.evidence import Evidence, EvidenceFinder, TextsOnDemand, evidence_from_json, evidence_json
from engramrag.resolve.inputs import live_kind_totals, unknown_kinds
from engramrag.resolve.keytable import KeyVectors
from engramrag.resolve.mention_rows import MentionRow
from engramrag.resolve.scored_pairs import META_KEY as PAIRS_META_KEY
from engramrag.resolve.scored_pairs import (
    ScoredPairs,
    ScoringPlan,
    commit_pending,
    key_digests,
    meta_value,
    plan_scoring,
    trusted_token,
)
from engramrag.resolve.stored_keys import key_mention_lists, live_label_keys, update_key_table, write_key_rows
from engramrag.resolve.surface_pairs import SurfacePairs, surface_fingerprint
from engramrag.run_memo import RunMemo
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vectors.lancedb_store import VectorStore

# The meta row naming the overlay's last write (a token written in the same transaction as its clusters).
OVERLAY_META_KEY = "resolution_overlay"
# The columns of ``resolution_candidates`` (defined in ``catalog/schema.py``), in table order.
CANDIDATE_COLUMNS = (
    "left_key", "right_key", "left_label", "right_label", "left_kind", "right_kind", "score", "vetoed",
    "veto_reason", "auto_merge", "reasons", "features", "left_evidence", "right_evidence", "judge_verdict",
    "judge_reason",
)  # fmt: skip


@dataclass
class CandidateSummary:
    keys: int
    candidates: int
    vetoed: int
    automatic: int
    judged: int = 0
    unknown_kinds: dict[str, int] = field(default_factory=dict)  # kind -> mentions compared as Concept
    evidence_quoted: int = 0  # keys whose evidence sentences were searched for in their documents
    evidence_reused: int = 0  # keys whose mentions and documents were unchanged: last run's evidence kept
    embedding_searched: int = 0  # keys searched against every later key (new or changed vector, or a full list
    # that lost a member; every key when nothing was kept)
    embedding_kept: int = 0  # keys whose nearest-key list was kept from the last run, merged with the changed keys
    embedding_pairs_compared: int = 0  # listed pairs whose full cosine was computed (the rest: kept outcomes)
    pairs_scored: int = 0  # blocked pairs scored this run (touching a changed key, or newly proposed)
    pairs_kept: int = 0  # blocked pairs whose stored row (or absence of one) was kept: both keys unchanged
    keys_changed: int = 0  # keys that are new or whose row (labels, kinds, aliases, vector, mentions) changed
    scored_whole: str | None = None  # why every pair was scored and the table refilled; None when only changes were
    key_rows_computed: int = 0  # key-table rows computed from mention rows (the others were read back stored)
    surface_pairs_kept: bool = False  # the same keys as the last run: its surface pairs (edit index...) were kept


@dataclass
class OverlaySummary:
    keys: int
    clusters: int  # clusters of two or more keys
    merged_keys: int
    person_verdicts: int
    blocked: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    unknown_kinds: dict[str, int] = field(default_factory=dict)  # kind -> mentions compared as Concept
    clusters_kept: bool = False  # the same pairs, verdicts and kinds as the last run: its clusters were kept


def refresh_candidates(
    home: Home,
    config: VaultConfig,
    embedder: Embedder,
    candidate_config: CandidateConfig | None = None,
    judge: Callable[[list[Candidate]], dict[tuple[str, str], tuple[str, str]]] | None = None,
    search_all: bool = False,
) -> CandidateSummary:
    """Recompute the merge candidates of the live mentions into the catalog table ``resolution_candidates``.

    ``judge`` (optional: an LLM asked about the pairs the machine would not merge on its own) returns, per pair,
    its verdict and reason; they are stored beside the candidate for people to see, never applied by themselves.
    ``search_all`` (the consistency pass): every key's nearest keys are searched again, none kept from the last run.
    """
    candidate_config = candidate_config or CandidateConfig()
    code = code_version()
    with catalog_writer(home, config.bucket_count) as catalog:
        labels = live_label_keys(catalog, home.catalog_path)
        kind_counts = live_kind_totals(catalog)
        recorded = catalog.execute("SELECT value FROM meta WHERE key = ?", [PAIRS_META_KEY]).fetchone()
        rows = catalog.execute("SELECT count(*) FROM resolution_candidates").fetchone()[0]
    vectors = _key_vectors(home, embedder, labels)
    whole = "consistency pass" if search_all else None
    with catalog_writer(home, config.bucket_count) as catalog:
        update = update_key_table(catalog, labels, vectors, candidate_config.max_posting, code, whole)
    table = update.table
    lists = ListCache(None if search_all else NeighbourLists.load(home.resolution_path),
                      previous_cuts=None if search_all else PairCuts.load(home.resolution_path))  # fmt: skip
    surface_key = surface_fingerprint(table.keys, _surface_settings(candidate_config, code))
    kept_surface = None if search_all else SurfacePairs.load(home.resolution_path, surface_key)
    surface = kept_surface or SurfacePairs.of(surface_pairs(table, candidate_config), surface_key)
    if kept_surface is None:
        surface.save(home.resolution_path)  # a function of its fingerprint alone
    with_vectors = table.vectors is not None and table.has_vector is not None
    vectors_seen = (vector_digests(table.vectors, table.has_vector, table.keys) if with_vectors
                    else [""] * len(table.keys))  # fmt: skip
    left, right, edits = blocked_rows(table, candidate_config, surface, lists, vectors_seen)
    digests = key_digests(table, vectors_seen, update.inputs)
    settings = _scoring_settings(candidate_config, judge)
    previous = ScoredPairs.load(home.resolution_path, trusted_token(recorded[0] if recorded else None, rows))
    plan = plan_scoring(previous, table.keys, digests, left, right, settings, whole)
    scored = [((i, j), None if edit != edit else edit)  # NaN: no edit similarity computed yet
              for i, j, edit in zip(left[plan.score].tolist(), right[plan.score].tolist(), edits[plan.score].tolist(),
                                    strict=True)]  # fmt: skip
    asked = None if plan.whole else {table.keys[k] for (i, j), _ in scored for k in (i, j)}
    quoted: dict[str, tuple[str, tuple]] = {}
    with catalog_writer(home, config.bucket_count) as catalog:
        known = _known_evidence(catalog, asked)
        texts = TextsOnDemand(lambda doc_ids: _document_texts(catalog, doc_ids))
        limit = candidate_config.evidence_per_side
        finder = EvidenceFinder({}, texts, limit, known, update.digests)
        # Only the keys whose evidence cannot be kept need their mention rows, and only their first documents'
        # texts (a key named in thousands of notes is quoted from the first few that hold its label).
        stale = finder.stale(table.keys if asked is None else sorted(asked))
        # The rows the key table read for the keys it computed again are not read twice.
        stale_lists = key_mention_lists(catalog, labels, set(stale), update.mentions) if stale else {}
        table.mentions = finder.mentions = stale_lists
        texts.prefetch(_first_documents(table.mentions, limit + 1))
        candidates = score_pairs(table, scored, candidate_config, quoted=quoted, evidence=finder)
    reused = sum(1 for key, item in quoted.items() if known.get(key) == item)
    verdicts = judge([c for c in candidates if not c.vetoed and not c.auto_merge]) if judge else {}
    frame = _candidate_rows(candidates, verdicts)
    evidence = pd.DataFrame(
        [(key, signature, evidence_json(items)) for key, (signature, items) in sorted(quoted.items())],
        columns=["entity_key", "signature", "evidence"],
    )
    stored = ScoredPairs(table.keys, digests, left, right, settings, uuid.uuid4().hex)
    stored.save_pending(home.resolution_path)
    with catalog_writer(home, config.bucket_count) as catalog:
        catalog.execute("BEGIN")
        _write_candidates(catalog, plan, frame, evidence)
        write_key_rows(catalog, update, code)
        total, vetoed, automatic = catalog.execute(
            "SELECT count(*), coalesce(sum(vetoed::INTEGER), 0), "
            "coalesce(sum((auto_merge AND NOT vetoed)::INTEGER), 0) FROM resolution_candidates"
        ).fetchone()
        catalog.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [PAIRS_META_KEY, meta_value(stored.token, total)])
        catalog.execute("COMMIT")
    commit_pending(home.resolution_path)
    lists.save(home.resolution_path)
    return CandidateSummary(
        keys=len(table.keys),
        candidates=int(total),
        vetoed=int(vetoed),
        automatic=int(automatic),
        judged=len(verdicts),
        unknown_kinds=unknown_kinds(kind_counts),
        evidence_quoted=len(quoted) - reused,
        evidence_reused=reused,
        embedding_searched=lists.update.searched if lists.update else 0,
        embedding_kept=lists.update.kept if lists.update else 0,
        embedding_pairs_compared=lists.cuts.compared if lists.cuts else 0,
        pairs_scored=int(plan.score.sum()),
        pairs_kept=plan.kept,
        keys_changed=plan.changed_keys,
        scored_whole=plan.whole,
        key_rows_computed=len(update.fresh),
        surface_pairs_kept=kept_surface is not None,
    )


def _write_candidates(
    catalog: duckdb.DuckDBPyConnection, plan: ScoringPlan, frame: pd.DataFrame, evidence: pd.DataFrame
) -> None:
    """Inside the caller's transaction: the whole table refilled, or the rows of stale keys, dropped pairs and
    rescored pairs replaced (and the evidence of the keys quoted this run)."""
    if plan.whole:
        catalog.execute("DELETE FROM resolution_candidates")
        catalog.execute("DELETE FROM resolution_evidence")
    else:
        stale = pd.DataFrame({"key": plan.stale_keys}, dtype=object)
        pairs = pd.DataFrame(
            plan.dropped + list(zip(frame["left_key"], frame["right_key"], strict=True)),
            columns=["left_key", "right_key"], dtype=object,
        )  # fmt: skip
        with registered(catalog, "stale_keys", stale), registered(catalog, "replaced_pairs", pairs):
            catalog.execute(
                "DELETE FROM resolution_candidates WHERE left_key IN (SELECT key FROM stale_keys) "
                "OR right_key IN (SELECT key FROM stale_keys)"
            )
            catalog.execute(
                "DELETE FROM resolution_candidates c USING replaced_pairs p "
                "WHERE c.left_key = p.left_key AND c.right_key = p.right_key"
            )
            catalog.execute("DELETE FROM resolution_evidence WHERE entity_key IN (SELECT key FROM stale_keys)")
    insert_frame(catalog, "resolution_candidates", frame)
    if len(evidence):
        with registered(catalog, "evidence_keys", evidence[["entity_key"]]):
            catalog.execute(
                "DELETE FROM resolution_evidence WHERE entity_key IN (SELECT entity_key FROM evidence_keys)"
            )
        insert_frame(catalog, "resolution_evidence", evidence)


def _document_texts(catalog: duckdb.DuckDBPyConnection, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """doc_id -> (path, text) of the given documents: what evidence is quoted from."""
    with registered(catalog, "evidence_documents", pd.DataFrame({"doc_id": list(doc_ids)}, dtype=object)):
        rows = catalog.execute(
            "SELECT doc_id, path, text FROM documents WHERE doc_id IN (SELECT doc_id FROM evidence_documents)"
        ).fetchall()
    return {doc_id: (path, text) for doc_id, path, text in rows}


def _first_documents(mentions: Mapping[str, Sequence[MentionRow]], count: int) -> set[str]:
    """The first ``count`` documents of each key's mention rows (most mentioned first): those its evidence is
    quoted from unless they do not hold the label as written. Reads each key's rows only that far."""
    found: set[str] = set()
    for rows in mentions.values():
        first: set[str] = set()
        for doc_id, *_ in rows:
            first.add(doc_id)
            if len(first) == count:
                break
        found |= first
    return found


def _known_evidence(
    catalog: duckdb.DuckDBPyConnection, keys: set[str] | None
) -> dict[str, tuple[str, tuple[Evidence, ...]]]:
    """The evidence earlier runs quoted (of ``keys`` only, when given): per key, its signature and sentences."""
    query = "SELECT entity_key, signature, evidence FROM resolution_evidence"
    if keys is None:
        rows = catalog.execute(query).fetchall()
    else:
        with registered(catalog, "asked_keys", pd.DataFrame({"key": sorted(keys)}, dtype=object)):
            rows = catalog.execute(query + " WHERE entity_key IN (SELECT key FROM asked_keys)").fetchall()
    return {key: (signature, evidence_from_json(evidence)) for key, signature, evidence in rows}


def _surface_settings(config: CandidateConfig, code: str) -> str:
    """What the surface legs of blocking depend on besides the keys: two knobs and the code."""
    return json.dumps([config.max_posting, config.edit_floor, code])


def _scoring_settings(config: CandidateConfig, judge: object | None) -> str:
    """A digest of what a stored candidate row was computed with: the knobs, whether (and which) judge gave
    verdicts, and the code."""
    judged_by = "" if judge is None else repr(getattr(judge, "config", type(judge).__name__))
    text = json.dumps([asdict(config), judged_by, code_version()], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def refresh_overlay(
    home: Home, config: VaultConfig, candidate_config: CandidateConfig | None = None
) -> tuple[OverlaySummary, Clustering]:
    """Clusters from the machine's confident candidates and people's verdicts, into ``entity_clusters``."""
    candidate_config = candidate_config or CandidateConfig()
    verdicts = DecisionsStore.for_home(home).current(MERGE)
    with catalog_writer(home, config.bucket_count) as catalog:
        kind_totals = live_kind_totals(catalog)
        automatic = _automatic_pairs(catalog)
        named = {key for left, right, _ in automatic for key in (left, right)}
        named |= {key for verdict in verdicts for key in (verdict.left_key, verdict.right_key)}
        kinds, key_count = _compared_kinds(catalog, named)
        # Only the keys a pair or a verdict names can join a cluster; every other key stays alone and writes no row.
        automatic = [(left, right, score) for left, right, score in automatic if left in kinds and right in kinds]
        # The pairs as a set (the catalog gives them in no order; the clustering sorts them by score, then keys).
        threshold = candidate_config.auto_merge_threshold
        inputs = (tuple(sorted(automatic)), tuple(verdicts), tuple(sorted(kinds.items())), threshold)
        kept = _last_overlay.clustering_for(home, catalog, inputs)
    if kept is not None:
        return _overlay_summary(kept, key_count, verdicts, kind_totals, kept=True), kept
    clustering = cluster(list(kinds), automatic, verdicts, threshold, kinds=kinds)
    rows = pd.DataFrame(
        [
            (key, cluster_key)
            for key, cluster_key in sorted(clustering.cluster_of.items())
            if len(clustering.members(cluster_key)) > 1
        ],
        columns=["entity_key", "cluster_key"],
    )
    blocked = pd.DataFrame(
        [
            (item.left, item.right, item.source, item.cause, item.reason, item.score, item.verdict_id)
            for item in clustering.blocked
        ],
        columns=["left_key", "right_key", "source", "cause", "reason", "score", "verdict_id"],
    )
    token = uuid.uuid4().hex
    with catalog_writer(home, config.bucket_count) as catalog:
        catalog.execute("BEGIN")
        refill_table(catalog, "entity_clusters", rows)
        refill_table(catalog, "resolution_blocked", blocked)
        catalog.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [OVERLAY_META_KEY, token])
        catalog.execute("COMMIT")
    _last_overlay.wrote(home, token, inputs, clustering, len(rows))
    return _overlay_summary(clustering, key_count, verdicts, kind_totals, kept=False), clustering


def _overlay_summary(clustering: Clustering, key_count: int, verdicts: Sequence[object], kind_totals: pd.DataFrame,
                     kept: bool) -> OverlaySummary:  # fmt: skip
    groups = clustering.clusters
    return OverlaySummary(
        keys=key_count,
        clusters=sum(1 for members in groups.values() if len(members) > 1),
        merged_keys=sum(len(members) for members in groups.values() if len(members) > 1),
        person_verdicts=len(verdicts),
        blocked=[item.reason for item in clustering.blocked if item.source == "automatic"],
        conflicts=[item.reason for item in clustering.conflicts],
        unknown_kinds=unknown_kinds(kind_totals),
        clusters_kept=kept,
    )


@dataclass
class _LastOverlay:
    """What this process's last overlay clustered from and wrote, with the meta token written in that transaction:
    a run whose inputs (the confident pairs, the merge verdicts, the kinds of the keys they name, the threshold)
    are those keeps the clusters while the catalog still holds that write (an edit elsewhere in the vault leaves
    them; clustering and rewriting them took 9.6 s of each edit at 100,000 notes in a resident builder)."""

    catalog: str | None = None  # the catalog file written
    token: str | None = None
    inputs: tuple | None = None
    clustering: Clustering | None = None
    rows: int = 0  # rows of entity_clusters written

    def wrote(self, home: Home, token: str, inputs: tuple, clustering: Clustering, rows: int) -> None:
        self.catalog, self.token, self.inputs = str(home.catalog_path), token, inputs
        self.clustering, self.rows = clustering, rows

    def clustering_for(self, home: Home, catalog: duckdb.DuckDBPyConnection, inputs: tuple) -> Clustering | None:
        """The clustering written last, if it was written to this catalog from these inputs and the catalog still
        holds that write (its token, its number of rows), else None."""
        if self.clustering is None or self.inputs != inputs or self.catalog != str(home.catalog_path):
            return None
        recorded = catalog.execute("SELECT value FROM meta WHERE key = ?", [OVERLAY_META_KEY]).fetchone()
        held = catalog.execute("SELECT count(*) FROM entity_clusters").fetchone()[0]
        return self.clustering if recorded is not None and recorded[0] == self.token and held == self.rows else None


_last_overlay = _LastOverlay()


def _compared_kinds(catalog: duckdb.DuckDBPyConnection, keys: set[str]) -> tuple[dict[str, str], int]:
    """Of ``keys``, the live ones with the core kind each is compared by, as the key table the candidates step
    just wrote has it (``resolution_keys``, one row per live stable key); and how many live keys there are."""
    with registered(catalog, "named_keys", pd.DataFrame({"key": sorted(keys)}, dtype=object)):
        found = catalog.execute(
            "SELECT entity_key, check_kind FROM resolution_keys WHERE entity_key IN (SELECT key FROM named_keys) "
            "ORDER BY entity_key"
        ).fetchall()
    return dict(found), catalog.execute("SELECT count(*) FROM resolution_keys").fetchall()[0][0]


def _key_vectors(home: Home, embedder: Embedder, labels: pd.DataFrame) -> KeyVectors:
    """One unit label vector per stable key: its first mentioned label's with a non-zero stored vector (labels of one
    key differ only in case or spacing). ``labels``: label and key, in first-mention order
    (``resolve.stored_keys.live_label_keys``). The same labels and the same version of the stored vectors give the
    last run's (2.5 s at 100,000 notes)."""
    store = VectorStore.for_home(home, embedder)
    inputs = (str(store.path), store.label_version(), tuple(labels["label"]), tuple(labels["key"]))
    with _KEY_VECTORS.run() as made:
        return made(inputs, lambda: _unit_key_vectors(store, embedder, labels))


_KEY_VECTORS: RunMemo[tuple, KeyVectors] = RunMemo()


def _unit_key_vectors(store: VectorStore, embedder: Embedder, labels: pd.DataFrame) -> KeyVectors:
    names, matrix = store.label_matrix()
    if not names:
        return KeyVectors([], np.zeros((0, embedder.dimension), dtype=np.float32))
    # einsum rather than np.linalg.norm: the same lengths to float32 rounding, 40 times faster (1.5 s at 100,000
    # notes, whose labels are 200,000 rows of 512).
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    # As columns, not a loop over every label: a name stored twice answers with its last row of non-zero length.
    stored = pd.Index(names)[norms > 0]
    rows = np.flatnonzero(norms > 0)[~stored.duplicated(keep="last")]
    found = pd.Index(np.asarray(names, dtype=object)[rows]).get_indexer(labels["label"])
    chosen = pd.DataFrame({"key": labels["key"].to_numpy(), "row": found})
    chosen = chosen[chosen["row"] >= 0].drop_duplicates("key")  # each key's first label with a vector
    chosen = chosen.sort_values("key", kind="stable")  # the key table's order: it takes the matrix as it is
    picked = rows[chosen["row"].to_numpy()]
    unit = matrix[picked]
    unit /= norms[picked, None]  # in place: dividing into a new 400 MB array took 1.5 s at 100,000 notes
    return KeyVectors(chosen["key"].tolist(), unit)


def _automatic_pairs(catalog: duckdb.DuckDBPyConnection) -> list[tuple[str, str, float]]:
    return [
        (left, right, float(score))
        for left, right, score in catalog.execute(
            "SELECT left_key, right_key, score FROM resolution_candidates WHERE auto_merge AND NOT vetoed"
        ).fetchall()
    ]


def _candidate_rows(candidates: list[Candidate], verdicts: dict[tuple[str, str], tuple[str, str]]) -> pd.DataFrame:
    rows = []
    for c in candidates:
        judged = verdicts.get((c.left_key, c.right_key))
        features = {
            "alias": c.features.alias,
            "korean_english": c.features.korean_english,
            "variant": c.features.variant,
            "acronym": c.features.acronym,
            "containment": c.features.containment,
            "edit": c.features.edit,
            "embedding": c.features.embedding,
            "shared_documents": c.features.shared_documents,
            "kinds_compatible": c.features.kinds_compatible,
        }
        rows.append(
            (
                c.left_key, c.right_key, c.left_label, c.right_label, c.left_kind, c.right_kind, float(c.score),
                bool(c.vetoed), c.veto_reason, bool(c.auto_merge), json.dumps(list(c.reasons), ensure_ascii=False),
                json.dumps(features), evidence_json(c.left_evidence), evidence_json(c.right_evidence),
                judged[0] if judged else None, judged[1] if judged else None,
            )
        )
    return pd.DataFrame(rows, columns=list(CANDIDATE_COLUMNS))
