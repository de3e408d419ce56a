"""Ingesting a git repository into the decision graph, incrementally.

The first ingest walks the whole history (parents before children). A later one walks only
``git rev-list LAST..HEAD`` (LAST is the HEAD ingested before), starting from the state the store holds; when
LAST is no longer in HEAD's history (a rebase, a force-push) the repository is ingested again from scratch and
the log says why. Git is read with no lock held; the store is written in one transaction under the writer
lock, after checking that no other ingest of the same repository got there first.

For each commit: the commit, its people and file changes; for each decision file it changed, the records of
the new version (one row per record: the versions), with whether the record's text changed from the parent
version (from every parent, for a merge), the supersession references it writes, the files it names, and the
same-day conflicts it is part of at that point; for each instruction file it changed, the sections of the new
version. Files changed together with a record become ``changed-with-record`` rationale, unless the commit is a
merge (it brings a whole branch) or changes more than ``MAX_COMPANIONS`` files (a reformat says nothing about
one decision). After the walk: the tree at HEAD, references resolved again (a record may name one written
later), supersession links, the conflict flags of the records current at HEAD, and the blame of the decision
files the new commits changed.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

import duckdb

from engramrag.gitgraph.blame import blame_lines
from engramrag.gitgraph.gitcli import BlobReader, Git, GitError
from engramrag.gitgraph.history import Commit, Person, full_name, person_key, read_history
from engramrag.gitgraph.instructions import instruction_scope, sections
from engramrag.gitgraph.records import (
    Dated,
    PathIndex,
    Record,
    is_decision_candidate,
    is_live,
    named_files,
    read_records,
    same_day_conflicts,
)
from engramrag.gitgraph.store import (
    delete_repository,
    gitgraph_reader,
    gitgraph_writer,
    insert_rows,
    repo_id,
)
from engramrag.progress import Progress
from engramrag.revise.references import ReferenceIndex
from engramrag.revise.supersession import decision_key
from engramrag.store import Home

MAX_COMPANIONS = 20
# A commit that changes more records than this at once (an import of an ADR folder, a sweep that renumbers or
# fixes titles) is editing the records, not deciding about the files beside them: no changed-with-record
# rationale. Two: a new decision and the one it supersedes.
MAX_COMPANION_RECORDS = 2
ATTEMPTS = 3


@dataclass(frozen=True)
class IngestSummary:
    repo_id: str
    path: str
    mode: str  # "full" | "incremental" | "rewritten" | "unchanged" | "empty"
    from_sha: str | None
    to_sha: str | None
    commits_added: int
    decision_versions: int
    instruction_versions: int
    seconds: float
    note: str = ""


class ConcurrentIngest(RuntimeError):
    """Another ingest of the same repository wrote the store while this one was reading git."""


def ingest(
    repo_path: str | os.PathLike[str], home: Home | str | os.PathLike[str], progress: bool = True
) -> IngestSummary:
    """Bring the store up to date with the repository's HEAD; see the module docstring for what is read."""
    home = home if isinstance(home, Home) else Home.at(home)
    named = Git(repo_path)
    if not named.repo.is_dir() or not named.is_repository():
        raise GitError(f"{named.repo} is not a git repository (no .git found); pass the folder of a clone.")
    git = Git(named.toplevel())
    for attempt in range(ATTEMPTS):
        try:
            return _ingest_once(git, home, progress)
        except ConcurrentIngest:
            if attempt + 1 == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _ingest_once(git: Git, home: Home, progress: bool) -> IngestSummary:
    started = time.monotonic()
    repo = repo_id(git.repo)
    head = git.head()
    with gitgraph_reader(home) as reader:
        last = _last_head(reader, repo)
        unchanged = head is None or head == last
        incremental = not unchanged and last is not None and git.has_commit(last) and git.is_ancestor(last, head)
        state = _load_state(reader, repo, git, last) if incremental else _State()
    if unchanged:
        return _record_run(home, repo, git, last, head, started)
    if incremental:
        mode, revisions, note = "incremental", [f"^{last}", head], ""
    elif last is None:
        mode, revisions, note = "full", [head], ""
    else:
        mode, revisions = "rewritten", [head]
        note = f"{last[:12]} is no longer in the history of HEAD (rebased or force-pushed): ingested from scratch"
    shas = git.rev_list(revisions)
    walk = _Walk(git, repo, state)
    meter = Progress("git commits", len(shas)) if progress else None
    with git.blobs() as blobs:
        walk.blobs = blobs
        for commit in read_history(git, revisions, shas):
            walk.add(commit)
            if meter is not None:
                meter.advance()
        tree = git.tree(head)
        blame = _blame(git, head, tree, walk, blobs, full=not incremental)
    stale = walk.flag_current(tree)
    with gitgraph_writer(home) as writer:
        if _last_head(writer, repo) != last:
            raise ConcurrentIngest(f"{git.repo} was ingested by another run meanwhile")
        writer.execute("BEGIN TRANSACTION")
        try:
            if not incremental:
                delete_repository(writer, repo)
            walk.write(writer)
            _replace_head(writer, repo, tree)
            _resolve_pending(writer, repo, walk)
            _rebuild_links(writer, repo)
            _update_flags(writer, repo, stale)
            _replace_blame(writer, repo, blame)
            total = state.commits + len(shas)
            summary = IngestSummary(
                repo, str(git.repo), mode, last, head, len(shas), walk.decision_versions,
                walk.instruction_versions, time.monotonic() - started, note,
            )  # fmt: skip
            _finish(writer, summary, total)
            writer.execute("COMMIT")
        except BaseException:
            writer.execute("ROLLBACK")
            raise
    return summary


