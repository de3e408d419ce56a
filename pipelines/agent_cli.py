"""`engram agent ...` and `engram mcp`: the agent tools from a shell, and the MCP server that serves them.

A person uses these to decide what agents proposed (confirm, refuse, approve a learned note), to audit every
confirmation row, and to rewind; an agent without MCP uses the same operations (search, read, query, write,
edit, learn, remember) through the same :class:`engramrag.agent.workspace.Workspace`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engramrag.agent.display import safe_json, safe_text
from engramrag.store import Home
from pipelines.cli_options import home_option as _home
from pipelines.cli_options import operator_option as _operator
from pipelines.cli_options import vault_option as _vault


def add_commands(commands: Any) -> None:
    """Register `engram mcp` and `engram agent ...` on the top-level subparsers."""
    mcp = commands.add_parser("mcp", help="Serve the agent tools over MCP (stdio by default, or streamable HTTP).")
    _home(mcp)
    _vault(mcp)
    _agent_settings(mcp)
    mcp.add_argument(
        "--repo", action="append", default=[],
        help="Also answer the decision graph's questions about this git repository (repeatable; ingest it first "
        "with `engram git ingest REPO`).",
    )
    mcp.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP only: the address to listen on (default 127.0.0.1).")
    mcp.add_argument("--port", type=int, default=8765, help="HTTP only: the port (default 8765); path /mcp.")
    mcp.add_argument(
        "--http-token-file", type=Path,
        help="HTTP only: the bearer token every request must carry, read from this file (else ENGRAM_MCP_TOKEN, "
        "else a new token is printed at start).",
    )
    mcp.add_argument(
        "--operator-token-file", type=Path,
        help="A secret (file mode 600, not readable by the agent) that a person may type into the confirm tool's "
        "question instead of a one-time code from `engram agent code`.",
    )
    mcp.set_defaults(handler=_mcp)

    agent = commands.add_parser("agent", help="Agent writes and memory: confirmations, checkpoints, notes, tools.")
    actions = agent.add_subparsers(dest="action")

    listing = actions.add_parser("confirmations", help="Every confirmation row with all bound fields (the audit).")
    listing.add_argument("--status", choices=["pending", "approved", "refused", "executed", "failed"])
    _home(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_confirmations)

    show = actions.add_parser("show", help="One confirmation: what it binds and its diff.")
    show.add_argument("confirmation_id")
    _home(show)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)

    code = actions.add_parser(
        "code", help="Print a one-time code that proves to the MCP confirm tool that a person answers.",
    )
    code.add_argument("confirmation_id", help="The confirmation the code answers; its whole change is shown first.")
    code.add_argument("--ttl", type=float, default=300.0, help="Seconds the code stays valid (default 300).")
    _operator(code)
    _home(code)
    code.add_argument("--json", action="store_true")
    code.set_defaults(handler=_code)

    for name, approve, text in (
        ("confirm", True, "Approve a pending write; it is carried out at once, exactly as bound."),
        ("refuse", False, "Refuse a pending write; the refusal is recorded on the same row."),
    ):
        decide = actions.add_parser(name, help=text)
        decide.add_argument("confirmation_id")
        _operator(decide)
        _home(decide)
        _vault(decide)
        decide.add_argument("--json", action="store_true")
        decide.set_defaults(handler=_decide, approve=approve)

    points = actions.add_parser("checkpoints", help="Checkpoints taken before agent writes.")
    _home(points)
    points.add_argument("--json", action="store_true")
    points.set_defaults(handler=_checkpoints)

    rewind = actions.add_parser("rewind", help="Restore the files a checkpointed write changed.")
    rewind.add_argument("checkpoint_id")
    rewind.add_argument("--force", action="store_true", help="Also when a person edited a file since (loses it).")
    _operator(rewind)
    _home(rewind)
    _vault(rewind)
    rewind.add_argument("--json", action="store_true")
    rewind.set_defaults(handler=_rewind)

    notes = actions.add_parser(
        "notes", help="Learned notes waiting for approval: full text, each quote checked now, the hash to approve."
    )
    _home(notes)
    _vault(notes)
    notes.add_argument("--json", action="store_true")
    notes.set_defaults(handler=_notes, path=None)
    one = actions.add_parser("note", help="One held learned note as `notes` shows it.")
    one.add_argument("path", help="The note's vault-relative path, e.g. learned/some-note.md.")
    _home(one)
    _vault(one)
    one.add_argument("--json", action="store_true")
    one.set_defaults(handler=_notes)

    shown = actions.add_parser("policy", help="The write policy in force: where it is read from, its rules, version.")
    _home(shown)
    _vault(shown)
    _agent_settings(shown)
    shown.add_argument("--version", dest="policy_version", help="Print the policy text a row's version names.")
    shown.add_argument("--json", action="store_true")
    shown.set_defaults(handler=_policy)
    for name, text in (
        ("approve", "Approve a learned note: it joins the graph on the next build."),
        ("reject", "Reject a learned note: it stays out of the graph."),
    ):
        verdict = actions.add_parser(name, help=text)
        verdict.add_argument("path", help="The note's vault-relative path, e.g. learned/some-note.md.")
        verdict.add_argument("--note", default="", help="Why (kept with the approval).")
        if name == "approve":
            verdict.add_argument(
                "--hash", required=True, dest="shown_hash",
                help="The hash `engram agent notes` printed for the version you read; other bytes are refused.",
            )
        _operator(verdict)
        _home(verdict)
        _vault(verdict)
        verdict.add_argument("--json", action="store_true")
        verdict.set_defaults(handler=_note_verdict, approve=name == "approve")

    procedures = actions.add_parser("procedures", help="Procedural memory: what the user confirmed about how to work.")
    procedures.add_argument("--all", action="store_true", help="Include retired procedures.")
    procedures.add_argument("--wrapped", action="store_true", help="Print them exactly as a model is shown them.")
    _home(procedures)
    procedures.add_argument("--json", action="store_true")
    procedures.set_defaults(handler=_procedures)
    retire = actions.add_parser("retire", help="Retire a procedure (kept in the history, no longer shown).")
    retire.add_argument("procedure_id")
    _operator(retire)
    _home(retire)
    retire.add_argument("--json", action="store_true")
    retire.set_defaults(handler=_retire)

    _tool_commands(actions)
    agent.set_defaults(handler=lambda _args: (agent.print_help(), 2)[1])


def _tool_commands(actions: Any) -> None:
    """The agent tools themselves, for agents (or people) without an MCP client."""
    search = actions.add_parser("search", help="Search as the MCP tool does (JSON).")
    search.add_argument("query")
    search.add_argument("--mode", choices=["full", "auto_turn"], default="full")
    search.add_argument("-k", type=int, default=8)
    _tool(search, lambda ws, a: ws.search(a.query, a.mode, a.k))

    read = actions.add_parser("read", help="A document or a line range of it, with its statements (JSON).")
    read.add_argument("path")
    read.add_argument("--lines", help="START-END, 1-based and inclusive, e.g. 10-24.")
    _tool(read, lambda ws, a: ws.read(a.path, *_line_range(a.lines)))

    query = actions.add_parser("query", help="Read-only SPARQL over the document graphs (JSON).")
    query.add_argument("sparql", help="The query, or @FILE to read it from a file.")
    query.add_argument("--limit", type=int, default=200)
    query.add_argument("--timeout", type=float, default=10.0, help="Seconds before the query is stopped.")
    _tool(query, lambda ws, a: ws.query_graph(_text(a.sparql), a.limit, a.timeout))

    write = actions.add_parser("write", help="Propose creating or replacing a note (pending confirmation).")
    write.add_argument("path")
    write.add_argument("content", help="The new content, or @FILE.")
    _narrowing(write)
    _tool(write, lambda ws, a: ws.write(a.path, _text(a.content), _domain(a)))

    edit = actions.add_parser("edit", help="Propose front-matter and section changes (pending confirmation).")
    edit.add_argument("path")
    edit.add_argument("--field", action="append", default=[], metavar="NAME=YAML", help="Set a front-matter field.")
    edit.add_argument(
        "--section", action="append", default=[], metavar="HEADING=TEXT|@FILE",
        help="Replace the text under a heading (the heading stays).",
    )
    _narrowing(edit)
    _tool(edit, lambda ws, a: ws.edit(
        a.path,
        _assignments(a.field, "--field takes NAME=VALUE", _yaml_value),
        _assignments(a.section, "--section takes HEADING=TEXT (or HEADING=@FILE)", _text),
        _domain(a),
    ))

    learn = actions.add_parser("learn", help="Record a verified note in learned/ (held until approved).")
    learn.add_argument("title")
    learn.add_argument("body", help="The note's body, or @FILE.")
    learn.add_argument(
        "--source", action="append", default=[], metavar="PATH[::QUOTE]", help="A cited document and exact quote."
    )
    _tool(learn, lambda ws, a: ws.learn(a.title, _text(a.body), _sources(a.source)))

    remember = actions.add_parser("remember", help="Propose a procedure for procedural memory (always confirmed).")
    remember.add_argument("text")
    remember.add_argument("--kind", choices=["preference", "project", "practice"], default="preference")
    remember.add_argument("--source", action="append", default=[], help='"user", "vault:PATH#L12" or "url:...".')
    _tool(remember, lambda ws, a: ws.remember_procedure(a.text, a.kind, a.source or ["user"]))


def _tool(parser: argparse.ArgumentParser, operation: Any) -> None:
    _home(parser)
    _vault(parser)
    _agent_settings(parser)
    parser.add_argument("--json", action="store_true", help="Accepted for symmetry: the tools always print JSON.")
    parser.set_defaults(handler=lambda args: _run_tool(args, operation))


def _run_tool(args: argparse.Namespace, operation: Any) -> int:
    workspace = _workspace(args)
    try:
        _print_json(operation(workspace, args))
    finally:
        workspace.close()
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from engramrag.agent import http_auth
    from engramrag.agent.mcp_server import build_server
    from engramrag.agent.operators import OperatorToken

    token = OperatorToken.from_file(args.operator_token_file) if args.operator_token_file else None
    workspace = _workspace(args)
    server = build_server(workspace, repos=[Path(repo) for repo in args.repo], operator_token=token)
    print(
        f"engram mcp: serving {workspace.vault} (home {workspace.home.root}) as {workspace.config.agent}, "
        f"mode {workspace.config.mode}, over {args.transport}"
        + (f" at http://{args.host}:{args.port}/mcp" if args.transport != "stdio" else "")
        + ("; confirm accepts the operator token" if token else "; confirm accepts one-time codes only"),
        file=sys.stderr,
    )
    if args.transport != "stdio" and not http_auth.is_loopback(args.host):
        print(f"engram mcp: WARNING: listening on {args.host}, not a loopback address: other machines can reach "
              "this server. Every request still needs the bearer token, but it travels unencrypted; put a TLS proxy "
              "in front or bind to 127.0.0.1.", file=sys.stderr)
    bearer = _http_token(args) if args.transport != "stdio" else None
    try:
        if bearer is None:
            server.run("stdio")
        else:
            http_auth.serve(server, args.host, args.port, bearer)
    finally:
        workspace.close()
    return 0


def _http_token(args: argparse.Namespace) -> str:
    """The bearer token: from --http-token-file, else ENGRAM_MCP_TOKEN, else a new one printed for the operator."""
    import os

    from engramrag.agent import http_auth

    if args.http_token_file:
        return args.http_token_file.read_text(encoding="utf-8").strip()
    if os.environ.get("ENGRAM_MCP_TOKEN"):
        return os.environ["ENGRAM_MCP_TOKEN"].strip()
    token = http_auth.new_token()
    print(f"engram mcp: HTTP bearer token (give it to the agent's MCP client as `Authorization: Bearer ...`): "
          f"{token}", file=sys.stderr, flush=True)
    return token


def _code(args: argparse.Namespace) -> int:
    from engramrag.agent import confirmations, operators

    home = Home.at(args.home)
    row = confirmations.get(home, args.confirmation_id)
    issued = operators.issue_code(home, args.by, args.confirmation_id, args.ttl)
    if args.json:
        _print_json({"code": issued.code, "id": issued.id, "operator": issued.operator,
                     "confirmation_id": issued.confirmation_id, "expires_at": issued.expires_at})
        return 0
    _print_row(row.audit())
    print()
    print(safe_text(f"one-time code for {issued.operator} (for {args.confirmation_id} only, single use, valid until "
                    f"{issued.expires_at}):"))
    print(f"    {issued.code}")
    print("Type it into the confirm question your MCP client shows. Never paste it into the chat with the agent.")
    return 0


def _confirmations(args: argparse.Namespace) -> int:
    from engramrag.agent import confirmations

    rows = confirmations.confirmations(Home.at(args.home))
    rows = [row for row in rows if not args.status or row["status"] == args.status]
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no confirmations" + (f" with status {args.status}" if args.status else ""))
    for row in rows:
        how = f" ({row['operator_auth']})" if row.get("operator_auth") else ""
        decided = f" by {row['operator']}{how} at {row['decided_at']}" if row["operator"] else ""
        print(safe_text(f"{row['id']}  {row['status']:<8} {row['tool']:<18} {row['relative_path']}  expires "
                        f"{row['expires_at']}{decided}"))
        print("    " + safe_text(row["summary"]).replace("\n", "\n    "))
        if row["last_refusal"]:
            print(f"    last refusal: {safe_text(row['last_refusal'])}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from engramrag.agent import confirmations

    row = confirmations.get(Home.at(args.home), args.confirmation_id).audit()
    if args.json:
        _print_json(row)
        return 0
    _print_row(row)
    return 0


def _print_row(row: dict[str, Any]) -> None:
    """Every bound field and the whole diff, with agent text's control characters shown as escapes."""
    for key in ("id", "status", "tool", "agent", "mode", "relative_path", "real_path", "vault_id", "prior_state",
                "arguments_hash", "issued_at", "expires_at", "policy_version", "operator", "operator_auth",
                "decided_at", "executed_at", "checkpoint_id", "last_refusal"):
        print(f"{key:>15}: {safe_text(row.get(key))}")
    domain = "unconstrained" if row["domain_unconstrained"] else json.dumps(row["domain"], ensure_ascii=False)
    print(f"{'domain':>15}: {safe_text(domain)}")
    print(f"{'summary':>15}: {safe_text(row['summary'])}")
    print()
    print(safe_text(row["diff"]) if row["diff"] else "(no diff)")


