"""Tables that survive a restart: the data directory (``labkit serve --data DIR``), an append-only log.

Every commit of the store (:mod:`.changes`) is one record of ``DIR/labkit-data.log``, written and
``fsync``-ed before the request's answer is sent: a data-plane commit carries the after-image of
each item it wrote (a transaction's items in one record, so it is there whole or not at all), a
control-plane commit the definitions of the tables it changed (keys, indexes, billing, stream
specification, TTL, tags; ``null`` for a table deleted) and, for a table that is new (created,
restored from a backup), all of its items. Replaying the records in order gives the state back;
each is an image, not an operation, so replaying one twice changes nothing.

A record is one line: the CRC-32 of its JSON (8 hex digits), a space, the JSON, a newline. The
file starts with a header line naming the format and its version (:data:`VERSION`). At start the
log (and ``DIR/labkit-data.snapshot``, the state compacted at an earlier start) is read: a last
record cut short (a write that was never acknowledged: the process died inside it) is dropped
with a message; a damaged record followed by others is an error naming the file and the byte
offset, and nothing after it is read or dropped silently; a file of a newer format version says
so. When the log has grown past :data:`COMPACT_BYTES` the state is written as a new snapshot
(written aside, fsync-ed, renamed over the old one) and the log starts again.

The directory is held with an exclusive ``flock`` on ``DIR/labkit-data.lock`` for as long as the
endpoint runs: a second ``labkit serve --data DIR`` refuses to start, and writes nothing.

Kept for global tables (``replication`` records): the replica groups, the pending deliveries and the
write stamps they need, as the store's replication keeps them (:mod:`.replication`); the deliveries a
write makes ride in its own ``items`` record (``rep``), so a crash keeps both or neither; a whole
``state`` record is written at each start, and the records before it are no longer read.

Kept for TTL: the setting (in the definitions) and the items, expired or not; a TTL deletion
(``Labkit.ExpireItems``) is a commit like any other. Not kept: stream records (a table's stream is
recreated, with a new ARN, empty), backups, the ClientRequestToken memory, the clock's advances (a
restarted engine's epoch is the wall clock again: decision 143), anything held by the race lab or the
fault injector.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ...shared.errors import ConfigurationError
from .changes import Commit

#: The format this labkit writes; it reads every version in :data:`READABLE`.
VERSION = 1
READABLE = frozenset({1})
FORMAT = "labkit-data"
LOG = "labkit-data.log"
SNAPSHOT = "labkit-data.snapshot"
LOCK = "labkit-data.lock"
#: The log is compacted into a snapshot at start once it is larger than this.
COMPACT_BYTES = 8 * 1024 * 1024
_HEADER = json.dumps({"format": FORMAT, "version": VERSION}, separators=(",", ":")).encode() + b"\n"

Who = tuple[str, str]  # account, region


class DataDirError(ConfigurationError):
    """``--data`` names a directory labkit cannot use (a file, not writable, held by another server)."""


class DamagedDataFile(ConfigurationError):
    """A record of a data file is damaged where more records follow: nothing is dropped silently."""


# --- values: binary as base64 in the file, bytes in memory -------------------------------------


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for kind, inner in value.items():
            if kind == "B" and isinstance(inner, bytes | bytearray):
                out[kind] = base64.b64encode(inner).decode("ascii")
            elif kind == "BS" and isinstance(inner, list):
                out[kind] = [
                    base64.b64encode(b).decode("ascii") if isinstance(b, bytes | bytearray) else b for b in inner
                ]
            else:
                out[kind] = _encode(inner)
        return out
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode_value(value: Mapping[str, Any]) -> dict[str, Any]:
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in inner]}
    if kind == "M":
        return {"M": {k: _decode_value(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_decode_value(v) for v in inner]}
    return {kind: inner}


def decode_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item as the file keeps it (binary as base64) -> as the store keeps it (binary as bytes)."""
    return {name: _decode_value(value) for name, value in item.items()}


def key_id(key: Mapping[str, Any]) -> str:
    """A key as a stable string (the item's identity in the replayed state)."""
    return json.dumps(_encode(dict(key)), sort_keys=True, separators=(",", ":"))


# --- the replayed state ------------------------------------------------------------------------


@dataclass
class TableState:
    definition: dict[str, Any]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # key id -> item (file form)


