"""The `engram` command."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

from engramrag.messages import one_line
from engramrag.store import Home, StoreBusy
from pipelines import exit_codes
from pipelines.agent_cli import add_commands as add_agent_commands
from pipelines.cli_options import home_option as _home
from pipelines.cli_options import operator_option as _operator
from pipelines.cost_cli import add_commands as add_cost_commands
from pipelines.git_cli import add_git_commands


def run() -> None:
    """The `engram` command: ``main``, then the process ends without Python's last collection, which walks every
    object still alive (0.5-0.6 s after a one-note edit at 10,000 notes): they are all freed together at exit."""
    code = main()
    gc.freeze()
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    # Dagster flags the beta/preview parameters we use (single-run backfills, pools); users need not see that.
    warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
    parser = _parser()
    args = parser.parse_args(_commit_review(list(sys.argv[1:] if argv is None else argv)))
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a reader that left early (`| head`) is found here, not at interpreter exit
        return code
    except StoreBusy as busy:
        print(f"engram: {busy}", file=sys.stderr)
        return exit_codes.BUSY
    except (FileNotFoundError, ValueError, LookupError, RuntimeError) as problem:
        from engramrag.agent.display import safe_text  # a refusal may quote a path or text an agent chose

        print(f"engram: {safe_text(problem)}", file=sys.stderr)
        return exit_codes.ERROR
    except BrokenPipeError:
        # The reader of our output closed it: stop quietly, as `head` expects, and keep Python from failing
        # again when it flushes standard output at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_codes.PIPE_CLOSED
    except KeyboardInterrupt:
        print("engram: interrupted.", file=sys.stderr)
        return exit_codes.INTERRUPTED


REVIEW_ACTIONS = ("list", "decide", "undo", "history")


def _commit_review(argv: list[str]) -> list[str]:
    """`engram review COMMIT` asks the decision graph about a commit; `engram review ACTION` reviews verdicts."""
    if len(argv) > 1 and argv[0] == "review" and argv[1] not in REVIEW_ACTIONS and not argv[1].startswith("-"):
        return ["git", "review", *argv[1:]]
    return argv


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engram", description="EngramRAG: a memory your agents can trust.")
    commands = parser.add_subparsers(dest="command")

    build = commands.add_parser(
        "build", help="Build or update the stores from a vault through Dagster.",
        epilog="Exit codes: 0 done; 1 the run or a check failed; 4 some documents failed (retried by the next "
        "build); 5 every document tried failed (is the model server up?); 3 another build holds the stores.",
    )  # fmt: skip
    _build_sources(build)
    build.add_argument("--full", action="store_true", help="Run every bucket and re-hash every file.")
    build.add_argument(
        "--processes", type=int, default=int(os.environ.get("ENGRAM_EXTRACT_PROCESSES") or 0),
        help="Worker processes that extract with the rules extractor (default 0: one per core; 1: none).",
    )
    build.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    build.add_argument(
        "--dry-run", action="store_true",
        help="Estimate the segments, tokens and cost of what would be extracted; call and write nothing.",
    )
    build.set_defaults(handler=_build)

    watch = commands.add_parser(
        "watch", help="Stay up and rebuild whenever the vault or the verdicts change (one process: no start-up "
        "cost per build).",
    )  # fmt: skip
    _build_sources(watch)
    watch.add_argument("--interval", type=float, default=2.0,
                       help="Seconds between two looks for new verdicts, and between two looks at the vault with "
                       "--poll (default 2).")
    watch.add_argument("--poll", action="store_true",
                       help="Look at the vault every --interval seconds instead of when the system reports a changed "
                       "file (for a vault on a network drive, whose changes the system may not report).")
    watch.add_argument("--max-builds", type=int, default=None, help="Stop after this many builds.")
    watch.set_defaults(handler=_watch)

    status = commands.add_parser("status", help="Documents, quads, statements, rejected files, last build.")
    _home(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=_status)

    export = commands.add_parser("export", help="Write the quad store as N-Quads or TriG.")
    _home(export)
    export.add_argument("--format", choices=["nquads", "trig"], default="nquads")
    export.add_argument("--doc", help="Only this document's graphs (vault-relative path).")
    export.add_argument("--output", "-o", default="-", help="Output file (default: standard output).")
    export.set_defaults(handler=_export)

    search = commands.add_parser("search", help="Ranked documents and an assembled context for a question.")
    search.add_argument("query", help="The question, in any language the vault is written in.")
    _home(search)
    search.add_argument(
        "--mode",
        choices=["full", "auto_turn"],
        default="full",
        help="full: all four seeding legs and PageRank; auto_turn: lexical and graph only, fast, at most 8 results.",
    )
    search.add_argument("-k", type=int, default=10, help="Number of documents to return.")
    search.add_argument("--budget", type=int, help="Character budget of the context (default 6000).")
    search.add_argument(
        "--as-of", help="ISO date: the state as it stood then (notes dated up to then first), like 'in March 2024'."
    )
    search.add_argument("--json", action="store_true", help="Print results, context and warnings as JSON.")
    search.set_defaults(handler=_search)

    review = commands.add_parser(
        "review", help="People's verdicts: merge candidates and decision supersessions (list, decide, undo, history)."
    )
    actions = review.add_subparsers(dest="action")
    listing = actions.add_parser("list", help="Pairs waiting for a verdict, what needs a person first.")
    listing.add_argument("topic", nargs="?", choices=["merge", "supersession"], default="merge")
    listing.add_argument("--all", action="store_true", help="Also pairs already decided (with their verdict).")
    listing.add_argument(
        "--show", choices=["person", "automatic", "all"], default="person",
        help="merge: person (default: pairs the machine will not merge on its own, most uncertain and most "
        "documents reached first), automatic (pairs merged unless you object), all (every pair, best score first).",
    )  # fmt: skip
    listing.add_argument("-n", type=int, default=20, help="At most this many pairs (default 20).")
    _home(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_review_list)
    decide = actions.add_parser("decide", help="Record a verdict on a pair (applied by the next build).")
    decide.add_argument("topic", choices=["merge", "supersession"])
    decide.add_argument("left", help="merge: an entity key; supersession: the EARLIER decision's key.")
    decide.add_argument("right", help="merge: the other entity key; supersession: the LATER decision's key.")
    decide.add_argument(
        "verdict", help="merge: same | broader | narrower | related | distinct (LEFT is broader/narrower than "
        "RIGHT); supersession: accept | reject."
    )
    decide.add_argument("--note", default="", help="Why (kept in the history).")
    _operator(decide)
    _home(decide)
    decide.add_argument("--json", action="store_true")
    decide.set_defaults(handler=_review_decide)
    undo = actions.add_parser("undo", help="Take back a pair's current verdict (the one before it returns).")
    undo.add_argument("topic", choices=["merge", "supersession"])
    undo.add_argument("left")
    undo.add_argument("right")
    _operator(undo)
    _home(undo)
    undo.add_argument("--json", action="store_true")
    undo.set_defaults(handler=_review_undo)
    history = actions.add_parser("history", help="Every verdict ever recorded, undone ones included.")
    history.add_argument("topic", nargs="?", choices=["merge", "supersession"], default="merge")
    history.add_argument("--key", help="Only pairs this key is part of.")
    _home(history)
    history.add_argument("--json", action="store_true")
    history.set_defaults(handler=_review_history)
    review.set_defaults(handler=lambda _args: (review.print_help(), 2)[1])

    add_agent_commands(commands)
    add_git_commands(commands)
    add_cost_commands(commands)

    timeline = commands.add_parser(
        "history", help="An entity's values over time per property (owner, price, vendor...): current and why."
    )
    timeline.add_argument("entity", help="The entity's name as any note writes it (aliases work).")
    timeline.add_argument("--property", default=None, help="Only this property (owner, price, vendor, status...).")
    _home(timeline)
    timeline.add_argument("--json", action="store_true", help="Print the timeline as JSON.")
    timeline.set_defaults(handler=_history)

    dev = commands.add_parser("dev", help="Open the Dagster UI on this home's instance (dagster dev).")
    _home(dev)
    dev.add_argument("--vault", default=os.environ.get("ENGRAM_VAULT", "examples/vault"),
                     help="The vault the UI's sensor watches (default: ENGRAM_VAULT, else examples/vault).")
    dev.add_argument("--port", default="3000", help="The port of the Dagster UI on 127.0.0.1 (default 3000).")
    dev.set_defaults(handler=_dev)
    return parser


def _build_sources(command: argparse.ArgumentParser) -> None:
    """What ``build`` and ``watch`` build from: the vault, the home, the extractor and the embedder."""
    command.add_argument(
        "--vault", default=os.environ.get("ENGRAM_VAULT"),
        help="The Markdown vault folder (default: ENGRAM_VAULT, else the vault this home was last built from).",
    )  # fmt: skip
    _home(command)
    command.add_argument(
        "--extractor", default=os.environ.get("ENGRAM_EXTRACTOR", "rules"),
        help="Extractor: rules (offline, default), openai (any OpenAI-compatible server: ENGRAM_LLM_BASE_URL, "
        "ENGRAM_LLM_MODEL), replay:FILE (precomputed extractions). Default: ENGRAM_EXTRACTOR, else rules.",
    )  # fmt: skip
    command.add_argument(
        "--embedder", default=os.environ.get("ENGRAM_EMBEDDER", "hash"), help="Embedder: hash (offline) or openai."
    )


def _vault_to_build(args: argparse.Namespace, home: Home) -> str | None:
    """``--vault``, else the vault the home was last built from; None (said why) when neither is known."""
    from engramrag.catalog.connection import remembered_vault

    vault = args.vault or remembered_vault(home)
    if not vault:
        print(f"engram: pass --vault DIR (or set ENGRAM_VAULT); {home.root} was never built.", file=sys.stderr)
    return vault


def _build(args: argparse.Namespace) -> int:
    if args.dry_run:
        from pipelines.cost_cli import dry_run

        return dry_run(args)
    home = Home.at(args.home)
    args.vault = _vault_to_build(args, home)
    if not args.vault:
        return 2
    from engramrag.lifecycle.document_pool import ExtractionConfig
    from engramrag.lifecycle.summary import read_status
    from pipelines.build import collector_off, run_build
    from pipelines.progress import progress_display

    vault = Path(args.vault).expanduser().resolve()
    # The process ends after the build: what the build made is never walked by the collector (``collector_off``).
    with progress_display(enabled=not args.json and sys.stderr.isatty()), collector_off(freeze_after=True):
        outcome = run_build(
            home, vault, extractor=args.extractor, full=args.full, embedder=args.embedder,
            extraction=ExtractionConfig(processes=args.processes),
        )
    status = read_status(home, outcome.run_id)  # this build's own figures, not the home's last build
    summary = {
        "run_id": outcome.run_id,
        "success": outcome.success,
        "buckets": outcome.buckets,
        "checks": outcome.checks,
        "errors": outcome.errors,
        **{key: status[key] for key in ("documents", "quads", "statements", "rejected", "failed", "last_build")},
        "rejected_documents": status["rejected_documents"],
        "failed_documents": status["failed_documents"],
    }
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        _print_build(summary)
    last = summary["last_build"] or {}
    return exit_codes.build_exit_code(
        outcome.success, all(outcome.checks.values()), last.get("extracted", 0), last.get("failed", 0)
    )


def _watch(args: argparse.Namespace) -> int:
    from engramrag.lifecycle.scan import VaultMissing
    from engramrag.lifecycle.summary import read_status
    from pipelines.build import BuildOutcome, describe_build
    from pipelines.progress import progress_display
    from pipelines.watch import WatchSettings, watch

    home = Home.at(args.home)
    vault_dir = _vault_to_build(args, home)
    if not vault_dir:
        return 2
    if args.interval <= 0 or (args.max_builds is not None and args.max_builds < 1):
        print("engram: --interval must be above 0 and --max-builds at least 1", file=sys.stderr)
        return 2
    failures = 0

    def report(outcome: BuildOutcome, seconds: float) -> None:
        nonlocal failures
        status = read_status(home, outcome.run_id)
        passed = outcome.success and all(outcome.checks.values())
        failures += not passed
        problems = outcome.errors or [name for name, ok in outcome.checks.items() if not ok]
        state = "" if passed else "; FAILED: " + "; ".join(problems)
        print(f"{time.strftime('%H:%M:%S')} built {describe_build(status['documents'], status['last_build'])} "
              f"in {seconds:.1f} s ({len(outcome.buckets)} buckets run){state}", flush=True)  # fmt: skip

    vault = Path(vault_dir).expanduser().resolve()
    print(f"watching {vault} for {home.root} (Ctrl-C to stop)", flush=True)
    settings = WatchSettings(args.extractor, args.embedder, args.interval, args.max_builds, os_events=not args.poll)
    try:
        with progress_display(enabled=sys.stderr.isatty()):
            watch(home, vault, settings, report)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    except VaultMissing as problem:
        print(f"engram: {problem}", file=sys.stderr)
        return 2
    return 1 if failures else 0


def _print_build(summary: dict) -> None:
    from pipelines.build import describe_build

    line = describe_build(summary["documents"], summary["last_build"])
    print(f"built {line} ({len(summary['buckets'])} buckets run)")
    print(f"stores: {summary['quads']:,} quads, {summary['statements']:,} statements  [run {summary['run_id']}]")
    for name, passed in summary["checks"].items():
        print(f"  check {name}: {'passed' if passed else 'FAILED'}")
    for item in summary["rejected_documents"]:
        print(f"  rejected {item['message']}", file=sys.stderr)
    from engramrag.extract.llm.breaker import STOPPED

    stopped = 0  # stopped by an unreachable model server: its one line, logged when it was found, says why
    for item in summary["failed_documents"]:
        if STOPPED in (item["error"] or ""):
            stopped += 1
            continue
        print(f"  failed {item['path']}: {item['error']} (retried on the next build)", file=sys.stderr)
    if stopped:
        print(
            f"  failed {stopped} documents with no answer from the model server (retried on the next build; "
            "`engram status` lists them)",
            file=sys.stderr,
        )
    for error in summary["errors"]:
        print(f"  error: {error}", file=sys.stderr)


def _search(args: argparse.Namespace) -> int:
    import dataclasses
    from datetime import date

    from engramrag.retrieve import RetrievalConfig, search
    from engramrag.retrieve.context import superseded_line

    if args.k < 1:
        print("engram: -k must be at least 1", file=sys.stderr)
        return 2
    config = RetrievalConfig()
    if args.budget:
        config = dataclasses.replace(config, context_chars=args.budget)
    if args.as_of:
        try:
            date.fromisoformat(args.as_of)
        except ValueError:
            print(f"engram: --as-of wants an ISO date such as 2024-03-31, not {args.as_of!r}", file=sys.stderr)
            return 2
    answer = search(args.query, Home.at(args.home), mode=args.mode, k=args.k, config=config, as_of=args.as_of)
    if args.json:
        print(json.dumps(answer.to_json(), indent=2, ensure_ascii=False))
        return 0
    for warning in answer.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    verdict = "nothing relevant found" if answer.no_relevant_memory else "relevant memory found"
    print(f"confidence {answer.confidence:.2f}: {verdict}")
    reading = answer.temporal or {}
    if reading.get("intent") not in (None, "none"):
        asked = f" {reading['as_of']}" if reading.get("as_of") else ""
        print(f"time: {reading['intent']}{asked} (cue {reading.get('cue')!r})")
    for rank, hit in enumerate(answer.results, 1):
        legs = " ".join(f"{leg}={value:.3g}" for leg, value in hit.legs.items() if value)
        dated = f"  dated {hit.valid_from['date']} ({hit.valid_from['source']})" if hit.valid_from else ""
        print(f"{rank:>2}. {hit.doc}  {hit.title}  score={hit.score:.4g}{dated}  [{legs}]")
        for later in hit.superseded_by:
            print(superseded_line(later))
    print()
    print(answer.context)
    return 0


def _history(args: argparse.Namespace) -> int:
    from engramrag.revise.history import entity_history, known_subjects

    home = Home.at(args.home)
    entries = entity_history(home, args.entity, args.property)
    if args.json:
        print(json.dumps({"entity": args.entity, "property": args.property,
                          "values": [entry.to_json() for entry in entries]}, indent=2, ensure_ascii=False))
        return 0 if entries else 1
    if not entries:
        suggestions = ", ".join(known_subjects(home, 8))
        hint = f"; entities with versions: {suggestions}" if suggestions else "; build the vault first"
        print(f"engram: no dated values of {args.entity!r}{' ' + args.property if args.property else ''}{hint}",
              file=sys.stderr)
        return 1
    shown = None
    for entry in entries:
        if entry.property != shown:
            shown = entry.property
            names = sorted({e.subject for e in entries if e.property == shown})
            print(f"\n{' / '.join(names)} — {entry.property}")
        mark = "*" if entry.current else " "
        where = f"{entry.doc}:{entry.line}" if entry.line else entry.doc
        print(f" {mark} {entry.date or 'undated':<10}  {entry.value:<24}  {where}  ({entry.date_source}; {entry.why})")
        print(f"      “{entry.quote}”")
    return 0


def _status(args: argparse.Namespace) -> int:
    from engramrag.lifecycle.summary import read_status

    status = read_status(Home.at(args.home))
    if args.json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
        return 0
    print(f"home: {status['home']}")
    print(f"documents: {status['documents']}  quads: {status['quads']:,}  statements: {status['statements']:,}")
    print(f"rejected: {status['rejected']}  failed: {status['failed']}")
    last = status["last_build"]
    if last:
        from pipelines.build import describe_build

        print(f"last build {last['finished_at']}: {describe_build(status['documents'], last)}")
    else:
        print("never built: run `engram build --vault DIR --home DIR`")
    for item in status["rejected_documents"]:
        print(f"  rejected [{item['reason']}] {item['message']}")
    for item in status["failed_documents"]:
        print(f"  failed {item['path']}: {item['error']}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from engramrag.export import export_dataset

    home = Home.at(args.home)
    if args.output == "-":
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            target = Path(scratch) / f"export.{args.format}"
            count = export_dataset(home, target, args.format, args.doc)
            sys.stdout.write(target.read_text(encoding="utf-8"))
    else:
        count = export_dataset(home, args.output, args.format, args.doc)
    print(f"exported {count:,} quads", file=sys.stderr)
    return 0


def _review_list(args: argparse.Namespace) -> int:
    home = Home.at(args.home)
    if args.topic == "merge":
        from engramrag.resolve.queue import merge_queue

        frame = merge_queue(home, include_decided=args.all, show=args.show)
        columns = ["left_key", "right_key", "left_label", "right_label", "left_kind", "right_kind", "score",
                   "auto_merge", "reach", "priority", "reasons", "verdict", "decided_by", "blocked", "left_evidence",
                   "right_evidence"]
    else:
        from engramrag.revise.queue import supersession_queue

        frame = supersession_queue(home, include_decided=args.all)
        columns = ["earlier_key", "later_key", "earlier_title", "later_title", "earlier_decided_on",
                   "later_decided_on", "earlier_path", "later_path", "earlier_line_start", "later_line_start",
                   "score", "same_day", "reasons", "verdict", "decided_by", "earlier_quote", "later_quote", "kind",
                   "verification", "verification_check", "verification_reason", "verified_by",
                   "verifier_earlier_quote", "verifier_later_quote"]
    rows = [] if frame.empty else json.loads(frame[columns].head(args.n).to_json(orient="records", force_ascii=False))
    if args.json:
        shown = {"show": args.show} if args.topic == "merge" else {}
        print(json.dumps({"topic": args.topic, **shown, "pending_total": len(frame), "pairs": rows}, indent=2,
                         ensure_ascii=False))
        return 0
    if frame.empty:
        print(f"no {args.topic} pairs {'at all' if args.all else 'waiting'} in {home.root} (a build proposes them)")
        if args.topic == "merge" and args.show == "person":
            print("(pairs the machine merges on its own: engram review list merge --show automatic)")
        return 0
    for number, row in enumerate(rows, 1):
        if args.topic == "merge":
            state = f"  [{row['verdict']} by {row['decided_by']}]" if row["verdict"] else ""
            auto = "  (merged automatically unless you object)" if row["auto_merge"] else ""
            print(f"{number:>3}. {row['left_label']} ({row['left_kind']})  ~  {row['right_label']} "
                  f"({row['right_kind']})  score {row['score']:.2f}{auto}{state}")
            print(f"     keys: {json.dumps(row['left_key'], ensure_ascii=False)} "
                  f"{json.dumps(row['right_key'], ensure_ascii=False)}; {'; '.join(row['reasons'])}; "
                  f"a merge joins {row['reach']} documents")
        else:
            state = f"  [{row['verdict']} by {row['decided_by']}]" if row["verdict"] else ""
            state += {"declared": "  (declared by its author: applied unless you reject it)",
                      "verified": "  (proposed by a model, confirmed by an independent call: applied unless you "
                                  "reject it)",
                      "later_value": "  (a later value: used for current-state questions unless you reject it)",
                      }.get(row.get("kind") or "", "")  # fmt: skip
            print(f"{number:>3}. {row['earlier_title']} ({row['earlier_decided_on']}, {row['earlier_path']}) "
                  f"->  {row['later_title']} ({row['later_decided_on']}, {row['later_path']})  "
                  f"score {row['score']:.2f}{' SAME DAY' if row['same_day'] else ''}{state}")
            for side in ("earlier", "later"):
                quote = one_line(row[f"{side}_quote"] or "(no quote)", 160)
                line = row[f"{side}_line_start"]
                where = f"{row[f'{side}_path']}:{int(line)}" if line is not None else row[f"{side}_path"]
                print(f"     {side}: {where}  \"{quote}\"")
            if row.get("verification"):
                check = f" ({row['verification_check']})" if row.get("verification_check") else ""
                print(f"     model {row['verified_by']}: {row['verification'].replace('_', ' ')}{check}: "
                      f"{one_line(row['verification_reason'] or '', 160)}")
            print(f"     keys: {json.dumps(row['earlier_key'], ensure_ascii=False)} "
                  f"{json.dumps(row['later_key'], ensure_ascii=False)}")
    order = {"person": ", what needs a person first", "automatic": " that the machine merges unless you object"}
    what = order.get(args.show, "") if args.topic == "merge" else ""
    print(f"\n{len(frame)} {'pairs' if args.all else 'waiting'}{what}; decide with: engram review decide "
          f"{args.topic} LEFT RIGHT VERDICT --home {shlex.quote(str(home.root))}")
    return 0


def _review_decide(args: argparse.Namespace) -> int:
    from engramrag.decisions.store import DecisionsStore

    home = Home.at(args.home)
    left, right = _review_keys(home, args)
    verdict = DecisionsStore.for_home(home).decide(args.topic, left, right, args.verdict, args.by, note=args.note)
    return _print_verdict(args, verdict, "recorded")


def _review_keys(home: Home, args: argparse.Namespace) -> tuple[str, str]:
    """Merge verdicts are about stable keys (normalised labels); a label as written is accepted and normalised,
    and a key no live document mentions is refused rather than recorded to no effect."""
    if args.topic != "merge":
        return args.left, args.right
    from engramrag.catalog.connection import catalog_reader
    from engramrag.extract.textutil import normalise_label

    left, right = normalise_label(args.left), normalise_label(args.right)
    with catalog_reader(home) as catalog:
        labels = catalog.execute(
            "SELECT DISTINCT e.label FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone"
        ).fetchall() if catalog else []
    known = {normalise_label(label) for (label,) in labels}
    unknown = [key for key in (left, right) if key not in known]
    if unknown:
        raise LookupError(
            f"no live document mentions {', '.join(map(repr, unknown))} in {home.root}; "
            "see `engram review list` for the keys of candidate pairs"
        )
    return left, right


def _review_undo(args: argparse.Namespace) -> int:
    from engramrag.decisions.store import DecisionsStore

    home = Home.at(args.home)
    store = DecisionsStore.for_home(home)
    if args.topic == "merge":
        from engramrag.extract.textutil import normalise_label

        args.left, args.right = normalise_label(args.left), normalise_label(args.right)
    undone = store.undo(args.topic, args.left, args.right, args.by)
    if undone is None:
        print(f"engram: {args.left!r} and {args.right!r} have no {args.topic} verdict to undo", file=sys.stderr)
        return 1
    _print_verdict(args, undone, "undone")
    now = store.current_for(args.topic, args.left, args.right)
    if not args.json:
        print(f"now current: {now.verdict + ' by ' + now.operator if now else 'no verdict'}")
    return 0


def _print_verdict(args: argparse.Namespace, verdict, what: str) -> int:
    import dataclasses

    if args.json:
        print(json.dumps({"action": what, **dataclasses.asdict(verdict)}, indent=2, ensure_ascii=False, default=str))
        return 0
    print(f"{what}: {verdict.left_key!r} {verdict.verdict} {verdict.right_key!r} by {verdict.operator} "
          f"at {verdict.decided_at} (verdict {verdict.id})")
    print(f"it takes effect at the next {_build_command(Home.at(args.home))} (or the decisions sensor's run)")
    return 0


def _build_command(home: Home) -> str:
    """The full command that rebuilds this home (its vault is remembered by the last build)."""
    from engramrag.catalog.connection import remembered_vault

    vault = shlex.quote(str(remembered_vault(home) or "VAULT"))
    return f"`engram build --vault {vault} --home {shlex.quote(str(home.root))}`"


def _review_history(args: argparse.Namespace) -> int:
    import dataclasses

    from engramrag.decisions.store import DecisionsStore

    rows = DecisionsStore.for_home(Home.at(args.home)).history(args.topic, args.key)
    if args.json:
        print(json.dumps([dataclasses.asdict(row) for row in rows], indent=2, ensure_ascii=False, default=str))
        return 0
    for row in rows:
        undone = f"  UNDONE {row.undone_at} by {row.undone_by}" if row.undone_at else ""
        replaced = f" (replaced verdict {row.replaces})" if row.replaces else ""
        print(f"#{row.id} {row.decided_at} {row.operator}: {row.left_key!r} {row.verdict} {row.right_key!r}"
              f"{replaced}{undone}")
    if not rows:
        print("no verdicts recorded")
    return 0


# Notices meant for Dagster's developers, not for a person opening the UI: `dagster dev` is superseded by `dg dev`
# (a separate package), and `backfill_policy` on assets is marked beta. Each `-W`-style filter matches the start
# of a message; the webserver and code server inherit them.
DAGSTER_NOTICES = (
    "ignore:Function `dev_command` is superseded",
    "ignore:Parameter `backfill_policy` of function",
)


def _dev(args: argparse.Namespace) -> int:
    from pipelines.instance import WORKSPACE, prepare_instance

    home = Home.at(args.home)
    prepare_instance(home)
    environment = {
        **os.environ,
        "ENGRAM_HOME": str(home.root),
        "ENGRAM_VAULT": str(Path(args.vault).resolve()),
        "DAGSTER_HOME": str(home.dagster_home),
        "PYTHONWARNINGS": ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), *DAGSTER_NOTICES])),
    }
    command = [sys.executable, "-m", "dagster", "dev", "-w", str(WORKSPACE), "-p", args.port]
    logging.getLogger(__name__).info("running %s", " ".join(command))
    # Run from the instance folder, not the repository: `dagster dev` would load the repository's .env, whose
    # defaults (.engram, examples/vault) would override the home and vault chosen here.
    return subprocess.call(command, env=environment, cwd=home.dagster_home)


if __name__ == "__main__":
    run()
