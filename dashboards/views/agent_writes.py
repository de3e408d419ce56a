"""Agent writes: what agents proposed, for a person to decide, and the audit of everything decided before.

An agent never writes a vault note on its own in confirm-each-write mode: it leaves a confirmation row that binds
the exact arguments, the destination, the field domain and a validity window. This page shows each pending row
with its diff and lets a person approve or refuse it. Approving goes through ``Workspace.decide``, the same entry
point as the CLI and the MCP confirm tool, so the bound write is executed (and re-checked) exactly as it would be
from there; the page itself writes nothing but that decision. Learned notes wait here for approval before they
enter the graph, and the procedures a person confirmed are listed with their provenance.

Rewinding is deliberately not a button: a rewind can discard a person's later edit of the file, and the CLI's
``--force`` is where that choice is made explicitly.
"""

from __future__ import annotations

import os
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from dashboards.stores import confirm, escape_markdown, operator_input, page_header, show_confirmation
from engramrag.agent.display import safe_text
from engramrag.catalog.connection import remembered_vault
from engramrag.decisions.store import DecisionsStoreError
from engramrag.store import Home, StoreBusy

VAULT_KEY = "engram_agent_vault"
VAULT_HOME_KEY = "engram_agent_vault_home"
VAULT_ENV = "ENGRAM_VAULT"
PROCEDURE_TOOL = "remember_procedure"
STATUS_COLOURS = {"pending": "#f59e0b", "approved": "#3b82f6", "executed": "#16a34a", "refused": "#dc2626",
                  "failed": "#7c2d12"}
AUDIT_COLUMNS = ["issued_at", "status", "tool", "agent", "relative_path", "operator", "operator_auth", "decided_at",
                 "executed_at", "expires_at", "last_refusal", "id"]
WARNING_HEADER = re.compile(r"WARNINGS\b")


def render() -> None:
    path, home = page_header("Agent writes")
    if home is None:
        return
    operator = operator_input()
    show_confirmation()
    if not home.decisions_path.is_file():
        st.info(nothing_proposed_message(path))
        return
    try:
        rows = confirmation_rows(home)
        saved = checkpoint_rows(home)
    except (StoreBusy, DecisionsStoreError, ImportError) as error:
        st.warning(f"The agent records of {path} cannot be read: {error}")
        return
    vault = vault_input(home, rows)
    if not operator:
        st.warning("Type your name in the sidebar: every decision records who made it.")
    now = datetime.now(UTC)
    _headline(rows, now)
    if not rows:
        st.info(nothing_proposed_message(path))
    _pending(home, vault, rows, operator, now)
    _learned(home, vault, operator)
    _history(rows)
    _checkpoints(home, vault, saved)
    _procedures(home)


def nothing_proposed_message(path: Path) -> str:
    return (
        f"Agents have proposed nothing in `{path}` yet. Start the MCP server for an agent with "
        f"`engram mcp --home {path} --vault VAULT`; its writes, learned notes and procedures wait here for you."
    )


def confirmation_rows(home: Home) -> list[dict[str, Any]]:
    """Every confirmation row (the audit), newest issued first; rows without a window ("unknown") last."""
    from engramrag.agent import confirmations

    rows = [_shown(row) for row in reversed(confirmations.confirmations(home))]
    return sorted(rows, key=lambda row: (row["issued_at"] != "unknown", row["issued_at"]), reverse=True)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """The row with the text an agent chose (summary, diff, names, paths) made safe to show: control and bidi
    characters become visible escapes (``engramrag.agent.display.safe_text``, the CLI's and MCP's rule too)."""
    shown = dict(row)
    for key in ("summary", "diff", "agent", "relative_path", "real_path", "last_refusal", "operator"):
        if shown.get(key) is not None:
            shown[key] = safe_text(shown[key])
    if "operator_auth" not in shown:
        shown["operator_auth"] = None
    return shown


def checkpoint_rows(home: Home) -> list[dict[str, Any]]:
    from engramrag.agent import checkpoints

    return list(reversed(checkpoints.checkpoints(home)))


def bound_vault(rows: list[dict[str, Any]]) -> str:
    """The vault folder the newest confirmation was bound to (its identity is ``<real path>@dev:inode``)."""
    for row in rows:
        if row.get("vault_id"):
            return str(row["vault_id"]).rsplit("@", 1)[0]
    return ""


