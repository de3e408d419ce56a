"""Running the ``git`` command safely and reading its output.

Every call is ``git -C REPO`` without a shell, in the C locale, with NUL-separated output where paths occur.
A repository being ingested is data, not code: the environment drops inherited ``GIT_*`` variables (a hook's
``GIT_DIR`` would redirect us to another repository), ``core.fsmonitor`` is disabled (it runs a program named
by the repository's own config), optional locks are off (reading must never rewrite the index), and pagers
and colour are off; the history reader also turns off external diff drivers and textconv filters. Revisions
given by a caller are passed after ``--end-of-options`` so a value such as ``--output=x`` cannot become an
option.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

CONFIG = (
    "-c", "core.fsmonitor=false", "-c", "core.quotepath=off", "-c", "color.ui=never", "-c", "core.pager=cat",
    "-c", "log.showSignature=false", "-c", "log.mailmap=true",
)  # fmt: skip
OBJECT_ID = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
CHUNK = 1 << 20


class GitError(RuntimeError):
    """A git command failed; the message names the command and repeats git's own explanation."""


def git_environment() -> dict[str, str]:
    """The parent's environment without ``GIT_*`` variables, in the C locale, never prompting."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    environment.update(
        LC_ALL="C", LANG="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat"
    )
    return environment


class Git:
    """One repository. Methods return bytes or text exactly as git printed them (text decoded as UTF-8 with
    replacement, since commit messages and paths are not guaranteed to be UTF-8)."""

    def __init__(self, repo: str | os.PathLike[str]) -> None:
        self.repo = Path(repo).expanduser().resolve()
        self._environment = git_environment()

    def command(self, *args: str) -> list[str]:
        return ["git", "-C", str(self.repo), *CONFIG, *args]

    def run(self, *args: str, input: bytes | None = None, ok_codes: Sequence[int] = (0,)) -> bytes:
        completed = subprocess.run(
            self.command(*args), input=input, capture_output=True, env=self._environment, check=False
        )
        if completed.returncode not in ok_codes:
            message = completed.stderr.decode("utf-8", "replace").strip() or f"exit status {completed.returncode}"
            raise GitError(f"git {' '.join(args[:3])} in {self.repo}: {message}")
        return completed.stdout

    def text(self, *args: str) -> str:
        return self.run(*args).decode("utf-8", "replace")

    def returncode(self, *args: str) -> int:
        """The exit status alone, for the commands that answer a yes/no question with it."""
        return subprocess.run(self.command(*args), capture_output=True, env=self._environment, check=False).returncode

    def tokens(self, *args: str) -> Iterator[bytes]:
        """The NUL-separated fields of a long output, read as a stream (a whole history need not fit in one
        buffer). The final empty field after a trailing NUL is not yielded."""
        process = subprocess.Popen(
            self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._environment
        )
        assert process.stdout is not None and process.stderr is not None
        try:
            rest = b""
            while chunk := process.stdout.read(CHUNK):
                parts = (rest + chunk).split(b"\0")
                rest = parts.pop()
                yield from parts
            if rest:
                yield rest
            error = process.stderr.read()
        finally:
            process.stdout.close()
            code = process.wait()
            process.stderr.close()
        if code != 0:
            raise GitError(f"git {' '.join(args[:3])} in {self.repo}: {error.decode('utf-8', 'replace').strip()}")

    # questions ---------------------------------------------------------------------------------------------

    def is_repository(self) -> bool:
        return self.returncode("rev-parse", "--git-dir") == 0

    def toplevel(self) -> Path:
        """The top of the work tree (the git folder of a bare repository): the one path a repository is known
        by, whichever of its folders was named."""
        for question in ("--show-toplevel", "--absolute-git-dir"):
            found = self.run("rev-parse", question, ok_codes=(0, 128)).decode("utf-8", "replace").strip()
            if found:
                return Path(found).resolve()
        raise GitError(f"{self.repo} is not inside a git repository")

    def head(self) -> str | None:
        """The commit HEAD names, or None in a repository without commits."""
        completed = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok_codes=(0, 1))
        return completed.decode().strip() or None

    def resolve(self, revision: str) -> str | None:
        """The full id of the commit a revision (sha, branch, tag, ``HEAD~2``) names, or None."""
        completed = self.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}", ok_codes=(0, 1)
        )
        return completed.decode().strip() or None

    def has_commit(self, sha: str) -> bool:
        return bool(OBJECT_ID.match(sha)) and self.returncode("cat-file", "-e", f"{sha}^{{commit}}") == 0

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.returncode("merge-base", "--is-ancestor", "--end-of-options", ancestor, descendant) == 0

    def rev_list(self, revisions: Sequence[str]) -> list[str]:
        """Commits reachable from the revisions (``["HEAD"]`` or ``["^LAST", "HEAD"]``), parents first."""
        out = self.text("rev-list", "--reverse", "--topo-order", "--end-of-options", *revisions)
        return out.split()

    def tree(self, revision: str) -> dict[str, str]:
        """Every file at a commit: path -> blob id (submodules and other non-blob entries left out)."""
        found: dict[str, str] = {}
        for entry in self.run("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", revision).split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            _mode, kind, oid = meta.split(b" ")
            if kind == b"blob":
                found[path.decode("utf-8", "replace")] = oid.decode()
        return found

    def file_exists(self, sha: str, path: str) -> bool:
        """Whether ``path`` names a file in git at commit ``sha`` (``git cat-file -e SHA:path``)."""
        return self.returncode("cat-file", "-e", f"{sha}:{path}") == 0

    def blobs(self) -> BlobReader:
        return BlobReader(self)


class BlobReader:
    """One ``git cat-file --batch`` process answering many object reads; use as a context manager."""

    def __init__(self, git: Git) -> None:
        self._process = subprocess.Popen(
            git.command("cat-file", "--batch"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_environment(),
        )

    def read(self, name: str) -> bytes | None:
        """The content of an object (a blob id, or ``SHA:path``), or None when it does not exist."""
        if "\n" in name:
            raise ValueError("an object name cannot contain a newline")
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(name.encode("utf-8") + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline()
        parts = header.split()
        if len(parts) != 3 or parts[1] in (b"missing", b"ambiguous"):
            return None
        size = int(parts[2])
        data = self._process.stdout.read(size)
        self._process.stdout.read(1)
        return data

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process.wait()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
