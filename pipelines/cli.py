"""The `engram` command."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

from engramrag.store import Home, StoreBusy


def main(argv: list[str] | None = None) -> int:
    # Dagster flags the beta/preview parameters we use (single-run backfills, pools); users need not see that.
    warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except StoreBusy as busy:
        print(f"engram: {busy}", file=sys.stderr)
        return 3
    except (FileNotFoundError, ValueError, LookupError, RuntimeError) as problem:
        print(f"engram: {problem}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engram", description="EngramRAG: a memory your agents can trust.")
    commands = parser.add_subparsers(dest="command")

    build = commands.add_parser("build", help="Build or update the stores from a vault through Dagster.")
    build.add_argument("--vault", default=os.environ.get("ENGRAM_VAULT"), help="The Markdown vault folder.")
    _home(build)
    build.add_argument("--extractor", default=os.environ.get("ENGRAM_EXTRACTOR", "rules"), help="Extractor.")
    build.add_argument(
        "--embedder", default=os.environ.get("ENGRAM_EMBEDDER", "hash"), help="Embedder: hash (offline) or openai."
    )
    build.add_argument("--full", action="store_true", help="Run every bucket and re-hash every file.")
    build.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    build.set_defaults(handler=_build)

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
    search.add_argument("--json", action="store_true", help="Print results, context and warnings as JSON.")
    search.set_defaults(handler=_search)

    dev = commands.add_parser("dev", help="Open the Dagster UI on this home's instance (dagster dev).")
    _home(dev)
    dev.add_argument("--vault", default=os.environ.get("ENGRAM_VAULT", "examples/vault"))
    dev.add_argument("--port", default="3000")
    dev.set_defaults(handler=_dev)
    return parser


def _home(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=os.environ.get("ENGRAM_HOME", ".engram"), help="Home folder of the stores.")


def _build(args: argparse.Namespace) -> int:
    if not args.vault:
        print("engram: pass --vault DIR (or set ENGRAM_VAULT).", file=sys.stderr)
        return 2
    from engramrag.lifecycle.summary import read_status
    from pipelines.build import run_build
    from pipelines.progress import progress_display

    home = Home.at(args.home)
    vault = Path(args.vault).expanduser().resolve()
    with progress_display(enabled=not args.json and sys.stderr.isatty()):
        outcome = run_build(home, vault, extractor=args.extractor, full=args.full, embedder=args.embedder)
    status = read_status(home)
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
    checks_ok = all(outcome.checks.values())
    return 0 if outcome.success and checks_ok else 1


def _print_build(summary: dict) -> None:
    last = summary["last_build"] or {}
    print(
        f"built {summary['documents']} documents: {last.get('extracted', 0)} extracted, "
        f"{last.get('unchanged', 0)} unchanged, {last.get('deleted', 0)} deleted, "
        f"{last.get('rejected', 0)} rejected, {last.get('failed', 0)} failed "
        f"({len(summary['buckets'])} buckets run)"
    )
    print(f"stores: {summary['quads']:,} quads, {summary['statements']:,} statements  [run {summary['run_id']}]")
    for name, passed in summary["checks"].items():
        print(f"  check {name}: {'passed' if passed else 'FAILED'}")
    for item in summary["rejected_documents"]:
        print(f"  rejected {item['message']}", file=sys.stderr)
    for item in summary["failed_documents"]:
        print(f"  failed {item['path']}: {item['error']} (retried on the next build)", file=sys.stderr)
    for error in summary["errors"]:
        print(f"  error: {error}", file=sys.stderr)


def _search(args: argparse.Namespace) -> int:
    import dataclasses

    from engramrag.retrieve import RetrievalConfig, search

    if args.k < 1:
        print("engram: -k must be at least 1", file=sys.stderr)
        return 2
    config = RetrievalConfig()
    if args.budget:
        config = dataclasses.replace(config, context_chars=args.budget)
    answer = search(args.query, Home.at(args.home), mode=args.mode, k=args.k, config=config)
    if args.json:
        print(json.dumps(answer.to_json(), indent=2, ensure_ascii=False))
        return 0
    for warning in answer.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for rank, hit in enumerate(answer.results, 1):
        legs = " ".join(f"{leg}={value:.3g}" for leg, value in hit.legs.items() if value)
        print(f"{rank:>2}. {hit.doc}  {hit.title}  score={hit.score:.4g}  [{legs}]")
    print()
    print(answer.context)
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
        print(
            f"last build {last['finished_at']}: {last['extracted']} extracted, {last['unchanged']} unchanged, "
            f"{last['deleted']} deleted, {last['rejected']} rejected, {last['failed']} failed"
        )
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


def _dev(args: argparse.Namespace) -> int:
    from pipelines.instance import WORKSPACE, prepare_instance

    home = Home.at(args.home)
    prepare_instance(home)
    environment = {
        **os.environ,
        "ENGRAM_HOME": str(home.root),
        "ENGRAM_VAULT": str(Path(args.vault).resolve()),
        "DAGSTER_HOME": str(home.dagster_home),
    }
    command = [sys.executable, "-m", "dagster", "dev", "-w", str(WORKSPACE), "-p", args.port]
    logging.getLogger(__name__).info("running %s", " ".join(command))
    # Run from the instance folder, not the repository: `dagster dev` would load the repository's .env, whose
    # defaults (.engram, examples/vault) would override the home and vault chosen here.
    return subprocess.call(command, env=environment, cwd=home.dagster_home)


if __name__ == "__main__":
    sys.exit(main())
