"""Singleton items: one item under a constant key holding global state (feature flags).

The item lives at ``PK=SETTINGS#APP``, ``SK=FLAGS#V1``. It is read with ``GetItem``
(never Query or Scan), fails closed to safe defaults when it is missing or unreadable,
is cached per process, and is changed with a version-guarded ``UpdateItem`` that
touches only the attributes asked for.

Two version numbers, kept apart on purpose:

* the **shape** of the item is versioned in its key (``FLAGS#V1`` -> ``FLAGS#V2``, see
  :func:`migrate` and :func:`retire`);
* the ``version`` attribute counts **changes** to one item: every successful write adds 1,
  and every safe write is conditioned on the version it read (optimistic locking).
  The source article calls it ``schema_version``; that name suggests the shape, which is
  the key's job, so labkit calls it ``version``.

Size guard: a write that would make the item need more 4 KB read units issues an
:class:`~labkit.errors.ItemSizeWarning` (``warnings.warn``: the write still happens, every
read costs more); above 400 KB it raises :class:`~labkit.errors.ItemTooLarge` and writes
nothing.

Anti-patterns kept on purpose for the lesson: :func:`unsafe_set_flags` / :func:`unsafe_update`
(read-modify-write with PutItem: loses updates) and :func:`unsafe_scan_read` (Scan + filter:
reads the whole table to return one item).
"""

from __future__ import annotations

