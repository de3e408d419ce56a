"""git blame: which commit wrote each line of a file at a revision.

``-M`` attributes lines moved within the file (a DECISIONS.md section moved down) to the commit that wrote
them, not to the one that moved them; renames of the file itself are followed by blame anyway. A repository's
``blame.ignoreRevsFile`` is not applied: it names a file that may be missing, and the answer should be the
same on every clone.
"""

from __future__ import annotations

import re

from engramrag.gitgraph.gitcli import Git

HEADER = re.compile(r"^(?P<sha>[0-9a-f]{40}(?:[0-9a-f]{24})?) \d+ (?P<final>\d+) (?P<count>\d+)$")


def blame_lines(git: Git, revision: str, path: str) -> dict[int, str]:
    """Line number (1-based, in the file at ``revision``) -> the sha of the commit that wrote the line."""
    if revision.startswith("-"):
        raise ValueError(f"not a revision: {revision!r}")
    out = git.text("-c", "blame.ignoreRevsFile=", "blame", "--incremental", "-M", revision, "--", path)
    written: dict[int, str] = {}
    for line in out.splitlines():
        header = HEADER.match(line)
        if header:
            first = int(header.group("final"))
            for number in range(first, first + int(header.group("count"))):
                written[number] = header.group("sha")
    return written