def _record_run(home: Home, repo: str, git: Git, last: str | None, head: str | None, started: float) -> IngestSummary:
    """Nothing new (or nothing at all): the run is still logged, with no commit read."""
    mode = "empty" if head is None else "unchanged"
    note = "the repository has no commits" if head is None else "no new commits since the last ingest"
    with gitgraph_writer(home) as writer:
        commits = writer.execute("SELECT commits FROM repos WHERE repo_id = ?", [repo]).fetchone()
        summary = IngestSummary(repo, str(git.repo), mode, last, head, 0, 0, 0, time.monotonic() - started, note)
        _finish(writer, summary, commits[0] if commits else 0)
    return summary


def _last_head(connection: duckdb.DuckDBPyConnection | None, repo: str) -> str | None:
    if connection is None:
        return None
    found = connection.execute("SELECT head FROM repos WHERE repo_id = ?", [repo]).fetchone()
    return found[0] if found else None


# --- what an incremental walk starts from ---------------------------------------------------------------------


@dataclass
class _State:
    commits: int = 0
    next_seq: int = 0
    origins: dict[str, str] = field(default_factory=dict)  # decision file path -> the path its ids were made from
    index: ReferenceIndex = field(default_factory=ReferenceIndex)
    live: dict[str, list[Dated]] = field(default_factory=dict)  # decision file -> its records, latest version
    named: set[tuple[str, str]] = field(default_factory=set)  # (decision id, path) already named-in-record
    refs: set[tuple[str, str, str]] = field(default_factory=set)  # (decision id, kind, reference) recorded
    tree: PathIndex = field(default_factory=PathIndex)
    current: list[dict[str, Any]] = field(default_factory=list)  # decision_current rows as the store holds them
    keys_by_name: dict[str, str] = field(default_factory=dict)  # a person's full name -> the key first seen
    # (origin, id made from a later title) -> the decision's id: an ADR retitled or translated stays one decision
    identities: dict[tuple[str, str], str] = field(default_factory=dict)