def vault_input(home: Home, rows: list[dict[str, Any]]) -> Path | None:
    """Draw the sidebar's vault box and return the folder if it exists. It is filled in from the newest
    confirmation, else the vault the home was built from, else ENGRAM_VAULT, so a person never types it for a home
    that knows it.

    The derived value is reset when another home is picked, so one home's vault is never used for another's rows."""
    if st.session_state.get(VAULT_HOME_KEY) != str(home.root) or VAULT_KEY not in st.session_state:
        built_from = remembered_vault(home)
        st.session_state[VAULT_KEY] = bound_vault(rows) or str(built_from or "") or os.environ.get(VAULT_ENV, "")
        st.session_state[VAULT_HOME_KEY] = str(home.root)
    raw = st.sidebar.text_input(
        "Vault folder", key=VAULT_KEY,
        help="The vault the agents write to: taken from the confirmations, else from the home's last build, else "
        "ENGRAM_VAULT. Needed to execute an approved write and to list learned notes.",
    ).strip()
    if not raw:
        st.sidebar.caption("No vault known: approving a write and learned notes need one.")
        return None
    folder = Path(raw).expanduser().resolve()
    if not folder.is_dir():
        st.sidebar.caption(f"`{folder}` is not a folder.")
        return None
    return folder


def expired(row: dict[str, Any], now: datetime) -> bool:
    """Past its own window (as written on the row); a row without a window counts as expired, it cannot be used."""
    expires = row.get("expires_at")
    if not expires or expires == "unknown":
        return True
    return datetime.fromisoformat(expires) <= now


def split_summary(summary: str) -> tuple[str, list[str], list[str]]:
    """A proposal's summary as (headline, the other lines, warnings). Procedure proposals list warnings under a
    ``WARNINGS (n):`` line, one ``- warning`` per line; only that block is read as warnings, so a proposed text
    that merely says "warn" is not mistaken for one."""
    lines = summary.splitlines() or [""]
    body: list[str] = []
    found: list[str] = []
    inside = False
    for line in lines[1:]:
        stripped = line.strip()
        if WARNING_HEADER.match(stripped):
            inside = True
        elif inside and stripped.startswith("- "):
            found.append(stripped[2:].strip())
        else:
            inside = False
            body.append(line)
    return lines[0], body, found


def _headline(rows: list[dict[str, Any]], now: datetime) -> None:
    statuses = pd.Series([row["status"] for row in rows], dtype="object")
    pending = [row for row in rows if row["status"] == "pending"]
    columns = st.columns(4)
    columns[0].metric("Pending", len(pending))
    columns[1].metric("Executed", int((statuses == "executed").sum()))
    columns[2].metric("Refused", int((statuses == "refused").sum()))
    columns[3].metric("Expired while pending", sum(expired(row, now) for row in pending),
                      help="Pending rows whose window has passed: they can only be refused; the agent proposes again.")


def _pending(home: Home, vault: Path | None, rows: list[dict[str, Any]], operator: str, now: datetime) -> None:
    st.subheader("Pending confirmations")
    pending = [row for row in rows if row["status"] == "pending"]
    if not pending:
        st.success("Nothing waits for a decision. New proposals appear here as agents make them.")
    identity = _identity(vault)
    for row in pending:
        _card(home, vault, identity, row, operator, now)
    stuck = [row for row in rows if row["status"] in ("approved", "failed")]
    if stuck:
        st.warning(f"{len(stuck)} approved confirmation(s) were not written because execution was refused (status "
                   "failed; see last_refusal in the audit below). A confirmation is single use: ask the agent to "
                   "propose again.")


def _identity(vault: Path | None) -> str | None:
    if vault is None:
        return None
    from engramrag.agent.destinations import vault_identity

    try:
        return vault_identity(vault)
    except (OSError, RuntimeError):
        return None


