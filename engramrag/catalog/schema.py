"""Catalog tables. Bump SCHEMA_VERSION with any change; an older catalog is migrated or rebuilt.

Version 2 added ``llm_calls``. Every table is created with IF NOT EXISTS when a writer opens the catalog, so an
older catalog gains the new tables there; the last statement then records the version it was brought to (only
upwards, so an older program opening a newer catalog does not lower it).

Version 3 added ``entities.core_kind`` (the core kind a custom kind was declared under when it was extracted; NULL
in rows written before, which resolution reads as their ``kind``) and let ``decisions.line_start``/``line_end`` be
NULL (a decision a model reported whose quote is not in the text). The writer's open applies both to an older
catalog with idempotent ALTER statements; read-only readers of an older catalog cannot add the column, so they name
``core_kind`` only when the catalog has it (``resolve.inputs.live_mentions``).

Version 4 added ``extraction_runs.unlocated_quotes``: how many of the quotes a model gave for a document were not
found verbatim in its text (their items are kept without a span). Added the same way; readers of an older catalog
read 0 (``metrics.lifecycle``).

Version 5 (issue 15, time) added ``documents.doc_date``/``date_source`` (the document's date and where it came
from, ``engramrag.vault.dates``), ``supersessions.reason``/``decided_by`` (``declared`` by the author of the
record that states it, or ``accepted`` by the person who reviewed it), and the tables ``document_supersessions``
and ``property_values``; ``supersession_candidates`` (gaining ``declared_in``) and ``supersession_quads``, created
before by ``lifecycle.revision``, are defined here too. Readers of an older catalog find the dates NULL and the
reason missing.

Version 6 (issue 16, incremental builds) added ``asset_inputs`` (the fingerprint of what each global step read when
it last finished, ``lifecycle.freshness``); the tables ``resolution_candidates`` and ``resolution_blocked``, created
before by ``lifecycle.resolution`` (CREATE OR REPLACE at every build), are defined here with the same columns.

Version 7 (issue 17, proposer and verifier) added ``supersession_model_reviews``: per inferred supersession
proposal, what the optional model proposer said and what the independent verifier answered, with the checks on
their quotes (``revise.model_review``). Created like the other tables when a writer opens an older catalog; readers
of an older catalog find no model reviews (``revise.queue``).

Version 8 (issue 16) added ``resolution_evidence``: each stable key's evidence sentences with the signature of what
they were quoted from, so a build quotes again only the keys whose mentions or documents changed
(``resolve.evidence.EvidenceFinder``). A catalog without it quotes every key once, as before.

Version 9 (issue 16) defined the ``metrics_*`` tables here, with fixed column types: the metrics step had made each
with CREATE TABLE AS from its frame, so an empty frame gave NULL-typed columns. A writer drops an older
``metrics_*`` table whose columns differ and creates it as defined; the next metrics step refills it.

Version 10 (issue 16) gave ``supersession_candidates`` each side's ``doc_id`` and ``entity_key``, so the step that
applies accepted supersessions reads the proposals the step before it wrote instead of computing them a second time
(``lifecycle.revision.stored_proposals``). Rows written before have them NULL and are computed again, once.

Version 11 (issue 16) added ``resolution_keys``: each stable key's row of the resolution key table with a digest of
the mention rows and documents it was computed from (``resolve.stored_keys``), so a build computes again only the
rows of keys whose mentions changed. A catalog without it computes every row once.
"""

import re

SCHEMA_VERSION = 11
METRICS_DEFINED_IN = 9  # a catalog below this version may hold metrics_* tables made from frames

# A live document whose graphs are missing or stale for the given extractor id (one parameter).
NEEDS_EXTRACTION = "(extracted_hash IS DISTINCT FROM body_hash OR extractor IS DISTINCT FROM ?)"

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

