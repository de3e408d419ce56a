"""Where an agent write lands: resolved, hashed, and written without ever following a symlink.

A confirmation binds the destination as well as the arguments: the same approved arguments pointed at a
swapped symlink, a replaced file or a path outside the vault would write somewhere the person never saw. So
the destination is resolved to a vault identity, a real path and the file's state (its content hash, or
"absent") when the confirmation is issued, resolved again at execution, and any difference refuses. Every
path component is opened relative to its parent with ``O_NOFOLLOW``, so a symlink anywhere on the way is
refused rather than followed, even one swapped in after the check.

Execution reads the file once (:func:`snapshot`), checks those bytes against the row, builds the new content
from the same bytes, and lands it with :func:`replace_exactly`: the new file is swapped in atomically
(``renameat2(RENAME_EXCHANGE)``) and the bytes it displaced are checked against the bound state; anything
else is swapped back and refused. So however the file is replaced meanwhile, a write lands over exactly the
bytes that were bound, or not at all.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from engramrag.agent.confirmations import Refused
from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import is_convertible

ABSENT = "absent"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


@dataclass(frozen=True)
class Destination:
    """A resolved write target; ``state`` is ``blake2b:<hex>`` of the file's bytes or ``absent``."""

    vault_id: str
    relative_path: str
    real_path: str
    state: str

    def as_row(self) -> dict[str, str]:
        return asdict(self)


def bytes_state(data: bytes | None) -> str:
    """The state string of some file content (None: the file does not exist)."""
    if data is None:
        return ABSENT
    return "blake2b:" + hashlib.blake2b(data, digest_size=32).hexdigest()


def vault_identity(vault: str | os.PathLike[str]) -> str:
    """The vault's real path plus its device and inode: a different folder at the same path is another vault."""
    root = Path(vault).resolve()
    info = root.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise Refused("destination", f"{root} is not a folder; point --vault at the vault's folder.")
    return f"{root}@{info.st_dev}:{info.st_ino}"


def relative_parts(path: str, config: VaultConfig | None = None) -> tuple[str, ...]:
    """The path's components inside the vault, or Refused when it could leave it or is not a Markdown note."""
    config = config or VaultConfig()
    parts = _inside_parts(path, "write")
    if not parts[-1].endswith(tuple(config.suffixes)):
        raise Refused("destination", f"{path} is not a Markdown note ({', '.join(config.suffixes)}).")
    return parts


def readable_parts(path: str, config: VaultConfig | None = None) -> tuple[str, ...]:
    """Like :func:`relative_parts`, for reading: a Markdown note, or an original in the sources folder that
    the lifecycle converts to Markdown (``sources/report.pdf``). Only reads accept originals: an agent write
    may create or replace notes, never the documents people filed."""
    config = config or VaultConfig()
    parts = _inside_parts(path, "read")
    if parts[-1].endswith(tuple(config.suffixes)) or is_convertible("/".join(parts), config):
        return parts
    sources = config.sources_folder.strip("/")
    raise Refused(
        "destination",
        f"{path} is not a Markdown note ({', '.join(config.suffixes)}) nor a file in {sources}/ that is converted "
        f"to one ({', '.join(config.convertible_suffixes)}).",
    )


def _inside_parts(path: str, act: str) -> tuple[str, ...]:
    """The components of a relative path that stays inside the vault and out of hidden entries."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path or "\\" in path:
        raise Refused("destination", f"{path!r} is not a usable vault path; give a relative path like notes/x.md.")
    pure = PurePosixPath(path)
    if pure.is_absolute():
        raise Refused("destination", f"{path} is absolute; agent {act}s take a path relative to the vault.")
    parts = tuple(part for part in pure.parts if part != ".")
    if not parts or any(part == ".." for part in parts):
        raise Refused("destination", f"{path} climbs out with '..'; give a path inside the vault.")
    if any(part.startswith(".") for part in parts):
        raise Refused("destination", f"{path} goes through a hidden entry; agents {act} only visible notes.")
    return parts


def resolve(vault: str | os.PathLike[str], path: str, config: VaultConfig | None = None) -> Destination:
    """Resolve ``path`` inside ``vault`` now: refused if it escapes, passes a symlink, or is not a regular file."""
    return snapshot(vault, path, config)[0]


def snapshot(
    vault: str | os.PathLike[str], path: str, config: VaultConfig | None = None
) -> tuple[Destination, bytes | None]:
    """The resolved destination and the very bytes its state was computed from (one read, no symlinks)."""
    parts = relative_parts(path, config)
    root = Path(vault).resolve()
    data = read_bytes(root, parts)
    return Destination(vault_identity(root), "/".join(parts), str(root.joinpath(*parts)), bytes_state(data)), data


def read_bytes(root: Path, parts: tuple[str, ...]) -> bytes | None:
    """The file's bytes (None when it or a parent folder is absent), never through a symlink."""
    with _parent(root, parts, create=False) as directory:
        if directory is None:
            return None
        try:
            descriptor = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=directory)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _symlink_refusal(parts, error) from error
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise Refused("destination", f"{'/'.join(parts)} is not a regular file; agents write only notes.")
            return handle.read()