def _decide(args: argparse.Namespace) -> int:
    from engramrag.agent.operators import AUTH_CLI
    from engramrag.agent.workspace import Workspace

    workspace = Workspace(Home.at(args.home), _require_vault(args))
    result = workspace.decide(args.confirmation_id, args.approve, args.by, AUTH_CLI)
    if args.json:
        _print_json(result)
    elif result["status"] == "executed":
        where = result.get("path") or result.get("procedure", {}).get("id")
        checkpoint = result.get("checkpoint_id")
        checkpoint = f"; rewind with `engram agent rewind {checkpoint}`" if checkpoint else ""
        print(safe_text(f"{args.confirmation_id} approved by {args.by} and carried out: {where}{checkpoint}"))
    else:
        print(f"{args.confirmation_id} refused by {args.by}; nothing was written")
    return 0


def _checkpoints(args: argparse.Namespace) -> int:
    from engramrag.agent import checkpoints

    rows = checkpoints.checkpoints(Home.at(args.home))
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no checkpoints")
    for row in rows:
        state = f"rewound by {row['rewound_by']} at {row['rewound_at']}" if row["rewound_at"] else "live"
        files = ", ".join(entry["path"] for entry in row["files"])
        print(safe_text(f"{row['id']}  {row['created_at']}  {row['confirmation_id']}  {state}  {files}"))
    return 0


