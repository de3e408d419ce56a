"""Arrow IPC files that steps keep beside their outputs: written whole (LZ4, through a temporary file replaced at
once, so a reader never sees half of one) and read memory-mapped."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

# What reading a missing, truncated or foreign file raises: a kept file can only save work, so its reader treats
# these as "nothing kept".
UNREADABLE = (OSError, pa.ArrowException, KeyError)


def write_table(table: pa.Table, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.OSFile(str(temporary), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    os.replace(temporary, target)


def read_table(source: Path) -> pa.Table:
    with pa.memory_map(str(source)) as mapped:
        return pa.ipc.open_file(mapped).read_all()


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """The file's identity as a process can remember it: inode, size and modification time (every write replaces
    the file, so a new write is a new stamp; renaming its folder keeps it), or None when there is no file."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns
