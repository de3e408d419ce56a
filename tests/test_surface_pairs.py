"""The surface legs of blocking kept between runs: a function of the keys and settings alone, so pairs kept for the
same keys give exactly the blocking a fresh run gives. Pure functions and a file in a temporary folder, no build."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engramrag.resolve.blocking import blocked_pairs, surface_pairs
from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.keytable import build_key_table
from engramrag.resolve.surface_pairs import FILE, SurfacePairs, surface_fingerprint

CONFIG = CandidateConfig(embedding_neighbours=0)
LABELS = ["PostgreSQL", "Postgres", "Postgre SQL", "Document Catalog Platform", "DCP", "Kubernetes", "k8s",
          "Managed Postgres", "LanceDB", "Lance DB", "Minji Park", "Park Minji", "ADR-0001", "ADR-0002"]  # fmt: skip


def table(aliases: dict[str, list[str]], kinds: dict[str, str]):
    rows = [("d1", f"e{i}", label, kinds.get(label, "Tool"), aliases.get(label, []), 1, 1, None)
            for i, label in enumerate(LABELS)]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line",
                                        "core_kind"]).astype(object)  # fmt: skip
    return build_key_table(frame, None, None, CONFIG.max_posting)


def test_surface_pairs_depend_on_the_keys_only_and_kept_ones_give_the_fresh_blocking(tmp_path) -> None:
    first = table({}, {})
    other = table({"Kubernetes": ["kube"], "Minji Park": ["박민지"]}, {"Minji Park": "Person", "Park Minji": "Person"})
    assert first.keys == other.keys
    surface = surface_pairs(first, CONFIG)
    assert surface == surface_pairs(other, CONFIG)  # other aliases and kinds: the same surface pairs
    index = {key: i for i, key in enumerate(first.keys)}
    assert (index["dcp"], index["document catalog platform"]) in surface  # acronym
    assert surface[(index["postgres"], index["postgresql"])] == 0.8  # edit similarity, computed by the edit index
    assert (index["adr-0001"], index["adr-0002"]) not in surface  # other numbers: no similarity counts

    fingerprint = surface_fingerprint(first.keys, "settings-1")
    SurfacePairs.of(surface, fingerprint).save(tmp_path)
    kept = SurfacePairs.load(tmp_path, fingerprint)
    assert kept is not None and kept.pairs() == surface
    assert blocked_pairs(other, CONFIG, surface=kept.pairs()) == blocked_pairs(other, CONFIG)

    assert SurfacePairs.load(tmp_path, surface_fingerprint(first.keys, "settings-2")) is None  # other settings
    assert SurfacePairs.load(tmp_path, surface_fingerprint(first.keys[1:], "settings-1")) is None  # other keys
    (tmp_path / FILE).write_bytes(b"not an archive")
    assert SurfacePairs.load(tmp_path, fingerprint) is None


def test_edit_similarities_survive_the_round_trip_and_none_stays_none(tmp_path) -> None:
    pairs = {(0, 1): None, (0, 2): 0.8125, (3, 7): 1.0 / 3.0}
    SurfacePairs.of(pairs, "f").save(tmp_path)
    kept = SurfacePairs.load(tmp_path, "f")
    assert kept is not None and kept.pairs() == pairs
    assert np.isnan(kept.edit[0]) and kept.left.tolist() == [0, 0, 3]


def test_blocked_rows_are_the_blocked_pairs_as_sorted_arrays() -> None:
    from engramrag.resolve.blocking import blocked_rows

    other = table({"Kubernetes": ["kube", "Managed Postgres"], "Minji Park": ["박민지"], "Park Minji": ["박민지"],
                   "ADR-0001": ["decision record"], "ADR-0002": ["decision record"]},
                  {"Minji Park": "Person", "Park Minji": "Person"})  # fmt: skip
    expected = blocked_pairs(other, CONFIG)
    surface = SurfacePairs.of(surface_pairs(other, CONFIG), "f")
    left, right, edits = blocked_rows(other, CONFIG, surface)
    rows = zip(left.tolist(), right.tolist(), edits.tolist(), strict=True)
    found = {(i, j): None if e != e else e for i, j, e in rows}
    assert found == expected
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == sorted(expected)
    index = {key: i for i, key in enumerate(other.keys)}
    alias_pair = tuple(sorted((index["kubernetes"], index["managed postgres"])))
    shared_name = (index["adr-0001"], index["adr-0002"])
    assert alias_pair in found and shared_name in found  # the alias legs: pairs no surface leg finds
    assert alias_pair not in surface_pairs(other, CONFIG) and shared_name not in surface_pairs(other, CONFIG)


def test_trigram_ids_kept_by_the_process_give_the_pairs_a_fresh_process_finds(monkeypatch) -> None:
    """The edit leg cuts forms into ids kept between runs (``resolve.form_grams``): after runs on other keys (forms
    gone, new ones met, ids given in another order), a run finds what a process that never ran before finds."""
    from engramrag.resolve import blocking
    from engramrag.resolve.form_grams import FormGrams

    def labelled(labels: list[str]):
        rows = [("d1", f"e{i}", label, "Tool", [], 1, 1, None) for i, label in enumerate(labels)]
        frame = pd.DataFrame(rows, columns=["doc_id", "entity_key", "label", "kind", "aliases", "mentions",
                                            "first_line", "core_kind"]).astype(object)  # fmt: skip
        return build_key_table(frame, None, None, CONFIG.max_posting)

    words = ["postgres", "postgre", "lancedb", "lance", "kubernetes", "kubernetis", "catalog", "catalogue", "aaa",
             "aab", "abab", "baba", "ledger", "leger", "vector store", "vectorstore", "minji park", "minji parks"]
    runs = [words[:10], words[4:], [*words[::2], "zzz top", "zz top"], words]
    monkeypatch.setattr(blocking, "_FORM_GRAMS", FormGrams())
    for labels in runs:  # one process, one run after another
        kept = surface_pairs(labelled(labels), CONFIG)
        with monkeypatch.context() as fresh:
            fresh.setattr(blocking, "_FORM_GRAMS", FormGrams())
            assert kept == surface_pairs(labelled(labels), CONFIG)
    tight = CandidateConfig(embedding_neighbours=0, max_posting=2)  # crowded trigrams are dropped alike
    kept = surface_pairs(labelled(words), tight)
    monkeypatch.setattr(blocking, "_FORM_GRAMS", FormGrams())
    assert kept == surface_pairs(labelled(list(reversed(words))), tight)
    assert any(edit is not None for edit in kept.values())


def test_form_grams_rank_trigrams_by_text_and_number_whatever_order_they_were_met_in() -> None:
    from engramrag.resolve.form_grams import FormGrams, numbered_trigrams

    grams = FormGrams()
    first, second = grams.of(["abab", "ba"])
    assert [grams.grams[i] for i in first.grams] == numbered_trigrams("abab")
    assert numbered_trigrams("aaa")[-2:] == [("aa\x03", 1), ("a\x03\x03", 1)]
    assert ("\x02aa", 1) in numbered_trigrams("aaa") and ("aaa", 1) in numbered_trigrams("aaa")
    rank = grams.gram_rank()
    assert sorted(range(len(grams.grams)), key=rank.__getitem__) == sorted(range(len(grams.grams)),
                                                                          key=grams.grams.__getitem__)  # fmt: skip
    again = grams.of(["ba", "abab"])
    assert again[0] is second and again[1] is first  # kept from the last run, not cut again


def test_the_alias_leg_kept_for_the_same_aliases_is_the_leg_of_each_table() -> None:
    from engramrag.resolve.blocking import blocked_rows

    plain = table({}, {})
    aliased = table({"Kubernetes": ["kube", "Managed Postgres"], "ADR-0001": ["decision record"],
                     "ADR-0002": ["decision record"]}, {})  # fmt: skip
    surface = SurfacePairs.of(surface_pairs(plain, CONFIG), "f")
    found = {}
    for name, keys in (("plain", plain), ("aliased", aliased), ("aliased", aliased), ("plain", plain)):
        rows = blocked_rows(keys, CONFIG, surface)
        pairs = set(zip(rows[0].tolist(), rows[1].tolist(), strict=True))
        assert pairs == set(blocked_pairs(keys, CONFIG)), name
        found.setdefault(name, pairs)
        assert found[name] == pairs
    assert found["aliased"] > found["plain"]