def _rewind(args: argparse.Namespace) -> int:
    from engramrag.agent import checkpoints

    result = checkpoints.rewind(Home.at(args.home), _require_vault(args), args.checkpoint_id, args.by, args.force)
    if args.json:
        _print_json(result)
    else:
        files = ", ".join(entry["path"] for entry in result["files"])
        print(safe_text(f"rewound {args.checkpoint_id}: {files}. Run `engram build` to update the graph."))
    return 0


def _notes(args: argparse.Namespace) -> int:
    from engramrag.agent import note_review

    rows = note_review.pending_notes(Home.at(args.home), _require_vault(args))
    if args.path is not None:
        wanted = args.path.strip().lstrip("./")
        rows = [row for row in rows if row["path"] == wanted]
        if not rows:
            raise LookupError(f"{wanted} is not a learned note waiting for approval; see `engram agent notes`")
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no learned notes wait for approval")
    for row in rows:
        print(safe_text(f"=== {row['path']}  {row.get('title', '')!r}  by {row.get('author') or '?'}"))
        print(f"    hash {row['hash']}")
        for index, source in enumerate(row["sources"], 1):
            verdict = {True: "verbatim in the source now", False: "NOT verbatim in the source now",
                       None: "not quoted"}[source["verbatim"]]
            problem = f" ({source['problem']})" if source.get("problem") and source["verbatim"] is not None else ""
            where = f"{source['path']}:{source['found_line']}" if source.get("found_line") else source["path"]
            print(safe_text(f"    source {index}: {where}: {verdict}{problem}"))
            if source.get("quote"):
                print(f"        {safe_text(str(source['quote']))}")
        print("    --- the note, exactly as it is on disk ---")
        for line in row["body"].splitlines():
            print(f"    | {safe_text(line)}")
        print("    ---")
        for warning in row.get("warnings") or []:
            print(safe_text(f"    warning: reads like an instruction to a model: {warning}"))
        if row["quote_problem"]:
            print(safe_text(f"    cannot be approved: {row['quote_problem']}"))
        else:
            print(f"    approve this version: engram agent approve {row['path']} --hash {row['hash']} --by NAME")
    return 0


