"""The durable backend: managed ledgers in CRC-checked segment files, metadata in SQLite.

Layout under ``data_dir``: ``metadata.sqlite`` and
``ledgers/<encoded managed-ledger name>/<ledger_id>.log``. A segment file is a run of
records ``length (u32, big-endian) | zlib.crc32(data) (u32, big-endian) | data``. The
ledger being written keeps zeros after its records (its zero-filled tail, 64 KiB to 1 MiB:
``_zero_ahead``), so a group commit writes inside space the file already has and its sync
does not also commit a new file size; its data end is tracked in memory (its offsets),
never taken from the file size. Sealing a ledger cuts its file to its records, so a sealed
segment file is exactly its records. Entries are never empty, so a zero length header is the
end of the data: a file that ends with its last record (the layout before zero tails) reads
the same.

Appends are buffered in memory; :meth:`sync` writes them and makes one ``fdatasync`` for
all of them (group commit) before they become readable. The ledger list is saved on create,
rollover, trim and close, not per entry, so opening after a crash scans the segment files:
zeros after the last record are the zero-filled tail (cut quietly), a torn tail of the last
ledger is truncated (WARNING), a bad record followed by good ones (before the zeros, if
any) is corruption and is reported (ERROR) and kept as a ``None`` entry, never skipped
silently.

A ledger that is sealed (closed at rollover or at a clean close, or recovered at open)
gets an index file of its entry offsets (``ledger_index.py``); opening trusts it instead of
scanning when it matches the segment file and the ledger list, and the last record's CRC
is checked. The ledger being written journals its entry offsets after a group commit's
sync (once they span a quarter of ``_TAIL_SCAN_BYTES``, 1 MiB), so after a crash only its
last ``_TAIL_SCAN_BYTES`` and whatever the journal does not cover are CRC-scanned;
corruption in the part the journal vouches for is found when that entry is read
(``LedgerCorruption``).

In memory a ledger keeps only its offsets (an ``array`` of u64, 8 bytes per entry); entry
data is read from disk on demand, except the recent entries the storage-wide
:class:`EntryCache` holds within its byte budget. Descriptors come from the storage-wide
:class:`OpenFiles` LRU, so open files stay bounded however many topics there are.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import mmap
import os
import re
import struct
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path

from ..errors import LedgerCorruption, StorageError
from .base import LedgerConfig, LedgerInfo, MetadataStore
from .entry_cache import EntryCache
from .ledger_index import (
    journal_bytes,
    journal_path,
    load_index,
    load_journal,
    remove_index,
    write_index,
)
from .memory import LedgerSequence, LedgerStorage
from .open_files import OpenFiles
from .sqlite_store import SqliteMetadataStore

log = logging.getLogger("pulsarlab.broker.storage")

_HEADER = struct.Struct(">II")
_FLUSH_BYTES = 1 << 20
_SEGMENT = re.compile(r"(\d+)\.log")
_INDEX = re.compile(r"(\d+)\.(?:idx|pos)")
# After a crash the open ledger's last bytes of data (before its zero-filled tail) are always
# CRC-scanned, whatever its position journal says (which only vouches for synced entries,
# which a crash cannot tear): as much as one write buffer.
_TAIL_SCAN_BYTES = _FLUSH_BYTES
# The journal gets a chunk once the synced entries it lacks span this fraction of that tail.
_JOURNAL_PER_TAIL_SCAN = 4
# The open ledger's segment file is kept zero-filled ahead of its data (BookKeeper's journal
# does the same, journalPreAllocSizeMB): a group commit then writes inside space the file
# already has, and its fdatasync flushes data pages only, not a new size and new extents
# through the file system's journal (about half the CPU and latency of a sync of an append,
# measured on ext4). A write that would pass the zero-filled end first extends it by
# ``_zero_ahead(data end)`` past the records: as much as the ledger holds, between 64 KiB
# (a topic with a few small messages stays small on disk: notebooks make many) and 1 MiB
# (one extension per MiB of a busy topic, about one commit in sixty at 17 KB a commit,
# without reserving more than a write buffer's worth of disk per open ledger). Sealing the
# ledger truncates the file to its data.
_ZERO_AHEAD_MIN = 64 * 1024
_ZERO_AHEAD_MAX = 1 << 20
_PAGE = 4096
_ZEROS = bytes(_ZERO_AHEAD_MAX)  # calloc'ed: no resident memory until it is read
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_")
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def segment_dir_name(ml_name: str) -> str:
    """The directory name of a managed ledger's segment files: one safe path component.

    Lower-case letters, digits, ``-`` and ``_`` stay; every other byte (upper case too, so
    names differing only in case stay apart on case-insensitive file systems) becomes
    ``%XX``. Names too long for a file name are cut and completed with a hash.
    """
    raw = ml_name.encode()
    encoded = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)
    if len(encoded) > 200:
        encoded = f"{encoded[:150]}~{hashlib.sha256(raw).hexdigest()[:40]}"
    return encoded


def _reason(exc: OSError) -> str:
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | _O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _zero_ahead(data_end: int) -> int:
    """How far past ``data_end`` an extension zero-fills the open ledger's file (a page
    multiple beyond it, so the file ends on a page boundary)."""
    ahead = min(max(_ZERO_AHEAD_MIN, data_end), _ZERO_AHEAD_MAX)
    return (data_end + ahead) // _PAGE * _PAGE - data_end


def _sync_data(fd: int) -> None:
    """Make a segment file's written records durable: ``fdatasync`` where there is one.

    Safe for segment files because they are only written past their synced records (inside
    the zero-filled tail, or extending it): ``fdatasync`` still flushes the metadata needed
    to read the data back (a new file size and the blocks allocated for it: POSIX's
    synchronized I/O data integrity), and skips only what a reader does not need, the
    modification and access times. A new file's directory entry is synced apart
    (``_dirs_to_sync``). Without ``fdatasync`` (macOS), ``fsync``.
    """
    sync = getattr(os, "fdatasync", None)
    (sync or os.fsync)(fd)


def _pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset`` (``pwrite`` may write less than asked)."""
    view = memoryview(data)
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
    finally:
        view.release()