def _card(home: Home, vault: Path | None, identity: str | None, row: dict[str, Any], operator: str,
          now: datetime) -> None:
    late = expired(row, now)
    with st.container(border=True):
        title, body, warnings = split_summary(row["summary"] or "")
        st.markdown(f"#### {escape_markdown(title or row['id'])}")
        with st.container(horizontal=True, gap="small"):
            st.badge(row["tool"], color="blue", icon=":material/build:")
            st.badge(f"mode {row['mode']}", color="gray")
            if late:
                st.badge("expired", color="red", icon=":material/timer_off:",
                         help="Its window has passed: approving is refused by the store. Refuse it, and ask the agent "
                         "to propose again if it is still wanted.")
        domain = row["domain"]
        scope = "unconstrained" if row["domain_unconstrained"] else (
            "fields " + (", ".join(domain.get("fields", [])) or "none")
            + "; sections " + (", ".join(domain.get("sections", [])) or "none"))
        if domain.get("confirmers"):
            scope += "; only " + ", ".join(domain["confirmers"]) + " may approve"
        st.markdown(
            f"**Agent** `{row['agent']}` · **path** `{row['relative_path']}` · **file was** "
            f"`{_short(row['prior_state'])}`  \n"
            f"**Issued** {_moment(row['issued_at'])} · **expires** {_moment(row['expires_at'])}"
            + (" :red[**expired**]" if late else "") + f" · policy `{row['policy_version']}`  \n"
            f"**Arguments hash** `{row['arguments_hash']}`  \n**Domain** {escape_markdown(scope)}"
        )
        elsewhere = identity is not None and row["vault_id"] != identity
        if elsewhere:
            st.caption(f"Bound to vault `{row['vault_id']}`, not the sidebar's vault `{identity}`: the write would be "
                       "refused there, so approving waits until the sidebar names the bound vault.")
        if body:
            st.text("\n".join(body))
        for warning in warnings:
            st.warning(warning, icon=":material/warning:")
        if row["last_refusal"]:
            st.error(f"Last refused: {row['last_refusal']} ({_moment(row['last_refusal_at'])})")
        if row["diff"]:
            st.code(row["diff"], language="diff")
        else:
            st.caption("No change in content (the file already holds exactly this).")
        needs_vault = row["tool"] != PROCEDURE_TOOL and (vault is None or elsewhere)
        with st.container(horizontal=True, gap="small"):
            st.button("Approve and write", key=f"approve-{row['id']}", icon=":material/check:", type="primary",
                      disabled=not operator or needs_vault,
                      help="Executes the bound write now (re-checking every binding); needs your name"
                      + (" and the bound vault folder in the sidebar." if needs_vault else "."),
                      on_click=_decide, args=(str(home.root), str(vault or ""), row["id"], True, operator))
            st.button("Refuse", key=f"refuse-{row['id']}", icon=":material/close:", disabled=not operator,
                      help="Records the refusal on the row; nothing is written.",
                      on_click=_decide, args=(str(home.root), str(vault or ""), row["id"], False, operator))


def _short(state: str) -> str:
    return state if len(state) <= 24 else state[:20] + "…"


def _moment(value: str | None) -> str:
    if not value:
        return "—"
    return value[:19].replace("T", " ") + (" UTC" if value != "unknown" else "")


def _decide(root: str, vault: str, confirmation_id: str, approve: bool, operator: str) -> None:
    """A person's answer, through the one entry point the CLI and the MCP confirm tool use."""
    try:
        from engramrag.agent.confirmations import Refused
        from engramrag.agent.operators import AUTH_DASHBOARD
    except ImportError as error:
        confirm(f"Deciding is not available here: {error}", ok=False)
        return
    try:
        if approve or vault:
            result = _workspace(root, vault).decide(confirmation_id, approve, operator, AUTH_DASHBOARD)
        else:  # refusing writes nothing, so it needs no vault: the same decide Workspace.decide makes
            from engramrag.agent import confirmations

            decided = confirmations.decide(Home(Path(root)), confirmation_id, False, operator, auth=AUTH_DASHBOARD)
            result = {"status": decided.status}
    except Refused as refusal:
        what = "approval" if approve else "refusal"
        confirm(f"Refused ({refusal.binding}): {refusal} The {what} did not write anything.", ok=False)
        return
    except (ImportError, FileNotFoundError, ValueError, OSError, DecisionsStoreError, StoreBusy) as error:
        confirm(f"Nothing was decided: {error}", ok=False)
        return
    if not approve:
        confirm(f"Refused {confirmation_id} (by {operator}); nothing was written.")
    elif "procedure" in result:
        confirm(f"Approved {confirmation_id} (by {operator}): the procedure is in procedural memory.")
    else:
        confirm(f"Approved and written: `{result.get('path')}` (by {operator}, checkpoint "
                f"{result.get('checkpoint_id')}). The next build reads it.")