def _policy(args: argparse.Namespace) -> int:
    from engramrag.agent import policy

    home = Home.at(args.home)
    if args.policy_version:
        recorded = policy.recorded(home, args.policy_version)
        if recorded is None:
            raise LookupError(f"no policy version {args.policy_version} is recorded in this home")
        if args.json:
            _print_json(recorded)
        else:
            print(json.dumps(recorded, indent=2, ensure_ascii=False))
        return 0
    workspace = _workspace(args)
    current = workspace.policy()
    rules = current.rules
    described = {
        "version": current.version,
        "source": rules.source,
        "file": rules.file,
        "mode": current.mode,
        "window_s": current.window_s,
        "trusted_paths": list(current.trusted_paths),
        "confirmers": list(rules.confirmers) or "any person",
        "rules": [
            {"paths": list(rule.paths), "fields": sorted(rule.fields), "sections": sorted(rule.sections),
             "confirmers": list(rule.confirmers) or "policy default"}
            for rule in rules.rules
        ],
    }
    if args.json:
        _print_json(described)
    else:
        print(f"policy {current.version} ({rules.source}{': ' + str(rules.file) if rules.file else ''})")
        if rules.built_in:
            print("  no policy file: every path is writable, unconstrained, any person confirms")
        for rule in described["rules"]:
            print(f"  {', '.join(rule['paths'])}: fields {rule['fields'] or 'none'}; sections "
                  f"{rule['sections'] or 'none'}; confirmers {rule['confirmers']}")
    return 0