def _record_at(buf: mmap.mmap, pos: int, size: int) -> tuple[int, bool] | None:
    """End offset of the record at ``pos`` and whether its CRC matches; ``None`` if it does
    not fit in the file."""
    if pos + _HEADER.size > size:
        return None
    length, crc = _HEADER.unpack_from(buf, pos)
    end = pos + _HEADER.size + length
    if length == 0 or end > size:
        # Empty entries are never written: a zero length is the zero-filled space after the
        # data (or damage, if anything but zeros follows it).
        return None
    return end, zlib.crc32(buf[pos + _HEADER.size : end]) == crc


_RESYNC_WINDOW = 8 * 1024 * 1024  # a damaged record spans at most one entry's bytes


def _resync(buf: mmap.mmap, pos: int, size: int, zeros_from: int) -> int | None:
    """Where intact records resume after an unreadable one at ``pos``, if they do.

    Only a chain of intact records running to the end of the data (the end of the file, or
    the zero-filled tail starting at ``zeros_from``) counts, so a torn tail (nothing valid
    after it) still returns ``None`` and is truncated.
    """
    for start in range(pos + _HEADER.size, min(zeros_from, pos + _RESYNC_WINDOW)):
        at = start
        while at < size:
            record = _record_at(buf, at, size)
            if record is None or not record[1]:
                break
            at = record[0]
        if at >= zeros_from and at > start:
            return start
    return None


_ZERO_CHECK_BYTES = 1 << 16


def _zeros_from(buf: mmap.mmap, lo: int, size: int) -> int:
    """Where the run of zero bytes ending the file starts (``size`` if it ends in data),
    looking no further back than ``lo``."""
    end = size
    while end > lo:
        start = max(lo, end - _ZERO_CHECK_BYTES)
        chunk = buf[start:end]
        if chunk != _ZEROS[: end - start]:  # a memcmp; then find the last non-zero byte
            return start + len(chunk.rstrip(b"\0"))
        end = start
    return lo