def write_bytes(root: Path, parts: tuple[str, ...], data: bytes) -> None:
    """Replace the file atomically (temporary file, fsync, rename), creating missing folders, no symlinks."""
    with _parent(root, parts, create=True) as directory:
        temporary = _temporary_copy(directory, parts[-1], data)
        try:
            os.replace(temporary, parts[-1], src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
            raise
        os.fsync(directory)


def replace_exactly(root: Path, parts: tuple[str, ...], data: bytes, expected: str) -> None:
    """Write ``data`` at the path only over a file whose bytes have the state ``expected`` (or, for ``absent``,
    only where no file is), atomically; anything else refuses and leaves what is there untouched.

    The new file is written and fsynced beside the target, then exchanged with it in one step, and the bytes
    it displaced are hashed: they are what the write really replaced, whatever happened before the swap. If
    they are not the expected bytes, the two are exchanged back and the write is refused.
    """
    where = "/".join(parts)
    with _parent(root, parts, create=True) as directory:
        temporary = _temporary_copy(directory, parts[-1], data)
        try:
            if expected == ABSENT:
                try:
                    os.link(temporary, parts[-1], src_dir_fd=directory, dst_dir_fd=directory, follow_symlinks=False)
                except FileExistsError:
                    raise _moved(where, expected, "a file that appeared meanwhile") from None
            else:
                try:
                    _exchange(directory, temporary, parts[-1])
                except FileNotFoundError:
                    raise _moved(where, expected, "no file (it was removed meanwhile)") from None
                displaced = _state_at(directory, temporary)
                if displaced != expected:
                    _exchange(directory, temporary, parts[-1])
                    if _state_at(directory, temporary) != bytes_state(data):
                        _exchange(directory, temporary, parts[-1])  # a writer came in between: keep theirs
                    raise _moved(where, expected, displaced)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
        os.fsync(directory)


def _temporary_copy(directory: int, name: str, data: bytes) -> str:
    """Write ``data`` to a new hidden file beside ``name`` in ``directory`` and fsync it; returns its name."""
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=directory)
        raise
    return temporary

def _moved(where: str, expected: str, found: str) -> Refused:
    return Refused(
        "destination",
        f"{where} changed while the write was being made: it was {expected} when checked and the write would have "
        f"replaced {found}. Nothing was written; propose the write again.",
    )


def _state_at(directory: int, name: str) -> str:
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError as error:
        return f"unreadable ({error.strerror})"
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "not a regular file"
        return bytes_state(handle.read())


_RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _exchange(directory: int, first: str, second: str) -> None:
    """Swap two names in one folder atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``)."""
    function = getattr(_libc, "renameat2", None)
    if function is None:
        raise Refused(
            "destination",
            "this system cannot swap files atomically (renameat2 with RENAME_EXCHANGE is Linux-only); agent "
            "writes over existing notes are refused here rather than risk writing over unchecked bytes.",
        )
    if function(directory, os.fsencode(first), directory, os.fsencode(second), _RENAME_EXCHANGE) != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), second)


def delete(root: Path, parts: tuple[str, ...]) -> None:
    """Remove the file (a rewind of a file the agent created); absent already is fine."""
    with _parent(root, parts, create=False) as directory:
        if directory is None:
            return
        try:
            os.unlink(parts[-1], dir_fd=directory)
        except FileNotFoundError:
            return


@contextmanager
def _parent(root: Path, parts: tuple[str, ...], create: bool) -> Iterator[int | None]:
    """A descriptor of the file's folder, reached one component at a time with O_NOFOLLOW."""
    opened = [os.open(root, _DIR_FLAGS)]
    try:
        for part in parts[:-1]:
            try:
                opened.append(os.open(part, _DIR_FLAGS, dir_fd=opened[-1]))
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                os.mkdir(part, 0o755, dir_fd=opened[-1])
                opened.append(os.open(part, _DIR_FLAGS, dir_fd=opened[-1]))
            except OSError as error:
                raise _symlink_refusal(parts, error) from error
        yield opened[-1]
    finally:
        for descriptor in reversed(opened):
            os.close(descriptor)


def _symlink_refusal(parts: tuple[str, ...], error: OSError) -> Refused:
    return Refused(
        "destination",
        f"{'/'.join(parts)} passes through a symlink or a non-folder ({error.strerror}); agent writes never follow "
        "links. Replace the link with the real file or folder, or write to the real path.",
    )


__all__ = [
    "ABSENT",
    "Destination",
    "bytes_state",
    "delete",
    "read_bytes",
    "readable_parts",
    "relative_parts",
    "replace_exactly",
    "resolve",
    "snapshot",
    "vault_identity",
    "write_bytes",
]
