"""Smoke test of the retrieval benchmark on a six-note vault (two of them Korean) built once with the real
pipeline, plus its pure parts (configuration overrides, limits, the MuSiQue set's unanswerable questions)."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from engramrag.retrieve.config import IndexConfig
from eval import retrieval_benchmark as bench
from eval.sets.base import Question, RetrievalSet, write_files
from tests.conftest import build_environment

NOTES = {
    "projects/falcon.md": "---\ntitle: Project Falcon\ntags: [project]\n---\n# Project Falcon\n\n"
    "Project Falcon migrates the billing pipeline to Dagster. Minji Park is the tech lead of Project Falcon.\n",
    "people/minji-park.md": "# Minji Park\n\nMinji Park leads the data platform team and reviews the Falcon "
    "pipeline designs.\n",
    "tools/duckdb.md": "# DuckDB\n\nDuckDB is the embedded analytical database of the catalog. Queries over "
    "Parquet files run in process.\n",
    "meetings/retro.md": "# Sprint retrospective\n\nThe team agreed to rotate the on-call schedule weekly and to "
    "write incident reviews within two days.\n",
    "회의록/예산.md": "# 예산 회의\n\n2025년 예산 회의에서 클라우드 비용을 줄이기로 결정했다. 담당자는 김서연이다.\n",
    "작업/배포.md": "# 배포 자동화\n\n배포 파이프라인을 자동화하고 롤백 절차를 문서로 남긴다. 담당자: 이준호\n",
}
QUESTIONS = (
    Question("q-falcon", "Who is the tech lead of Project Falcon?", ("projects/falcon.md", "people/minji-park.md"),
             "single"),
    Question("q-duckdb", "Which embedded analytical database runs queries over Parquet files?", ("tools/duckdb.md",),
             "single"),
    Question("q-budget", "예산 회의에서 클라우드 비용에 대해 무엇을 결정했나?", ("회의록/예산.md",), "single", "ko"),
    Question("q-none", "What colour is the mascot of the robotics club?", (), "unanswerable"),
)
CONFIGS = ("full", "bm25_notes", "bm25_chunks")


def tiny_set(vault: Path, seed: int = 0) -> RetrievalSet:
    return RetrievalSet("tiny", vault, QUESTIONS, write_files(vault, NOTES), "six notes")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RetrievalSet]]:
    """The tiny set built once through the harness's own home preparation (run_build, index refresh)."""
    work = tmp_path_factory.mktemp("bench")
    with build_environment():
        retrieval_set = tiny_set(work / "tiny" / "vault")
        prepared = bench.prepare_home(retrieval_set, work / "tiny" / f"home-{bench.EXTRACTOR}", rebuild=False)
        assert prepared["build"]["checks"] and not prepared["build"]["reused"]
        yield work, retrieval_set


def test_evaluate_set_on_a_tiny_vault(built: tuple[Path, RetrievalSet]):
    work, retrieval_set = built
    retriever = bench.open_retriever(work / "tiny" / f"home-{bench.EXTRACTOR}")
    try:
        runs = bench.evaluate_set(retriever, QUESTIONS, CONFIGS, vault=retrieval_set.vault, progress=None)
    finally:
        retriever.close()
    assert list(runs) == list(CONFIGS)
    for name, run in runs.items():
        assert [row["id"] for row in run["questions"]] == [q.id for q in QUESTIONS]
        summary = run["summary"]
        assert summary["overall"]["n"] == 3
        assert set(summary["overall"]) == {"n", "recall@1", "recall@2", "recall@5", "recall@10", "all@10", "mrr"}
        assert list(summary["by_group"]) == ["single"] and set(summary["by_language"]) == {"en", "ko"}
        assert 0.0 <= summary["overall"]["mrr"] <= 1.0
        assert summary["abstention"]["unanswerable"] == 1 and summary["abstention"]["answerable"] == 3
        assert set(summary["latency_ms"]) == {"p50", "p95", "mean"}
        assert run["unknown_docs"]["count"] == 0, name
        unanswerable = run["questions"][-1]
        assert unanswerable["recall@5"] is None and unanswerable["rr"] is None
        assert all(len(row["top10"]) <= 10 for row in run["questions"])
    peer = {row["id"]: row for row in runs["bm25_notes"]["questions"]}
    assert peer["q-duckdb"]["top10"][0] == "tools/duckdb.md"
    assert peer["q-budget"]["top10"][0] == "회의록/예산.md"  # Hangul bigrams match inside eojeol
    assert peer["q-falcon"]["top10"][0] in ("projects/falcon.md", "people/minji-park.md")
    assert peer["q-duckdb"]["rr"] == 1.0 and peer["q-duckdb"]["recall@1"] == 1.0
    # the peer's abstention score is defined for every question, so its AUROC is too
    assert runs["bm25_notes"]["summary"]["abstention"]["auroc"] is not None
    assert runs["full"]["questions"][1]["recall@10"] == 1.0

    tests = bench.paired_tests(runs)
    assert [test["role"] for test in tests] == ["best keyword peer"]
    assert tests[0]["second"] == bench.best_keyword_peer(runs) and tests[0]["n"] == 3
    assert set(tests[0]) >= {"recall@5_sign", "rr_sign", "all@10_mcnemar"}
    table = bench.results_table(runs)
    assert table.splitlines()[0].startswith("| config ") and "| bm25_notes " in table
    assert "single (n=3) R@5" in bench.groups_table(runs)