@dataclass
class State:
    """Every table of every account and region, as the records leave them."""

    tables: dict[Who, dict[str, TableState]] = field(default_factory=dict)
    #: Global tables' records (:mod:`.replication`) since its last whole ``state`` record, in order.
    replication: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, record: Mapping[str, Any]) -> None:
        if record["t"] == "replication":
            kept = dict(record["r"])
            self.replication = [kept] if kept.get("op") == "state" else [*self.replication, kept]
            return
        who = (str(record["a"]), str(record["r"]))
        tables = self.tables.setdefault(who, {})
        if record.get("rep") is not None:
            self.replication.append(dict(record["rep"]))
        if record["t"] == "items":
            for name, key, item in record["c"]:
                table = tables.get(name)
                if table is None:
                    continue  # a write to a table a later control record of this log deleted
                if item is None:
                    table.items.pop(key_id(key), None)
                else:
                    table.items[key_id(key)] = item
        elif record["t"] == "tables":
            for name, definition in record["d"].items():
                if definition is None:
                    tables.pop(name, None)
                elif name in tables and not record.get("new", {}).get(name):
                    tables[name].definition = definition
                else:
                    tables[name] = TableState(definition)
        else:
            raise ValueError(f"unknown record type {record['t']!r}")

    def records(self) -> Iterator[dict[str, Any]]:
        """The state as records (a snapshot): each table's definition, then its items, 500 a record."""
        for (account, region), tables in self.tables.items():
            for name, table in tables.items():
                yield {"t": "tables", "a": account, "r": region, "d": {name: table.definition}, "new": {name: True}}
                items = list(table.items.values())
                for start in range(0, len(items), 500):
                    chunk = items[start : start + 500]
                    yield {"t": "items", "a": account, "r": region, "c": [[name, _key_of(table, i), i] for i in chunk]}
        for kept in self.replication:
            yield {"t": "replication", "r": kept}


def _key_of(table: TableState, item: Mapping[str, Any]) -> dict[str, Any]:
    names = [k["AttributeName"] for k in table.definition["KeySchema"]]
    return {n: item[n] for n in names}


# --- the file format ---------------------------------------------------------------------------


def frame(record: Mapping[str, Any]) -> bytes:
    """One record as a line: CRC-32 (8 hex digits), a space, the JSON, a newline."""
    body = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"%08x " % binascii.crc32(body) + body + b"\n"