def _scan_intact(buf: mmap.mmap, offsets: array[int], size: int) -> int:
    """Append the ends of the intact records from ``offsets[-1]`` on; return where they stop.

    The common case of :func:`_scan`, kept tight: CRCs are taken over memoryview slices of
    the mapping (no copies) and anything unusual is left to the caller.
    """
    view = memoryview(buf)
    try:
        unpack, crc32, append = _HEADER.unpack_from, zlib.crc32, offsets.append
        header = _HEADER.size
        pos = offsets[-1]
        while pos + header <= size:
            length, crc = unpack(buf, pos)
            end = pos + header + length
            if length == 0 or end > size or crc32(view[pos + header : end]) != crc:
                break
            append(end)
            pos = end
        return pos
    finally:
        view.release()


def _scan(
    path: Path, closed: bool, start: array[int] | None = None
) -> tuple[array[int], list[int], int | None, int, int]:
    """Walk a segment file's records (from the end of ``start``, boundaries already known).

    Returns the record boundaries (``offsets[i]`` = start of entry ``i``, plus the end: the
    end of the data), the ids of corrupt entries (a record whose declared length fits but
    whose CRC does not match, kept in place when the ledger is closed or a good record
    follows it), the offset where readable records stop (``None`` if the data ends cleanly:
    at the end of the file, or where only zeros follow, the zero-filled tail of an open
    ledger), the file size and where the zeros ending the file start (the size if none).
    """
    offsets = start if start is not None else array("Q", [0])
    corrupt: list[int] = []
    if not path.exists():
        return offsets, corrupt, None, 0, 0
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return offsets, corrupt, None, 0, 0
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            pos = offsets[-1]
            zeros_from: int | None = None  # found when the intact records first stop
            while pos < size:
                pos = _scan_intact(buf, offsets, size)
                if pos >= size:
                    break
                if zeros_from is None:
                    zeros_from = _zeros_from(buf, pos, size)
                if pos >= zeros_from:
                    break  # only zeros from here on: the end of the data, not damage
                record = _record_at(buf, pos, size)
                if record is not None:
                    end, intact = record
                    following = None if intact else _record_at(buf, end, size)
                    if intact or closed or (following is not None and following[1]):
                        if not intact:
                            corrupt.append(len(offsets) - 1)
                        offsets.append(end)
                        pos = end
                        continue
                resume = _resync(buf, pos, size, zeros_from)
                if resume is None:
                    return offsets, corrupt, pos, size, zeros_from
                # A damaged length field, not a torn tail: intact records follow it.
                corrupt.append(len(offsets) - 1)
                offsets.append(resume)
                pos = resume
    return offsets, corrupt, None, size, size if zeros_from is None else zeros_from


