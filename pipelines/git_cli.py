"""`engram git ...` and the decision-graph questions: why, what-breaks, disproven, who-knows, trace, origin, told,
review; and `engram ask`, a question in words answered by a model with those questions as tools, then verified.

Each question takes ``--repo`` (default: the repository of the current directory) and ``--json``; a PATH is
relative to the current directory, as a shell user expects, unless ``--repo`` is given, when it is relative to
that repository's top. ``engram review`` already decides merge and supersession candidates; ``pipelines.cli.main`` reads
``engram review COMMIT`` (anything that is not one of its actions) as ``engram git review COMMIT``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

from pipelines import exit_codes
from pipelines.cli_options import home_option as _home

TEXT_LINES = 8


def add_git_commands(commands: Any) -> None:
    """Register `engram git` and the question commands on the top-level subparsers."""
    group = commands.add_parser("git", help="The decision graph over a git repository: ingest, rank, path.")
    actions = group.add_subparsers(dest="action")
    ingest = actions.add_parser("ingest", help="Ingest a repository's history (only new commits after the first).")
    ingest.add_argument("repo", nargs="?", default=".", help="The repository (default: the current directory).")
    _home(ingest)
    ingest.add_argument("--json", action="store_true")
    ingest.set_defaults(handler=_ingest)
    rank = actions.add_parser("rank", help="Files carrying the most reasoning (PageRank from the decisions).")
    rank.add_argument("--top", type=int, default=10)
    _question_options(rank)
    rank.set_defaults(handler=_rank)
    path = actions.add_parser("path", help="A shortest path between two nodes (file, commit, decision, person).")
    path.add_argument("source", help="kind:key (file:src/a.py, commit:SHA, decision:ID, person:KEY) or a name.")
    path.add_argument("target")
    _question_options(path)
    path.set_defaults(handler=_path)
    review = actions.add_parser(
        "review", help="The decisions a commit (or a range BASE..HEAD) touches or contradicts; its instructions."
    )
    review.add_argument("commit", help="A commit, or a range BASE..HEAD (every commit in it, merges left out).")
    _question_options(review)
    review.add_argument(
        "--format", choices=["text", "json", "markdown"], default=None,
        help="markdown: a review fit for a pull-request comment (text unless --json).",
    )  # fmt: skip
    review.set_defaults(handler=_review)
    group.set_defaults(handler=lambda _args: (group.print_help(), 2)[1])

    for name, argument, text, handler in (
        ("why", "path", "The decisions governing a file, the commits that changed it and wrote them.", _why),
        ("what-breaks", "path", "Files changed with it, decisions naming it, people and tests touched with it.",
         _what_breaks),
        ("disproven", "topic", "Decisions on a topic that were superseded or retired, and what replaced them.",
         _disproven),
        ("who-knows", "path", "People (agents apart) ranked by recent, substantial changes and decisions.",
         _who_knows),
        ("trace", "decision", "A decision's versions, supersession chain, governed files and writing commits.",
         _trace),
        ("origin", "location", "The commit that introduced a file or PATH:LINE, and the decisions then in force.",
         _origin),
        ("told", "commit", "The instruction-file sections in force at a commit, and its agent co-authors.", _told),
    ):  # fmt: skip
        parser = commands.add_parser(name, help=text)
        parser.add_argument(argument)
        _question_options(parser)
        parser.set_defaults(handler=handler)

    ask = commands.add_parser(
        "ask", help="A question in words, answered by a model that calls the questions above as tools, then "
        "verified (the model server: ENGRAM_LLM_BASE_URL, ENGRAM_LLM_MODEL, as for the openai extractor).",
        epilog="Exit codes: 0 a verified answer; 6 the answer failed verification (shown as FAILED with the failed "
        "checks); 1 no answer (model server not configured or unreachable, or no answer within --max-steps).",
    )  # fmt: skip
    ask.add_argument("question", help='e.g. "Why does src/app.py use Postgres?"')
    _question_options(ask)
    ask.add_argument("--max-steps", type=int, default=None, help="Most model calls before giving up (default 8).")
    ask.set_defaults(handler=_ask)


def _question_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", help="The repository (default: the one holding the current directory).")
    _home(parser)
    parser.add_argument("--json", action="store_true", help="Print the whole answer with its evidence as JSON.")


# --- handlers --------------------------------------------------------------------------------------------------


def _ingest(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.ingest import ingest
    from engramrag.gitgraph.tools.base import repository_root

    # The store knows a repository by its top folder: a subfolder given here is the same repository.
    summary = ingest(repository_root(args.repo), args.home, progress=not args.json)
    data = dataclasses.asdict(summary)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
        return 0
    print(
        f"{summary.path}: {summary.mode}, {summary.commits_added} commit(s) added "
        f"({(summary.from_sha or '')[:12] or 'start'}..{(summary.to_sha or '')[:12]}), "
        f"{summary.decision_versions} decision version(s), {summary.instruction_versions} instruction version(s) "
        f"in {summary.seconds:.1f}s"
    )
    if summary.note:
        print(summary.note)
    return 0


def _located(args: argparse.Namespace, path: str) -> tuple[str, str]:
    """(repository, path): a path relative to the current directory unless --repo names the repository."""
    if args.repo:
        return args.repo, path
    cwd = Path.cwd()
    return str(cwd), path if Path(path).is_absolute() else str(cwd / path)


def _repo(args: argparse.Namespace) -> str:
    return args.repo or str(Path.cwd())


def _why(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import why

    repo, path = _located(args, args.path)
    return _print(args, why(args.home, repo, path))


def _what_breaks(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import what_breaks

    repo, path = _located(args, args.path)
    return _print(args, what_breaks(args.home, repo, path))


def _disproven(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import disproven

    return _print(args, disproven(args.home, _repo(args), args.topic))


def _who_knows(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import who_knows

    repo, path = _located(args, args.path)
    return _print(args, who_knows(args.home, repo, path))


def _trace(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import trace

    return _print(args, trace(args.home, _repo(args), args.decision))


def _origin(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import origin

    location, line = split_location(args.location)
    repo, path = _located(args, location)
    return _print(args, origin(args.home, repo, path, line))


def split_location(location: str) -> tuple[str, int | None]:
    """``PATH:LINE`` -> (PATH, LINE); a path without a trailing ``:digits`` has no line."""
    match = re.fullmatch(r"(.+):(\d+)", location)
    return (match.group(1), int(match.group(2))) if match else (location, None)


def _told(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.tools import told

    return _print(args, told(args.home, _repo(args), args.commit))


def _review(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.review_markdown import review_markdown
    from engramrag.gitgraph.tools import review
    from engramrag.gitgraph.tools.commits import review_range

    if ".." in args.commit:
        result = review_range(args.home, _repo(args), args.commit)
    else:
        result = review(args.home, _repo(args), args.commit)
    if args.format == "markdown":
        print(review_markdown(result), end="")
        return 0
    args.json = args.json or args.format == "json"
    return _print(args, result)


def _rank(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.graph import rank_files

    return _print(args, rank_files(args.home, _repo(args), args.top))


def _path(args: argparse.Namespace) -> int:
    from engramrag.gitgraph.graph import shortest_path

    return _print(args, shortest_path(args.home, _repo(args), args.source, args.target))


def _ask(args: argparse.Namespace) -> int:
    """Events are printed as they happen (to stderr with --json, when it is a terminal); the answer only when it
    passed verification."""
    from engramrag.gitgraph.ask import DEFAULT_MAX_STEPS, FAILED, VERIFIED, ask, ask_config

    config = ask_config()
    stream = sys.stderr if args.json else sys.stdout
    show = not args.json or sys.stderr.isatty()
    result = ask(
        args.question, args.home, _repo(args), config, max_steps=args.max_steps or DEFAULT_MAX_STEPS,
        on_event=(lambda event: _print_event(event, stream)) if show else None,
    )  # fmt: skip
    if args.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False, default=str))
    elif result.status == VERIFIED:
        _print_verified(result)
    elif result.status == FAILED:
        _print_failed(result)
    if result.status == VERIFIED:
        return exit_codes.OK
    if result.status == FAILED:
        return exit_codes.NOT_VERIFIED
    print(f"engram: {result.reason}", file=sys.stderr)
    return exit_codes.ERROR


def _print_event(event: Any, stream: Any) -> None:
    data = event.data
    if event.kind == "tool_call":
        arguments = ", ".join(f"{key}={value!r}" for key, value in data["arguments"].items())
        print(f"[{event.step}] {data['name']}({arguments})", file=stream, flush=True)
    elif event.kind == "tool_result":
        print(f"    -> {data['summary']}", file=stream, flush=True)
    elif event.kind == "retry":
        print(f"[{event.step}] the reply was not the answer's JSON ({data['problem']}); asked again", file=stream,
              flush=True)  # fmt: skip
    elif event.kind == "answer":
        print(f"[{event.step}] answered with {len(data['citations'])} citation(s); verifying", file=stream, flush=True)


def _print_verified(result: Any) -> None:
    print(f"\nVERIFIED ({', '.join(result.verdict.checks)}: passed)\n")
    print(result.answer["answer"])
    print("\ncitations:")
    for number, citation in enumerate(result.answer["citations"], 1):
        print(f"  [{number}] {citation['id']}")
        for line in citation["quote"].split("\n")[:TEXT_LINES]:
            print(f"      | {line}")


def _print_failed(result: Any) -> None:
    print("\nFAILED: the answer did not pass verification, so it is not shown as an answer.")
    for failure in result.verdict.failures:
        print(f"  {failure.check}: {failure.detail}")
    print("(--json shows the rejected answer and the whole transcript)")


# --- printing --------------------------------------------------------------------------------------------------


def _print(args: argparse.Namespace, result: dict[str, Any]) -> int:
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
        return 0
    print(result["answer"])
    evidence = result["evidence"]
    for item in result.get("contradictions", ()):
        print(f"\nCONTRADICTION: {item['decision_title']} superseded {item['superseded_title']}; {item['term']!r} at:")
        for mention in item["mentions"]:
            where = f"message line {mention['line']}" if mention["where"] == "message" else (
                f"{mention['path']}:{mention['line']}"
            )
            print(f"  {where}: {mention['text'].strip()}")
    if "line" in result and isinstance(result["line"], dict):
        line = result["line"]
        print(f"\nline {line['number']}: {line.get('text', '')}")
    if evidence["decisions"]:
        print("\ndecisions:")
        for item in evidence["decisions"]:
            state = "current" if item["current"] else (
                f"{item['status']} by {', '.join(item['superseded_by'])}" if item["superseded_by"] else item["status"]
            )
            print(f"  [{state}] {item['title']} ({item['date'] or 'undated'})  {item['path']}:{item['lines']}")
            print(f"    id: {item['id']}")
            _print_text(item["text"])
    for section in result.get("instructions", ()):
        if section is result.get("instructions", ())[0]:
            print("\ninstructions in force:")
        print(f"  {section['path']}:{section['lines']} ({section['sha'][:12]}, {section['version_date'][:10]}) "
              f"{section['section']}")
        _print_text(section["text"])
    if evidence["commits"]:
        print("\ncommits:")
        for item in evidence["commits"]:
            agent = " [agent]" if item["author_is_agent"] else ""
            print(f"  {item['sha'][:12]} {item['date'][:10]} {item['author']}{agent}: {item['subject']}")
    if evidence["files"]:
        print("\nfiles:")
        for item in evidence["files"]:
            extra = ", ".join(
                f"{key}={value}" for key, value in item.items() if key in ("co_changes", "score", "decisions", "scope")
            )
            print(f"  {item['path']}" + (f"  ({extra})" if extra else ""))
    if evidence["people"]:
        print("\npeople:")
        for item in evidence["people"]:
            agent = f" [agent: {item['agent_kind'] or 'unknown'}]" if item["is_agent"] else ""
            score = f"  score {item['score']}" if "score" in item else ""
            print(f"  {item['name']} <{item['key']}>{agent}{score}")
    if result.get("path") and isinstance(result["path"], list):
        print("\npath:")
        for node in result["path"]:
            print(f"  {node['node']}  {node['label']}")
    return 0


def _print_text(text: str) -> None:
    lines = text.split("\n")
    for line in lines[:TEXT_LINES]:
        print(f"    | {line}")
    if len(lines) > TEXT_LINES:
        print(f"    | … ({len(lines) - TEXT_LINES} more line(s); --json has them all)")