def _load_state(reader: duckdb.DuckDBPyConnection, repo: str, git: Git, last: str) -> _State:
    def rows(sql: str) -> list[tuple]:
        return reader.execute(sql, [repo]).fetchall()

    state = _State()
    state.commits = rows("SELECT commits FROM repos WHERE repo_id = ?")[0][0]
    state.next_seq = rows("SELECT coalesce(max(seq) + 1, 0) FROM commits WHERE repo_id = ?")[0][0]
    for new, old in rows(
        "SELECT f.path, f.old_path FROM file_changes f JOIN commits c ON c.repo_id = f.repo_id AND c.sha = f.sha "
        "WHERE f.repo_id = ? AND f.change = 'R' ORDER BY c.seq"
    ):
        if is_decision_candidate(old) and is_decision_candidate(new):
            state.origins[new] = state.origins.pop(old, old)
    versions: dict[tuple[str, str], list[tuple[str, str, str | None]]] = defaultdict(list)
    for path, sha, decision_id, title, decided_on, kind in rows(
        "SELECT d.path, d.sha, d.decision_id, d.title, d.decided_on, d.format FROM decisions d "
        "JOIN commits c ON c.repo_id = d.repo_id AND c.sha = d.sha WHERE d.repo_id = ? ORDER BY c.seq, d.line_start"
    ):
        versions[(path, sha)].append((decision_id, title, _iso(decided_on)))
        origin = state.origins.get(path, path)
        if kind != "decisions-log" and (made := decision_key(origin, title)) != decision_id:
            state.identities[(origin, made)] = decision_id
    for (path, _), records in versions.items():
        state.index.add_version(path, records)
    references: dict[str, list[str]] = defaultdict(list)
    for decision_id, reference in rows("SELECT decision_id, reference FROM decision_refs WHERE repo_id = ?"):
        references[decision_id].append(reference)
    for decision_id, sha, seq, path, blob, title, decided_on, status, text, flagged, others in rows(
        "SELECT d.decision_id, d.sha, c.seq, d.path, d.blob, d.title, d.decided_on, d.status, d.text, "
        "d.same_day_conflict, d.conflicts_with FROM decision_current d "
        "JOIN commits c ON c.repo_id = d.repo_id AND c.sha = d.sha WHERE d.repo_id = ?"
    ):
        names = state.index.related(decision_id, path, text, references[decision_id])
        dated = Dated(decision_id, title, _iso(decided_on), is_live(status), frozenset(names))
        state.live.setdefault(path, []).append(dated)
        state.current.append({
            "decision_id": decision_id, "sha": sha, "seq": seq, "path": path, "blob": blob, "dated": dated,
            "same_day_conflict": flagged, "conflicts_with": list(others or []), "stored": True,
        })  # fmt: skip
    state.named = set(rows("SELECT decision_id, path FROM rationale WHERE repo_id = ? AND reason = 'named-in-record'"))
    state.refs = set(rows("SELECT decision_id, kind, reference FROM decision_refs WHERE repo_id = ?"))
    state.tree = PathIndex(git.tree(last))
    for path in state.index.paths:
        if path not in state.tree:
            state.index.retire(path)
    for name, key in rows(
        "SELECT p.name, p.person_key FROM people p WHERE NOT p.is_agent AND p.person_key IN "
        "(SELECT person_key FROM commit_people WHERE repo_id = ?) ORDER BY p.person_key"
    ):
        if (known := full_name(name)) is not None:
            state.keys_by_name.setdefault(known, key)
    return state


# --- the walk ---------------------------------------------------------------------------------------------------


