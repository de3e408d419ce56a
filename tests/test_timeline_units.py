"""Time without a build: references, declarations, property versions, dates and the search-side rules that read
them, each tested as a pure function on hand-made tables."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime

import pandas as pd
import pytest

from engramrag.extract.builder import DOCUMENT_KEY, entity_key
from engramrag.extract.decision_fields import references
from engramrag.extract.properties import property_of
from engramrag.retrieve.replacements import Replacement, Replacements
from engramrag.retrieve.retriever import _below_successors
from engramrag.retrieve.temporal import TemporalReading, without_current_cues
from engramrag.revise.declarations import find_declarations
from engramrag.revise.references import ReferenceIndex, record_id
from engramrag.revise.versions import VersionConfig, version_chains
from engramrag.vault.dates import document_date
from engramrag.vault.git_dates import first_commit_dates

# --- references -----------------------------------------------------------------------------------------------


def test_record_identifiers_are_read_at_the_start_of_a_title_with_a_separator() -> None:
    assert record_id("D-3: Use Kafka") == "d-3"
    assert record_id("ADR 0007 Use NATS") == "adr-7"
    assert record_id("RFC#12") == "rfc-12"
    assert record_id("Q3 planning") is None  # no separator: a word, not an identifier
    assert record_id("Use Kafka") is None


def test_one_reference_index_resolves_identifiers_links_numbers_and_titles() -> None:
    index = ReferenceIndex()
    index.add_version("DECISIONS.md", [("d3", "D-3: Use Kafka", "2024-02-01"), ("d5", "D-5: Use NATS", None)])
    index.add_version("adr/0007-use-kafka.md", [("adr7", "Use Kafka for events", "2024-02-01")])
    index.add_version("notes/old-plan.md", [("old", "Old on-call plan", None)])
    assert index.resolve("D-3", "DECISIONS.md") == {"d3"}
    assert index.resolve("ADR-0007", "adr/0012-x.md") == {"adr7"}
    assert index.resolve("[ADR-7](0007-use-kafka.md)", "adr/0012-x.md") == {"adr7"}
    assert index.resolve("[[Old on-call plan]]", "oncall.md") == {"old"}
    assert index.resolve("[[old-plan]]", "oncall.md") == {"old"}
    assert index.resolve("2024-02-01: D-3: Use Kafka", "x.md") == {"d3"}
    assert index.resolve("Something else", "x.md") == set()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("D-3을 대체", [("supersedes", "D-3")]),
        ("[[ADR-7]]를 대체한다", [("supersedes", "ADR-7")]),
        ("[[ADR-12]]로 대체됨", [("superseded_by", "ADR-12")]),
        ("Supersedes D-3", [("supersedes", "D-3")]),
        ("Superseded by [ADR-12](0012-use-nats.md)", [("superseded_by", "0012-use-nats.md")]),
    ],
)
def test_supersession_phrases_in_english_and_korean(line: str, expected: list[tuple[str, str]]) -> None:
    assert [(kind, found.value) for kind, found in references(line, 0, len(line))] == expected


# --- declarations ---------------------------------------------------------------------------------------------


def _documents(rows: list[tuple[str, str, str | None, str, dict]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"doc_id": f"id-{path}", "path": path, "title": title, "doc_date": day, "text": text,
             "front_matter": json.dumps(matter), "date_source": "front_matter:date" if day else None,
             "agent_authored": path.startswith("learned/"), "author": None}
            for path, title, day, text, matter in rows
        ]
    )  # fmt: skip


def test_front_matter_and_linked_in_text_declarations_name_the_replaced_note() -> None:
    documents = _documents([
        ("old.md", "Old plan", "2024-01-01", "---\nsuperseded_by: \"[[New plan]]\"\n---\n# Old plan\n",
         {"superseded_by": "[[New plan]]"}),
        ("new.md", "New plan", "2024-05-01", "# New plan\n\nThis replaces [[Old plan]].\n", {}),
        ("rota.md", "Rota", "2024-06-01", "# Rota\n\n[[Old plan]]를 대체한다.\nIt replaces the spreadsheet.\n", {}),
        ("fm.md", "Front", "2024-07-01", "---\nsupersedes: [\"[[Rota]]\"]\n---\n# Front\n",
         {"supersedes": ["[[Rota]]"]}),
    ])  # fmt: skip
    found = {(d.earlier_doc_id, d.later_doc_id): d for d in find_declarations(documents)}
    assert set(found) == {("id-old.md", "id-new.md"), ("id-old.md", "id-rota.md"), ("id-rota.md", "id-fm.md")}
    assert found[("id-old.md", "id-new.md")].form == "front_matter"  # the first statement of a pair is kept
    assert found[("id-old.md", "id-rota.md")].form == "in_text" and found[("id-old.md", "id-rota.md")].line == 3
    # "replaces the spreadsheet" names no note: nothing declared from it
    # Run again (a resident builder keeps the notes' reference index while no id, path, title or date changed): the
    # same declarations; a renamed title is resolved against the new one, not the index of the run before.
    assert {(d.earlier_doc_id, d.later_doc_id): d for d in find_declarations(documents)} == found
    renamed = documents.assign(title=documents["title"].replace("Old plan", "Retired plan"))
    assert {(d.earlier_doc_id, d.later_doc_id) for d in find_declarations(renamed)} == {
        ("id-old.md", "id-new.md"), ("id-rota.md", "id-fm.md")}  # fmt: skip


# --- versions -------------------------------------------------------------------------------------------------


def test_a_names_root_is_its_least_key_whatever_order_the_joins_come_in() -> None:
    """The root is a subject's key in ``property_values`` and in the decisions store's keys of its value pairs;
    aliases come as a set, whose order differs from one process to the next. Before, joining "c" to "b" after
    "b" had joined "a" made "b" the root in one order and "a" in another."""
    import random

    from engramrag.revise.versions import Names

    generator = random.Random(5)
    keys = [f"k{number:02d}" for number in range(12)]
    for _ in range(300):
        joins = [generator.sample(keys, generator.randint(2, 4)) for _ in range(6)]
        roots = []
        for order in (joins, joins[::-1], [join[::-1] for join in joins]):
            names = Names()
            for join in order:
                names.join(join)
            roots.append({key: names.find(key) for key in keys if key in names.parent})
        assert roots[0] == roots[1] == roots[2]
        members: dict[str, list[str]] = {}
        for key, root in roots[0].items():
            members.setdefault(root, []).append(key)
        assert all(root == min(keys_of) for root, keys_of in members.items())



def test_a_property_is_read_at_the_end_of_a_key_in_either_language() -> None:
    table = VersionConfig().table()
    assert property_of("Billing service owner", table) == ("owner", "billing service")
    assert property_of("결제 서비스 담당자", table) == ("owner", "결제 서비스")
    assert property_of("On-call lead", table) == ("lead", "")
    assert property_of("Owner", table) == ("owner", "")
    assert property_of("Notes", table) is None
    extended = VersionConfig(extra_properties=("sla=sla|응답 시간",)).table()
    assert property_of("Checkout SLA", extended) == ("sla", "checkout")


def _statement(doc: str, label: str, value: str, line: int) -> dict:
    return {"doc_id": f"id-{doc}", "subject": DOCUMENT_KEY, "predicate": label.lower().replace(" ", "_"),
            "label": label, "object": value, "object_is_entity": False, "role": "assertion",
            "line_start": line, "line_end": line}  # fmt: skip


def _chains(notes: list[tuple[str, str, str | None, str, dict]], statements: list[dict]):
    documents = _documents(notes)
    entities = pd.DataFrame(columns=["doc_id", "entity_key", "label", "aliases"])
    clusters = pd.DataFrame(columns=["entity_key", "cluster_key"])
    return version_chains(documents, pd.DataFrame(statements), entities, clusters)


THREE_NOTES = [
    ("services/billing.md", "Billing service", "2024-01-10",
     "---\naliases: [결제 서비스]\n---\n# Billing service\n\nOwner: Minji Park\n", {"aliases": ["결제 서비스"]}),
    ("meetings/2024-03-04.md", "Billing sync", "2024-03-04", "# Billing sync\n\n- Billing service owner: Daniel Cho\n",
     {}),
    ("meetings/2024-06-10.md", "결제 회의", "2024-06-10", "# 결제 회의\n\n- 결제 서비스 담당자: 이서연\n", {}),
]  # fmt: skip
THREE_STATEMENTS = [
    _statement("services/billing.md", "Owner", "Minji Park", 6),
    _statement("meetings/2024-03-04.md", "Billing service owner", "Daniel Cho", 3),
    _statement("meetings/2024-06-10.md", "결제 서비스 담당자", "이서연", 3),
]


def test_three_dated_notes_one_korean_one_by_alias_form_one_chain_whose_latest_is_current() -> None:
    values, replaced = _chains(THREE_NOTES, THREE_STATEMENTS)
    owners = [(v.value, v.version, v.current) for v in values if v.property == "owner"]
    assert owners == [("Minji Park", 0, False), ("Daniel Cho", 1, False), ("이서연", 2, True)]
    assert len({v.subject_key for v in values}) == 1  # the page title, the key prefix and the alias are one subject
    pairs = {(p.earlier.path, p.later.path, p.since) for p in replaced}
    assert pairs == {
        ("services/billing.md", "meetings/2024-03-04.md", "2024-03-04"),
        ("services/billing.md", "meetings/2024-06-10.md", "2024-06-10"),
        ("meetings/2024-03-04.md", "meetings/2024-06-10.md", "2024-06-10"),
    }
    first = next(p for p in replaced if p.later.path == "meetings/2024-03-04.md")
    assert first.earlier.quote == "Owner: Minji Park" and first.later.quote == "- Billing service owner: Daniel Cho"


def test_a_long_chain_links_each_note_to_the_next_and_the_current_version_so_pairs_grow_with_the_notes() -> None:
    # A weekly on-call owner that changes every other week: 40 notes, 20 versions, three notes in the current one.
    values_by_week = [("Minji Park", "Daniel Cho")[(week // 2) % 2] for week in range(37)] + ["이서연"] * 3
    notes = [THREE_NOTES[0]] + [
        (f"status/{week:02d}.md", f"Billing sync {week}", f"2024-{2 + week // 4:02d}-{1 + 7 * (week % 4):02d}",
         f"# Billing sync {week}\n\nBilling service owner: {value}\n", {}) for week, value in enumerate(values_by_week)
    ]
    statements = [THREE_STATEMENTS[0]] + [_statement(f"status/{week:02d}.md", "Billing service owner", value, 3)
                  for week, value in enumerate(values_by_week)]  # fmt: skip
    values, replaced = _chains(notes, statements)
    assert {v.value for v in values if v.current} == {"이서연"}
    assert len({v.version for v in values}) == 20  # the page's Minji Park runs on into the first two weeks
    successors: dict[str, set[str]] = {}
    for pair in replaced:
        successors.setdefault(pair.earlier.path, set()).add(pair.later.path)
    # The first week: the first and last note of the next version (weeks 2, 3) and of the current one (37, 39).
    assert successors["status/00.md"] == {"status/02.md", "status/03.md", "status/37.md", "status/39.md"}
    # The last week of the last intermediate version is replaced by the current version only, which is also its next.
    assert successors["status/36.md"] == {"status/37.md", "status/39.md"}
    assert all(len(later) <= 4 for later in successors.values())
    assert len(replaced) <= 4 * len(notes)  # 474 pairs when every later version counted
    assert not {"status/37.md", "status/38.md", "status/39.md"} & successors.keys()  # the current value


def test_the_newest_note_going_back_to_an_old_value_makes_that_value_current_again() -> None:
    statements = [*THREE_STATEMENTS[:2], _statement("meetings/2024-06-10.md", "결제 서비스 담당자", "Minji Park", 3)]
    values, replaced = _chains(THREE_NOTES, statements)
    current = {(v.path, v.value) for v in values if v.current}
    assert current == {("services/billing.md", "Minji Park"), ("meetings/2024-06-10.md", "Minji Park")}
    assert all(p.earlier.path != "services/billing.md" or p.earlier.current for p in replaced)


def test_a_learned_note_repeating_an_old_value_never_becomes_current() -> None:
    notes = [*THREE_NOTES, ("learned/billing-owner.md", "Billing owner", "2024-07-01",
                            "# Billing owner\n\nBilling service owner: Minji Park (from [[Billing service]])\n", {})]
    statements = [*THREE_STATEMENTS,
                  _statement("learned/billing-owner.md", "Billing service owner",
                             "Minji Park (from [[Billing service]])", 3)]  # fmt: skip
    values, replaced = _chains(notes, statements)
    learned = next(v for v in values if v.path == "learned/billing-owner.md")
    assert learned.restated and not learned.current and learned.value == "Minji Park"
    assert {v.value for v in values if v.current} == {"이서연"}
    assert ("learned/billing-owner.md", "meetings/2024-06-10.md") in {(p.earlier.path, p.later.path) for p in replaced}


def test_a_key_of_one_value_per_document_is_single_valued_by_the_data_and_updates_are_not_values() -> None:
    notes = [(f"n{i}.md", "Checkout", f"2024-0{i}-01", f"# Checkout\n\nCheckout tier: {t}\n", {})
             for i, t in ((1, "Gold"), (2, "Gold"), (3, "Silver"))]  # fmt: skip
    statements = [_statement(f"n{i}.md", "Checkout tier", t, 3) for i, t in ((1, "Gold"), (2, "Gold"), (3, "Silver"))]
    values, _ = _chains(notes, statements)
    assert {(v.subject, v.property) for v in values} == {("checkout", "tier")}  # the known name leads the key
    assert [v.value for v in values if v.current] == ["Silver"]
    updates = [_statement(f"n{i}.md", "Checkout", f"the team shipped {i} fixes and reviewed the plan", 3)
               for i in (1, 2, 3)]  # fmt: skip
    assert _chains(notes, updates)[0] == []  # a sentence after a colon is not a value


def test_a_meeting_series_title_is_not_a_subject() -> None:
    notes = [(f"m{i}.md", "Weekly sync", f"2024-0{i}-01", "# Weekly sync\n\nAttendees: A\n", {}) for i in (1, 2, 3)]
    statements = [_statement(f"m{i}.md", "Facilitator", name, 3) for i, name in ((1, "Ann"), (2, "Bo"), (3, "Cy"))]
    assert _chains(notes, statements)[0] == []


# --- dates ----------------------------------------------------------------------------------------------------


def test_a_date_field_near_the_top_dates_an_adr_before_git_and_mtime() -> None:
    body = "# ADR-7: Use Kafka\n\nDate: 2024-02-01\n\n## Status\nAccepted\n"
    found = document_date({}, "adr/0007-use-kafka.md", "ADR-7: Use Kafka", datetime(2025, 1, 1, tzinfo=UTC), 0, body)
    assert (found.value, found.source) == ("2024-02-01", "date_field")


def test_first_commit_dates_come_from_one_git_log(tmp_path) -> None:
    vault = tmp_path / "repo" / "notes"
    vault.mkdir(parents=True)
    (vault / "a.md").write_text("a\n")

    def git(*args: str, when: str) -> None:
        env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=tmp_path / "repo",
                       check=True, env=env, capture_output=True)  # fmt: skip

    git("init", "-q", when="2023-01-05T10:00:00+00:00")
    git("add", ".", when="2023-01-05T10:00:00+00:00")
    git("commit", "-qm", "a", when="2023-01-05T10:00:00+00:00")
    (vault / "a.md").write_text("a changed\n")
    (vault / "b.md").write_text("b\n")
    git("add", ".", when="2024-02-06T10:00:00+00:00")
    git("commit", "-qm", "b", when="2024-02-06T10:00:00+00:00")
    dates = first_commit_dates(vault)
    assert {path: day.date().isoformat() for path, day in dates.items()} == {"a.md": "2023-01-05", "b.md": "2024-02-06"}
    assert first_commit_dates(tmp_path / "elsewhere") == {}


# --- search-side rules ----------------------------------------------------------------------------------------


def _replacement(reason: str, form: str, words: set[str], since: str = "2024-06-10", current: bool = False):
    return Replacement("new", "new.md", since, since, reason, form, "owner: A → B", frozenset(words), current,
                       True, {"by_doc": "new.md"})  # fmt: skip


@pytest.mark.parametrize(
    ("reading", "terms", "item", "applies"),
    [
        (TemporalReading("current", cue="now"), {"owner"}, _replacement("later_value", "property", {"owner"}), True),
        (TemporalReading("current", cue="now"), {"vendor"}, _replacement("later_value", "property", {"owner"}), False),
        (TemporalReading("none"), {"owner"}, _replacement("later_value", "property", {"owner"}), False),
        (TemporalReading("as_of", "2024-03-31"), {"owner"}, _replacement("later_value", "property", {"owner"}), False),
        (TemporalReading("as_of", "2024-07-31"), {"owner"}, _replacement("later_value", "property", {"owner"}), True),
        (TemporalReading("current"), {"owner"}, _replacement("later_value", "property", {"owner"}, current=True),
         False),
        (TemporalReading("none"), set(), _replacement("declared", "front_matter", set()), True),
        (TemporalReading("as_of", "2024-03-31"), set(), _replacement("declared", "front_matter", set()), False),
    ],
)
def test_which_replacements_move_a_note_for_which_question(reading, terms, item, applies) -> None:
    assert Replacements._applies(item, reading, terms, temporal=True) is applies


def test_with_the_temporal_reading_off_only_accepted_decision_supersessions_move_notes() -> None:
    now = TemporalReading("current", cue="now")
    assert Replacements._applies(_replacement("declared", "front_matter", set()), now, set(), temporal=False) is False
    assert Replacements._applies(_replacement("accepted", "decision", set()), now, set(), temporal=False) is True


def test_a_replaced_note_goes_below_its_successor_and_an_unranked_successor_comes_in_above_it() -> None:
    order = [("old", 0.9), ("other", 0.5), ("new", 0.4)]
    assert [d for d, _ in _below_successors(order, {"old": {"new"}})] == ["other", "new", "old"]
    assert [d for d, _ in _below_successors([("old", 0.9), ("other", 0.5)], {"old": {"new"}})] == [
        "new", "old", "other"
    ]


def test_current_cues_leave_the_ranking_query() -> None:
    assert without_current_cues("Who owns the billing service now?") == "Who owns the billing service ?"
    assert without_current_cues("지금 결제 서비스 담당자는?") == "결제 서비스 담당자는?"
    assert without_current_cues("now") == "now"


def test_entity_keys_of_a_title_and_an_alias_differ_until_joined() -> None:
    assert entity_key("Billing service") != entity_key("결제 서비스")


def test_users_extend_the_single_valued_table_through_the_build_resource() -> None:
    from assets.resources import EngramStores

    stores = EngramStores(home="/tmp/h", vault="/tmp/v", single_valued="sla=sla|응답 시간; tier=tier|등급")
    table = stores.version_config().table()
    assert table["sla"] == ("sla", "응답 시간") and table["tier"] == ("tier", "등급")
    assert property_of("결제 응답 시간", table) == ("sla", "결제")


def test_two_names_the_overlay_merged_are_one_subject_with_one_chain() -> None:
    notes = [
        ("tools/postgresql.md", "PostgreSQL", "2024-01-10", "# PostgreSQL\n\nOwner: Minji Park\n", {}),
        ("tools/postgres-2.md", "Postgres", "2024-03-04", "# Postgres\n\nOwner: Daniel Cho\n", {}),
    ]  # fmt: skip
    statements = pd.DataFrame([_statement("tools/postgresql.md", "Owner", "Minji Park", 3),
                               _statement("tools/postgres-2.md", "Owner", "Daniel Cho", 3)])  # fmt: skip
    entities = pd.DataFrame([(f"id-{path}", DOCUMENT_KEY, title, []) for path, title, *_ in notes],
                            columns=["doc_id", "entity_key", "label", "aliases"])  # fmt: skip
    apart = pd.DataFrame(columns=["entity_key", "cluster_key"])
    # The overlay's clusters are keyed by stable keys (normalised labels), as the key table and the index key them.
    merged = pd.DataFrame({"entity_key": ["postgresql", "postgres"], "cluster_key": ["postgresql", "postgresql"]})
    values, replaced = version_chains(_documents(notes), statements, entities, apart)
    assert len({v.subject_key for v in values}) == 2 and not replaced  # two subjects, one value each
    values, replaced = version_chains(_documents(notes), statements, entities, merged)
    assert len({v.subject_key for v in values}) == 1
    assert [(p.earlier.value, p.later.value) for p in replaced] == [("Minji Park", "Daniel Cho")]