def _workspace(root: str, vault: str) -> Any:
    from engramrag.agent.workspace import Workspace

    if not vault:
        raise FileNotFoundError("no vault folder: type it in the sidebar.")
    return Workspace(Home(Path(root)), vault)


def _learned(home: Home, vault: Path | None, operator: str) -> None:
    st.subheader("Learned notes waiting for approval")
    try:
        from engramrag.agent import note_review
    except ImportError as error:
        st.caption(f"Learned-note approval is not available in this installation ({error}).")
        return
    if vault is None:
        st.caption("Type the vault folder in the sidebar to list the learned notes waiting in it.")
        return
    try:
        notes = note_review.pending_notes(home, vault)
    except (OSError, ValueError, DecisionsStoreError, StoreBusy) as error:
        st.warning(f"The learned notes cannot be read: {error}")
        return
    if not notes:
        st.caption("No learned note waits for approval. An agent's `learn` puts notes here; they enter the graph "
                   "only after a person approves them.")
        return
    for note in notes:
        _note_card(home, vault, note, operator)


def _note_card(home: Home, vault: Path, note: dict[str, Any], operator: str) -> None:
    path = str(note["path"])
    with st.container(border=True):
        st.markdown(f"#### {escape_markdown(safe_text(note.get('title') or path))}")
        st.markdown(f"`{path}` · **by** `{note.get('author') or 'unknown'}` · **learned** "
                    f"{_moment(note.get('learned_at'))}")
        if note.get("approved_before"):
            st.caption("An older version of this note was approved; it changed since and waits again.")
        if note.get("rejected"):
            reason = f" ({note['rejection_note']})" if note.get("rejection_note") else ""
            st.caption(f"A person rejected exactly this version{escape_markdown(reason)}: it stays out of the graph "
                       "until it changes or someone approves it.")
        if note.get("error"):
            st.error(f"This note cannot be approved as it is: {note['error']}")
        sources = note.get("sources") or []
        if not sources:
            st.caption("No sources given.")
        for source in sources:
            line = f":{source['found_line']}" if source.get("found_line") else ""
            verdict = {True: ":green[verbatim in the source now]", False: ":red[**not verbatim in the source now**]",
                       None: "not quoted: nothing was checked"}[source.get("verbatim")]
            problem = source.get("problem") if source.get("verbatim") is not None else None
            st.markdown(f"Source `{source.get('path')}{line}` · {verdict}"
                        + (f" · :red[{escape_markdown(str(problem))}]" if problem else ""))
            if source.get("quote"):
                st.code(safe_text(str(source["quote"])), language="markdown", wrap_lines=True)
        with st.expander("The whole note, exactly as it is on disk", expanded=True):
            st.code(safe_text(note.get("body", "")), language="markdown", wrap_lines=True)
        st.caption(f"Approving approves exactly these bytes: `{note.get('hash')}`. If the note changes before you "
                   "press the button, the approval is refused and the page shows the new version.")
        for warning in note.get("warnings") or []:
            st.warning(f"Reads like an instruction to a model: {safe_text(warning)}", icon=":material/warning:")
        if note.get("quote_problem"):
            st.error(f"This note cannot be approved: {note['quote_problem']}")
        reason = st.text_input("Why (optional, kept with the verdict)", key=f"note-reason-{path}")
        with st.container(horizontal=True, gap="small"):
            st.button("Approve note", key=f"approve-note-{path}", icon=":material/check:",
                      disabled=not operator or bool(note.get("error")) or bool(note.get("quote_problem")),
                      help="The note enters the graph at the next build.",
                      on_click=_judge_note,
                      args=(str(home.root), str(vault), path, True, operator, reason, str(note.get("hash"))))
            st.button("Reject note", key=f"reject-note-{path}", icon=":material/close:",
                      disabled=not operator or bool(note.get("rejected")),
                      help="The note stays out of the graph; the file is left as it is.",
                      on_click=_judge_note, args=(str(home.root), str(vault), path, False, operator, reason, ""))


