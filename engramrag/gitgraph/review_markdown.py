"""A review of a change (``review`` or ``review_range``) as Markdown fit for a pull-request comment: what it
contradicts first, then the decisions it touches with their records' lines, then the records it changed."""

from __future__ import annotations

from typing import Any

MAX_TEXT_LINES = 6


def review_markdown(result: dict[str, Any]) -> str:
    """The review as GitHub-flavoured Markdown (ids, paths and lines exact, so a reader can open each)."""
    what = result.get("range") or f"`{result['commit'][:12]}`"
    decisions = result["evidence"]["decisions"]
    conflicts = result.get("contradictions", [])
    lines = [f"### Decision review of {what}", "", result["answer"], ""]
    if conflicts:
        lines += [f"#### ⚠️ Contradicts {len(conflicts)} current decision(s)", ""]
        for item in conflicts:
            lines.append(
                f"- `{item['commit'][:12]}` names **{_cell(item['term'])}**, an alternative that "
                f"**{_cell(item['decision_title'])}** superseded (*{_cell(item['superseded_title'])}*):"
            )
            for mention in item["mentions"]:
                where = (f"commit message, line {mention['line']}" if mention["where"] == "message"
                         else f"`{mention['path']}:{mention['line']}`")  # fmt: skip
                lines.append(f"  - {where}: `{_cell(mention['text'].strip())}`")
        lines.append("")
    touched = [item for item in decisions if item.get("governs_touched") or item.get("record_changed")]
    if touched:
        lines += ["#### Decisions this change touches", "", "| Decision | Status | Record | Files it governs here |",
                  "|---|---|---|---|"]  # fmt: skip
        for item in touched:
            state = "current" if item["current"] else _cell(item["status"] or "retired")
            files = ", ".join(f"`{path}`" for path in item.get("governs_touched", ())) or "(its record changed)"
            lines.append(
                f"| {_cell(item['title'])} ({item['date'] or 'undated'}) | {state} | "
                f"`{item['path']}:{item['lines']}` | {files} |"
            )
        lines.append("")
        for item in touched:
            text = item["text"].strip().split("\n")
            shown = "\n".join(text[:MAX_TEXT_LINES]) + ("\n…" if len(text) > MAX_TEXT_LINES else "")
            lines += [f"<details><summary>{_cell(item['title'])}</summary>", "", "```markdown", shown, "```", "",
                      "</details>", ""]  # fmt: skip
    if result.get("records_changed"):
        lines += ["#### Decision records changed", ""]
        lines += [f"- `{record}`" for record in result["records_changed"]]
        lines.append("")
    if result.get("supersessions_recorded"):
        lines += ["#### Supersessions recorded", ""]
        lines += [f"- `{link['from']}` supersedes `{link['to']}`" for link in result["supersessions_recorded"]]
        lines.append("")
    if not conflicts and not touched:
        lines += ["No decision governs the files this change touches.", ""]
    lines.append("<sub>Written by `engram review --format markdown` (EngramRAG).</sub>")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text safe inside a table cell or emphasis: no pipes or line breaks."""
    return " ".join(str(text).replace("|", "\\|").split())
