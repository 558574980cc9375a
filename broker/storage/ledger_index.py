"""Index files of sealed ledgers: the byte offset of every entry, so opening needs no scan.

A ledger that will never be written again (closed at rollover, at a clean close, or
recovered at open) gets ``<ledger_id>.idx`` beside its segment file: a header, then the
record boundaries as little-endian u64 (``entries + 1`` values: the start of each entry,
then the end of the last one). The header holds the segment file's size, modification and
change times as they were when the index was written, and a CRC32 of the header and the
offsets.

An index is only a shortcut. :func:`load_index` returns it only when everything agrees:
magic and version, CRC, the entry count the ledger list expects, the segment file's size
and times, and the offsets' own first and last values. Anything else (missing, torn,
stale, corrupt) gives ``None`` and a reason, and the caller scans the segment file as it
would without an index. It is written without ``fsync``: a crash can only leave an index
that fails these checks.

The ledger being written keeps a position journal instead, ``<ledger_id>.pos``: after a
group commit's sync, the end offsets of the entries made durable since the last chunk are
appended to it as one chunk (count u32, CRC32 of the offsets u32, then the offsets as
little-endian u64); the durable store adds one only once they span enough bytes.
After a crash, :func:`load_journal` gives the longest run of intact chunks whose offsets
are plausible (strictly increasing, within the file); the caller still checks the last
boundary it trusts and scans everything after it. The journal only ever describes bytes
that were on disk before it was written, so it can be short, never ahead.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from pathlib import Path

_MAGIC = b"PLIX"
_VERSION = 1
# magic, version, entries, segment size, segment mtime_ns, segment ctime_ns, crc32
_HEAD = struct.Struct("<4sIQQqqI")
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_CHUNK = struct.Struct("<II")  # journal chunk: entry count, crc32 of the offsets


def index_path(segment: Path) -> Path:
    """Where the index of the segment file ``segment`` lives."""
    return segment.with_suffix(".idx")


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _le_bytes(offsets: array[int]) -> bytes:
    if sys.byteorder == "little":
        return offsets.tobytes()
    swapped = array("Q", offsets)
    swapped.byteswap()
    return swapped.tobytes()


def write_index(segment: Path, offsets: array[int]) -> None:
    """Write the index of ``segment`` (whose records end at ``offsets[-1]``); ``OSError``
    if it cannot be written (the ledger still opens then, by a scan)."""
    size, mtime, ctime = _stamp(os.stat(segment))
    if size != offsets[-1]:
        raise OSError(f"{segment.name} is {size} bytes, its records end at {offsets[-1]}")
    body = _le_bytes(offsets)
    head = _HEAD.pack(_MAGIC, _VERSION, len(offsets) - 1, size, mtime, ctime, 0)
    crc = zlib.crc32(body, zlib.crc32(head[: _HEAD.size - 4]))
    path = index_path(segment)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_CLOEXEC, 0o644)
    try:
        view = memoryview(head[: _HEAD.size - 4] + struct.pack("<I", crc) + body)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def load_index(segment: Path, entries: int | None) -> tuple[array[int] | None, str]:
    """The offsets of ``segment`` from its index, or ``None`` and why it cannot be used.

    ``entries`` is the count the ledger list expects (``None``: any count).
    """
    path = index_path(segment)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, "no index"
    except OSError as exc:
        return None, f"index unreadable ({exc.strerror or exc})"
    if len(raw) < _HEAD.size:
        return None, "index truncated"
    magic, version, count, size, mtime, ctime, crc = _HEAD.unpack_from(raw)
    if magic != _MAGIC or version != _VERSION:
        return None, "not an index of this version"
    body = memoryview(raw)[_HEAD.size :]
    if zlib.crc32(body, zlib.crc32(raw[: _HEAD.size - 4])) != crc:
        return None, "index failed its CRC check"
    if len(body) != 8 * (count + 1):
        return None, "index length does not match its entry count"
    if entries is not None and count != entries:
        return None, f"index has {count} entries, the ledger list {entries}"
    try:
        current = _stamp(os.stat(segment))
    except OSError as exc:
        return None, f"segment file unreadable ({exc.strerror or exc})"
    if current != (size, mtime, ctime):
        return None, "segment file changed since the index was written"
    offsets = array("Q")
    offsets.frombytes(body)
    if sys.byteorder != "little":
        offsets.byteswap()
    if offsets[0] != 0 or offsets[-1] != size:
        return None, "index offsets do not span the segment file"
    return offsets, "ok"


def remove_index(segment: Path) -> None:
    """Delete the index of ``segment`` if there is one."""
    index_path(segment).unlink(missing_ok=True)


def journal_path(segment: Path) -> Path:
    """Where the position journal of the open ledger ``segment`` lives."""
    return segment.with_suffix(".pos")


def journal_bytes(ends: array[int]) -> bytes:
    """One journal chunk holding ``ends`` (entry end offsets)."""
    body = _le_bytes(ends)
    return _CHUNK.pack(len(ends), zlib.crc32(body)) + body


def load_journal(segment: Path, size: int) -> array[int]:
    """Offsets (``0``, then entry ends) from the position journal of ``segment``: the
    longest strictly increasing prefix that stays within ``size`` bytes; ``[0]`` if none."""
    offsets = array("Q", [0])
    try:
        raw = journal_path(segment).read_bytes()
    except OSError:
        return offsets
    ends = array("Q")
    pos = 0
    while pos + _CHUNK.size <= len(raw):
        count, crc = _CHUNK.unpack_from(raw, pos)
        body = raw[pos + _CHUNK.size : pos + _CHUNK.size + 8 * count]
        if count == 0 or len(body) != 8 * count or zlib.crc32(body) != crc:
            break
        ends.frombytes(body)
        pos += _CHUNK.size + len(body)
    if sys.byteorder != "little":
        ends.byteswap()
    last = 0
    for i, end in enumerate(ends):
        if not last < end <= size:
            del ends[i:]
            break
        last = end
    offsets.extend(ends)
    return offsets