import random
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from .capacity import item_size, read_units
from .constants import FLAGS_SK_V1, FLAGS_SK_V2, MAX_ITEM_BYTES, READ_UNIT_BYTES, SETTINGS_PK
from .errors import (
    BackendUnavailable,
    ConflictError,
    DynamoError,
    FlagTypeError,
    ItemSizeWarning,
    ItemTooLarge,
    NotFound,
    RetriesExhausted,
    TableError,
    TransactionCancelled,
    UnknownFlag,
    ValidationError,
    cancellation_reasons,
    error_code,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .backend import Connection

#: The attribute that counts changes to the item (optimistic-locking token).
VERSION_ATTR = "version"
#: Attributes a flag may not be called: the key and the version counter.
RESERVED_NAMES = frozenset({"PK", "SK", VERSION_ATTR})
#: Where a read's flags came from.
Source = Literal["item", "cache", "defaults"]
FlagType = type[bool] | type[int] | type[str]

_SER = TypeSerializer()
_DESER = TypeDeserializer()


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Flag:
    """One declared setting: its name, its type (bool, int or str) and its fail-closed value."""

    name: str
    type: FlagType
    safe_default: bool | int | str

    def __post_init__(self) -> None:
        if self.type not in (bool, int, str):
            raise ValidationError(f"flag {self.name!r}: type must be bool, int or str, not {self.type!r}")
        if self.name in RESERVED_NAMES or not self.name:
            raise ValidationError(f"flag name {self.name!r} is reserved; choose another name")
        if not _is_type(self.safe_default, self.type):
            raise FlagTypeError(f"flag {self.name!r}: safe_default {self.safe_default!r} is not a {self.type.__name__}")

    def check(self, value: object) -> bool | int | str:
        """Return ``value`` if it has this flag's type; else raise :class:`FlagTypeError`."""
        if not _is_type(value, self.type):
            raise FlagTypeError(
                f"flag {self.name!r} takes a {self.type.__name__}, got {type(value).__name__} "
                f"{value!r}; nothing was written. Pass e.g. {self.name}={self.safe_default!r}."
            )
        return value  # type: ignore[return-value]


def _is_type(value: object, kind: FlagType) -> bool:
    """Exact type check: bool is a subclass of int in Python, but not a valid int flag."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, str)


@dataclass(frozen=True)
class FlagSchema:
    """The declared flags of one settings item, in order."""

    flags: tuple[Flag, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.flags]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationError(f"flags declared twice: {', '.join(dupes)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flags)

    def __getitem__(self, name: str) -> Flag:
        for f in self.flags:
            if f.name == name:
                return f
        raise UnknownFlag(name, self.names)

    def defaults(self) -> dict[str, bool | int | str]:
        """The safe value of every flag: features off, maintenance on."""
        return {f.name: f.safe_default for f in self.flags}

    def validate(self, changes: Mapping[str, object]) -> dict[str, bool | int | str]:
        """Check names and types of ``changes``; raise before anything is sent."""
        if not changes:
            raise ValidationError("no flags to change; pass at least one, e.g. signup_enabled=True")
        return {name: self[name].check(value) for name, value in changes.items()}

    def decode(self, stored: Mapping[str, Any]) -> tuple[dict[str, bool | int | str], list[str]]:
        """Flags from a stored item (plain Python values), with notes on what was ignored."""
        flags = self.defaults()
        notes: list[str] = []
        for name, value in stored.items():
            if name in RESERVED_NAMES:
                continue
            if name not in flags:
                notes.append(f"ignored unknown attribute {name!r}")
                continue
            flag = self[name]
            if flag.type is int and isinstance(value, Decimal) and value == value.to_integral_value():
                value = int(value)
            if _is_type(value, flag.type):
                flags[name] = value
            else:
                notes.append(
                    f"{name!r} holds {value!r}, not a {flag.type.__name__}; "
                    f"using its safe default {flag.safe_default!r}"
                )
        return flags, notes


#: The lesson's flags. Safe defaults fail closed: new features off, maintenance on.
DEFAULT_SCHEMA = FlagSchema(
    (
        Flag("signup_enabled", bool, False),
        Flag("maintenance_mode", bool, True),
        Flag("ai_search_enabled", bool, False),
        Flag("rate_limit_per_minute", int, 60),
        Flag("banner_message", str, ""),
    )
)


# --------------------------------------------------------------------------- reads


@dataclass(frozen=True)
class FlagRead:
    """What a read returned: the flags, where they came from, and why."""

    flags: Mapping[str, bool | int | str]
    source: Source
    reason: str = ""
    version: int | None = None
    notes: tuple[str, ...] = ()
    error_code: str = ""
    read_units: float | None = None
    items_read: int = 0

    @property
    def is_default(self) -> bool:
        """True when these are the safe defaults, not the stored item."""
        return self.source == "defaults"

    def __getitem__(self, name: str) -> bool | int | str:
        if name not in self.flags:
            raise UnknownFlag(name, tuple(self.flags))
        return self.flags[name]


@dataclass(frozen=True)
class UpdateResult:
    """A successful safe write: the new version and how many attempts it took."""

    flags: Mapping[str, bool | int | str]
    version: int
    attempts: int
    created: bool = False


@dataclass(frozen=True)
class MigrationResult:
    """Outcome of one migrator: ``won`` is False when another migrator wrote the target first."""

    won: bool
    target_sk: str
    reason: str = ""
    item: Mapping[str, Any] = field(default_factory=dict)


class FlagCache:
    """A per-process cache of the last good read, with a time-to-live and hit/miss counts."""

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValidationError(f"cache ttl must be >= 0 seconds, got {ttl}")
        self.ttl = ttl
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entry: tuple[float, FlagRead] | None = None
        self._lock = threading.Lock()

    def get(self) -> FlagRead | None:
        """The cached read if still fresh (counts a hit), else None (counts a miss)."""
        with self._lock:
            if self._entry is not None and self.clock() - self._entry[0] < self.ttl:
                self.hits += 1
                return self._entry[1]
            self.misses += 1
            return None

    def put(self, read: FlagRead) -> None:
        with self._lock:
            self._entry = (self.clock(), read)

    def invalidate(self) -> None:
        """Forget the cached read; the next read goes to DynamoDB."""
        with self._lock:
            self._entry = None


def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _DESER.deserialize(v) for k, v in item.items()}


def _wire(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _SER.serialize(v) for k, v in item.items()}


def _version_of(stored: Mapping[str, Any]) -> int | None:
    v = stored.get(VERSION_ATTR)
    return int(v) if isinstance(v, Decimal | int) and not isinstance(v, bool) else None


def exponential_jitter(
    base: float = 0.005, cap: float = 0.2, rng: random.Random | None = None
) -> Callable[[int], float]:
    """Backoff "full jitter": a random delay in [0, min(cap, base * 2**attempt)]."""
    r = rng or random.Random()

    def delay(attempt: int) -> float:
        return r.uniform(0, min(cap, base * 2**attempt))

    return delay


class FlagStore:
    """The settings singleton: read it (fail closed, cached) and change it safely.

    One store per process (it owns the cache). :meth:`with_client` gives a race-lab actor the
    same store on its own client; ``sk`` chooses which shape of the item readers use
    (``FLAGS#V1`` or ``FLAGS#V2``): switching readers is a configuration change.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        schema: FlagSchema = DEFAULT_SCHEMA,
        pk: str = SETTINGS_PK,
        sk: str = FLAGS_SK_V1,
        cache_ttl: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        max_attempts: int = 5,
        backoff: Callable[[int], float] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValidationError(f"max_attempts must be at least 1, got {max_attempts}")
        self.client = client
        self.table_name = table_name
        self.schema = schema
        self.pk = pk
        self.sk = sk
        self.cache = FlagCache(cache_ttl, clock)
        self.max_attempts = max_attempts
        self.backoff = backoff or exponential_jitter()
        self.sleep = sleep

    @classmethod
    def connect(cls, conn: Connection, **options: Any) -> FlagStore:
        """A store on ``conn``'s shared client and lab table (options as for the constructor)."""
        return cls(conn.client, conn.table_name, **options)

    @property
    def key(self) -> dict[str, dict[str, str]]:
        """The constant key, in DynamoDB's wire form."""
        return {"PK": {"S": self.pk}, "SK": {"S": self.sk}}

    def with_client(self, client: DynamoDBClient) -> FlagStore:
        """The same store (table, key, schema, retry policy) using another client; own cache."""
        return FlagStore(
            client,
            self.table_name,
            schema=self.schema,
            pk=self.pk,
            sk=self.sk,
            cache_ttl=self.cache.ttl,
            clock=self.cache.clock,
            max_attempts=self.max_attempts,
            backoff=self.backoff,
            sleep=self.sleep,
        )

    # ---------------------------------------------------------------- reads

    def read(self, *, consistent: bool = False, use_cache: bool = True) -> FlagRead:
        """The flags, from the cache or one GetItem; the safe defaults if the read fails.

        Never raises for a missing item, a missing table or a failed call: the result's
        ``source`` is ``"defaults"`` and ``reason`` says why. Defaults are not cached, so
        the next read tries DynamoDB again.
        """
        if use_cache:
            cached = self.cache.get()
            if cached is not None:
                return FlagRead(
                    cached.flags,
                    "cache",
                    "served from the per-process cache",
                    cached.version,
                    cached.notes,
                )
        try:
            out = self.client.get_item(
                TableName=self.table_name,
                Key=self.key,
                ConsistentRead=consistent,
                ReturnConsumedCapacity="TOTAL",
            )
        except (ClientError, BotoCoreError) as exc:
            code = error_code(exc)
            why = (
                f"table {self.table_name!r} does not exist"
                if code == "ResourceNotFoundException"
                else f"GetItem failed: {exc}"
            )
            return FlagRead(self.schema.defaults(), "defaults", f"{why}; using safe defaults", error_code=code)
        units = out.get("ConsumedCapacity", {}).get("CapacityUnits")
        if "Item" not in out:
            return FlagRead(
                self.schema.defaults(),
                "defaults",
                f"no item at PK={self.pk} SK={self.sk}; using safe defaults",
                read_units=units,
            )
        stored = _plain(out["Item"])
        flags, notes = self.schema.decode(stored)
        result = FlagRead(flags, "item", "", _version_of(stored), tuple(notes), read_units=units, items_read=1)
        if use_cache:
            self.cache.put(result)
        return result

    def invalidate(self) -> None:
        """Drop the cached flags (call after a change you must see at once)."""
        self.cache.invalidate()

    def _read_item(self) -> dict[str, Any] | None:
        """The stored item, strongly consistent, in wire form; TableError if the table is gone."""
        try:
            out = self.client.get_item(TableName=self.table_name, Key=self.key, ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise _wrap(exc, self.table_name, "GetItem") from exc
        item = out.get("Item")
        return dict(item) if item is not None else None

    # ---------------------------------------------------------------- safe writes

    def set_flags(self, changes: Mapping[str, object] | None = None, **kw: object) -> UpdateResult:
        """Change only the given flags, guarded by the version; retry on conflict.

        Validates names, types and size before the first write. Each attempt reads the
        item (strongly consistent), then sends ``SET <flags>, version = :next`` with
        ``ConditionExpression version = :current`` (or ``attribute_not_exists(PK)`` to
        create it). A ConditionalCheckFailed means another writer got there first: back
        off with jitter, re-read, try again — at most ``max_attempts`` times, then
        :class:`RetriesExhausted`.
        """
        wanted = self.schema.validate({**(changes or {}), **kw})
        own_size = item_size(_wire(wanted))
        if own_size > MAX_ITEM_BYTES:
            raise ItemTooLarge(own_size, MAX_ITEM_BYTES)
        return self._apply(lambda _flags: wanted, ", ".join(wanted))

    def update(self, change: Callable[[Mapping[str, bool | int | str]], Mapping[str, object]]) -> UpdateResult:
        """Like :meth:`set_flags`, but the new values depend on the current ones.

        ``change(flags)`` gets the flags as just read and returns the flags to set, e.g.
        ``lambda f: {"rate_limit_per_minute": f["rate_limit_per_minute"] + 10}``. On a
        conflict it is called again with the fresh flags — so it must not have side effects.
        Its result is validated before each write.
        """
        return self._apply(lambda flags: self.schema.validate(change(flags)), "the flags")

    def _apply(
        self,
        make: Callable[[Mapping[str, bool | int | str]], Mapping[str, bool | int | str]],
        what: str,
    ) -> UpdateResult:
        """The optimistic-locking loop: read, compute, conditional write; retry on conflict."""
        last: ClientError | BotoCoreError | None = None
        for attempt in range(1, self.max_attempts + 1):
            current = self._read_item()
            flags, _ = self.schema.decode(_plain(current) if current is not None else {})
            wanted = make(flags)
            try:
                result = self._create(wanted, attempt) if current is None else self._update(current, wanted, attempt)
            except (ClientError, BotoCoreError) as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise _wrap(exc, self.table_name, "UpdateItem") from exc
                last = exc
                if attempt < self.max_attempts:
                    self.sleep(self.backoff(attempt))
                continue
            self.cache.invalidate()
            return result
        raise RetriesExhausted(
            f"gave up changing {what} after {self.max_attempts} attempts: another writer "
            "changed the settings item every time; nothing of this change was written. "
            "Retry later, or raise max_attempts.",
            self.max_attempts,
        ) from last

    def _create(self, wanted: Mapping[str, bool | int | str], attempt: int) -> UpdateResult:
        item = {"PK": self.pk, "SK": self.sk, **self.schema.defaults(), **wanted, VERSION_ATTR: 1}
        wire = _wire(item)
        _check_size(0, item_size(wire))
        self.client.put_item(
            TableName=self.table_name,
            Item=wire,
            ConditionExpression="attribute_not_exists(PK)",
        )
        flags, _ = self.schema.decode(item)
        return UpdateResult(flags, 1, attempt, created=True)

    def _update(self, current: dict[str, Any], wanted: Mapping[str, bool | int | str], attempt: int) -> UpdateResult:
        new_wire = {**current, **_wire(wanted)}
        cur_version = _version_of(_plain(current))
        new_wire[VERSION_ATTR] = _SER.serialize((cur_version or 0) + 1)
        _check_size(item_size(current), item_size(new_wire))
        names = {f"#f{i}": name for i, name in enumerate(wanted)}
        values = {f":f{i}": _SER.serialize(v) for i, v in enumerate(wanted.values())}
        sets = [f"#f{i} = :f{i}" for i in range(len(wanted))]
        names["#ver"] = VERSION_ATTR
        values[":next"] = _SER.serialize((cur_version or 0) + 1)
        if cur_version is None:
            condition = "attribute_exists(PK) AND attribute_not_exists(#ver)"
        else:
            condition = "#ver = :cur"
            values[":cur"] = _SER.serialize(cur_version)
        out = self.client.update_item(
            TableName=self.table_name,
            Key=self.key,
            UpdateExpression="SET " + ", ".join([*sets, "#ver = :next"]),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        stored = _plain(out["Attributes"])
        flags, _ = self.schema.decode(stored)
        return UpdateResult(flags, _version_of(stored) or 0, attempt)

    def create(self, changes: Mapping[str, object] | None = None, **kw: object) -> UpdateResult:
        """Write the item the first time: safe defaults plus ``changes``, version 1.

        Guarded by ``attribute_not_exists(PK)``: if the item already exists nothing is
        written and :class:`ConflictError` says so (use :meth:`set_flags` to change it).
        """
        wanted = self.schema.validate({**(changes or {}), **kw}) if (changes or kw) else {}
        try:
            result = self._create(wanted, 1)
        except (ClientError, BotoCoreError) as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                raise ConflictError(
                    f"the settings item PK={self.pk} SK={self.sk} already exists; nothing was "
                    "written. Change it with set_flags().",
                    "ConditionalCheckFailedException",
                ) from exc
            raise _wrap(exc, self.table_name, "PutItem") from exc
        self.cache.invalidate()
        return result

    def toggle(self, name: str, value: bool, *, expected: bool) -> int:
        """One-shot flip with no prior read: set ``name`` to ``value`` only if it is ``expected``.

        A single conditional UpdateItem that also bumps the version (so version-guarded
        writers notice). Raises :class:`ConflictError` when the flag is not ``expected``
        (someone else already flipped it) or the item does not exist. Returns the new version.
        """
        flag = self.schema[name]
        if flag.type is not bool:
            raise FlagTypeError(
                f"toggle works on bool flags; {name!r} is a {flag.type.__name__}. Use set_flags() instead."
            )
        flag.check(value)
        flag.check(expected)
        is_expected = "#f = :expected"
        if expected == flag.safe_default:  # an absent attribute reads as its safe default
            is_expected = f"({is_expected} OR attribute_not_exists(#f))"
        try:
            out = self.client.update_item(
                TableName=self.table_name,
                Key=self.key,
                UpdateExpression="SET #f = :value, #ver = if_not_exists(#ver, :zero) + :one",
                ConditionExpression=f"attribute_exists(PK) AND {is_expected}",
                ExpressionAttributeNames={"#f": name, "#ver": VERSION_ATTR},
                ExpressionAttributeValues={
                    ":value": {"BOOL": value},
                    ":expected": {"BOOL": expected},
                    ":zero": {"N": "0"},
                    ":one": {"N": "1"},
                },
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except (ClientError, BotoCoreError) as exc:
            if not isinstance(exc, ClientError) or error_code(exc) != "ConditionalCheckFailedException":
                raise _wrap(exc, self.table_name, "UpdateItem") from exc
            old: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if old is None:
                raise NotFound(
                    f"the settings item PK={self.pk} SK={self.sk} does not exist; "
                    "nothing was written. Create it first with set_flags()"
                ) from exc
            now = self.schema.decode(_plain(old))[0][name]
            raise ConflictError(
                f"{name} is {now!r}, not the expected {expected!r}: someone else changed it; "
                "nothing was written. Read the flags again and decide.",
                "ConditionalCheckFailedException",
            ) from exc
        self.cache.invalidate()
        return int(out["Attributes"][VERSION_ATTR]["N"])


def _check_size(old_size: int, new_size: int) -> None:
    """ItemTooLarge above 400 KB; an ItemSizeWarning when the read cost would grow."""
    if new_size > MAX_ITEM_BYTES:
        raise ItemTooLarge(new_size, MAX_ITEM_BYTES)
    if read_units(new_size, consistent=True) > read_units(max(old_size, 1), consistent=True):
        warnings.warn(
            ItemSizeWarning(
                f"the settings item grows to {new_size:,} bytes, past a {READ_UNIT_BYTES:,}-byte "
                f"read unit: every read of it now costs "
                f"{read_units(new_size, consistent=True):g} units strongly consistent instead of "
                f"{read_units(max(old_size, 1), consistent=True):g}. Keep the singleton small.",
                new_size,
            ),
            stacklevel=4,
        )


def _wrap(exc: ClientError | BotoCoreError, table: str, action: str) -> DynamoError | TableError | BackendUnavailable:
    """The labkit error for a failed call; the caller raises it ``from exc``."""
    if isinstance(exc, BotoCoreError):
        return BackendUnavailable(
            f"{action} on {table!r} did not reach DynamoDB ({exc}); nothing was written. "
            "Check that the backend is running (labkit.connect() says which one)."
        )
    code = error_code(exc)
    if code == "ResourceNotFoundException":
        return TableError(
            f"table {table!r} does not exist; nothing was written. Create it with "
            f"labkit.ensure_table(conn) or run setup_lab(...) first."
        )
    if code == "ConditionalCheckFailedException":
        return ConflictError(f"{action} on {table!r}: the condition failed; re-read and retry", code)
    return DynamoError(f"{action} on {table!r} failed ({code}): {exc}", code)


# --------------------------------------------------------------------------- anti-patterns


def unsafe_set_flags(store: FlagStore, changes: Mapping[str, object] | None = None, **kw: object) -> int:
    """ANTI-PATTERN, kept for the lesson: read-modify-write of the whole item with PutItem.

    GetItem, change the flags in memory, PutItem the whole item back — with no condition.
    Two admins who read the same old item both write it back whole, and the second Put
    silently erases the first admin's change (a lost update). Use :meth:`FlagStore.set_flags`.
    Returns the version it wrote (which also shows the loss: two changes, one bump).
    """
    wanted = store.schema.validate({**(changes or {}), **kw})
    return unsafe_update(store, lambda _flags: wanted)


def unsafe_update(store: FlagStore, change: Callable[[Mapping[str, bool | int | str]], Mapping[str, object]]) -> int:
    """ANTI-PATTERN, kept for the lesson: :func:`unsafe_set_flags` with values computed from the read.

    Two admins who each raise a limit by 10 from the same old value write the same new
    value: one raise is lost. Use :meth:`FlagStore.update`. Returns the version it wrote.
    """
    current = store._read_item()
    stored = _plain(current) if current is not None else {"PK": store.pk, "SK": store.sk, **store.schema.defaults()}
    wanted = store.schema.validate(change(store.schema.decode(stored)[0]))
    version = (_version_of(stored) or 0) + 1
    new_item = {**stored, **wanted, VERSION_ATTR: version}
    wire = _wire(new_item)
    _check_size(item_size(current or {}), item_size(wire))
    try:
        store.client.put_item(TableName=store.table_name, Item=wire)
    except (ClientError, BotoCoreError) as exc:
        raise _wrap(exc, store.table_name, "PutItem") from exc
    store.cache.invalidate()
    return version


def unsafe_scan_read(store: FlagStore, *, consistent: bool = False) -> FlagRead:
    """ANTI-PATTERN, kept for the lesson: find the singleton with a Scan and a filter.

    The filter runs after the read: DynamoDB reads (and bills) every item in the table to
    return one. Its cost grows with the table; GetItem on the known key stays flat.
    ``read_units`` and ``items_read`` on the result show what it cost.
    """
    kwargs: dict[str, Any] = {
        "TableName": store.table_name,
        "ConsistentRead": consistent,
        "FilterExpression": "#pk = :pk AND #sk = :sk",
        "ExpressionAttributeNames": {"#pk": "PK", "#sk": "SK"},
        "ExpressionAttributeValues": {":pk": {"S": store.pk}, ":sk": {"S": store.sk}},
        "ReturnConsumedCapacity": "TOTAL",
    }
    units, scanned, found = 0.0, 0, None
    try:
        while True:
            page = store.client.scan(**kwargs)
            units += float(page.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
            scanned += int(page.get("ScannedCount", 0))
            if page.get("Items"):
                found = page["Items"][0]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except (ClientError, BotoCoreError) as exc:
        return FlagRead(
            store.schema.defaults(),
            "defaults",
            f"Scan failed: {exc}; using safe defaults",
            error_code=error_code(exc),
        )
    if found is None:
        return FlagRead(
            store.schema.defaults(),
            "defaults",
            "Scan found no settings item",
            read_units=units,
            items_read=scanned,
        )
    stored = _plain(found)
    flags, notes = store.schema.decode(stored)
    return FlagRead(flags, "item", "", _version_of(stored), tuple(notes), read_units=units, items_read=scanned)


# --------------------------------------------------------------------------- migration


def migrate(
    store: FlagStore,
    transform: Callable[[dict[str, Any]], Mapping[str, Any]],
    *,
    target_sk: str = FLAGS_SK_V2,
    target_schema: FlagSchema | None = None,
) -> MigrationResult:
    """Write the item at ``target_sk`` from the one at ``store.sk`` through ``transform``.

    ``transform`` gets the source attributes as plain Python values (without PK, SK and
    version) and returns the new ones. The write is a PutItem guarded by
    ``attribute_not_exists(PK)``: of two migrators exactly one writes; the other gets
    ``won=False`` and overwrites nothing. The source item stays until :func:`retire`.
    """
    if target_sk == store.sk:
        raise ValidationError(f"target_sk {target_sk!r} is the source key; choose a new one (e.g. FLAGS#V2)")
    current = store._read_item()
    if current is None:
        raise NotFound(f"nothing to migrate: no item at PK={store.pk} SK={store.sk}; create it with set_flags() first")
    source = _plain(current)
    source_version = _version_of(source) or 0
    body = {k: v for k, v in source.items() if k not in RESERVED_NAMES}
    new_attrs = dict(transform(dict(body)))
    bad = sorted(set(new_attrs) & RESERVED_NAMES)
    if bad:
        raise ValidationError(f"transform may not set {', '.join(bad)}; migrate() writes those itself")
    declared = {k: v for k, v in new_attrs.items() if target_schema and k in target_schema.names}
    if target_schema is not None and declared:
        target_schema.validate(declared)
    item = {
        "PK": store.pk,
        "SK": target_sk,
        **new_attrs,
        VERSION_ATTR: 1,
        "migrated_from": store.sk,
        "migrated_from_version": source_version,
    }
    wire = _wire(item)
    _check_size(0, item_size(wire))
    try:
        store.client.put_item(TableName=store.table_name, Item=wire, ConditionExpression="attribute_not_exists(PK)")
    except (ClientError, BotoCoreError) as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return MigrationResult(
                False,
                target_sk,
                f"{target_sk} already exists (another migrator wrote it first); nothing was overwritten",
            )
        raise _wrap(exc, store.table_name, "PutItem") from exc
    return MigrationResult(True, target_sk, f"wrote {target_sk} from {store.sk} v{source_version}", item)


def retire(store: FlagStore, *, old_sk: str = FLAGS_SK_V1, new_sk: str = FLAGS_SK_V2) -> None:
    """Delete ``old_sk`` only if ``new_sk`` exists: one transaction with a ConditionCheck.

    If the new item records the old version it was migrated from, the delete is also
    conditioned on the old item still having that version, so a change made to the old item
    after the migration is not silently thrown away.
    """
    if old_sk == new_sk:
        raise ValidationError("old_sk and new_sk are the same key; nothing to retire")
    new_key = {"PK": {"S": store.pk}, "SK": {"S": new_sk}}
    old_key = {"PK": {"S": store.pk}, "SK": {"S": old_sk}}
    try:
        new_item = store.client.get_item(TableName=store.table_name, Key=new_key, ConsistentRead=True).get("Item")
    except (ClientError, BotoCoreError) as exc:
        raise _wrap(exc, store.table_name, "GetItem") from exc
    delete: dict[str, Any] = {
        "TableName": store.table_name,
        "Key": old_key,
        "ConditionExpression": "attribute_exists(PK)",
    }
    if new_item is not None and "migrated_from_version" in new_item:
        delete["ConditionExpression"] = "attribute_exists(PK) AND #ver = :from"
        delete["ExpressionAttributeNames"] = {"#ver": VERSION_ATTR}
        delete["ExpressionAttributeValues"] = {":from": new_item["migrated_from_version"]}
    actions: list[Any] = [
        {
            "ConditionCheck": {
                "TableName": store.table_name,
                "Key": new_key,
                "ConditionExpression": "attribute_exists(PK)",
            }
        },
        {"Delete": delete},
    ]
    try:
        store.client.transact_write_items(TransactItems=actions)
    except (ClientError, BotoCoreError) as exc:
        if not isinstance(exc, ClientError) or error_code(exc) != "TransactionCanceledException":
            raise _wrap(exc, store.table_name, "TransactWriteItems") from exc
        reasons = cancellation_reasons(exc)
        codes = [str(r.get("Code", "None")) for r in reasons]
        if codes and codes[0] == "ConditionalCheckFailed":
            why = f"{new_sk} does not exist: migrate first; {old_sk} was kept"
        elif len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
            why = (
                f"{old_sk} is gone or changed since it was migrated; nothing was deleted. "
                "Migrate again (to a new key) or check who still writes the old item"
            )
        else:
            why = f"the transaction was cancelled ({', '.join(codes) or 'no reasons given'})"
        raise TransactionCancelled(f"retire {old_sk}: {why}", reasons) from exc
    store.cache.invalidate()


def lost_changes(store: FlagStore, expected: Mapping[str, object]) -> list[str]:
    """The flags whose stored value is not the ``expected`` one (strongly consistent read)."""
    stored = stored_item(store) or {}
    flags, _ = store.schema.decode(stored)
    return [name for name, value in expected.items() if flags.get(name) != value]


def stored_item(store: FlagStore, sk: str | None = None) -> dict[str, Any] | None:
    """The raw stored item at ``sk`` (default: the store's key) as plain Python values."""
    try:
        out = store.client.get_item(
            TableName=store.table_name,
            ConsistentRead=True,
            Key={"PK": {"S": store.pk}, "SK": {"S": sk or store.sk}},
        )
    except (ClientError, BotoCoreError) as exc:
        raise _wrap(exc, store.table_name, "GetItem") from exc
    return _plain(out["Item"]) if "Item" in out else None


__all__ = [
    "DEFAULT_SCHEMA",
    "VERSION_ATTR",
    "Flag",
    "FlagCache",
    "FlagRead",
    "FlagSchema",
    "FlagStore",
    "MigrationResult",
    "UpdateResult",
    "exponential_jitter",
    "lost_changes",
    "migrate",
    "retire",
    "stored_item",
    "unsafe_scan_read",
    "unsafe_set_flags",
    "unsafe_update",
]
