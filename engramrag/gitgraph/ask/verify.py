"""Verification of a model's final answer against what the tools returned in the same run.

The answer is ``{"answer": text, "citations": [{"id", "quote"}]}``. It is verified only when:

- it cites something (``citations-given``);
- every cited id was returned by a tool in this run (``cited-id-returned``, :func:`grounding.check_answer`: a
  decision's id, a commit's sha or a 7+ digit prefix of exactly one, a file's path, a person's key);
- every quote is verbatim, line breaks and runs of spaces counting as one space, in the evidence a tool returned
  for that id: a decision's title or text (its exact source lines; ``trace`` adds its earlier versions), a
  commit's subject, a file's or a person's fields (``quote-verbatim``). A quote taken from a decision's text is
  also looked up in the record's file at the commit it was read from (:func:`grounding.check_claim`), so a
  store that no longer matches git does not vouch for it;
- every figure in the answer's text is inside a cited quote or the cited ids' evidence (``figure-in-quote``,
  the grounding module's own figure check: record numbers such as ADR-0016 are names, not figures);
- the files and qualified identifiers the answer names in backticks exist at HEAD, unless a tool returned the
  file (a deleted file may be discussed) (``file-at-commit``, ``identifier-exists``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from engramrag.gitgraph.grounding import (
    CITED_ID_RETURNED,
    FIGURE_IN_QUOTE,
    QUOTE_VERBATIM,
    SHA_PREFIX,
    Failure,
    Verdict,
    check_answer,
    check_claim,
    check_figures,
    names_in,
    returned_ids,
    spaced,
)
from engramrag.messages import one_line

CITATIONS_GIVEN = "citations-given"
ID_KEYS = {"decisions": "id", "commits": "sha", "files": "path", "people": "key"}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "quote": {"type": "string"}},
                "required": ["id", "quote"],
            },
        },
    },
    "required": ["answer", "citations"],
}


def verify(
    answer: Mapping[str, Any], results: Iterable[Mapping[str, Any]], repo_root: str | os.PathLike[str]
) -> Verdict:
    """Every check above on ``answer`` (already of :data:`ANSWER_SCHEMA`'s shape), given the tools' answers of
    this run (``results``) and the repository they were about."""
    results = list(results)
    text = str(answer.get("answer", ""))
    citations = list(answer.get("citations", ()))
    returned = returned_ids(results)
    evidence = evidence_by_id(results)
    checks = [CITATIONS_GIVEN, CITED_ID_RETURNED, QUOTE_VERBATIM, FIGURE_IN_QUOTE]
    failures: list[Failure] = []
    if not citations:
        failures.append(Failure(CITATIONS_GIVEN, "the answer cites no id and quote, so nothing supports it"))
    failures += check_answer([citation["id"] for citation in citations], returned).failures
    for citation in citations:
        key = resolve_id(citation["id"], returned)
        if key is None:
            continue  # reported by cited-id-returned
        failures += _check_quote(citation["quote"], key, evidence.get(key, []), repo_root)
    cited_text = [citation["quote"] for citation in citations]
    for citation in citations:
        key = resolve_id(citation["id"], returned)
        cited_text += [value for _, value in evidence.get(key, [])] if key else []
    for failure in check_figures(text, "\n".join(cited_text)):
        value = failure.detail.removesuffix(" is not in the quote")
        failures.append(Failure(FIGURE_IN_QUOTE, f"{value} is in the answer but in no cited quote or evidence"))
    names = _named(text, returned)
    if names[0] or names[1]:
        named = check_claim(repo_root, "HEAD", files=names[0], identifiers=names[1])
        checks += list(named.checks)
        failures += named.failures
    return Verdict(tuple(checks), tuple(failures))


def resolve_id(cited: str, returned: set[str]) -> str | None:
    """The returned id a cited id names: itself, or the one commit a 7+ digit prefix names."""
    if cited in returned:
        return cited
    if SHA_PREFIX.match(cited):
        matches = [item for item in returned if item.startswith(cited)]
        if len(matches) == 1:
            return matches[0]
    return None


def evidence_by_id(results: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[Mapping[str, Any], str]]]:
    """For every returned id, each text the tools returned about it, with the evidence row it came from: every
    string and number of the row (nested ones too), and, for the decision a ``trace`` was about, the titles and
    texts of its earlier versions."""
    found: dict[str, list[tuple[Mapping[str, Any], str]]] = {}
    for result in results:
        for kind, key in ID_KEYS.items():
            for item in result.get("evidence", {}).get(kind, ()):
                found.setdefault(item[key], []).extend((item, value) for value in _strings(item))
        if isinstance(result.get("decision"), str):
            for version in result.get("versions", ()):
                found.setdefault(result["decision"], []).extend((version, value) for value in _strings(version))
    return found


def _check_quote(
    quote: str, key: str, evidence: list[tuple[Mapping[str, Any], str]], repo_root: str | os.PathLike[str]
) -> list[Failure]:
    wanted = spaced(quote)
    if not wanted:
        return [Failure(QUOTE_VERBATIM, f"the quote for {key} is empty")]
    rows = [row for row, value in evidence if wanted in spaced(value)]
    if not rows:
        shown = one_line(quote, 80)
        return [Failure(QUOTE_VERBATIM, f"{shown!r} is not verbatim in what the tools returned for {key}")]
    sourced = [row for row in rows if wanted in spaced(str(row.get("text") or "")) and row.get("path")
               and row.get("sha") and "id" in row]  # fmt: skip
    if not sourced:
        return []
    row = sourced[0]
    return list(check_claim(repo_root, str(row["sha"]), quote=quote, source_path=str(row["path"])).failures)


def _named(text: str, returned: set[str]) -> tuple[list[str], list[str]]:
    """The backticked files (those no tool returned) and qualified identifiers the answer names."""
    files, identifiers = names_in(text)
    return [path for path in files if path.rstrip("/") not in returned], identifiers


def _strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


__all__ = ["ANSWER_SCHEMA", "CITATIONS_GIVEN", "evidence_by_id", "resolve_id", "spaced", "verify"]