def _judge_note(root: str, vault: str, path: str, approve: bool, operator: str, reason: str, shown: str) -> None:
    """``shown`` is the hash of the bytes the card rendered: the approval binds those, not what is on disk later."""
    try:
        workspace = _workspace(root, vault)
        if approve:
            workspace.approve_note(path, operator, reason, shown)
        else:
            workspace.reject_note(path, operator, reason)
    except (ImportError, RuntimeError, ValueError, OSError, DecisionsStoreError) as error:  # Refused is a RuntimeError
        confirm(f"Nothing was recorded for {path}: {error}", ok=False)
        return
    if approve:
        confirm(f"Approved {path} (by {operator}). It enters the graph at the next build.")
    else:
        confirm(f"Rejected {path} (by {operator}); it stays out of the graph.")


def _history(rows: list[dict[str, Any]]) -> None:
    st.subheader("Audit")
    if not rows:
        return
    frame = pd.DataFrame(rows)
    dated = frame[frame["issued_at"] != "unknown"].assign(day=lambda f: f["issued_at"].str[:10])
    if not dated.empty:
        counts = dated.groupby(["day", "status"], as_index=False).size().rename(columns={"size": "count"})
        colours = alt.Scale(domain=list(STATUS_COLOURS), range=list(STATUS_COLOURS.values()))
        chart = alt.Chart(counts).mark_bar().encode(
            x=alt.X("day:O", title="issued on (UTC)", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("count:Q", title="confirmations", stack=True, axis=alt.Axis(format="d", tickMinStep=1)),
            color=alt.Color("status:N", title="status", scale=colours),
            tooltip=["day", "status", "count"],
        ).properties(height=220)
        st.altair_chart(chart, width="stretch")
    st.dataframe(frame[AUDIT_COLUMNS].rename(columns={"relative_path": "path"}), hide_index=True, width="stretch")
    st.caption("Every confirmation ever issued, newest first; rows are never deleted. `engram agent confirmations "
               "--json` prints all bound fields.")


def _checkpoints(home: Home, vault: Path | None, saved: list[dict[str, Any]]) -> None:
    st.subheader("Checkpoints")
    if not saved:
        st.caption("No checkpoints yet: each executed write records the prior state of the file it changed.")
        return
    table = pd.DataFrame(
        {
            "id": [item["id"] for item in saved],
            "created_at": [item["created_at"] for item in saved],
            "confirmation": [item["confirmation_id"] for item in saved],
            "files": [", ".join(entry["path"] for entry in item["files"]) for item in saved],
            "rewound_at": [item["rewound_at"] for item in saved],
            "rewound_by": [item["rewound_by"] for item in saved],
        }
    )
    st.dataframe(table, hide_index=True, width="stretch")
    latest = next((item["id"] for item in saved if item["rewound_at"] is None), "ID")
    st.markdown("To rewind a write, run (it refuses when someone edited the file since; `--force` discards that "
                "edit):")
    st.code(f"engram agent rewind {latest} --home {home.root} --vault {vault or 'VAULT'}", language="bash")


def _procedures(home: Home) -> None:
    st.subheader("Procedural memory")
    try:
        from engramrag.agent import procedures
    except ImportError as error:
        st.caption(f"Procedural memory is not available in this installation ({error}).")
        return
    if not procedures.store_path(home).is_file():  # reading would create the store
        items: list[dict[str, Any]] = []
    else:
        try:
            items = procedures.procedures(home)
        except (OSError, ValueError, RuntimeError, sqlite3.Error) as error:
            st.warning(f"Procedural memory cannot be read: {error}")
            return
    if not items:
        st.caption("No confirmed procedures. An agent proposes one with `remember_procedure`; it is stored only after "
                   "a person approves it above.")
        return
    table = pd.DataFrame(
        {
            "kind": [item.get("kind") for item in items],
            "text": [safe_text(item.get("text")) for item in items],
            "proposed by": [item.get("agent") for item in items],
            "sources": [", ".join(str(source) for source in item.get("sources") or []) for item in items],
            "confirmed by": [item.get("confirmed_by") or item.get("operator") for item in items],
            "confirmed at": [item.get("confirmed_at") or item.get("recorded_at") for item in items],
            "confirmation": [item.get("confirmation_id") for item in items],
            "id": [item.get("id") for item in items],
        }
    )
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption("Shown to a model only wrapped as external content: information about the user, never instructions.")


render()