def _parse(line: bytes) -> dict[str, Any] | None:
    """A record from one line (without its newline), or None if it is not one (torn or damaged)."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    try:
        crc = int(line[:8], 16)
    except ValueError:
        return None
    body = line[9:]
    if binascii.crc32(body) != crc:
        return None
    try:
        found = json.loads(body)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def read_records(path: Path, *, torn_tail_ok: bool) -> tuple[list[dict[str, Any]], int | None]:
    """The records of one data file, and the offset of a torn last record (to cut; None if none).

    A damaged record with more after it raises :class:`DamagedDataFile` (file, offset); a file of a
    newer format raises :class:`DataDirError`.
    """
    data = path.read_bytes()
    if not data:
        return [], None
    first = data.find(b"\n")
    header_line = data[: first if first >= 0 else len(data)]
    try:
        header = json.loads(header_line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        if first < 0 and torn_tail_ok:
            return [], 0  # the header itself was cut short: a log that never held a record
        raise DamagedDataFile(
            f"{path} is not a labkit data file (byte 0: no {FORMAT!r} header); move it away, or point --data "
            "at another directory"
        )
    version = header.get("version")
    if version not in READABLE:
        raise DataDirError(
            f"{path} was written by a newer labkit (data format version {version}); this labkit reads version "
            f"{', '.join(map(str, sorted(READABLE)))}: upgrade labkit (pip install -U labkit-dynamodb), "
            "or point --data at another directory"
        )
    records: list[dict[str, Any]] = []
    offset = first + 1
    while offset < len(data):
        end = data.find(b"\n", offset)
        line = data[offset : end if end >= 0 else len(data)]
        record = _parse(line) if end >= 0 else None
        if record is None:
            rest = data[end + 1 :] if end >= 0 else b""
            if torn_tail_ok and not rest.strip():
                return records, offset
            after = len(rest.splitlines())
            raise DamagedDataFile(
                f"{path} is damaged at byte {offset} (a record that does not read back, with {after} more line(s) "
                "after it); labkit dropped nothing: restore the file from a copy, or move the directory away to "
                "start empty"
            )
        records.append(record)
        offset = end + 1
    return records, None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DataDir:
    """The data directory of one endpoint: held (``flock``) from :meth:`open` until :meth:`close`."""

    def __init__(self, path: Path, lock: IO[bytes]) -> None:
        self.path = path
        self._lock = lock
        self._log: IO[bytes] | None = None

    @classmethod
    def open(cls, where: str | os.PathLike[str]) -> DataDir:
        """Check ``where`` is a directory this process can hold and write (made if it does not exist);
        hold it. One clear :class:`DataDirError` otherwise, with nothing written."""
        path = Path(where).expanduser()
        try:
            return cls._open(path)
        except PermissionError as exc:
            raise DataDirError(
                f"--data {path}: the directory is not writable by this user ({exc.strerror}); choose another"
            ) from exc

    @classmethod
    def _open(cls, path: Path) -> DataDir:
        if path.exists() and not path.is_dir():
            raise DataDirError(f"--data {path}: is a file, not a directory; point --data at a directory")
        if not path.exists():
            parent = path.parent
            if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                raise DataDirError(f"--data {path}: cannot create it ({parent} is not a writable directory)")
            path.mkdir()
        lock_path = path / LOCK
        if not os.access(path, os.W_OK | os.X_OK) or lock_path.exists() and not os.access(lock_path, os.W_OK):
            raise DataDirError(f"--data {path}: the directory is not writable by this user; choose another")
        try:
            lock = open(lock_path, "ab")  # noqa: SIM115 - held until close()
        except OSError as exc:
            raise DataDirError(
                f"--data {path}: the directory is not writable by this user ({exc.strerror}); choose another"
            ) from exc
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            lock.close()
            raise DataDirError(
                f"--data {path}: another labkit endpoint holds this directory (lock {lock_path}); stop it, or point "
                "--data at another directory"
            ) from exc
        return cls(path, lock)

    def load(self) -> State:
        """The state the snapshot and the log leave; a torn last log record is cut (with a message);
        a big log is compacted into a new snapshot."""
        state = State()
        snapshot, log = self.path / SNAPSHOT, self.path / LOG
        if snapshot.exists():
            records, _ = read_records(snapshot, torn_tail_ok=False)  # written aside and renamed: never torn
            for record in records:
                state.apply(record)
        log_size = 0
        if log.exists():
            records, torn = read_records(log, torn_tail_ok=True)
            for record in records:
                state.apply(record)
            if torn is not None:
                size = log.stat().st_size
                print(
                    f"labkit: {log}: dropped a torn last record at byte {torn} ({size - torn} bytes: a write that was "
                    "never acknowledged, cut short when the process stopped)",
                    file=sys.stderr,
                )
                with open(log, "r+b") as handle:
                    handle.truncate(torn)
                    handle.flush()
                    os.fsync(handle.fileno())
            log_size = log.stat().st_size
        if log_size > COMPACT_BYTES:
            self._compact(state)
        self._log = open(log, "ab")  # noqa: SIM115 - the endpoint's log, closed by close()
        if self._log.tell() == 0:
            self._log.write(_HEADER)
            self._sync()
        return state

    def _compact(self, state: State) -> None:
        aside = self.path / (SNAPSHOT + ".new")
        with open(aside, "wb") as handle:
            handle.write(_HEADER)
            for record in state.records():
                handle.write(frame(record))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(aside, self.path / SNAPSHOT)
        _fsync_dir(self.path)
        fresh = self.path / (LOG + ".new")
        with open(fresh, "wb") as handle:
            handle.write(_HEADER)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(fresh, self.path / LOG)  # a crash before this line replays the old log over the snapshot: same state
        _fsync_dir(self.path)

    def _sync(self) -> None:
        assert self._log is not None
        self._log.flush()
        os.fsync(self._log.fileno())

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record and fsync it: when this returns, the record survives a crash."""
        if self._log is None:
            raise RuntimeError("DataDir.append before load")
        self._log.write(frame(record))
        self._sync()

    def write_commit(self, commit: Commit, sent: Mapping[str, Any] | None = None) -> None:
        """A data-plane commit: the after-image of every item it wrote, one record (with ``sent``: the
        replication deliveries it makes, in the same record)."""
        self.write_items(commit.account, commit.region, [(c.table, c.key, c.after) for c in commit.changes], sent)

    def write_items(
        self,
        account: str,
        region: str,
        images: list[tuple[str, Mapping[str, Any], Any]],
        sent: Mapping[str, Any] | None = None,
    ) -> None:
        """One record of (table, key, item or None) images, fsync-ed."""
        changes = [[table, _encode(dict(key)), None if item is None else _encode(item)] for table, key, item in images]
        record: dict[str, Any] = {"t": "items", "a": account, "r": region, "c": changes}
        if sent is not None:
            record["rep"] = _encode(dict(sent))
        self.append(record)

    def write_replication(self, record: Mapping[str, Any]) -> None:
        """One global-tables record (:mod:`.replication`), binary values as base64, fsync-ed."""
        self.append({"t": "replication", "r": _encode(dict(record))})

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        self._lock.close()  # releases the flock


__all__ = [
    "COMPACT_BYTES",
    "FORMAT",
    "LOCK",
    "LOG",
    "READABLE",
    "SNAPSHOT",
    "VERSION",
    "DamagedDataFile",
    "DataDir",
    "DataDirError",
    "State",
    "TableState",
    "decode_item",
    "frame",
    "key_id",
    "read_records",
]