class _Walk:
    """Turns commits, parents first, into rows of every table, keeping the state the next commit needs."""

    def __init__(self, git: Git, repo: str, state: _State) -> None:
        self.git, self.repo, self.state = git, repo, state
        self.blobs: BlobReader | None = None
        self.rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.people: dict[str, Person] = {}
        self.hashes: dict[tuple[str, str], dict[str, str]] = {}  # (origin, blob) -> decision id -> text hash
        self.touched: set[str] = set()  # decision files changed by the walked commits
        self.related: dict[tuple[str, str], frozenset[str]] = {}  # (id, text hash) -> the records it names
        self.sections: dict[str, list[Record]] = {}  # DECISIONS.md section text -> its records
        self.seq = state.next_seq

    @property
    def decision_versions(self) -> int:
        return len(self.rows["decisions"])

    @property
    def instruction_versions(self) -> int:
        return len({(row["path"], row["sha"]) for row in self.rows["instruction_versions"]})

    def same_person(self, person: Person) -> Person:
        """The person under the key their full name was first seen with (one person, two e-mail addresses)."""
        name = None if person.is_agent else full_name(person.name)
        if name is None:
            return person
        key = self.state.keys_by_name.setdefault(name, person.key)
        return person if key == person.key else replace(person, key=key)

    def add(self, commit: Commit) -> None:
        sha = commit.sha
        author, committer = self.same_person(commit.author), self.same_person(commit.committer)
        self.rows["commits"].append({
            "repo_id": self.repo, "sha": sha, "seq": self.seq, "parents": list(commit.parents),
            "author_key": author.key, "committer_key": committer.key,
            "authored_at": commit.authored_at, "committed_at": commit.committed_at, "subject": commit.subject,
            "body": commit.body, "is_merge": commit.is_merge,
        })  # fmt: skip
        self.seq += 1
        roles = [(author, "author"), (committer, "committer")]
        roles += [(self.same_person(person), "co-author") for person in commit.co_authors]
        for person, role in roles:
            if person.key == person_key(person.name, person.email):  # an alias address does not rename the row
                self.people[person.key] = person
            self.rows["commit_people"].append(
                {"repo_id": self.repo, "sha": sha, "person_key": person.key, "role": role}
            )
        deleted: list[str] = []
        for change in commit.changes:
            self.rows["file_changes"].append({
                "repo_id": self.repo, "sha": sha, "path": change.path, "old_path": change.old_path,
                "change": change.change, "added": change.added, "deleted": change.deleted, "blob": change.blob,
            })  # fmt: skip
            if change.change == "D":
                deleted.append(change.path)
            else:
                if change.old_path is not None and change.change == "R":
                    self.state.tree.remove(change.old_path)
                self.state.tree.add(change.path)
        changed = self._decisions(commit)  # a file this commit deletes can still be named by its records
        for path in deleted:
            self.state.tree.remove(path)
        self._instructions(commit)
        self._companions(commit, changed)

    def _decisions(self, commit: Commit) -> list[Record]:
        """The rows of the decision files this commit changed; returns the records whose text changed. All
        files are read before any reference is resolved: two ADRs of one commit may name each other."""
        versions: list[tuple[str, list[Record], str, list[dict[str, str]]]] = []
        for change in commit.changes:
            old, new = change.old_path, change.path
            if change.change == "D" and is_decision_candidate(new):
                self.state.live.pop(new, None)
                self.state.index.retire(new)
                self.touched.add(new)
                continue
            renamed = change.change == "R" and old is not None and is_decision_candidate(old)
            if renamed:
                self.state.live.pop(old, None)
                self.state.index.retire(old)
                if is_decision_candidate(new):
                    self.state.origins[new] = self.state.origins.pop(old, old)
            if change.blob is None or not is_decision_candidate(new):
                continue
            self.touched.add(new)
            origin = self.state.origins.get(new, new)
            before = [self._previous(old if renamed else new, origin, change.old_blob)]
            records = self.identified(origin, read_records(new, self._read(change.blob), origin, self.sections),
                                       before[0])  # fmt: skip
            self.hashes[(origin, change.blob)] = {r.decision_id: r.text_hash for r in records}
            before += [self._at_parent(parent, new, origin) for parent in commit.parents[1:]]
            versions.append((new, records, change.blob, before))
            self.state.index.add_version(new, [(r.decision_id, r.title, r.decided_on) for r in records])
        read: list[tuple[Record, bool, str]] = []
        dated: dict[str, Dated] = {}
        for path, records, blob, before in versions:
            self.state.live[path] = [self._references(commit, record) for record in records]
            dated.update((d.decision_id, d) for d in self.state.live[path])
            read.extend(
                (record, all(b.get(record.decision_id) != record.text_hash for b in before), blob) for record in records
            )
        if not read:
            return []
        dates = {record.decided_on for record, _, _ in read if record.decided_on}
        conflicts = same_day_conflicts(d for group in self.state.live.values() for d in group if d.decided_on in dates)
        for record, text_changed, blob in read:
            others = sorted(conflicts.get(record.decision_id, ()))
            self.rows["decisions"].append({
                "repo_id": self.repo, "decision_id": record.decision_id, "sha": commit.sha, "path": record.path,
                "title": record.title, "decided_on": _date(record.decided_on), "status": record.status,
                "line_start": record.line_start, "line_end": record.line_end, "text": record.text,
                "format": record.format, "same_day_conflict": bool(others), "conflicts_with": others,
                "changed": text_changed, "blob": blob, "dated": dated[record.decision_id],
            })  # fmt: skip
        changed = [record for record, text_changed, _ in read if text_changed]
        for record in changed:
            for path in sorted(named_files(record, self.state.tree)):
                if (record.decision_id, path) not in self.state.named:
                    self.state.named.add((record.decision_id, path))
                    self._rationale(record.decision_id, path, "named-in-record", commit.sha)
        return changed

    def _references(self, commit: Commit, record: Record) -> Dated:
        """Record the references the record writes (each the first time it is written) and return what the
        conflict check needs, with the ids the references name."""
        for reference in record.references:
            key = (record.decision_id, reference.kind, reference.reference)
            if key in self.state.refs:
                continue
            self.state.refs.add(key)
            targets = self.state.index.resolve(reference.reference, record.path) - {record.decision_id}
            for target in sorted(targets) or [None]:
                self.rows["decision_refs"].append({
                    "repo_id": self.repo, "decision_id": record.decision_id, "sha": commit.sha,
                    "line": reference.line, "kind": reference.kind, "reference": reference.reference,
                    "to_id": target,
                })  # fmt: skip
        key = (record.decision_id, record.text_hash)
        if key not in self.related:
            references = [reference.reference for reference in record.references]
            self.related[key] = frozenset(
                self.state.index.related(record.decision_id, record.path, record.text, references)
            )
        return Dated(record.decision_id, record.title, record.decided_on, record.live, self.related[key])

    def _at_parent(self, parent: str, path: str, origin: str) -> dict[str, str]:
        """decision id -> text hash in a merge's other parent: a record the merge brings unchanged from the
        branch is not a new version of it."""
        assert self.blobs is not None
        data = self.blobs.read(f"{parent}:{path}")
        records = read_records(path, data, origin, self.sections) if data is not None else []
        return {r.decision_id: r.text_hash for r in self.identified(origin, records)}

    def _previous(self, path: str, origin: str, blob: str | None) -> dict[str, str]:
        """decision id -> text hash in the version the change started from (read again when an earlier run
        read it)."""
        if blob is None:
            return {}
        if (origin, blob) not in self.hashes:
            records = self.identified(origin, read_records(path, self._read(blob), origin, self.sections))
            self.hashes[(origin, blob)] = {r.decision_id: r.text_hash for r in records}
        return self.hashes[(origin, blob)]

    def identified(self, origin: str, records: list[Record], previous: dict[str, str] | None = None) -> list[Record]:
        """The records under their decisions' ids. An ADR file holds one decision through its history: when its
        one record reads under another title than the version before (retitled, translated, its case fixed),
        it is a new version of that decision, not a new decision."""
        known = self.state.identities
        records = [replace(r, decision_id=known.get((origin, r.decision_id), r.decision_id)) for r in records]
        if previous is not None and len(previous) == 1 and len(records) == 1 and records[0].format != "decisions-log":
            (before,) = previous
            if records[0].decision_id != before:
                known[(origin, records[0].decision_id)] = before
                records = [replace(records[0], decision_id=before)]
        return records

    def _instructions(self, commit: Commit) -> None:
        for change in commit.changes:
            scope = instruction_scope(change.path)
            if scope is None or change.blob is None:
                continue
            for section in sections(self._read(change.blob)):
                self.rows["instruction_versions"].append({
                    "repo_id": self.repo, "path": change.path, "sha": commit.sha,
                    "committed_at": commit.committed_at, "section": section.section,
                    "line_start": section.line_start, "line_end": section.line_end, "text": section.text,
                    "scope": scope, "blob": change.blob,
                })  # fmt: skip

    def _companions(self, commit: Commit, changed: list[Record]) -> None:
        if not changed or commit.is_merge or len(changed) > MAX_COMPANION_RECORDS:
            return
        companions = sorted({c.path for c in commit.changes if c.change != "D" and not is_decision_candidate(c.path)})
        if len(companions) > MAX_COMPANIONS:
            return
        for record in changed:
            for path in companions:
                self._rationale(record.decision_id, path, "changed-with-record", commit.sha)

    def flag_current(self, tree: dict[str, str]) -> list[dict[str, Any]]:
        """Flag the same-day conflicts of the records current at HEAD over all of them (the walk flagged each
        version against what had been read by then, so a record whose rival came later in another file is
        flagged here). New rows are flagged before they are written; earlier runs' rows whose flags change
        are returned, to be updated."""
        seq = {row["sha"]: row["seq"] for row in self.rows["commits"]}
        best: dict[str, tuple[int, dict[str, Any]]] = {}
        candidates = [(row["seq"], row) for row in self.state.current]
        candidates += [(seq[row["sha"]], row) for row in self.rows["decisions"]]
        for position, row in candidates:
            if tree.get(row["path"]) == row["blob"] and position >= best.get(row["decision_id"], (-1, None))[0]:
                best[row["decision_id"]] = (position, row)
        conflicts = same_day_conflicts(row["dated"] for _, row in best.values())
        stale = []
        for decision_id, (_, row) in best.items():
            wanted = sorted(conflicts.get(decision_id, ()))
            if (bool(row["same_day_conflict"]), list(row["conflicts_with"])) == (bool(wanted), wanted):
                continue
            row["same_day_conflict"], row["conflicts_with"] = bool(wanted), wanted
            if row.get("stored"):
                stale.append(row)
        return stale

    def _rationale(self, decision_id: str, path: str, reason: str, sha: str) -> None:
        self.rows["rationale"].append(
            {"repo_id": self.repo, "decision_id": decision_id, "path": path, "reason": reason, "sha": sha}
        )

    def _read(self, blob: str) -> bytes:
        assert self.blobs is not None
        data = self.blobs.read(blob)
        if data is None:
            raise GitError(f"{self.git.repo}: blob {blob} is missing (a shallow or partial clone?)")
        return data

    def write(self, writer: duckdb.DuckDBPyConnection) -> None:
        for table in ("commits", "commit_people", "file_changes", "decisions", "decision_refs", "rationale",
                      "instruction_versions"):  # fmt: skip
            insert_rows(writer, table, self.rows[table])
        people = [
            {"person_key": p.key, "name": p.name, "email": p.email, "is_agent": p.is_agent, "agent_kind": p.agent_kind}
            for p in self.people.values()
        ]
        insert_rows(writer, "people", people, upsert="person_key")