class DurableManagedLedger(LedgerSequence):
    """A managed ledger stored as one segment file per ledger in ``directory``."""

    def __init__(
        self,
        name: str,
        config: LedgerConfig,
        metadata: MetadataStore,
        directory: Path,
        cache: EntryCache | None = None,
        files: OpenFiles | None = None,
    ) -> None:
        super().__init__(name, config, metadata)
        self._dir = directory
        # Per ledger: start offset of every entry, then the end of the last one.
        self._offsets: dict[int, array[int]] = {}
        # Descriptors, from the storage-wide LRU (keys: this token, kind, ledger id); the
        # ledger being written (``_writable``) is opened read/write, the others read-only.
        self._files = files if files is not None else OpenFiles()
        self._token = object()
        self._writable: int | None = None
        # The entries appended since the last sync (cached once they are durable); those
        # from ``_unwritten`` on are not in the file yet and take ``_unwritten_bytes`` there.
        self._unsynced: list[bytes] = []
        self._unwritten = 0
        self._unwritten_bytes = 0
        self._dirs_to_sync: tuple[Path, ...] = ()
        # Where the zero-filled tail of the ledger being written ends (its file's size, as
        # written here): bytes from its data end (``_offsets[...][-1]``) to this are zeros.
        self._zeroed_end = 0
        # Position journal of the ledger being written: its id, whether it was given up
        # after an error, and how many entry ends it holds.
        self._journal_ledger: int | None = None
        self._journal_failed = False
        self._journaled = 0
        # Shared by every managed ledger of the storage (one budget for all topics).
        self._cache = cache if cache is not None else EntryCache(config.cache_size_bytes)

    def _path(self, ledger_id: int) -> Path:
        return self._dir / f"{ledger_id}.log"

    def _fd(self, ledger_id: int) -> int:
        """The segment file's descriptor, reopened if the LRU closed it (``OSError``)."""
        flags = os.O_RDWR if ledger_id == self._writable else os.O_RDONLY
        return self._files.acquire(
            (self._token, "log", ledger_id),
            lambda: os.open(self._path(ledger_id), flags | _O_CLOEXEC),
        )

    # -- recovery ---------------------------------------------------------------------------

    def _recover(self, saved: list[LedgerInfo] | None, now_ms: int) -> list[LedgerInfo]:
        self._remove_unlisted(saved)
        return [self._recover_ledger(info, now_ms) for info in saved or []]

    def _remove_unlisted(self, saved: list[LedgerInfo] | None) -> None:
        """Delete segment files the ledger list does not know of, when that is safe.

        They are leftovers of a trim, a delete or a rollover interrupted by a crash (the list
        is saved before files are removed and before a new ledger is written to). Anything
        else is reported and left alone.
        """
        if not self._dir.is_dir():
            return
        listed = [info.ledger_id for info in saved or []]
        for path in sorted(self._dir.iterdir()):
            index = _INDEX.fullmatch(path.name)
            if index is not None:
                # An index is only a shortcut: one without a listed ledger is dropped.
                if int(index[1]) not in listed:
                    self._unlink_quietly(path)
                continue
            match = _SEGMENT.fullmatch(path.name)
            if match is None or int(match[1]) in listed:
                continue
            ledger_id = int(match[1])
            # A ledger's file is empty until its first write (which comes after the ledger
            # list names it, and brings the zero-filled tail): an unlisted empty file is the
            # new ledger of a rollover the crash cut short.
            if not listed or ledger_id < min(listed) or path.stat().st_size == 0:
                log.warning(
                    "managed ledger %s: removing segment file of ledger %d, which is "
                    "not in the ledger list",
                    self.name,
                    ledger_id,
                )
                self._store_delete(ledger_id)
            else:
                log.error(
                    "managed ledger %s: segment file %s is not in the ledger list; left in place",
                    self.name,
                    path.name,
                )

    def _recover_ledger(self, info: LedgerInfo, now_ms: int) -> LedgerInfo:
        ledger_id, path = info.ledger_id, self._path(info.ledger_id)
        offsets = self._indexed_offsets(info)
        if offsets is not None:
            self._unlink_quietly(journal_path(path))
            self._offsets[ledger_id] = offsets
            records = len(offsets) - 1
            stamp = info.timestamp_ms if info.closed else now_ms
            size = offsets[-1] - _HEADER.size * records
            return LedgerInfo(ledger_id, records, size, stamp, closed=True)
        offsets, corrupt, stop, size, zeros_from = _scan(
            path, info.closed, self._journaled_prefix(info)
        )
        self._unlink_quietly(journal_path(path))  # the ledger is sealed from now on
        records = len(offsets) - 1
        for entry_id in corrupt:
            log.error(
                "managed ledger %s: ledger %d entry %d at byte offset %d failed its CRC "
                "check; reads of it return None",
                self.name,
                ledger_id,
                entry_id,
                offsets[entry_id],
            )
        if stop is not None and not info.closed:
            log.warning(
                "managed ledger %s: torn tail in ledger %d at byte offset %d (entry %d):"
                " truncating %d bytes%s",
                self.name,
                ledger_id,
                stop,
                records,
                zeros_from - stop,
                f" and the {size - zeros_from} zero bytes after them" if size > zeros_from
                else "",
            )
            self._truncate(path, stop)
        elif stop is not None:
            log.error(
                "managed ledger %s: ledger %d is unreadable from byte offset %d (entry %d)",
                self.name,
                ledger_id,
                stop,
                records,
            )
        elif size > offsets[-1]:
            # Only zeros follow the data: the space an open ledger keeps zero-filled ahead
            # of its writes (never a sign of damage). Sealed ledgers are exact.
            self._truncate(path, offsets[-1])
        if records < info.entries:
            log.error(
                "managed ledger %s: ledger %d has %d of its %d entries; reads of entries "
                "%d..%d return None",
                self.name,
                ledger_id,
                records,
                info.entries,
                records,
                info.entries - 1,
            )
            corrupt.extend(range(records, info.entries))
            offsets.extend([offsets[-1]] * (info.entries - records))
        entries = len(offsets) - 1
        self._offsets[ledger_id] = offsets
        self._corrupt.update((ledger_id, entry_id) for entry_id in corrupt)
        if not corrupt and entries > 0 and (stop is None or not info.closed):
            # Sealed from now on (a new ledger takes the writes): the next open needs no scan.
            # Ledgers with corrupt or unreadable parts get none: reported on every open.
            self._write_index(ledger_id)
        stamp = info.timestamp_ms if info.closed else now_ms
        return LedgerInfo(
            ledger_id, entries, offsets[-1] - _HEADER.size * records, stamp, closed=True
        )

    def _indexed_offsets(self, info: LedgerInfo) -> array[int] | None:
        """The ledger's offsets from its index file, if it matches the segment file and the
        ledger list and its last record passes its CRC check; else ``None`` (scan it)."""
        path = self._path(info.ledger_id)
        offsets, reason = load_index(path, info.entries)
        if offsets is None:
            if reason != "no index":
                log.info(
                    "managed ledger %s: ledger %d's index is not usable (%s); scanning its "
                    "segment file",
                    self.name,
                    info.ledger_id,
                    reason,
                )
            return None
        if len(offsets) > 1 and not self._last_record_intact(path, offsets):
            log.info(
                "managed ledger %s: ledger %d's last record does not match its index; "
                "scanning its segment file",
                self.name,
                info.ledger_id,
            )
            return None
        return offsets

    def _journaled_prefix(self, info: LedgerInfo) -> array[int] | None:
        """Boundaries the open ledger's position journal vouches for, up to
        ``_TAIL_SCAN_BYTES`` before the end of its data (the zero-filled tail is not data),
        if the last of them checks out."""
        if info.closed:
            return None
        path = self._path(info.ledger_id)
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size == 0:
                    return None
                with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                    data_end = _zeros_from(buf, 0, size)  # the zero-filled tail is no data
        except OSError:
            return None
        offsets = load_journal(path, size)
        keep = bisect_right(offsets, data_end - _TAIL_SCAN_BYTES)
        del offsets[max(keep, 1) :]
        if len(offsets) < 2 or not self._last_record_intact(path, offsets):
            return None
        return offsets

    @staticmethod
    def _last_record_intact(path: Path, offsets: array[int]) -> bool:
        start, end = offsets[-2], offsets[-1]
        try:
            with open(path, "rb") as file:
                raw = os.pread(file.fileno(), end - start, start)
        except OSError:
            return False
        if len(raw) != end - start or len(raw) < _HEADER.size:
            return False
        length, crc = _HEADER.unpack_from(raw)
        return length == len(raw) - _HEADER.size and zlib.crc32(raw[_HEADER.size :]) == crc

    def _write_index(self, ledger_id: int) -> None:
        """Best effort: without an index the ledger still opens, by a scan."""
        try:
            write_index(self._path(ledger_id), self._offsets[ledger_id])
        except OSError as exc:
            log.warning(
                "managed ledger %s: cannot write the index of ledger %d (%s); the next open "
                "scans its segment file",
                self.name,
                ledger_id,
                _reason(exc),
            )

    def _store_seal(self, ledger_id: int) -> None:
        if ledger_id == self._journal_ledger:
            self._close_journal()
        if ledger_id == self._writable:
            self._writable = None  # reopened read-only from now on
        self._unlink_quietly(journal_path(self._path(ledger_id)))
        offsets = self._offsets.get(ledger_id)
        if offsets is None or not self._cut_zero_tail(ledger_id, offsets[-1]):
            return
        if len(offsets) < 2:
            return
        if not self.config.journal_sync_data:
            # The index must never describe records a crash could still take back.
            try:
                os.fsync(self._fd(ledger_id))
            except OSError as exc:
                log.warning(
                    "managed ledger %s: cannot sync ledger %d before indexing it: %s",
                    self.name,
                    ledger_id,
                    _reason(exc),
                )
                return
        self._write_index(ledger_id)

    def _cut_zero_tail(self, ledger_id: int, data_end: int) -> bool:
        """Truncate a sealed ledger's file to its data (its zero-filled tail goes), before
        its index is written: sealed segment files are exact. ``False`` (logged) if that
        fails: the ledger gets no index, and the next open scans it and cuts the tail.

        Not synced: the index records the file's size and times, so an index whose
        truncation a crash undid no longer matches and the file is scanned instead."""
        path = self._path(ledger_id)
        try:
            if path.stat().st_size != data_end:
                os.truncate(path, data_end)
        except OSError as exc:
            log.warning(
                "managed ledger %s: cannot cut ledger %d's file to its data (%s); the next "
                "open scans it",
                self.name,
                ledger_id,
                _reason(exc),
            )
            return False
        return True

    def _unlink_quietly(self, path: Path) -> None:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("managed ledger %s: cannot remove %s: %s", self.name, path.name,
                        _reason(exc))

    def _truncate(self, path: Path, length: int) -> None:
        try:
            with open(path, "r+b") as file:
                file.truncate(length)
                if self.config.journal_sync_data:
                    os.fsync(file.fileno())
        except OSError as exc:
            raise StorageError(
                f"cannot truncate the torn tail of {path.name} of {self.name}: {_reason(exc)}"
            ) from exc

    # -- writing ----------------------------------------------------------------------------

    def _store_create(self, ledger_id: int) -> None:
        new_dir = not self._dir.is_dir()
        path = self._path(ledger_id)
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            self._files.acquire(
                (self._token, "log", ledger_id),
                lambda: os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o644),
            )
        except OSError as exc:
            raise StorageError(
                f"cannot create ledger {ledger_id} of {self.name}: {_reason(exc)}"
            ) from exc
        self._writable = ledger_id
        self._zeroed_end = 0  # zero-filled at its first write, after the ledger list names it
        self._offsets[ledger_id] = array("Q", [0])
        self._dirs_to_sync = (self._dir.parent, self._dir) if new_dir else (self._dir,)

    def _store_append(self, ledger_id: int, data: bytes) -> None:
        # Only queued here; records are laid out for a whole write at once (_write_buffer).
        self._unsynced.append(data)
        self._unwritten_bytes += _HEADER.size + len(data)
        if self._unwritten_bytes >= _FLUSH_BYTES:
            self._write_buffer(ledger_id)

    def _write_buffer(self, ledger_id: int) -> None:
        """Write the queued entries as records (one CRC per entry, one buffer, one pwrite)
        and extend the ledger's offsets over them."""
        run = self._unsynced[self._unwritten :]
        self._unwritten, self._unwritten_bytes = len(self._unsynced), 0
        pack, crc32 = _HEADER.pack, zlib.crc32
        records = b"".join([part for data in run for part in (pack(len(data), crc32(data)), data)])
        offsets = self._offsets[ledger_id]
        offset = offsets[-1]
        ends = accumulate([_HEADER.size + len(data) for data in run], initial=offset)
        next(ends)
        offsets.extend(ends)
        end = offsets[-1]
        try:
            fd = self._fd(ledger_id)
            _pwrite_all(fd, records, offset)
            if end > self._zeroed_end:
                # Past the zero-filled tail: extend it, the zeros right after the records
                # (nothing is written twice). No sync of its own: the zeros become durable
                # with this group commit's one fdatasync, with the records, and no entry of
                # the commit is confirmed before that sync returns. Until then a crash may
                # keep any part of the records and the zeros, or the old size, or holes
                # (which read as zeros): all of it past the last synced record, since
                # writes only ever start at the data end. Recovery ends the data at a zero
                # header and cuts a partial record as a torn tail, so no confirmed entry
                # depends on these zeros being on disk. After the sync, later commits write
                # inside them and their fdatasync changes no size.
                pad = _zero_ahead(end)
                _pwrite_all(fd, memoryview(_ZEROS)[:pad], end)
                self._zeroed_end = end + pad
        except OSError as exc:
            self._fail(ledger_id, exc)

    def _store_flush(self, ledger_id: int) -> None:
        if self._unwritten < len(self._unsynced):
            self._write_buffer(ledger_id)
        if self.config.journal_sync_data:
            try:
                _sync_data(self._fd(ledger_id))
                for directory in self._dirs_to_sync:
                    _fsync_dir(directory)
            except OSError as exc:
                self._fail(ledger_id, exc)
            self._dirs_to_sync = ()
            self._journal(ledger_id)
        self._cache_synced(ledger_id)

    def _cache_synced(self, ledger_id: int) -> None:
        """Put the entries just made durable into the entry cache, in one call: a tailing
        reader (the dispatcher, right after this group commit) finds them in memory."""
        run, self._unsynced, self._unwritten = self._unsynced, [], 0
        if run and self.config.cache_size_bytes > 0:
            self._cache.put_run(ledger_id, len(self._offsets[ledger_id]) - 1 - len(run), run)

    def _journal(self, ledger_id: int) -> None:
        """Append the ends of the entries made durable since the last chunk to the position
        journal, once they span a quarter of the tail a recovery scans anyway.

        With small group commits (a batch per commit) that is one journal write in many
        commits, not one each; after a crash the scan covers at most ``_TAIL_SCAN_BYTES``
        and that quarter. Best effort: on an error the ledger is not journaled any more (a
        crash then costs a full scan of it, nothing else)."""
        if ledger_id != self._journal_ledger:
            self._close_journal()
            self._journal_ledger, self._journaled = ledger_id, 0
            self._journal_failed = False
        offsets = self._offsets[ledger_id]
        if self._journal_failed or self._journaled >= len(offsets) - 1:
            return
        if offsets[-1] - offsets[self._journaled] < _TAIL_SCAN_BYTES // _JOURNAL_PER_TAIL_SCAN:
            return  # recovery scans these bytes anyway: no write (a system call) per commit
        path = journal_path(self._path(ledger_id))
        try:
            fd = self._files.acquire(
                (self._token, "journal", ledger_id),
                lambda: os.open(
                    path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _O_CLOEXEC, 0o644
                ),
            )
            view = memoryview(journal_bytes(offsets[self._journaled + 1 :]))
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            log.warning(
                "managed ledger %s: cannot journal the positions of ledger %d (%s); after a "
                "crash its segment file is scanned in full",
                self.name,
                ledger_id,
                _reason(exc),
            )
            self._close_journal()
            self._journal_failed = True
            return
        self._journaled = len(offsets) - 1

    def _close_journal(self) -> None:
        if self._journal_ledger is not None:
            self._files.close((self._token, "journal", self._journal_ledger))

    def _forget_unsynced(self) -> None:
        self._unsynced.clear()
        self._unwritten = self._unwritten_bytes = 0

    def _fail(self, ledger_id: int, exc: OSError) -> None:
        """Drop every unconfirmed entry (memory and file) and raise ``StorageError``."""
        offsets = self._offsets[ledger_id]
        confirmed = self._infos[-1].entries
        for entry_id in range(confirmed, len(offsets) - 1):
            self._cache.drop((ledger_id, entry_id))
        del offsets[confirmed + 1 :]
        self._forget_unsynced()
        # The zero-filled tail goes with the unconfirmed records: the next write extends it
        # again (and so overwrites whatever a failed truncation leaves).
        self._zeroed_end = offsets[-1]
        try:
            os.ftruncate(self._fd(ledger_id), offsets[-1])
        except OSError as truncate_exc:
            # The next write overwrites the tail (pwrite at the confirmed end) and recovery
            # truncates whatever is left past the last good record.
            log.error(
                "managed ledger %s: cannot truncate ledger %d after a failed write: %s",
                self.name,
                ledger_id,
                _reason(truncate_exc),
            )
        raise StorageError(
            f"cannot persist entry to ledger {ledger_id} of {self.name}: {_reason(exc)}"
        ) from exc

    # -- reading ----------------------------------------------------------------------------

    def _store_read(self, ledger_id: int, first: int, last: int) -> list[bytes | None]:
        result = self._cache.get_run(ledger_id, first, last)
        if None not in result:
            return result  # a tailing reader: everything was just cached
        if not self._corrupt and not any(result):  # entries are never empty
            return self._read_disk(ledger_id, first, last)  # a reader the cache lost
        entry_id = first
        while entry_id <= last:
            if result[entry_id - first] is not None or (ledger_id, entry_id) in self._corrupt:
                entry_id += 1
                continue
            end = entry_id
            while (
                end < last
                and result[end + 1 - first] is None
                and (ledger_id, end + 1) not in self._corrupt
            ):
                end += 1
            result[entry_id - first : end + 1 - first] = self._read_disk(ledger_id, entry_id, end)
            entry_id = end + 1
        return result

    def _read_disk(self, ledger_id: int, first: int, last: int) -> list[bytes]:
        offsets = self._offsets[ledger_id]
        start, stop = offsets[first], offsets[last + 1]
        try:
            fd = self._fd(ledger_id)
            buf = os.pread(fd, stop - start, start)
            while len(buf) < stop - start:
                more = os.pread(fd, stop - start - len(buf), start + len(buf))
                if not more:
                    raise OSError(errno.EIO, f"segment file ends at byte {start + len(buf)}")
                buf += more
        except OSError as exc:
            raise StorageError(
                f"cannot read ledger {ledger_id} of {self.name}: {_reason(exc)}"
            ) from exc
        entries: list[bytes] = []
        append, unpack, crc32 = entries.append, _HEADER.unpack_from, zlib.crc32
        header = _HEADER.size
        bounds = offsets[first : last + 2]  # one more than the entries: strict=False
        for entry_id, begin, end in zip(range(first, last + 1), bounds, bounds[1:], strict=False):
            begin -= start
            length, crc = unpack(buf, begin)
            data = buf[begin + header : end - start]
            if length != len(data) or crc32(data) != crc:
                raise LedgerCorruption(
                    f"entry {ledger_id}:{entry_id} of {self.name} failed its CRC check "
                    f"(byte offset {begin + start})"
                )
            append(data)
        return entries

    # -- removal ----------------------------------------------------------------------------

    def _store_delete(self, ledger_id: int) -> None:
        self._files.close((self._token, "log", ledger_id))
        if ledger_id == self._journal_ledger:
            self._close_journal()
        self._unlink_quietly(journal_path(self._path(ledger_id)))
        self._cache.drop_ledger(ledger_id)
        self._offsets.pop(ledger_id, None)
        try:
            remove_index(self._path(ledger_id))
            self._path(ledger_id).unlink(missing_ok=True)
        except OSError as exc:
            log.warning(
                "managed ledger %s: cannot remove the file of ledger %d (%s); it is "
                "removed at the next open",
                self.name,
                ledger_id,
                _reason(exc),
            )

    def _store_release(self) -> None:
        token = self._token
        self._files.close_where(lambda key: key[0] is token)
        self._forget_unsynced()
        for ledger_id in self._offsets:
            self._cache.drop_ledger(ledger_id)

    def delete(self) -> None:
        super().delete()
        try:
            self._dir.rmdir()
        except OSError as exc:
            log.warning(
                "managed ledger %s: cannot remove %s: %s", self.name, self._dir.name, _reason(exc)
            )