def _note_verdict(args: argparse.Namespace) -> int:
    from engramrag.agent import approvals, note_review

    home, vault = Home.at(args.home), _require_vault(args)
    if args.approve:
        result = note_review.approve_note(home, vault, args.path, args.by, args.shown_hash, args.note)
    else:
        result = approvals.reject_note(home, vault, args.path, args.by, args.note)
    if args.json:
        _print_json(result)
    else:
        what = "approved; it joins the graph on the next build" if args.approve else "rejected; it stays out"
        print(f"{args.path} {what}")
    return 0


def _procedures(args: argparse.Namespace) -> int:
    from engramrag.agent import procedures

    items = procedures.procedures(Home.at(args.home), include_retired=args.all)
    if args.json:
        _print_json(items)
    elif args.wrapped:
        print(procedures.render_for_model(items))
    else:
        if not items:
            print("no procedures")
        for item in items:
            retired = f" (retired by {item['retired_by']})" if item.get("retired_at") else ""
            print(safe_text(f"{item['id']}  [{item['kind']}] {item['text']}  — confirmed by "
                            f"{item.get('confirmed_by')}{retired}"))
    return 0


def _retire(args: argparse.Namespace) -> int:
    from engramrag.agent import procedures

    result = procedures.retire_procedure(Home.at(args.home), args.procedure_id, args.by)
    if args.json:
        _print_json(result)
    else:
        print(f"{args.procedure_id} retired by {args.by}")
    return 0


