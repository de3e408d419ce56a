"""Execution under a real race: a thread replaces the note in a loop while `engram agent confirm` executes
edits bound to it. Every execution either lands over exactly the bytes its row bound (the checkpoint holds
them, the new content is built from them) or is refused, recorded on the row and moved to ``failed``."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from engramrag.agent import checkpoints, confirmations, destinations
from engramrag.agent.domains import Edit, apply_edit
from engramrag.store import Home
from pipelines.cli import main as engram

BOUND = "---\ntitle: Plan\n---\n# Plan\n\n## Risks\n\nNone yet.\n"


def racer(note: Path, stop: threading.Event, installed: list[str]) -> None:
    """Replace the note again and again: the bound bytes, then other bytes, by rename and in place."""
    count = 0
    while not stop.is_set():
        count += 1
        other = BOUND.replace("None yet.", f"Someone else's text {count}.")
        for text in (other, BOUND):
            temporary = note.with_name(f"racer-{count}.tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, note)
            installed.append(text)
        if count % 3 == 0:
            note.write_text(other, encoding="utf-8")  # an in-place rewrite, same inode
            note.write_text(BOUND, encoding="utf-8")


def cli_json(capsys: pytest.CaptureFixture, *arguments: str) -> tuple[int, object]:
    capsys.readouterr()
    code = engram(["agent", *arguments, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if code == 0 else None


def test_no_execution_writes_over_bytes_it_did_not_bind(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    vault, home = tmp_path / "vault", Home.at(tmp_path / "home")
    note = vault / "notes" / "plan.md"
    note.parent.mkdir(parents=True)
    note.write_text(BOUND, encoding="utf-8")
    where = ["--home", str(home.root), "--vault", str(vault)]
    ids = []
    for number in range(40):
        code, proposal = cli_json(capsys, "edit", "notes/plan.md", "--section", f"Risks=Agent risk {number}.", *where)
        assert code == 0
        ids.append(proposal["confirmation_id"])

    stop, installed = threading.Event(), []
    thread = threading.Thread(target=racer, args=(note, stop, installed), daemon=True)
    thread.start()
    try:
        outcomes = [engram(["agent", "confirm", cid, "--by", "dana", *where]) for cid in ids]
    finally:
        stop.set()
        thread.join(10)
    capsys.readouterr()
    assert len(installed) > 40, "the racer must really have run during the executions"

    executed = failed = swapped_back = 0
    saved = {point["confirmation_id"]: point for point in checkpoints.checkpoints(home)}
    for cid, code in zip(ids, outcomes, strict=True):
        row = confirmations.get(home, cid)
        if code == 0:
            executed += 1
            assert row.status == confirmations.EXECUTED
            [entry] = saved[cid]["files"]
            prior = checkpoints.blob_path(home, entry["prior"]).read_bytes()
            assert entry["prior"] == row.prior_state == destinations.bytes_state(prior)
            expected = apply_edit(prior.decode(), Edit(sections={"Risks": row.arguments["changes"]["sections"]
                                                                 ["Risks"]}), "notes/plan.md")
            assert row.written_state == destinations.bytes_state(expected.encode())
        else:
            failed += 1
            assert row.status == confirmations.FAILED and row.written_state is None
            assert row.last_refusal.startswith("destination:") and row.last_refusal_at
            swapped_back += "while the write was being made" in row.last_refusal
            assert cid not in saved
    print(f"executed {executed}, refused {failed} ({swapped_back} at the swap), racer installs {len(installed)}")
    assert executed + failed == len(ids) and executed >= 1
    assert not [name for name in os.listdir(note.parent) if name.startswith(".plan.md.")], "no temporary left"
