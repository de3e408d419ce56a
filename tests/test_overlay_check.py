"""The overlay check on a hand-made catalog: a cluster row naming a key no live mention has fails it."""

from __future__ import annotations

from pathlib import Path

from engramrag.catalog.connection import catalog_writer
from engramrag.checks.resolution import overlay_names_existing_entities
from engramrag.store import Home


def _home(tmp_path: Path, clusters: list[tuple[str, str]]) -> Home:
    home = Home.at(tmp_path / "home")
    with catalog_writer(home, 16) as catalog:
        catalog.execute(
            "INSERT INTO documents (doc_id, path, bucket, agent_authored, body_hash, size_bytes, mtime_ns, text, gone) "
            "VALUES ('d1', 'a.md', 0, false, 'h', 1, 1, 'x', false), ('d2', 'b.md', 0, false, 'h', 1, 1, 'x', true)"
        )
        catalog.executemany(
            "INSERT INTO entities (doc_id, entity_key, label, kind, mentions) VALUES (?, ?, ?, 'Concept', 1)",
            [("d1", "e1", "Postgres"), ("d1", "e2", "PostgreSQL"), ("d2", "e3", "Oracle")],
        )
        catalog.executemany("INSERT INTO entity_clusters VALUES (?, ?)", clusters)
    return home


def test_live_keys_pass(tmp_path: Path) -> None:
    assert overlay_names_existing_entities(_home(tmp_path, [("postgres", "postgresql")])).passed


def test_a_key_only_a_gone_document_mentions_fails(tmp_path: Path) -> None:
    outcome = overlay_names_existing_entities(_home(tmp_path, [("oracle", "postgresql")]))
    assert not outcome.passed
    failure = outcome.metadata["failures"][0]
    assert failure["column"] == "entity_key_not_live" and failure["examples"] == ["oracle"]