# arguments ----------------------------------------------------------------------------------------


def _workspace(args: argparse.Namespace) -> Any:
    from engramrag.agent.workspace import AgentConfig, Workspace

    config = AgentConfig.from_environment(
        agent=args.agent, mode=args.permission, trusted_paths=tuple(args.trusted) if args.trusted else None,
        query_memory_mb=args.query_memory_mb,
    )
    return Workspace(Home.at(args.home), _require_vault(args), config)


def _require_vault(args: argparse.Namespace) -> Path:
    if not args.vault:
        raise ValueError("which vault? pass --vault DIR or set ENGRAM_VAULT")
    return Path(args.vault)


def _line_range(text: str | None) -> tuple[int | None, int | None]:
    if not text:
        return None, None
    start, _, end = text.partition("-")
    try:
        return int(start), int(end) if end else int(start)
    except ValueError:
        raise ValueError(f"--lines takes START-END (e.g. 10-24), not {text!r}") from None


def _text(value: str) -> str:
    if value.startswith("@"):
        return Path(value[1:]).read_text(encoding="utf-8")
    return value


def _assignments(items: list[str], usage: str, value_of: Callable[[str], Any]) -> dict[str, Any]:
    """``NAME=VALUE`` options as a mapping, each value read by ``value_of``; ``usage`` leads the error message."""
    assigned = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{usage}, not {item!r}")
        assigned[name.strip()] = value_of(value)
    return assigned


def _yaml_value(value: str) -> Any:
    import yaml

    return yaml.safe_load(value)


def _narrowing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-field", action="append", default=[], metavar="NAME",
        help="Allow only these front-matter fields to change (repeatable); never more than the write policy allows.",
    )
    parser.add_argument(
        "--allow-section", action="append", default=[], metavar="HEADING",
        help="Allow only these sections to change (repeatable); never more than the write policy allows.",
    )


def _domain(args: argparse.Namespace) -> Any:
    from engramrag.agent.domains import FieldDomain

    if not args.allow_field and not args.allow_section:
        return None
    return FieldDomain(frozenset(args.allow_field), frozenset(args.allow_section))


def _sources(items: list[str]) -> list[dict[str, str]]:
    sources = []
    for item in items:
        path, _, quote = item.partition("::")
        sources.append({"path": path, "quote": quote} if quote else {"path": path})
    return sources


def _print_json(value: Any) -> None:
    print(safe_json(json.dumps(value, indent=2, ensure_ascii=False, default=str)))


def _agent_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", help="The agent's name on its records (default ENGRAM_AGENT or agent:mcp).")
    parser.add_argument("--permission", choices=["read-only", "confirm-each-write", "trusted-paths"],
                        help="Permission mode (default ENGRAM_AGENT_MODE or confirm-each-write).")
    parser.add_argument("--trusted", action="append", help="A trusted folder for trusted-paths mode (repeatable).")
    parser.add_argument("--query-memory-mb", type=int,
                        help="Memory one query_graph query may take, in MiB (default 1024); past it, it is refused.")