class DurableStorage(LedgerStorage):
    """Managed ledgers and metadata under ``data_dir``; they survive a crash of the process."""

    durable = True

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        super().__init__()
        self.data_dir = Path(data_dir)
        # One entry cache for every topic; its budget is the largest cache_size_bytes any
        # opened ledger asked for (the broker gives them all managed_ledger_cache_size_mb).
        self.entry_cache = EntryCache(0)
        # One LRU of open segment files for every topic (see open_files.py).
        self.open_files = OpenFiles()
        self._ledgers_dir = self.data_dir / "ledgers"
        try:
            if not self._ledgers_dir.is_dir():
                self._ledgers_dir.mkdir(parents=True)
                _fsync_dir(self.data_dir)
        except OSError as exc:
            raise StorageError(
                f"cannot create data directory {self.data_dir}: {_reason(exc)}"
            ) from exc
        self.metadata: SqliteMetadataStore = SqliteMetadataStore(self.data_dir / "metadata.sqlite")

    def _make_ledger(self, name: str, config: LedgerConfig) -> LedgerSequence:
        directory = self._ledgers_dir / segment_dir_name(name)
        self.entry_cache.capacity = max(self.entry_cache.capacity, config.cache_size_bytes)
        if config.max_open_files > 0:
            self.open_files.capacity = config.max_open_files
        return DurableManagedLedger(
            name, config, self.metadata, directory, self.entry_cache, self.open_files
        )

    def managed_ledger_names(self) -> Iterator[str]:
        return iter(self.metadata.ledger_list_names())
