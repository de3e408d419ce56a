"""What the last candidates run scored, so that the next one scores only what changed.

A candidate row is a function of its two keys' rows in the key table (and of the settings and the code), so a pair
whose two keys kept their rows keeps its row. Kept between runs in ``<home>/resolution/scored_pairs.npz``: the keys,
a digest of each key's row (everything the scorer and the evidence read of it: labels, kinds, aliases, vector, and
the digest of its mention rows and their documents' paths and texts), and the pairs the blocking proposed. A run then
scores the blocked pairs that touch a changed key, and the pairs the blocking proposes now but did not then (a
posting list that fell under its cap, a nearest-key list that changed); it deletes the stored rows of changed and
gone keys and of unchanged pairs no longer proposed; every other row stays as it is.

The file and the catalog's ``meta`` row ``resolution_pairs`` carry the same token, written in the catalog's
transaction with the number of rows the table then had: a file that does not match the catalog (a run killed between
the two writes, a catalog restored from a copy, a table emptied by hand) is not trusted, and everything is scored
again.
"""

from __future__ import annotations

import hashlib
import operator
import os
from dataclasses import dataclass
from itertools import compress
from pathlib import Path

import numpy as np

from engramrag.npz_files import joined_texts, load_arrays, save_arrays, split_texts
from engramrag.resolve.keytable import KeyTable
from engramrag.retrieve.neighbours import equal_values, match_keys
from engramrag.run_memo import LastKept, RunMemo

FILE = "scored_pairs.npz"
PENDING = "scored_pairs.pending.npz"  # written before the catalog commits; renamed to FILE after
META_KEY = "resolution_pairs"


@dataclass(frozen=True)
class ScoredPairs:
    """One run's keys (sorted), their row digests, and the blocked pairs as rows of ``keys`` (left < right)."""

    keys: list[str]
    digests: list[str]
    left: np.ndarray  # int64
    right: np.ndarray  # int64
    settings: str  # digest of the scoring settings and code the rows were scored with
    token: str  # the catalog's ``meta`` value that says the table holds these rows

    def save_pending(self, folder: Path) -> Path:
        """Write to the pending name; :func:`commit_pending` renames it once the catalog has committed."""
        return save_arrays(
            folder, PENDING, keys=joined_texts(self.keys), digests=joined_texts(self.digests), left=self.left,
            right=self.right, settings=joined_texts([self.settings]), token=joined_texts([self.token]),
        )  # fmt: skip

    @classmethod
    def load(cls, folder: Path, token: str | None) -> ScoredPairs | None:
        """The stored pairs whose token is the catalog's ``token`` (the committed file, or the pending one when the
        run that wrote it stopped after its commit), else None."""
        if not token:
            return None
        for name in (FILE, PENDING):
            stored = _read(folder / name)
            if stored is not None and stored.token == token:
                return stored
        return None


def meta_value(token: str, rows: int) -> str:
    """What the catalog's ``meta`` row holds after a run: its token and the rows the table had."""
    return f"{token} {rows}"


def trusted_token(value: str | None, rows: int) -> str | None:
    """The token of the catalog's ``meta`` value when the table still has the rows the run left, else None."""
    token, _, recorded = (value or "").partition(" ")
    return token if token and recorded == str(rows) else None


def commit_pending(folder: Path) -> None:
    """The pending file becomes the stored one (after the catalog transaction that names its token)."""
    if (folder / PENDING).exists():
        os.replace(folder / PENDING, folder / FILE)


@dataclass(frozen=True)
class ScoringPlan:
    """Which of this run's blocked pairs to score, and which stored rows to delete."""

    score: np.ndarray  # bool per blocked pair (in the order given to ``plan_scoring``)
    stale_keys: list[str]  # stored keys whose row changed or that are gone: every stored row naming one is deleted
    dropped: list[tuple[str, str]]  # unchanged pairs stored but no longer proposed
    changed_keys: int  # keys of this run that are new or whose row changed
    whole: str | None  # why everything is scored and the table refilled, or None when only changes are

    @property
    def kept(self) -> int:
        return int((~self.score).sum())


def key_digests(table: KeyTable, vector_digests: list[str], inputs: list[str]) -> list[str]:
    """Per key of ``table``, a digest of everything a candidate row reads of it. ``inputs``: per key, a digest of
    its mention rows and of the documents its evidence is quoted from (``resolve.stored_keys.key_inputs``); the
    key's words, compact form, acronyms and numbers are functions of the key itself. Against the same keys as this
    process's last call, only the keys with a field that is another object (or another digest) are digested again."""
    last = _last_digests.get(_LAST)
    digests = _patched_digests(last, table, vector_digests, inputs) if last is not None else None
    if digests is None:
        digests = []
        with _KEY_DIGESTS.run() as made:
            for i in range(len(table.keys)):
                # Sets as sets: fields met again keep their digest (sorting and hashing 200,000 keys' fields took 2 s
                # of every run at 100,000 notes); new ones are sorted and hashed.
                fields = _fields(table, vector_digests, inputs, i)
                digests.append(made(fields, lambda: _digest(fields)))  # noqa: B023
    _last_digests.put(_LAST, _KeyDigests(table, list(vector_digests), list(inputs), digests))
    return digests