CREATE TABLE IF NOT EXISTS documents (
    doc_id VARCHAR PRIMARY KEY,
    path VARCHAR NOT NULL UNIQUE,
    bucket INTEGER NOT NULL,
    title VARCHAR,
    author VARCHAR,
    agent_authored BOOLEAN NOT NULL,
    body_hash VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    text VARCHAR NOT NULL,
    front_matter JSON,
    seen_run VARCHAR,
    gone BOOLEAN NOT NULL DEFAULT FALSE,
    extracted_hash VARCHAR,
    extractor VARCHAR,
    extracted_at TIMESTAMP,
    quads INTEGER NOT NULL DEFAULT 0,
    statements INTEGER NOT NULL DEFAULT 0,
    entities INTEGER NOT NULL DEFAULT 0,
    doc_date VARCHAR,
    date_source VARCHAR
);

CREATE TABLE IF NOT EXISTS chunks (
    doc_id VARCHAR NOT NULL,
    chunk_index INTEGER NOT NULL,
    text VARCHAR NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    heading_path VARCHAR,
    PRIMARY KEY (doc_id, chunk_index)
);

CREATE TABLE IF NOT EXISTS entities (
    doc_id VARCHAR NOT NULL,
    entity_key VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    aliases VARCHAR[],
    mentions INTEGER NOT NULL,
    first_line INTEGER,
    core_kind VARCHAR,
    PRIMARY KEY (doc_id, entity_key)
);

CREATE TABLE IF NOT EXISTS statements (
    doc_id VARCHAR NOT NULL,
    statement_id VARCHAR NOT NULL,
    subject VARCHAR NOT NULL,
    predicate VARCHAR NOT NULL,
    label VARCHAR,
    object VARCHAR NOT NULL,
    object_is_entity BOOLEAN NOT NULL,
    role VARCHAR NOT NULL,
    char_start INTEGER,
    char_end INTEGER,
    line_start INTEGER,
    line_end INTEGER,
    extractor VARCHAR NOT NULL,
    PRIMARY KEY (doc_id, statement_id)
);

CREATE TABLE IF NOT EXISTS decisions (
    doc_id VARCHAR NOT NULL,
    entity_key VARCHAR NOT NULL,
    title VARCHAR NOT NULL,
    decided_on VARCHAR,
    status VARCHAR,
    line_start INTEGER,
    line_end INTEGER,
    supersedes VARCHAR[],
    superseded_by VARCHAR[],
    PRIMARY KEY (doc_id, entity_key)
);

