"""Known-answer tests of the retrieval benchmark helpers and of the MuSiQue harness's data, metric and
reporting parts (with a stand-in retriever; nothing is built)."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from eval import musique
from eval.retrieval_metrics import (
    aggregate,
    all_at_k,
    auroc,
    binomial_two_sided,
    distinct_ranked,
    format_p,
    hop_type,
    markdown_table,
    mcnemar_exact,
    mean,
    paired_binary,
    percentile,
    recall_at_k,
    reciprocal_rank,
    share_percent,
    sign_test,
)

# --- metrics -----------------------------------------------------------------------------------------------


def test_recall_and_all_at_k():
    ranked = ["a", "x", "b", "y", "z", "c"]
    gold = ["a", "b", "c"]
    assert recall_at_k(ranked, gold, 1) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, gold, 5) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, gold, 10) == 1.0
    assert all_at_k(ranked, gold, 5) == 0
    assert all_at_k(ranked, gold, 6) == 1
    assert recall_at_k([], gold, 10) == 0.0


def test_repeated_documents_count_once_at_their_first_place():
    ranked = ["a", "a", "a", "b"]  # three chunks of one document, then another
    assert distinct_ranked(ranked) == ["a", "b"]
    assert recall_at_k(ranked, ["a", "b"], 2) == 1.0
    assert recall_at_k(ranked, ["a", "a", "b"], 1) == 0.5  # gold is a set too


def test_metrics_refuse_undefined_input():
    with pytest.raises(ValueError):
        recall_at_k(["a"], [], 5)
    with pytest.raises(ValueError):
        all_at_k(["a"], ["a"], 0)


def test_recall_at_1():
    assert recall_at_k(["a", "b"], ["a"], 1) == 1.0
    assert recall_at_k(["b", "a"], ["a"], 1) == 0.0
    assert recall_at_k(["a", "b"], ["a", "b"], 1) == 0.5


def test_reciprocal_rank():
    assert reciprocal_rank(["a", "b", "c"], ["a"]) == 1.0
    assert reciprocal_rank(["x", "y", "c", "a"], ["a", "c"]) == pytest.approx(1 / 3)  # the first gold counts
    assert reciprocal_rank(["x", "x", "x", "a"], ["a"]) == 0.5  # repeated documents count once
    assert reciprocal_rank(["x", "y"], ["a"]) == 0.0
    assert reciprocal_rank([], ["a"]) == 0.0
    with pytest.raises(ValueError):
        reciprocal_rank(["a"], [])


def test_auroc_mann_whitney_with_ties():
    assert auroc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auroc([0.1, 0.2], [0.9, 0.8]) == 0.0
    assert auroc([0.5], [0.5]) == 0.5  # a tie counts half
    # pairs (p, n): (3,1) win, (3,2) win, (2,1) win, (2,2) tie, (1,1) tie, (1,2) loss -> (3 + 1) / 6
    assert auroc([3, 2, 1], [1, 2]) == pytest.approx((3 + 0.5 + 0.5) / 6)
    assert auroc([1.0], []) is None
    assert auroc([], [1.0]) is None


def test_auroc_agrees_with_the_pairwise_definition():
    import random

    generator = random.Random(7)
    for _ in range(20):
        positive = [generator.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(generator.randint(1, 9))]
        negative = [generator.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(generator.randint(1, 9))]
        pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
        assert auroc(positive, negative) == pytest.approx(sum(pairs) / len(pairs))


def test_mean_and_share_skip_missing_values():
    assert mean([1.0, None, 2.0]) == 1.5
    assert mean([None]) is None and mean([]) is None
    assert share_percent([True, False, None, True]) == pytest.approx(200 / 3)
    assert share_percent([None]) is None


def test_hop_type():
    assert hop_type("2hop__13548_13529") == "2hop"
    assert hop_type("3hop1__9285_5188_23307") == "3hop1"
    assert hop_type("4hop3__373866_5189_38229_86687") == "4hop3"
    with pytest.raises(ValueError):
        hop_type("no-prefix")


def test_aggregate_by_hop():
    rows = [
        {"hop": "2hop", "recall@5": 1.0, "all@10": 1},
        {"hop": "2hop", "recall@5": 0.5, "all@10": 0},
        {"hop": "3hop1", "recall@5": 1 / 3, "all@10": 1},
    ]
    result = aggregate(rows, ["recall@5", "all@10"])
    assert result["overall"]["n"] == 3
    assert result["overall"]["recall@5"] == pytest.approx(100 * (1 + 0.5 + 1 / 3) / 3)
    assert result["overall"]["all@10"] == pytest.approx(200 / 3)
    assert list(result["by_hop"]) == ["2hop", "3hop1"]
    assert result["by_hop"]["2hop"] == {"n": 2, "recall@5": 75.0, "all@10": 50.0}
    assert result["by_hop"]["3hop1"]["n"] == 1
    assert aggregate([], ["all@10"])["overall"] == {"n": 0, "all@10": None}


def test_percentile_matches_linear_interpolation():
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 95) == pytest.approx(4.8)
    assert percentile([1.0, 2.0], 50) == 1.5
    assert percentile([], 50) is None


# --- paired tests ------------------------------------------------------------------------------------------


def test_mcnemar_exact_known_answers():
    # 2 * (C(12,0) + C(12,1) + C(12,2)) / 2**12 = 2 * 79 / 4096
    assert mcnemar_exact(10, 2) == pytest.approx(0.03857, abs=5e-5)
    assert mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0  # capped at 1
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    assert binomial_two_sided(60, 40) == pytest.approx(0.05688793, rel=1e-6)


def test_mcnemar_agrees_with_scipy_when_installed():
    stats = pytest.importorskip("scipy.stats")
    for b, c in [(10, 2), (3, 7), (25, 14), (0, 9), (50, 50)]:
        assert mcnemar_exact(b, c) == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_paired_binary_counts_discordant_pairs():
    first = [1, 1, 1, 0, 0, 1]
    second = [1, 0, 0, 1, 0, 0]
    result = paired_binary(first, second)
    assert (result["n"], result["b"], result["c"]) == (6, 3, 1)
    assert result["p"] == pytest.approx(2 * (1 + 4) / 16)
    with pytest.raises(ValueError):
        paired_binary([1], [1, 0])


def test_sign_test_drops_ties():
    result = sign_test([0.5, 0.5, 1 / 3, 0.0, 0.0, -0.5, 0.25, 0.5, 0.5, 0.5])
    assert (result["positive"], result["negative"], result["ties"], result["n"]) == (7, 1, 2, 10)
    assert result["p"] == pytest.approx(2 * (1 + 8) / 256)
    assert sign_test([0.0, 0.0])["p"] == 1.0


# --- reporting ---------------------------------------------------------------------------------------------


def test_markdown_table_and_p_format():
    table = markdown_table(["configuration", "R@5", "p"], [["rules/full", 51.25, None], ["rules/graph_off", 7.0, 3]])
    lines = table.splitlines()
    assert lines[0] == "| configuration   |  R@5 |   p |"
    assert lines[1] == "|-----------------|-----:|----:|"
    assert lines[2] == "| rules/full      | 51.2 |   - |"
    assert lines[3] == "| rules/graph_off |  7.0 |   3 |"
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [[1]])
    assert format_p(0.038574) == "0.0386"
    assert format_p(1e-7) == "<0.0001"
    assert format_p(1.0) == "1"


# --- the MuSiQue harness, on a tiny data folder ------------------------------------------------------------


CORPUS = [
    {"title": "Paris", "text": "Paris is the capital of France."},
    {"title": "Paris", "text": "Paris is a city in Texas."},  # a repeated title, another passage
    {"title": "Río de la Miel", "text": "A river in Spain."},
    {"title": "France", "text": "France is a country in Europe."},
    {"title": "??", "text": "A title with nothing ASCII-safe in it."},
    {"title": "Texas", "text": "Texas is a state of the United States."},
]


def _paragraph(idx: int, passage: dict[str, str], supporting: bool) -> dict:
    return {"idx": idx, "title": passage["title"], "paragraph_text": passage["text"], "is_supporting": supporting}


QUESTIONS = [
    {"id": "2hop__1_2", "question": "Which country has the capital Paris?",
     "paragraphs": [_paragraph(0, CORPUS[0], True), _paragraph(1, CORPUS[1], False), _paragraph(2, CORPUS[3], True)]},
    {"id": "2hop__3_4", "question": "In which state is the other Paris?",
     "paragraphs": [_paragraph(0, CORPUS[1], True), _paragraph(1, CORPUS[5], True), _paragraph(2, CORPUS[0], False)]},
    {"id": "3hop1__5_6_7", "question": "Where is the river Miel?",
     "paragraphs": [_paragraph(0, CORPUS[2], True), _paragraph(1, CORPUS[3], True), _paragraph(2, CORPUS[4], True),
                    _paragraph(3, CORPUS[2], True)]},  # the same supporting paragraph twice counts once
]


def test_slug_and_paths():
    assert musique.slugify("Río de la Miel") == "rio-de-la-miel"
    assert musique.slugify("??") == "passage"
    assert musique.slugify("A" * 100) == "a" * musique.SLUG_CHARS
    assert musique.slugify("Ali Şen: a (very) long title, with punctuation!", limit=12) == "ali-sen-a-ve"
    assert musique.passage_path(7, "East–West Schism") == "passages/0007-east-west-schism.md"
    assert musique.passage_markdown("T", "body") == "# T\n\nbody\n"


def test_vault_and_gold_mapping_with_repeated_titles(tmp_path: Path):
    vault = tmp_path / "vault"
    (vault / "passages").mkdir(parents=True)
    (vault / "passages" / "9999-stale.md").write_text("# stale\n")
    plan = musique.write_vault(CORPUS, vault)
    assert sorted(p.name for p in (vault / "passages").iterdir()) == [
        "0000-paris.md", "0001-paris.md", "0002-rio-de-la-miel.md", "0003-france.md", "0004-passage.md",
        "0005-texas.md",
    ]
    written = (vault / "passages/0002-rio-de-la-miel.md").read_text(encoding="utf-8")
    assert written == "# Río de la Miel\n\nA river in Spain.\n"
    assert plan["passages/0001-paris.md"] == ("Paris", "Paris is a city in Texas.")

    index = musique.passage_index(plan)
    assert musique.gold_documents(QUESTIONS[0], index) == ["passages/0000-paris.md", "passages/0003-france.md"]
    assert musique.gold_documents(QUESTIONS[1], index) == ["passages/0001-paris.md", "passages/0005-texas.md"]
    assert musique.gold_documents(QUESTIONS[2], index) == [
        "passages/0002-rio-de-la-miel.md", "passages/0003-france.md", "passages/0004-passage.md"]

    checked = musique.check_gold(QUESTIONS, index)
    assert checked["supporting_paragraphs"] == 8
    assert checked["gold_documents"] == 7
    assert checked["distinct_gold_documents"] == 6
    assert checked["hop_types"] == {"2hop": 2, "3hop1": 1}

    before = (vault / "passages/0000-paris.md").stat().st_mtime_ns
    assert musique.write_vault(CORPUS, vault) == plan  # rewriting leaves identical files alone
    assert (vault / "passages/0000-paris.md").stat().st_mtime_ns == before
    assert musique.check_vault_parses(vault, plan) == {"files": 6, "rejected": [], "title_differs": []}

    with pytest.raises(KeyError):
        musique.gold_documents({"id": "2hop__x", "paragraphs": [
            {"title": "Paris", "paragraph_text": "not in the corpus", "is_supporting": True}]}, index)
    with pytest.raises(ValueError):
        musique.passage_index({"a.md": ("T", "x"), "b.md": ("T", "x")})


@dataclass
class _Hit:
    doc: str
    score: float


@dataclass
class _Config:
    top_k: int = 10
    damping: float = 0.5


class _FakeRetriever:
    """Returns a fixed ranking per question and ablation: full finds everything, the ablations less."""

    config = _Config()
    closed = False

    def __init__(self, plan):
        self.docs = list(plan)

    @classmethod
    def open(cls, home):
        return cls(musique.vault_plan(CORPUS))

    def search(self, question, mode="full", k=10, ablation=None):
        assert mode == "full" and k == 10
        gold = {
            "Which country has the capital Paris?": [0, 3],
            "In which state is the other Paris?": [1, 5],
            "Where is the river Miel?": [2, 3, 4],
        }[question]
        order = gold + [i for i in range(len(self.docs)) if i not in gold]
        if ablation is not None:  # the ablations push the last gold passage below the others
            order = order[: len(gold) - 1] + [i for i in order[len(gold):]] + [order[len(gold) - 1]]
        return types.SimpleNamespace(results=[_Hit(self.docs[i], 1.0 / (n + 1)) for n, i in enumerate(order)])

    def close(self):
        type(self).closed = True


def test_harness_end_to_end_with_a_stand_in_retriever(tmp_path: Path, monkeypatch, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.json").write_text(json.dumps(CORPUS), encoding="utf-8")
    (data / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    fake = types.ModuleType("engramrag.retrieve")
    fake.Retriever = _FakeRetriever
    monkeypatch.setitem(sys.modules, "engramrag.retrieve", fake)
    builds = []

    def fake_build(name, vault, home_dir, digest, rebuild):
        builds.append(name)
        return {"extractor": name, "extractor_id": f"{name}/1", "build_s": 1.5, "reused": False}

    monkeypatch.setattr(musique, "build_home", fake_build)
    out = tmp_path / "results"
    code = musique.main(["--data", str(data), "--work", str(tmp_path / "work"), "--out", str(out),
                         "--extractors", "rules", "--configs", "full,graph_off,bm25_only"])
    assert code == 0
    assert builds == ["rules"]
    assert _FakeRetriever.closed
    printed = capsys.readouterr().out
    assert "| rules/full " in printed and "full vs graph_off" in printed and "GiB RAM" in printed

    (result_file,) = out.glob("musique-*.json")
    record = json.loads(result_file.read_text(encoding="utf-8"))
    assert record["configuration"]["retrieval"]["rules"]["retrieval_config"] == {"top_k": 10, "damping": 0.5}
    assert record["configuration"]["extractors"] == {"rules": "rules/1"}
    runs = {run["config"]: run for run in record["runs"]}
    assert runs["full"]["aggregates"]["overall"] == {"n": 3, "recall@2": pytest.approx(100 * (1 + 1 + 2 / 3) / 3),
                                                     "recall@5": 100.0, "recall@10": 100.0, "all@10": 100.0}
    # the ablation ranks the last gold passage 6th of 6: still in the top 10, out of the top 5
    assert runs["graph_off"]["aggregates"]["overall"]["all@10"] == 100.0
    assert runs["graph_off"]["aggregates"]["by_hop"]["3hop1"]["recall@5"] == pytest.approx(200 / 3)
    assert runs["full"]["unknown_docs"]["count"] == 0
    row = runs["full"]["questions"][0]
    assert row["gold"] == ["passages/0000-paris.md", "passages/0003-france.md"]
    assert row["top10"][:2] == row["gold"] and row["hop"] == "2hop" and row["all@10"] == 1
    assert set(runs["full"]["latency_ms"]) == {"p50", "p95", "mean"}
    tests = {(t["first"], t["second"]): t for t in record["tests"]}
    assert tests["full", "graph_off"]["all@10_mcnemar"] == {"n": 3, "b": 0, "c": 0, "p": 1.0}
    sign = tests["full", "bm25_only"]["recall@5_sign"]
    assert (sign["positive"], sign["negative"], sign["ties"]) == (3, 0, 0)
    assert sign["p"] == pytest.approx(0.25)
    assert record["machine"]["cpu_count"] and record["data"]["questions"] == 3


def test_homes_are_reused_while_vault_and_extractor_are_unchanged(tmp_path: Path, monkeypatch):
    calls = []

    def fake_run_build(home, vault, extractor="rules", full=False):
        calls.append((home.root.name, extractor))
        (home.root / "catalog.duckdb").write_text("built")
        failing = extractor == "broken"
        return types.SimpleNamespace(run_id=f"run{len(calls)}", success=not failing, buckets=[0, 1],
                                     checks={"quads_belong_to_live_documents": True},
                                     errors=["boom"] if failing else [])

    monkeypatch.setattr("pipelines.build.run_build", fake_run_build)
    monkeypatch.setattr(musique, "extractor_identity", lambda name: f"{name}/1")
    vault, home = tmp_path / "vault", tmp_path / "home-rules"

    first = musique.build_home("rules", vault, home, "digest1", rebuild=False)
    assert (first["reused"], first["build_kind"], first["extractor_id"], len(calls)) == (False, "full", "rules/1", 1)
    again = musique.build_home("rules", vault, home, "digest1", rebuild=False)
    assert again["reused"] and again["run_id"] == "run1" and len(calls) == 1
    changed = musique.build_home("rules", vault, home, "digest2", rebuild=False)
    assert (changed["reused"], changed["build_kind"], len(calls)) == (False, "incremental", 2)
    (home / "leftover").write_text("x")
    fresh = musique.build_home("rules", vault, home, "digest2", rebuild=True)
    assert (fresh["reused"], fresh["build_kind"], len(calls)) == (False, "full", 3)
    assert not (home / "leftover").exists()
    with pytest.raises(RuntimeError, match="boom"):
        musique.build_home("broken", vault, tmp_path / "home-broken", "digest1", rebuild=False)
    assert not (tmp_path / "home-broken" / musique.BUILD_MARKER).exists()
