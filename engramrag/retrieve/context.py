"""Context assembly under a character budget.

The budget is split three ways: the top documents, reserved places for statements touching the top
entities, and reserved places for bridge statements on short paths between seed entities. The bridges
are there because the middle hop of a multi-hop question is often a document PageRank ranks low: it
names neither end of the question, only the link between them. Unused reserved space goes to documents.
"""

from __future__ import annotations

from collections.abc import Sequence

from engramrag.retrieve.answer import Fact, Hit

AUTO_TURN_NOTICE = (
    "auto_turn search: lexical and graph legs only, no embeddings. These results may be partial or stale; "
    "verify them against the documents before relying on them."
)


def assemble_context(
    query: str,
    hits: Sequence[Hit],
    facts: Sequence[Fact],
    bridges: Sequence[Fact],
    budget: int,
    fact_share: float,
    bridge_share: float,
    notice: str | None = None,
) -> tuple[str, list[Fact], list[Fact]]:
    """The context text, and the facts and bridges that fitted."""
    header = [f"# Evidence for: {query}"]
    if notice:
        header.append(f"> {notice}")
    head = "\n".join(header) + "\n"
    remaining = max(0, budget - len(head))
    bridge_lines, bridge_kept = _fit([_fact_line(f) for f in bridges], bridges, int(remaining * bridge_share))
    fact_lines, fact_kept = _fit([_fact_line(f) for f in facts], facts, int(remaining * fact_share))
    bridge_block = _block("## Bridges between the question's entities", bridge_lines)
    fact_block = _block("## Statements about the top entities", fact_lines)
    document_budget = remaining - len(bridge_block) - len(fact_block)
    document_block = _documents(hits, document_budget)
    text = head + document_block + fact_block + bridge_block
    return text.rstrip() + "\n", fact_kept, bridge_kept


def superseded_line(later: dict) -> str:
    """``SUPERSEDED by <doc> (<date>): <what>`` for one ``Hit.superseded_by`` entry, as results and the
    context print it."""
    dated = f" ({later['by_date']})" if later.get("by_date") else ""
    reason = {"declared": "declared by the author", "accepted": "accepted in review",
              "verified": "proposed by a model, confirmed by an independent call",
              "later_value": "a later note changed it"}.get(str(later.get("reason")), "")  # fmt: skip
    why = f" [{reason}]" if reason else ""
    return f"    SUPERSEDED by {later['by_doc']}{dated}: {later.get('detail', '')}{why}"


def _documents(hits: Sequence[Hit], budget: int) -> str:
    title = "## Documents\n"
    if not hits or budget <= len(title):
        return ""
    out = [title]
    used = len(title)
    share = max(120, (budget - used) // max(1, len(hits)))
    for rank, hit in enumerate(hits, 1):
        lines = hit.provenance.get("lines") or []
        where = f"lines {lines[0]}–{lines[1]}" if len(lines) == 2 and lines[0] else "whole document"
        line = f"[{rank}] {hit.doc} — {hit.title} ({where}; score {hit.score:.4g})\n"
        for later in hit.superseded_by:
            line += superseded_line(later) + "\n"
        snippet = " ".join(hit.snippet.split())
        room = min(share, budget - used) - len(line) - 1
        if room < 0:
            break
        if len(snippet) > room:
            snippet = snippet[: max(0, room - 1)].rstrip() + "…" if room > 1 else ""
        entry = line + (snippet + "\n" if snippet else "")
        out.append(entry)
        used += len(entry)
    return "".join(out) + "\n"


def _fact_line(fact: Fact) -> str:
    start, end = fact.lines
    where = f"{fact.doc}:{start}" + (f"-{end}" if end and end != start else "") if start else fact.doc
    return f"- {fact.subject} — {fact.relation} — {fact.object} ({where})"


def _fit(lines: list[str], items: Sequence[Fact], budget: int) -> tuple[list[str], list[Fact]]:
    kept_lines: list[str] = []
    kept: list[Fact] = []
    used = 60  # the block's heading
    for line, item in zip(lines, items, strict=True):
        if used + len(line) + 1 > budget:
            break
        kept_lines.append(line)
        kept.append(item)
        used += len(line) + 1
    return kept_lines, kept


def _block(heading: str, lines: list[str]) -> str:
    return f"{heading}\n" + "\n".join(lines) + "\n\n" if lines else ""


def notice_only(query: str, notice: str) -> str:
    """The whole context of a search that found nothing relevant: one line, so nothing else is injected."""
    return f"> {notice}: {query}\n"
