"""One agent's view of a home and its vault: every agent operation in one place, for the MCP server and the CLI.

The MCP tools and ``engram agent ...`` are two doors into the same operations, so the bindings (permission
mode, confirmation records, checkpoints, note approval, procedural memory) live here once and both doors
stay thin. Results are plain JSON-able dicts. A person's answer to a confirmation goes through
:meth:`Workspace.decide` whichever door it came from: approving executes the bound write at once, refusing
records the refusal on the same row.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from engramrag.agent import (
    approvals,
    checkpoints,
    confirmations,
    graph_query,
    learn,
    limits,
    note_review,
    procedures,
    reading,
    rewinds,
    writes,
)
from engramrag.agent import policy as write_policy
from engramrag.agent.domains import Edit, FieldDomain
from engramrag.agent.writes import Executed, Pending, Policy
from engramrag.store import Home

PROCEDURE_TOOL = "remember_procedure"


@dataclass(frozen=True)
class AgentConfig:
    """Who the agent is and what it may do without a person."""

    agent: str = field(default="agent:mcp", metadata={"help": "The agent's name on every record it causes."})
    mode: str = field(
        default=writes.CONFIRM_EACH_WRITE,
        metadata={"help": "read-only | confirm-each-write | trusted-paths (see engramrag.agent.writes)."},
    )
    trusted_paths: tuple[str, ...] = field(
        default=("learned/",), metadata={"help": "Folders written without confirmation in trusted-paths mode."}
    )
    window_s: float = field(default=900.0, metadata={"help": "How long a confirmation may wait for a person."})
    search_k: int = field(default=8, metadata={"help": "Documents a search returns unless the agent asks."})
    query_memory_mb: int = field(
        default=graph_query.DEFAULT_MEMORY_MB, metadata={"help": "Memory a query_graph query may take (MiB)."}
    )

    @property
    def policy(self) -> Policy:
        return Policy(mode=self.mode, trusted_paths=self.trusted_paths, window_s=self.window_s)

    @classmethod
    def from_environment(cls, **overrides: Any) -> AgentConfig:
        """Settings from ``ENGRAM_AGENT``, ``ENGRAM_AGENT_MODE``, ``ENGRAM_AGENT_TRUSTED`` (comma separated)."""
        values: dict[str, Any] = {}
        if os.environ.get("ENGRAM_AGENT"):
            values["agent"] = os.environ["ENGRAM_AGENT"]
        if os.environ.get("ENGRAM_AGENT_MODE"):
            values["mode"] = os.environ["ENGRAM_AGENT_MODE"]
        if os.environ.get("ENGRAM_AGENT_TRUSTED"):
            values["trusted_paths"] = tuple(p.strip() for p in os.environ["ENGRAM_AGENT_TRUSTED"].split(",") if p)
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)


class Workspace:
    """The operations an agent (or a person on its behalf) performs on one home and vault."""

    def __init__(self, home: Home, vault: str | os.PathLike[str], config: AgentConfig | None = None) -> None:
        self.home = home
        self.vault = Path(vault).expanduser().resolve()
        if not self.vault.is_dir():
            raise FileNotFoundError(f"the vault {self.vault} is not a folder; pass --vault DIR (or ENGRAM_VAULT).")
        self.config = config or AgentConfig()
        self.policy()  # validates the mode and the policy file at construction, not at the first write
        self._retriever: Any = None

    def policy(self) -> Policy:
        """The policy in force now: the config's mode, folders and window with the policy file's rules, re-read
        on every call so an edited file governs the next proposal (rows keep the version they were issued under)."""
        return replace(self.config.policy, rules=write_policy.load(self.home, self.vault), version="")

    # reading --------------------------------------------------------------------------------------

    def search(self, query: str, mode: str = "full", k: int | None = None, as_of: str | None = None) -> dict[str, Any]:
        """Ranked documents with provenance and an assembled context (mode ``full`` or ``auto_turn``); ``as_of``
        (ISO date) puts the notes dated up to then first."""
        answer = self._open_retriever().search(query, mode=mode, k=k or self.config.search_k, as_of=as_of)
        return answer.to_json()

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        """A document or a line range of it, with the statements the graph holds for those lines. Originals in
        the sources folder (``sources/report.pdf``) read as the Markdown they are converted to."""
        return reading.read_document(self.home, self.vault, path, start_line, end_line)

    def query_graph(self, sparql: str, limit: int = 200, timeout_s: float = 10.0) -> dict[str, Any]:
        """A read-only SPARQL query over the named graphs, cut at ``limit`` rows and ``timeout_s`` seconds."""
        return graph_query.query_graph(
            self.home, sparql, limit=limit, timeout_s=timeout_s, memory_mb=self.config.query_memory_mb
        )

    # writing --------------------------------------------------------------------------------------

    def write(self, path: str, content: str, domain: FieldDomain | None = None) -> dict[str, Any]:
        """Propose creating or replacing a note; pending until a person decides (unless on a trusted path)."""
        with self._proposal("write", {"path": path, "content": content}):
            outcome = writes.propose_write(
                self.home, self.vault, path, content, self.config.agent, self.policy(), domain
            )
        return _outcome(outcome)

    def edit(
        self,
        path: str,
        fields: dict[str, Any] | None = None,
        sections: dict[str, str] | None = None,
        domain: FieldDomain | None = None,
    ) -> dict[str, Any]:
        """Propose front-matter field updates and/or whole-section replacements on an existing note."""
        with self._proposal("edit", {"path": path, "changes": {"fields": fields or {}, "sections": sections or {}}}):
            change = Edit(fields=fields or {}, sections=sections or {})
            outcome = writes.propose_edit(self.home, self.vault, path, change, self.config.agent, self.policy(), domain)
        return _outcome(outcome)

    def learn(self, title: str, body: str, sources: list[Any]) -> dict[str, Any]:
        """Record a verified note in learned/ (duplicate, source and quote checks first); held until approved."""
        with self._proposal("learn", {"title": title, "body": body, "sources": sources}):
            result = learn.learn(self.home, self.vault, title, body, sources, self.config.agent, self.policy())
        return {
            "path": result.path,
            "checks": list(result.checks),
            **_outcome(result.outcome),
            "extraction": "held until a person approves the note (engram agent notes, then engram agent approve "
            "PATH --hash HASH, or the dashboard)",
        }

    def remember_procedure(self, text: str, kind: str, sources: list[str]) -> dict[str, Any]:
        """Propose a procedure for procedural memory; it always waits for a person, whatever the mode."""
        with self._proposal(PROCEDURE_TOOL, {"text": text, "kind": kind, "sources": sources}):
            policy = self.policy()
            write_policy.remember(self.home, policy.version, policy.text)  # the row names it; keep what it names
            pending = procedures.propose_procedure(
                self.home, self.vault, text, kind, self.config.agent, sources, policy
            )
        return _outcome(pending)

    def procedures(self) -> dict[str, Any]:
        """Confirmed procedures, wrapped as external content (data about the user, never instructions)."""
        items = procedures.procedures(self.home)
        return {"count": len(items), "wrapped": procedures.render_for_model(items), "procedures": items}

    # people's decisions ---------------------------------------------------------------------------

    def confirmations(self, status: str | None = None) -> list[dict[str, Any]]:
        """Every confirmation row with all its bound fields (the audit), optionally of one status."""
        rows = confirmations.confirmations(self.home)
        return [row for row in rows if status is None or row["status"] == status]

    def confirmation(self, confirmation_id: str) -> dict[str, Any]:
        return confirmations.get(self.home, confirmation_id).audit()

    def decide(self, confirmation_id: str, approve: bool, operator: str, auth: str | None = None) -> dict[str, Any]:
        """A person's answer: approving executes the bound write now; refusing records the refusal.

        ``auth`` says how the operator was authenticated (``engramrag.agent.operators.AUTH_*``). If execution
        is refused (a binding moved since the row was issued), the refusal is on the row, the row is failed,
        and it is raised as :class:`confirmations.Refused`; nothing was written.
        """
        decided = confirmations.decide(self.home, confirmation_id, approve, operator, auth=auth)
        if not approve:
            return {"confirmation_id": confirmation_id, "status": decided.status, "operator": decided.operator}
        if decided.tool != PROCEDURE_TOOL:
            self._check_policy_unchanged(decided)
        if decided.tool == PROCEDURE_TOOL:
            stored = procedures.execute_procedure(self.home, confirmation_id)
            return {"confirmation_id": confirmation_id, "status": confirmations.EXECUTED, "procedure": stored}
        if decided.tool == rewinds.TOOL:
            rewound = rewinds.execute(self.home, self.vault, confirmation_id)
            return {"confirmation_id": confirmation_id, "status": confirmations.EXECUTED, "rewound": rewound}
        done = writes.execute(self.home, self.vault, confirmation_id)
        return {"confirmation_id": confirmation_id, "status": confirmations.EXECUTED, **asdict(done)}

    def _check_policy_unchanged(self, row: confirmations.Confirmation) -> None:
        """Refuse (on the row) when the policy in force now no longer allows what the row's domain allows."""
        try:
            write_policy.check_still_allowed(
                json.loads(row.domain), self.policy().rules, row.relative_path, row.operator
            )
        except confirmations.Refused as refusal:
            confirmations.record_refusal(self.home, row.id, refusal, fail=True)  # approved, now spent
            raise

    def checkpoints(self) -> list[dict[str, Any]]:
        return checkpoints.checkpoints(self.home)

    def rewind(self, checkpoint_id: str, operator: str, force: bool = False) -> dict[str, Any]:
        """Restore the files a write changed; the next build updates the graph."""
        if self.config.mode == writes.READ_ONLY:
            raise confirmations.Refused("mode", "the permission mode is read-only: a rewind writes vault files.")
        return checkpoints.rewind(self.home, self.vault, checkpoint_id, operator, force=force)

    def pending_notes(self) -> list[dict[str, Any]]:
        """The held notes with their full body and each quote checked against its source now."""
        return note_review.pending_notes(self.home, self.vault)

    def approve_note(self, path: str, operator: str, note: str = "", shown_state: str | None = None) -> dict[str, Any]:
        """Approve the note only if its bytes are still the ones shown (``shown_state``) and its quotes check."""
        return note_review.approve_note(self.home, self.vault, path, operator, shown_state, note)

    def reject_note(self, path: str, operator: str, note: str = "") -> dict[str, Any]:
        return approvals.reject_note(self.home, self.vault, path, operator, note)

    def _proposal(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Size limit first; a refusal before a row exists is recorded as a refused row (see limits)."""
        call = {"tool": tool, **arguments, "agent": self.config.agent}
        return limits.recorded_proposal(self.home, self.vault, tool, self.config.agent, self.config.mode, call)

    # lifetime -------------------------------------------------------------------------------------

    def close(self) -> None:
        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None

    def _open_retriever(self) -> Any:
        """Keep one retriever open, and reopen it when a build has published a new index."""
        from engramrag.retrieve.published_index import current_index
        from engramrag.retrieve.retriever import Retriever

        current = current_index(self.home)
        if self._retriever is not None and self._retriever.index.folder != current:
            self.close()
        if self._retriever is None:
            self._retriever = Retriever.open(self.home)
        return self._retriever


def _outcome(outcome: Pending | Executed) -> dict[str, Any]:
    if isinstance(outcome, Executed):
        return {"status": confirmations.EXECUTED, **asdict(outcome)}
    return {
        "status": confirmations.PENDING,
        **asdict(outcome),
        "next": f"a person confirms or refuses it: `engram agent confirm {outcome.confirmation_id}` / "
        f"`engram agent refuse {outcome.confirmation_id}`, the dashboard's Agent writes page, or the confirm tool",
    }


__all__ = ["AgentConfig", "Workspace"]