def _fields(table: KeyTable, vector_digests: list[str], inputs: list[str], i: int) -> tuple:
    return (table.labels[i], table.kinds[i], table.check_kinds[i], frozenset(table.declared[i]),
            frozenset(table.written[i]), frozenset(table.names[i]), vector_digests[i], inputs[i])  # fmt: skip


def _digest(fields: tuple) -> str:
    shown = (*fields[:3], sorted(fields[3]), sorted(fields[4]), sorted(fields[5]), *fields[6:])
    return hashlib.blake2b(repr(shown).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _patched_digests(
    last: _KeyDigests, table: KeyTable, vector_digests: list[str], inputs: list[str]
) -> list[str] | None:
    """The digests from ``last`` where every field of a key is the same object (they are immutable) or the same
    digest, computed again elsewhere; None when the keys are not the same. A resident build's edit keeps nearly every
    key's fields (``keytable.assemble_key_table`` patches the table): walking every key's fields to look its digest
    up took 0.19 s of each edit at 10,000 notes."""
    old = last.table
    if len(table.keys) != len(old.keys) or (table.keys is not old.keys and table.keys != old.keys):
        return None
    stale: set[int] = set()
    rows = range(len(table.keys))
    # The positions compared in C (``map`` and ``compress``): a generator over every key took 40 ms of each edit.
    for name in _DIGESTED_COLUMNS:
        now, before = getattr(table, name), getattr(old, name)
        if now is not before:
            stale.update(compress(rows, map(operator.is_not, now, before)))
    for now, before in ((vector_digests, last.vector_digests), (inputs, last.inputs)):
        if now is not before:
            stale.update(compress(rows, map(operator.ne, now, before)))
    digests = list(last.digests)
    for i in stale:
        digests[i] = _digest(_fields(table, vector_digests, inputs, i))
    return digests


@dataclass(frozen=True)
class _KeyDigests:
    table: KeyTable
    vector_digests: list[str]
    inputs: list[str]
    digests: list[str]


_DIGESTED_COLUMNS = ("labels", "kinds", "check_kinds", "declared", "written", "names")  # the table's, in ``_fields``
_LAST = "last"
_KEY_DIGESTS: RunMemo[tuple, str] = RunMemo()
_last_digests: LastKept[_KeyDigests] = LastKept(size=1)


def plan_scoring(
    previous: ScoredPairs | None,
    keys: list[str],
    digests: list[str],
    left: np.ndarray,
    right: np.ndarray,
    settings: str,
    whole: str | None = None,
) -> ScoringPlan:
    """What to score of the blocked pairs ``(left[p], right[p])`` (rows of the sorted ``keys``, left < right), given
    the ``previous`` run's. ``whole``: a reason to score everything regardless (the consistency pass)."""
    reason = whole or _why_whole(previous, settings)
    if reason is not None or previous is None:  # _why_whole names a missing previous run; this narrows the type
        return ScoringPlan(np.ones(len(left), dtype=bool), [], [], len(keys), reason)
    new_of_old, _old_of_new, changed = match_keys(previous.keys, keys, equal_values(previous.digests, digests))
    n = np.int64(len(keys))
    codes = left.astype(np.int64) * n + right.astype(np.int64)
    old_left, old_right = new_of_old[previous.left], new_of_old[previous.right]
    alive = (old_left >= 0) & (old_right >= 0)  # both keys kept their rows (mapping keeps left < right)
    old_codes = old_left[alive] * n + old_right[alive]
    # Both sides are distinct pairs, so isin need not make them unique first (most of its time at 3 M pairs).
    score = changed[left] | changed[right] | ~np.isin(codes, old_codes, assume_unique=True)
    gone = ~np.isin(old_codes, codes, assume_unique=True)
    dropped = [(keys[a], keys[b]) for a, b in zip(old_left[alive][gone].tolist(), old_right[alive][gone].tolist(),
                                                  strict=True)]  # fmt: skip
    stale = [previous.keys[j] for j in np.flatnonzero(new_of_old < 0).tolist()]
    return ScoringPlan(score, stale, dropped, int(changed.sum()), None)


def _why_whole(previous: ScoredPairs | None, settings: str) -> str | None:
    if previous is None:
        return "nothing stored"
    if previous.settings != settings:
        return "settings or code changed"
    return None


def _read(path: Path) -> ScoredPairs | None:
    # None when missing or unreadable: everything is scored again and the file written anew.
    stored = load_arrays(path, ("keys", "digests", "left", "right", "settings", "token"))
    if stored is None:
        return None
    keys, digests = split_texts(stored["keys"]), split_texts(stored["digests"])
    pairs = ScoredPairs(
        keys, digests, stored["left"].astype(np.int64), stored["right"].astype(np.int64),
        split_texts(stored["settings"])[0], split_texts(stored["token"])[0],
    )  # fmt: skip
    consistent = len(keys) == len(digests) and len(pairs.left) == len(pairs.right)
    in_range = not len(pairs.left) or (int(pairs.left.min()) >= 0 and int(pairs.right.max()) < len(keys))
    return pairs if consistent and in_range else None