# --- after the walk ---------------------------------------------------------------------------------------------


def _blame(
    git: Git, head: str, tree: dict[str, str], walk: _Walk, blobs: BlobReader, full: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """Blame rows for the records of the decision files at HEAD that the walk changed (all of them on a full
    ingest), and the ids whose rows they replace."""
    paths = sorted(p for p in tree if is_decision_candidate(p) and (full or p in walk.touched))
    rows, ids = [], set()
    for path in paths:
        data = blobs.read(tree[path])
        origin = walk.state.origins.get(path, path)
        records = walk.identified(origin, read_records(path, data or b"", origin, walk.sections))
        if not records:
            continue
        written = blame_lines(git, head, path)
        for record in records:
            ids.add(record.decision_id)
            for line in range(record.line_start, record.line_end + 1):
                if line in written:
                    rows.append({"repo_id": walk.repo, "decision_id": record.decision_id, "line": line,
                                 "sha": written[line]})  # fmt: skip
    return rows, sorted(ids)


def _replace_head(writer: duckdb.DuckDBPyConnection, repo: str, tree: dict[str, str]) -> None:
    writer.execute("DELETE FROM head_files WHERE repo_id = ?", [repo])
    insert_rows(writer, "head_files", [{"repo_id": repo, "path": p, "blob": b} for p, b in sorted(tree.items())])


def _resolve_pending(writer: duckdb.DuckDBPyConnection, repo: str, walk: _Walk) -> None:
    """References that named nothing known when written may name a record written since."""
    pending = writer.execute(
        "SELECT r.decision_id, r.kind, r.reference, r.sha, r.line, "
        "(SELECT any_value(d.path) FROM decisions d WHERE d.repo_id = r.repo_id AND d.decision_id = r.decision_id) "
        "FROM decision_refs r WHERE r.repo_id = ? AND r.to_id IS NULL",
        [repo],
    ).fetchall()
    resolved = []
    for decision_id, kind, reference, sha, line, path in pending:
        for target in sorted(walk.state.index.resolve(reference, path or "") - {decision_id}):
            resolved.append({"repo_id": repo, "decision_id": decision_id, "sha": sha, "line": line, "kind": kind,
                             "reference": reference, "to_id": target})  # fmt: skip
    for row in resolved:
        writer.execute(
            "DELETE FROM decision_refs WHERE repo_id = ? AND decision_id = ? AND kind = ? AND reference = ? "
            "AND to_id IS NULL",
            [repo, row["decision_id"], row["kind"], row["reference"]],
        )
    insert_rows(writer, "decision_refs", resolved)


def _rebuild_links(writer: duckdb.DuckDBPyConnection, repo: str) -> None:
    """One supersession edge (newer -> older) per pair, from the earliest reference that states it, whichever
    side wrote it ("Supersedes 2" in the new record, "Superseded by 4" in the old one); ``source_id`` is the
    record that wrote it, ``line`` the line in that record's file at ``source_sha``. A partial one ("Partially
    superseded by 17") is a ``partially_supersedes`` edge: the older record stays in force."""
    writer.execute("DELETE FROM decision_links WHERE repo_id = ?", [repo])
    writer.execute(
        """
        INSERT INTO decision_links (repo_id, from_id, to_id, kind, source_sha, line, source_id)
        SELECT repo_id, from_id, to_id, link, arg_min(sha, earliest), arg_min(line, earliest),
               arg_min(decision_id, earliest)
        FROM (
            SELECT r.repo_id, r.kind, r.sha, r.line, r.decision_id, c.seq,
                   (c.seq, r.line, r.kind LIKE '%supersedes', r.decision_id) AS earliest,
                   CASE WHEN r.kind LIKE 'partially_%' THEN 'partially_supersedes' ELSE 'supersedes' END AS link,
                   CASE WHEN r.kind LIKE '%supersedes' THEN r.decision_id ELSE r.to_id END AS from_id,
                   CASE WHEN r.kind LIKE '%supersedes' THEN r.to_id ELSE r.decision_id END AS to_id
            FROM decision_refs r JOIN commits c ON c.repo_id = r.repo_id AND c.sha = r.sha
            WHERE r.repo_id = ? AND r.to_id IS NOT NULL AND r.to_id <> r.decision_id
        )
        GROUP BY repo_id, from_id, to_id, link
        """,
        [repo],
    )


def _update_flags(writer: duckdb.DuckDBPyConnection, repo: str, stale: list[dict[str, Any]]) -> None:
    """Rewrite the flags of earlier runs' current rows that a new record changed (one row at a time: an UPDATE
    joined over the whole table costs gigabytes in DuckDB, and there are seldom more than a few)."""
    for row in stale:
        writer.execute(
            "UPDATE decisions SET same_day_conflict = ?, conflicts_with = ? WHERE repo_id = ? AND decision_id = ? "
            "AND sha = ?",
            [row["same_day_conflict"], row["conflicts_with"], repo, row["decision_id"], row["sha"]],
        )


def _replace_blame(writer: duckdb.DuckDBPyConnection, repo: str, blame: tuple[list[dict[str, Any]], list[str]]) -> None:
    rows, ids = blame
    writer.execute(
        "DELETE FROM decision_blame WHERE repo_id = ? AND (list_contains(?, decision_id) OR decision_id NOT IN "
        "(SELECT decision_id FROM decision_current WHERE repo_id = ?))",
        [repo, ids, repo],
    )
    insert_rows(writer, "decision_blame", rows)


def _finish(writer: duckdb.DuckDBPyConnection, summary: IngestSummary, commits: int) -> None:
    now = datetime.now(UTC)
    if summary.to_sha is not None:
        writer.execute("DELETE FROM repos WHERE repo_id = ?", [summary.repo_id])
        insert_rows(writer, "repos", [{"repo_id": summary.repo_id, "path": summary.path, "head": summary.to_sha,
                                       "ingested_at": now, "commits": commits}])  # fmt: skip
    insert_rows(writer, "ingest_log", [{
        "repo_id": summary.repo_id, "run_at": now, "from_sha": summary.from_sha, "to_sha": summary.to_sha,
        "commits_added": summary.commits_added, "seconds": summary.seconds, "mode": summary.mode, "note": summary.note,
    }])  # fmt: skip


def _date(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _iso(value: date | str | None) -> str | None:
    return value.isoformat() if isinstance(value, date) else value