CREATE TABLE IF NOT EXISTS rejected_documents (
    path VARCHAR PRIMARY KEY,
    bucket INTEGER NOT NULL,
    reason VARCHAR NOT NULL,
    message VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    run_id VARCHAR,
    detected_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS extraction_runs (
    run_id VARCHAR,
    doc_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    bucket INTEGER NOT NULL,
    status VARCHAR NOT NULL,
    extractor VARCHAR NOT NULL,
    extractor_version VARCHAR NOT NULL,
    model VARCHAR,
    latency_ms DOUBLE NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    quads INTEGER NOT NULL DEFAULT 0,
    error VARCHAR,
    finished_at TIMESTAMP NOT NULL,
    unlocated_quotes INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS deletions (
    run_id VARCHAR,
    doc_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    bucket INTEGER NOT NULL,
    quads_removed INTEGER NOT NULL,
    deleted_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS embedded_documents (
    doc_id VARCHAR PRIMARY KEY,
    bucket INTEGER NOT NULL,
    extraction VARCHAR NOT NULL,
    embedder VARCHAR NOT NULL,
    chunks INTEGER NOT NULL,
    entity_labels INTEGER NOT NULL,
    triples INTEGER NOT NULL,
    embedded_at TIMESTAMP NOT NULL
);

-- Resolution: which stable entity keys (normalised labels) the overlay joins into one cluster. Only members of
-- clusters of two or more are listed; the retrieval index joins their mentions into one node.
CREATE TABLE IF NOT EXISTS entity_clusters (
    entity_key VARCHAR PRIMARY KEY,
    cluster_key VARCHAR NOT NULL
);

-- Revision: accepted supersessions (a person accepted that the later decision replaces the earlier one).
CREATE TABLE IF NOT EXISTS supersessions (
    earlier_key VARCHAR NOT NULL,
    later_key VARCHAR NOT NULL,
    earlier_doc_id VARCHAR NOT NULL,
    later_doc_id VARCHAR NOT NULL,
    earlier_title VARCHAR NOT NULL,
    later_title VARCHAR NOT NULL,
    earlier_date VARCHAR,
    later_date VARCHAR,
    reason VARCHAR,
    decided_by VARCHAR,
    PRIMARY KEY (earlier_key, later_key)
);

-- Time: notes that an author declared replaced (front matter ``superseded_by``/``supersedes``, "this replaces
-- [[X]]") and notes whose value of a single-valued property a later note changed (``property_values``). Rebuilt
-- whole by ``lifecycle.timeline``; a pair a person rejected is left out. ``reason``: ``declared``, ``accepted``
-- or ``later_value``; ``since`` is the date from which the later note holds (as-of questions before it ignore
-- the row).
CREATE TABLE IF NOT EXISTS document_supersessions (
    earlier_doc_id VARCHAR NOT NULL,
    later_doc_id VARCHAR NOT NULL,
    earlier_path VARCHAR NOT NULL,
    later_path VARCHAR NOT NULL,
    earlier_date VARCHAR,
    later_date VARCHAR,
    since VARCHAR,
    reason VARCHAR NOT NULL,
    form VARCHAR NOT NULL,
    decided_by VARCHAR,
    subject VARCHAR,
    property VARCHAR,
    earlier_value VARCHAR,
    later_value VARCHAR,
    earlier_quote VARCHAR,
    later_quote VARCHAR,
    earlier_current BOOLEAN NOT NULL DEFAULT FALSE,
    property_words VARCHAR,
    left_key VARCHAR NOT NULL,
    right_key VARCHAR NOT NULL
);

-- Revision: the machine's supersession proposals (earlier, later), recomputed whole by
-- ``lifecycle.revision.refresh_supersession_candidates``; ``declared_in`` names the record whose own field states
-- the pair (an author's declaration, applied without review).
CREATE TABLE IF NOT EXISTS supersession_candidates (
    earlier_key VARCHAR, later_key VARCHAR, earlier_path VARCHAR, later_path VARCHAR,
    earlier_title VARCHAR, later_title VARCHAR, earlier_decided_on VARCHAR, later_decided_on VARCHAR,
    earlier_status VARCHAR, later_status VARCHAR, earlier_line_start INTEGER, earlier_line_end INTEGER,
    later_line_start INTEGER, later_line_end INTEGER, earlier_quote VARCHAR, later_quote VARCHAR,
    score DOUBLE, same_day BOOLEAN, explicit BOOLEAN, title_similarity DOUBLE,
    subject_similarity DOUBLE, shared_subjects VARCHAR[], reasons VARCHAR[], declared_in VARCHAR,
    earlier_doc_id VARCHAR, later_doc_id VARCHAR, earlier_entity_key VARCHAR, later_entity_key VARCHAR
);

-- Revision: the optional model review of the inferred supersession proposals (``revise.model_review``), refilled by
-- ``lifecycle.revision.refresh_supersession_candidates``. ``outcome``: ``confirmed`` (the proposer proposed it and the
-- verifier confirmed it, each with a verbatim quote from both decisions: applied unless a person rejects it),
-- ``rejected`` (the verifier said no), ``unverifiable`` (a check failed), ``not_proposed`` (the proposer said no) or
-- ``failed`` (no answer from the server: asked again at the next recomputation). ``stage`` is the call that decided
-- it, ``failed_check`` the check that failed and ``failure`` how. ``inputs`` digests what was asked (both texts, the
-- model and the prompts): a pair whose inputs are unchanged is not asked again.
CREATE TABLE IF NOT EXISTS supersession_model_reviews (
    earlier_key VARCHAR NOT NULL,
    later_key VARCHAR NOT NULL,
    inputs VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    stage VARCHAR NOT NULL,
    failed_check VARCHAR,
    failure VARCHAR,
    proposer_supersedes BOOLEAN,
    proposer_reason VARCHAR,
    proposer_earlier_quote VARCHAR,
    proposer_later_quote VARCHAR,
    verifier_verdict VARCHAR,
    verifier_reason VARCHAR,
    verifier_earlier_quote VARCHAR,
    verifier_later_quote VARCHAR,
    model VARCHAR NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    reviewed_at TIMESTAMP NOT NULL
);

-- The quads ``lifecycle.revision.apply_supersessions`` wrote at the last build, removed before the next ones.
CREATE TABLE IF NOT EXISTS supersession_quads (nquad VARCHAR NOT NULL);

-- The quads ``lifecycle.timeline`` wrote at the last build, removed before it writes the next ones.
CREATE TABLE IF NOT EXISTS timeline_quads (nquad VARCHAR NOT NULL);

-- Time: every value a document states for a single-valued property of a subject, in date order per
-- (subject_key, property); ``current`` marks the values of the latest version, ``restated`` a document that
-- repeats a value it links to rather than stating it anew.
CREATE TABLE IF NOT EXISTS property_values (
    subject_key VARCHAR NOT NULL,
    subject VARCHAR NOT NULL,
    property VARCHAR NOT NULL,
    value_key VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    doc_date VARCHAR,
    date_source VARCHAR,
    line_start INTEGER,
    line_end INTEGER,
    quote VARCHAR NOT NULL,
    version INTEGER NOT NULL,
    current BOOLEAN NOT NULL,
    restated BOOLEAN NOT NULL,
    why VARCHAR NOT NULL
);

-- Resolution: the machine's candidate pairs of stable entity keys (``resolve.candidates``), with their features and
-- the evidence sentences of both sides. Written by ``lifecycle.resolution.refresh_candidates``: the rows of pairs
-- touching a changed key are replaced, the rest kept (``resolve.scored_pairs``; meta ``resolution_pairs`` says which
-- run the table holds); refilled whole when nothing trusted is stored.
CREATE TABLE IF NOT EXISTS resolution_candidates (
    left_key VARCHAR NOT NULL, right_key VARCHAR NOT NULL, left_label VARCHAR, right_label VARCHAR,
    left_kind VARCHAR, right_kind VARCHAR, score DOUBLE NOT NULL, vetoed BOOLEAN NOT NULL, veto_reason VARCHAR,
    auto_merge BOOLEAN NOT NULL, reasons JSON, features JSON, left_evidence JSON, right_evidence JSON,
    judge_verdict VARCHAR, judge_reason VARCHAR
);

-- Resolution: each stable key's evidence sentences (a JSON list of {path, line, text}) and the signature of the
-- mention rows and document texts they were quoted from. Written by ``lifecycle.resolution.refresh_candidates`` for
-- the keys the scored candidates used (and dropped for keys gone or changed); a key whose signature is unchanged is
-- not searched again.
CREATE TABLE IF NOT EXISTS resolution_evidence (
    entity_key VARCHAR PRIMARY KEY, signature VARCHAR NOT NULL, evidence JSON NOT NULL
);

-- Resolution: each stable key's row of the key table (``resolve.keytable.KeyRow``: its label, kinds, its own
-- declared and written aliases as compact forms, its documents) and ``inputs``, a digest of the live mention rows and
-- documents it was computed from. Written by ``lifecycle.resolution.refresh_candidates`` with the candidates; a key
-- whose digest is unchanged keeps its row (``resolve.stored_keys``). The meta row ``resolution_keys`` names the code
-- the rows were computed with. The overlay (``refresh_overlay``) reads the kind a key's merges are checked by here.
CREATE TABLE IF NOT EXISTS resolution_keys (
    entity_key VARCHAR PRIMARY KEY, inputs VARCHAR NOT NULL, label VARCHAR NOT NULL, kind VARCHAR NOT NULL,
    check_kind VARCHAR NOT NULL, declared VARCHAR[] NOT NULL, written VARCHAR[] NOT NULL, documents VARCHAR[] NOT NULL
);

-- Resolution: the merges the overlay did not make (a person's distinct verdict in the way, or a kind veto).
CREATE TABLE IF NOT EXISTS resolution_blocked (
    left_key VARCHAR, right_key VARCHAR, source VARCHAR, cause VARCHAR, reason VARCHAR, score DOUBLE,
    verdict_id BIGINT
);

-- What each global step read when it last finished (``lifecycle.freshness``): equal inputs, nothing to do.
CREATE TABLE IF NOT EXISTS asset_inputs (
    asset VARCHAR PRIMARY KEY,
    fingerprint VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);

-- One row per model call of an extraction (one segment of one document), paid or answered from the response
-- cache, failed calls included: what tokens and money went where. ``requests`` counts the HTTP requests the call
-- took (so retries = requests - 1); ``cached`` calls paid nothing in this run.
CREATE TABLE IF NOT EXISTS llm_calls (
    run_id VARCHAR,
    doc_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    bucket INTEGER NOT NULL,
    segment INTEGER NOT NULL,
    segments INTEGER NOT NULL,
    model VARCHAR,
    prompt_version VARCHAR,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    requests INTEGER NOT NULL DEFAULT 0,
    cached BOOLEAN NOT NULL DEFAULT FALSE,
    status VARCHAR NOT NULL,
    error VARCHAR,
    latency_ms DOUBLE NOT NULL DEFAULT 0,
    called_at TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS builds (
    run_id VARCHAR PRIMARY KEY,
    finished_at TIMESTAMP NOT NULL,
    buckets VARCHAR,
    documents INTEGER NOT NULL,
    extracted INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    unchanged INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    rejected INTEGER NOT NULL,
    quads BIGINT NOT NULL,
    statements BIGINT NOT NULL
);
"""

# Version 3 on a catalog made before it (each statement does nothing on a catalog that already has it). The new
# column comes last, as CREATE TABLE puts it, so both kinds of catalog have the same column order.
TABLES += """
ALTER TABLE entities ADD COLUMN IF NOT EXISTS core_kind VARCHAR;
ALTER TABLE decisions ALTER COLUMN line_start DROP NOT NULL;
ALTER TABLE decisions ALTER COLUMN line_end DROP NOT NULL;
ALTER TABLE extraction_runs ADD COLUMN IF NOT EXISTS unlocated_quotes INTEGER DEFAULT 0;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS doc_date VARCHAR;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS date_source VARCHAR;
ALTER TABLE supersessions ADD COLUMN IF NOT EXISTS reason VARCHAR;
ALTER TABLE supersessions ADD COLUMN IF NOT EXISTS decided_by VARCHAR;
ALTER TABLE supersession_candidates ADD COLUMN IF NOT EXISTS declared_in VARCHAR;
ALTER TABLE supersession_candidates ADD COLUMN IF NOT EXISTS earlier_doc_id VARCHAR;
ALTER TABLE supersession_candidates ADD COLUMN IF NOT EXISTS later_doc_id VARCHAR;
ALTER TABLE supersession_candidates ADD COLUMN IF NOT EXISTS earlier_entity_key VARCHAR;
ALTER TABLE supersession_candidates ADD COLUMN IF NOT EXISTS later_entity_key VARCHAR;
"""

# The lifecycle metrics (``metrics.lifecycle``), each refilled whole after every build by
# ``lifecycle.metrics_tables``: one table per ``LifecycleMetrics`` field, in the field's column order.
_RUN = [("run", "BIGINT"), ("run_id", "VARCHAR"), ("finished_at", "TIMESTAMP")]
_LATENCY = [("p50_ms", "DOUBLE"), ("p95_ms", "DOUBLE"), ("latency_ms", "DOUBLE")]
_CALLS = [("calls", "BIGINT"), ("requests", "BIGINT"), ("retries", "BIGINT"), ("failed_calls", "BIGINT"),
          ("cache_hits", "BIGINT"), ("tokens_in", "BIGINT"), ("tokens_out", "BIGINT")]  # fmt: skip
METRICS_TABLES: dict[str, list[tuple[str, str]]] = {
    "build_runs": [*_RUN, ("documents", "INTEGER"), ("extracted", "INTEGER"), ("unchanged", "INTEGER"),
                   ("failed", "INTEGER"), ("deleted", "INTEGER"), ("rejected", "INTEGER"), ("quads", "BIGINT"),
                   ("statements", "BIGINT"), ("mode", "VARCHAR")],
    "extraction_latency": [*_RUN, ("extractor", "VARCHAR"), ("documents", "BIGINT"), ("failed", "BIGINT"),
                           ("p50_ms", "DOUBLE"), ("p95_ms", "DOUBLE"), ("mean_ms", "DOUBLE"), ("total_ms", "DOUBLE")],
    "document_costs": [*_RUN, ("path", "VARCHAR"), ("status", "VARCHAR"), ("extractor", "VARCHAR"),
                       ("model", "VARCHAR"), ("tokens_in", "INTEGER"), ("tokens_out", "INTEGER"),
                       ("cost_usd", "DOUBLE"), ("cost_note", "VARCHAR")],
    "run_costs": [*_RUN, ("documents", "BIGINT"), ("tokens_in", "BIGINT"), ("tokens_out", "BIGINT"),
                  ("cost_usd", "DOUBLE"), ("cost_per_document_usd", "DOUBLE"), ("cost_note", "VARCHAR")],
    "rebuild_times": [*_RUN, ("mode", "VARCHAR"), ("extracted", "INTEGER"), ("failed", "INTEGER"),
                      ("extraction_seconds", "DOUBLE"), ("seconds_per_document", "DOUBLE")],
    "store_sizes": [("store", "VARCHAR"), ("bytes", "BIGINT"), ("mebibytes", "DOUBLE")],
    "llm_runs": [*_RUN, ("model", "VARCHAR"), ("documents", "BIGINT"), ("failed_documents", "BIGINT"),
                 ("unlocated_quotes", "BIGINT"), *_CALLS, *_LATENCY, ("cost_usd", "DOUBLE"),
                 ("cost_per_document_usd", "DOUBLE"), ("cost_note", "VARCHAR")],
    "llm_documents": [*_RUN, ("path", "VARCHAR"), ("model", "VARCHAR"), ("prompt_version", "VARCHAR"),
                      ("status", "VARCHAR"), ("error", "VARCHAR"), ("unlocated_quotes", "INTEGER"),
                      ("segments", "INTEGER"), *_CALLS, *_LATENCY, ("cost_usd", "DOUBLE"), ("cost_note", "VARCHAR")],
    "failures": [("kind", "VARCHAR"), ("path", "VARCHAR"), ("reason", "VARCHAR"), ("message", "VARCHAR"),
                 ("run_id", "VARCHAR"), ("run", "BIGINT"), ("occurred_at", "TIMESTAMP"), ("still_failing", "BOOLEAN")],
}  # fmt: skip


def metrics_table(name: str) -> str:
    return f"metrics_{name}"


def _column_list(columns: list[tuple[str, str]]) -> str:
    return ", ".join('"' + name + '" ' + kind for name, kind in columns)


TABLES += "".join(
    f"CREATE TABLE IF NOT EXISTS {metrics_table(name)} ({_column_list(columns)});\n"
    for name, columns in METRICS_TABLES.items()
)

# Every table the statements above create: a writer that finds them all in a catalog of this version skips them.
TABLE_NAMES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", TABLES))

# Run after the tables exist: an older catalog that just gained the new tables now says so. A new catalog has
# no meta rows yet (the connection writes them with SCHEMA_VERSION), so this changes nothing there.
TABLES += f"""
UPDATE meta SET value = '{SCHEMA_VERSION}'
WHERE key = 'schema_version' AND TRY_CAST(value AS INTEGER) < {SCHEMA_VERSION};
"""
