"""What the timeline keeps of each note between builds (``lifecycle.timeline_notes``), without a build: the kept
facts give the same chains as facts derived from the notes, a file from other settings or code or a broken file is
ignored, and only new or changed notes are derived again."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.lifecycle.timeline_notes import FILE, KeptLinks, KeptNotes, NoteFacts
from engramrag.revise.declarations import declared_references
from engramrag.revise.versions import (
    Names,
    VersionConfig,
    chains_of,
    link_targets,
    names_of,
    note_aliases,
    stated_values_by_note,
    version_chains,
)

NOTES = [
    ("services/billing.md", "Billing service", "2024-01-10",
     "---\naliases: [결제 서비스]\n---\n# Billing service\n\nOwner: Minji Park\n", {"aliases": ["결제 서비스"]}),
    ("meetings/2024-03-04.md", "Billing sync", "2024-03-04",
     "# Billing sync\n\n- Billing service owner: Daniel Cho (from 2024-03-01)\nSee [[Billing service]].\n", {}),
    ("meetings/2024-06-10.md", "결제 회의", "2024-06-10",
     "# 결제 회의\n\n- 결제 서비스 담당자: 이서연\n이 노트는 [[Billing sync]]를 대체한다.\n", {}),
]  # fmt: skip


def _documents() -> pd.DataFrame:
    return pd.DataFrame([
        {"doc_id": f"id-{path}", "path": path, "title": title, "doc_date": day, "text": text,
         "front_matter": json.dumps(matter), "date_source": "front_matter:date", "agent_authored": False}
        for path, title, day, text, matter in NOTES
    ])  # fmt: skip


def _statements() -> pd.DataFrame:
    rows = [("services/billing.md", "Owner", "Minji Park", 6),
            ("meetings/2024-03-04.md", "Billing service owner", "Daniel Cho (from 2024-03-01)", 3),
            ("meetings/2024-06-10.md", "결제 서비스 담당자", "이서연", 3)]  # fmt: skip
    return pd.DataFrame([
        {"doc_id": f"id-{path}", "subject": DOCUMENT_KEY, "predicate": "owner", "label": label, "object": value,
         "object_is_entity": False, "role": "assertion", "line_start": line, "line_end": line}
        for path, label, value, line in rows
    ])  # fmt: skip


def _facts(documents: pd.DataFrame, statements: pd.DataFrame, entities: pd.DataFrame) -> dict[str, NoteFacts]:
    config = VersionConfig()
    stated = stated_values_by_note(documents, statements, entities, config.table(), config)
    return {
        doc_id: NoteFacts(note_aliases(matter), tuple(declared_references(text, matter)), link_targets(text),
                          tuple(stated[doc_id]))
        for doc_id, text, matter in zip(documents["doc_id"], documents["text"], documents["front_matter"], strict=True)
    }  # fmt: skip


def test_facts_round_trip_through_the_file_and_give_the_chains_the_notes_give(tmp_path: Path) -> None:
    documents, statements = _documents(), _statements()
    entities = pd.DataFrame(columns=["doc_id", "entity_key", "label", "aliases"])
    clusters = pd.DataFrame(columns=["entity_key", "cluster_key"])
    facts = _facts(documents, statements, entities)
    assert facts["id-services/billing.md"].aliases == ("결제 서비스",)
    assert facts["id-meetings/2024-03-04.md"].link_targets == ("Billing service",)
    assert [d.kind for d in facts["id-meetings/2024-06-10.md"].declared] == ["supersedes"]
    assert facts["id-meetings/2024-03-04.md"].values[0].stated == "2024-03-01"  # the line's own date
    digests = {doc_id: f"v1-{doc_id}" for doc_id in facts}
    KeptNotes("ctx", {}, {}).updated(digests, facts).save(tmp_path)
    kept = KeptNotes.load(tmp_path, "ctx")
    assert kept.changed(digests) == []
    read_back = kept.parsed(digests)
    assert read_back == facts

    config = VersionConfig()
    names = names_of(zip(documents["title"], [read_back[d].aliases for d in documents["doc_id"]], strict=True),
                     [], [], [])  # fmt: skip
    targets = dict(zip(documents["path"], [read_back[d].link_targets for d in documents["doc_id"]], strict=True))
    from_kept = chains_of(documents, {d: f.values for d, f in read_back.items()}, names, targets, config)
    whole = version_chains(documents, statements, entities, clusters, config)
    assert from_kept == whole
    assert [(v.value, v.current) for v in whole[0]] == [("Minji Park", False), ("Daniel Cho", False), ("이서연", True)]


def test_only_new_and_changed_notes_are_derived_again_and_gone_notes_are_dropped(tmp_path: Path) -> None:
    one = NoteFacts(("A",), (), ("B",), ())
    two = NoteFacts((), (), (), ())
    KeptNotes("ctx", {}, {}).updated({"a": "1", "b": "1", "c": "1"}, {"a": one, "b": two, "c": two}).save(tmp_path)
    kept = KeptNotes.load(tmp_path, "ctx")
    now = {"a": "1", "b": "2", "d": "1"}  # b changed, c is gone, d is new
    assert kept.changed(now) == ["b", "d"]
    updated = kept.updated(now, {"b": one, "d": one})
    assert set(updated.facts) == {"a", "b", "d"}
    assert updated.facts["a"] == kept.facts["a"]  # kept as it was written, not derived again
    assert updated.parsed(["b"])["b"] == one


def test_rows_patched_by_the_changed_notes_are_the_rows_written_whole(tmp_path: Path) -> None:
    """An update replaces only the changed, new and gone notes' rows of the rows it was made from; the file is the
    one every row written from the facts gives, after edits, a note derived again with the same digest, a digest
    changed without a derivation, and notes sorting before, between and after the kept ones."""
    from engramrag.arrow_files import read_table

    facts = {name: NoteFacts((name,), (), (), ()) for name in ("a", "b", "c", "m", "z", "한")}
    kept = KeptNotes("ctx", {}, {}).updated({"b": "1", "c": "1", "m": "1"}, {d: facts[d] for d in "bcm"})
    steps = [
        ({"a": "1", "b": "1", "c": "2", "z": "1"}, {"a": facts["a"], "c": facts["z"], "z": facts["z"]}),
        ({"a": "1", "b": "1", "c": "2", "z": "1", "한": "1"}, {"b": facts["m"], "한": facts["한"]}),
        ({"a": "2", "c": "2", "z": "1", "한": "1"}, {}),  # a's digest moved, nothing derived: its row says so
    ]
    for number, (digests, derived) in enumerate(steps):
        kept = kept.updated(digests, derived)
        kept.save(tmp_path / "patched")
        whole = KeptNotes("ctx", dict(kept.digests), dict(kept.facts))  # no rows: every row written from the facts
        whole.save(tmp_path / f"whole-{number}")
        patched = read_table(tmp_path / "patched" / FILE)
        assert patched.to_pydict() == read_table(tmp_path / f"whole-{number}" / FILE).to_pydict()
        assert patched.schema.metadata == {b"context": b"ctx"}
        assert patched.column("doc_id").to_pylist() == sorted(digests)
    assert kept.digests["a"] == "2" and json.loads(kept.facts["c"])[0] == ["z"] and "b" not in kept.facts


def test_a_file_from_other_settings_or_code_or_a_broken_file_is_ignored(tmp_path: Path) -> None:
    KeptNotes("ctx", {}, {}).updated({"a": "1"}, {"a": NoteFacts((), (), (), ())}).save(tmp_path)
    assert KeptNotes.load(tmp_path, "ctx").digests == {"a": "1"}
    assert KeptNotes.load(tmp_path, "other settings").digests == {}
    (tmp_path / FILE).write_bytes(b"not an arrow file")
    assert KeptNotes.load(tmp_path, "ctx").changed({"a": "1"}) == ["a"]
    assert KeptNotes.load(tmp_path / "missing", "ctx").digests == {}


def test_links_resolved_by_an_earlier_run_are_kept_for_the_same_titles_only(tmp_path: Path) -> None:
    documents, statements = _documents(), _statements()
    # The March meeting repeats the page's owner and links to it: a restatement, found through the resolved link.
    documents.loc[1, "text"] = documents.loc[1, "text"].replace("Daniel Cho (from 2024-03-01)", "Minji Park")
    statements.loc[1, "object"] = "Minji Park"
    entities = pd.DataFrame(columns=["doc_id", "entity_key", "label", "aliases"])
    facts = _facts(documents, statements, entities)
    config = VersionConfig()
    names = names_of(zip(documents["title"], [facts[d].aliases for d in documents["doc_id"]], strict=True), [], [], [])
    targets = dict(zip(documents["path"], [facts[d].link_targets for d in documents["doc_id"]], strict=True))
    stated = {d: f.values for d, f in facts.items()}
    links = KeptLinks.load(tmp_path, "titles-1")
    assert links.resolved == {}
    first = chains_of(documents, stated, names, targets, config, resolved_links=links.resolved)
    assert links.resolved[("Billing service", "meetings")] == {"services/billing.md"}  # from the meeting's folder
    assert next(v for v in first[0] if v.path == "meetings/2024-03-04.md").restated
    links.save_if_grown(tmp_path)
    kept = KeptLinks.load(tmp_path, "titles-1")
    assert kept.resolved == links.resolved and kept.count == len(links.resolved)
    assert chains_of(documents, stated, names, targets, config, resolved_links=kept.resolved) == first
    # What the chains read is the kept resolution, not the notes' titles again.
    kept.resolved[("Billing service", "meetings")] = set()
    unlinked = chains_of(documents, stated, names, targets, config, resolved_links=kept.resolved)
    assert not next(v for v in unlinked[0] if v.path == "meetings/2024-03-04.md").restated
    # Other paths or titles, another context: nothing is read.
    assert KeptLinks.load(tmp_path, "titles-2").resolved == {}
    # What this process wrote is given back without a read while the file is the one it wrote, and a caller's
    # additions stay its own; a file written again (by another process, say) is read.
    again = KeptLinks.load(tmp_path, "titles-1")
    assert again.resolved == links.resolved and again.resolved is not links.resolved
    again.resolved[("Elsewhere", "notes")] = {"notes/elsewhere.md"}
    assert ("Elsewhere", "notes") not in KeptLinks.load(tmp_path, "titles-1").resolved
    other = KeptLinks("titles-1", {("Ledger", "services"): {"services/ledger.md"}}, 0)
    other.save_if_grown(tmp_path)
    (tmp_path / "links.arrow").write_bytes((tmp_path / "links.arrow").read_bytes())  # rewritten: another stamp
    assert KeptLinks.load(tmp_path, "titles-1").resolved == other.resolved


def test_a_process_parses_a_notes_kept_facts_again_only_when_their_text_changed() -> None:
    # Issue 16: a resident builder reads the same kept facts at every build (4.7 s of parsing at 100,000 notes).
    one = NoteFacts(("결제 서비스",), (), ("Billing service",), ())
    two = NoteFacts((), (), (), ())
    kept = KeptNotes("context", {"a": "1", "b": "1"}, {"a": one.to_json(), "b": two.to_json()})
    first = kept.parsed(["a", "b"])
    assert first == {"a": one, "b": two}
    edited = NoteFacts(("결제 서비스", "billing"), (), (), ())
    again = KeptNotes("context", {"a": "1", "b": "2"}, {"a": one.to_json(), "b": edited.to_json()}).parsed(["a", "b"])
    assert again == {"a": one, "b": edited}
    assert again["a"] is first["a"] and again["b"] is not first["b"]  # the unchanged text was not parsed again
    # Facts derived in a run are the ones the next run's parse gives, so it takes them as they are.
    from engramrag.revise.declarations import DeclaredReference
    from engramrag.revise.versions import StatedValue

    derived = NoteFacts(
        ("Billing",), (DeclaredReference("supersedes", "[[Old billing]]", "Replaces [[Old billing]]", 3),), ("Old",),
        (StatedValue("Owner", "", "owner", "", "Minji", 4, 4, "Owner: Minji", "2024-03-04"),),
    )  # fmt: skip
    saved = KeptNotes("context", {}, {}).updated({"c": "1"}, {"c": derived})
    assert NoteFacts.from_json(saved.facts["c"]) == derived
    assert saved.parsed(["c"])["c"] is derived


def test_a_process_reads_the_file_again_only_when_another_writer_replaced_it(tmp_path: Path) -> None:
    from engramrag.arrow_files import read_table, write_table

    one, two = NoteFacts(("A",), (), (), ()), NoteFacts(("B",), (), (), ())
    saved = KeptNotes("ctx", {}, {}).updated({"a": "1"}, {"a": one})
    saved.save(tmp_path)
    assert KeptNotes.load(tmp_path, "ctx") is saved  # what this process wrote: not read back
    assert KeptNotes.load(tmp_path, "other settings").digests == {}
    # Another process replaces the file: its rows are read, not the remembered ones.
    elsewhere = tmp_path / "elsewhere"
    KeptNotes("ctx", {}, {}).updated({"a": "2"}, {"a": two}).save(elsewhere)
    saved.save(tmp_path)  # remembered again
    write_table(read_table(elsewhere / FILE), tmp_path / FILE)
    loaded = KeptNotes.load(tmp_path, "ctx")
    assert loaded.digests == {"a": "2"} and loaded.parsed(["a"])["a"] == two
    (tmp_path / FILE).unlink()
    assert KeptNotes.load(tmp_path, "ctx").digests == {}


def _roots(names) -> tuple[set[str], dict[str, str]]:
    return set(names.labels), {key: names.find(key) for key in sorted(names.parent)}


def test_names_grown_by_what_was_added_are_the_names_built_from_everything() -> None:
    # Issue 16: building the vault's names took 4 s of every timeline run at 100,000 notes; an edit mostly adds.
    from engramrag.lifecycle.timeline_names import NameSources, vault_names

    titles = [("Billing service", ("결제 서비스",)), ("Atlas", ()), (None, ("orphan",))]
    labels = ["Postgres", "postgres db", "Atlas"]
    aliased = {("Postgres", ("PG",))}
    clusters = [["postgres db", "Postgres"]]
    first = NameSources.of(titles, labels, aliased, clusters)
    names = first.names()
    more = NameSources.of(
        [*titles, ("Falcon", ("F1", "PG"))], [*labels, "Lance", "Zeta"], aliased | {("Lance", ("LanceDB",))},
        [*clusters, ["Zeta", "postgres db"]],
    )  # fmt: skip
    assert more.grows(first) and not first.grows(more)
    grown = more.names(first, names)
    assert _roots(grown) == _roots(more.names())
    assert grown.find("falcon") == grown.find("zeta") == grown.find("f1") == "f1"  # the least key of the set
    assert _roots(names) == _roots(first.names())  # the earlier names were left as they were

    given = vault_names(titles, labels, aliased, clusters)
    given.join(["Atlas", "Billing service"])  # what the chains do with the names they are given
    again = vault_names(titles, [*labels, "Lance"], aliased, clusters)
    assert again.find("atlas") != again.find("billing service")  # the caller's join was not kept
    assert _roots(again) == _roots(NameSources.of(titles, [*labels, "Lance"], aliased, clusters).names())
    fewer = vault_names(titles[:1], ["Postgres"], set(), [])  # taken away: built whole
    assert _roots(fewer) == _roots(NameSources.of(titles[:1], ["Postgres"], set(), []).names())
    assert fewer.find("postgres db") == "postgres db" and not fewer.known("Atlas")


def test_a_notes_observations_are_kept_while_the_names_are_the_same_and_made_again_when_they_grow(monkeypatch) -> None:
    # Issue 16: observing every note's values was 5 s of every timeline run at 100,000 notes; an edit to one note
    # rarely changes the names, and when it does a kept observation may name another subject or value.
    from engramrag.lifecycle.timeline_names import vault_names
    from engramrag.revise import observations

    documents, config = _documents(), VersionConfig()
    facts = _facts(documents, _statements(), pd.DataFrame(columns=["doc_id", "entity_key", "label"]))
    stated = {doc_id: list(f.values) for doc_id, f in facts.items()}
    targets = dict(zip(documents["path"], [facts[d].link_targets for d in documents["doc_id"]], strict=True))
    titles = list(zip(documents["title"], [facts[d].aliases for d in documents["doc_id"]], strict=True))
    made = []
    observed = observations._note_observations
    monkeypatch.setattr(observations, "_note_observations", lambda *given: made.append(given[0]) or observed(*given))

    def run(labels: list[str], aliased: set) -> tuple[list, list, tuple | None]:
        made.clear()
        names = vault_names(titles, labels, aliased, [])
        edition = names.edition()
        counts = observations.ObservedNotes()
        found = chains_of(documents, stated, names, targets, config, counts=counts)
        assert counts.notes == 3 and counts.observed == sum(1 for given in made if given in stated)
        fresh = chains_of(documents, stated, names_of(titles, labels, aliased, []), targets, config)  # never sealed
        assert found == fresh
        return found, fresh, edition

    first = run(["Minji Park"], set())
    assert len(made) == 3 * 2  # sealed names: every note observed once, and once more for the unsealed names
    second = run(["Minji Park"], set())
    assert second[2] == first[2] and second[:2] == first[:2]
    assert len(made) == 3  # only for the unsealed names: every note's observations were kept
    grown = run(["Minji Park", "Daniel Cho", "이서연"], {("Daniel Cho", ("이서연",))})
    assert grown[2] != first[2] and len(made) == 3 * 2
    values = {row.path: row.value_key for row in grown[0][0]}
    assert values["meetings/2024-03-04.md"] == values["meetings/2024-06-10.md"]  # one person now, in unchanged notes
    assert grown[0] != first[0]


def test_sealed_names_of_one_base_and_the_same_changes_are_one_edition() -> None:
    base = object()
    one, two = Names(), Names()
    for names in (one, two):
        names.join(["Billing service", "결제 서비스"])
        names.seal(base)
    assert Names().edition() is None and one.edition() == two.edition()
    one.join(["Atlas", "Billing service"])
    assert one.edition() != two.edition()
    two.join(["Atlas", "Billing service"])
    assert one.edition() == two.edition()
    two.add("Falcon")
    assert one.edition() != two.edition()


def test_the_value_rows_are_the_same_rows_built_by_columns_as_row_by_row() -> None:
    from engramrag.lifecycle.timeline import VALUE_COLUMNS, _value_frame

    entities = pd.DataFrame(columns=["doc_id", "entity_key", "label", "aliases"])
    clusters = pd.DataFrame(columns=["entity_key", "cluster_key"])
    values, _ = version_chains(_documents(), _statements(), entities, clusters, VersionConfig())
    assert len(values) == 3
    for given in (values, [values[0]], []):
        by_rows = [{c: getattr(v, c) for c in VALUE_COLUMNS} for v in given]
        table = _value_frame(given)
        assert table.column_names == list(VALUE_COLUMNS) and table.to_pylist() == by_rows


def test_observations_patched_note_by_note_give_the_chains_of_every_note_gathered_again() -> None:
    # Issue 16: a one-note edit that changed a note's values gathered every note's observations and made every chain
    # again (0.3 s of the timeline at 10,000 notes); a resident process now patches in the notes that changed.
    import random

    from engramrag.lifecycle.timeline_names import vault_names
    from engramrag.revise import observations, versions
    from engramrag.revise.versions import StatedValue

    rng = random.Random(16)
    config = VersionConfig(learned_min_documents=2, learned_max_multi_share=0.2)
    subjects = ["Billing service", "Atlas", "Ledger", ""]  # "": the note's own title
    people = ["Minji Park", "Daniel Cho", "Seoyeon Lee", "Jun Kim"]
    keys = [("Owner", "owner"), ("Tech lead", "tech_lead"), ("Release train", None), ("Pager team", None),
            ("Atlas status", None)]  # fmt: skip
    paths = [*(f"notes/{number:02d}.md" for number in range(14)), "meetings/weekly-sync.md", "meetings/sync-2.md"]
    titles = [f"Note {number}" for number in range(14)] + ["Weekly sync", "Weekly sync"]
    documents = pd.DataFrame({
        "doc_id": [f"id-{path}" for path in paths], "path": paths, "title": titles,
        "doc_date": [f"2024-{1 + number % 12:02d}-{1 + number:02d}" if number % 5 else None
                     for number in range(len(paths))],
        "date_source": ["front_matter:date"] * len(paths), "agent_authored": [n % 7 == 6 for n in range(len(paths))],
    })  # fmt: skip
    links = {path: tuple(rng.sample(titles[:14], 2)) for path in paths}

    def values_of_note() -> list[StatedValue]:
        found = []
        for line in range(rng.randint(0, 4)):
            key, prop = rng.choice(keys)
            subject = rng.choice(subjects)
            value = rng.choice(people)
            found.append(StatedValue(f"{subject} {key}".strip() if prop is None and subject else key, subject, prop,
                                     "", value, line + 3, line + 3, f"{key}: {value}", None))  # fmt: skip
        return found

    stated = {f"id-{path}": values_of_note() for path in paths}
    labels = [*people, *subjects[:3]]
    name_sources = (list(zip(titles, [()] * len(titles), strict=True)), labels, {("Minji Park", ("MJ",))}, [])

    def gathered_whole() -> tuple:
        kept = observations._kept.get("last"), versions._kept_chains.get("last")  # a whole gathering; the kept stay
        try:
            return chains_of(documents, stated, names_of(*name_sources), links, config)
        finally:
            for holder, value in zip((observations._kept, versions._kept_chains), kept, strict=True):
                holder.put("last", value)

    patched_runs = 0
    for step in range(40):
        counts = observations.ObservedNotes()
        found = chains_of(documents, stated, vault_names(*name_sources), links, config, counts=counts)
        assert found == gathered_whole(), f"step {step}"
        patched_runs += step > 0 and counts.observed < len(documents)
        # The next change: one or two notes' values rewritten, emptied or grown; now and then a note's date moves.
        for doc_id in rng.sample(sorted(stated), rng.choice([1, 1, 2])):
            change = rng.random()
            stated[doc_id] = [] if change < 0.2 else stated[doc_id] + values_of_note() if change < 0.5 else \
                values_of_note()
            if change > 0.9:
                documents.loc[documents["doc_id"] == doc_id, "doc_date"] = f"2025-0{rng.randint(1, 9)}-01"
    assert patched_runs >= 35  # the notes that did not change were not observed again
    assert any(row.version > 0 for row in found[0]) and found[1]  # chains with versions, and values replaced