def test_command_line_reuses_the_home(built: tuple[Path, RetrievalSet], tmp_path: Path, monkeypatch, capsys):
    work, _ = built
    module = types.ModuleType("tiny_set_module")
    module.build_set = tiny_set
    monkeypatch.setitem(sys.modules, "tiny_set_module", module)
    monkeypatch.setattr(bench, "SETS", {"tiny": "tiny_set_module"})
    with build_environment():
        code = bench.main(["--sets", "tiny", "--work", str(work), "--out", str(tmp_path), "--configs",
                           "full,graph_off,bm25_notes", "--limit", "2", "--set-config", "damping=0.6",
                           "--set-config", "dense_passage_seeds=false"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "### tiny" in printed and "full vs graph_off" in printed and "GiB RAM" in printed
    (result_file,) = tmp_path.glob("retrieval-*.json")
    record = json.loads(result_file.read_text(encoding="utf-8"))
    tiny = record["sets"]["tiny"]
    assert tiny["build"]["reused"] and tiny["questions"] == 3  # two of group single, the unanswerable one
    assert tiny["retrieval_config"]["damping"] == 0.6 and tiny["retrieval_config"]["dense_passage_seeds"] is False
    assert list(tiny["runs"]) == ["full", "graph_off", "bm25_notes"]
    assert [test["second"] for test in tiny["tests"]] == ["bm25_notes", "graph_off"]
    assert tiny["bm25_notes"]["notes"] == 6


def test_configurations_follow_the_ablations():
    from engramrag.retrieve.retriever import ABLATIONS

    configs = bench.configurations()
    assert list(configs)[:2] == ["full", "auto_turn"] and list(configs)[-1] == "bm25_notes"
    assert configs["bm25_chunks"].ablation == "bm25_only"
    assert {c.ablation for c in configs.values() if c.ablation} == set(ABLATIONS)


def test_retrieval_config_overrides():
    config = bench.retrieval_config_with(["damping=1", "entity_seeds=7", "dense_passage_seeds=true"])
    assert config.damping == 1.0 and isinstance(config.damping, float)
    assert config.entity_seeds == 7 and config.dense_passage_seeds is True
    assert bench.retrieval_config_with({"damping": 0.3}).damping == 0.3
    with pytest.raises(ValueError, match="no field"):
        bench.retrieval_config_with(["no_such_field=1"])
    with pytest.raises(ValueError):
        bench.retrieval_config_with(["damping"])
    assert [bench.parse_value(v) for v in ("off", "None", "3", "2.5", "x")] == [False, None, 3, 2.5, "x"]
    index = bench.retrieval_config_with(["analysis_edge_weight=0"], IndexConfig)  # --index-config
    assert isinstance(index, IndexConfig) and index.analysis_edge_weight == 0.0
    with pytest.raises(ValueError, match="IndexConfig has no field damping"):
        bench.retrieval_config_with(["damping=1"], IndexConfig)


def test_limit_per_group_keeps_set_order():
    kept = bench.limit_per_group(QUESTIONS, 1)
    assert [q.id for q in kept] == ["q-falcon", "q-none"]
    assert bench.limit_per_group(QUESTIONS, None) == list(QUESTIONS)


def test_musique_unanswerable_questions_are_absent_from_the_corpus():
    from eval.musique import DEFAULT_DATA, load_corpus
    from eval.sets import musique_set

    if not (DEFAULT_DATA / "corpus.json").is_file():
        pytest.skip(f"no MuSiQue data at {DEFAULT_DATA}")
    corpus = load_corpus(DEFAULT_DATA)
    assert len(musique_set.UNANSWERABLE) >= 25
    assert musique_set.unanswerable_violations(corpus) == []
    words = musique_set.corpus_words(corpus)
    for question, distinctive in musique_set.UNANSWERABLE:
        assert distinctive, question
        assert not any(word in words for word in distinctive), question
    # the check does catch a word of the corpus
    assert musique_set.unanswerable_violations([{"title": "Turing", "text": "Alan Turing"}])
    questions = musique_set.unanswerable_questions()
    assert all(q.gold == () and q.group == "unanswerable" for q in questions)
    assert len({q.id for q in questions}) == len(questions)


def test_musique_set_shares_the_musique_vault(tmp_path: Path):
    from eval import musique
    from eval.sets import musique_set

    data = tmp_path / "data"
    data.mkdir()
    corpus = [{"title": "Paris", "text": "Paris is the capital of France."},
              {"title": "France", "text": "France is a country in Europe."}]
    questions = [{"id": "2hop__1_2", "question": "Where is Paris?", "paragraphs": [
        {"idx": 0, "title": "Paris", "paragraph_text": corpus[0]["text"], "is_supporting": True},
        {"idx": 1, "title": "France", "paragraph_text": corpus[1]["text"], "is_supporting": True}]}]
    (data / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (data / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
    retrieval_set = musique_set.build_set(tmp_path / "vault", data=data)
    assert retrieval_set.name == "musique"
    assert retrieval_set.digest == musique.vault_digest(musique.vault_plan(corpus))
    first = retrieval_set.questions[0]
    assert first.gold == ("passages/0000-paris.md", "passages/0001-france.md") and first.group == "2hop"
    assert len(retrieval_set.questions) == 1 + len(musique_set.UNANSWERABLE)
    assert sorted(p.name for p in (tmp_path / "vault" / "passages").iterdir()) == ["0000-paris.md", "0001-france.md"]
