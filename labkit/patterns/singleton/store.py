"""FlagStore: read the settings singleton (fail closed, cached) and change it safely.

Every write is guarded by the ``version`` it read (optimistic locking) and retried with
backoff on a conflict. Retries are safe, including after a lost response: a write whose
answer never came back is resolved by re-reading the item — the version guard lets only
one write per version through, so if the item now holds exactly the version and values
this write would have produced, it was this write; if it holds the old version, or another
writer's values at that version, this write was not applied and is tried again. Only when
another writer has already moved the item further does the store say
:class:`~labkit.shared.errors.OutcomeUnknown` instead of guessing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...shared._errors_map import map_errors
from ...shared.capacity import item_size
from ...shared.catalogue import Op
from ...shared.codec import from_wire, serialize, to_wire
from ...shared.constants import FLAGS_SK_V1, MAX_ITEM_BYTES, SETTINGS_PK
from ...shared.errors import (
    BackendUnavailable,
    ConflictError,
    FlagTypeError,
    ItemTooLarge,
    LabkitError,
    NotFound,
    OutcomeUnknown,
    RetriesExhausted,
    Throttled,
    error_code,
)
from ...shared.validation import check_int, check_non_negative
from .cache import FlagCache, exponential_jitter
from .guards import LostAnswer, SentWrite, check_size, root_cause
from .results import FlagRead, UpdateResult
from .schema import DEFAULT_SCHEMA, VERSION_ATTR, FlagSchema, a_type, version_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ...shared.backend import Connection

Flags = Mapping[str, bool | int | str]


def _transient(exc: LabkitError) -> bool:
    """A call that failed on the way (network, throttling, a 5xx), not an answer about the item."""
    if isinstance(exc, BackendUnavailable | OutcomeUnknown | Throttled):
        return True
    status = getattr(exc.__cause__, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return isinstance(status, int) and status >= 500


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
        stale_for: float = 0.0,
        retry_after: float = 1.0,
    ) -> None:
        check_int("max_attempts", max_attempts, least=1)
        check_non_negative("stale_for", stale_for)
        check_non_negative("retry_after", retry_after)
        self.stale_for = stale_for
        self.retry_after = retry_after
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
            stale_for=self.stale_for,
            retry_after=self.retry_after,
        )

    # ---------------------------------------------------------------- reads

    def read(self, *, consistent: bool = False, use_cache: bool = True) -> FlagRead:
        """The flags, from the cache or one GetItem; the safe defaults if the read fails.

        Never raises for a missing item, a missing table or a failed call: the result's
        ``source`` is ``"defaults"`` and ``reason`` says why. Defaults are not cached, so
        the next read tries DynamoDB again — except after a failed *call* (throttled, network
        down, a 5xx): then for ``retry_after`` seconds reads do not call DynamoDB, and with
        ``stale_for`` > 0 they serve the last good flags (``source="stale"``, its ``age``)
        while those are younger than ``cache_ttl + stale_for``. A missing item or table is an
        answer, not a failed call: always the defaults, and it forgets the last good flags.
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
            recent = self.cache.backing_off(self.retry_after)
            if recent is not None:
                code, why = recent
                return self._failed(code, f"{why}; not retried for {self.retry_after:g} s")
        try:
            with map_errors(Op.GET_ITEM, self.table_name):
                out = self.client.get_item(
                    TableName=self.table_name,
                    Key=self.key,
                    ConsistentRead=consistent,
                    ReturnConsumedCapacity="TOTAL",
                )
        except LabkitError as exc:
            code = error_code(exc.__cause__ or exc)
            if code == "ResourceNotFoundException":
                if use_cache:
                    self.cache.invalidate()  # an answer: the last good flags are not served stale
                why = f"table {self.table_name!r} does not exist; using safe defaults"
                return FlagRead(self.schema.defaults(), "defaults", why, error_code=code)
            why = f"GetItem failed: {exc.__cause__ or exc}"
            if use_cache and _transient(exc):
                self.cache.failed(code, why)
                return self._failed(code, why)
            return FlagRead(self.schema.defaults(), "defaults", f"{why}; using safe defaults", error_code=code)
        units = out.get("ConsumedCapacity", {}).get("CapacityUnits")
        if "Item" not in out:
            if use_cache:
                self.cache.invalidate()  # an answer: a deleted item's flags are never served stale
            return FlagRead(
                self.schema.defaults(),
                "defaults",
                f"no item at PK={self.pk} SK={self.sk}; using safe defaults",
                read_units=units,
            )
        result = self.flag_read(out["Item"], units, 1)
        if use_cache:
            self.cache.put(result)
        return result

    def _failed(self, code: str, why: str) -> FlagRead:
        """After a failed call: the last good flags if young enough (stale_for), else the defaults."""
        good = self.cache.last_good(self.cache.ttl + self.stale_for) if self.stale_for > 0 else None
        if good is None:
            return FlagRead(self.schema.defaults(), "defaults", f"{why}; using safe defaults", error_code=code)
        read, age = good
        reason = f"{why}; serving the last good flags, {age:.0f} s old"
        return FlagRead(read.flags, "stale", reason, read.version, read.notes, error_code=code, age=age)

    def flag_read(self, item: Mapping[str, Any], units: float | None, items_read: int) -> FlagRead:
        """A FlagRead of a stored item in wire form."""
        stored = from_wire(item)
        flags, notes = self.schema.decode(stored)
        return FlagRead(flags, "item", "", version_of(stored), tuple(notes), read_units=units, items_read=items_read)

    def invalidate(self) -> None:
        """Drop the cached flags (call after a change you must see at once)."""
        self.cache.invalidate()

    def read_item(self, sk: str | None = None) -> dict[str, Any] | None:
        """The stored item at ``sk`` (default: the store's key), strongly consistent, in wire form."""
        key = {"PK": {"S": self.pk}, "SK": {"S": sk or self.sk}}
        with map_errors(Op.GET_ITEM, self.table_name):
            out = self.client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True)
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

        Safe to retry: a lost response is resolved by the version guard (see the module
        docstring); calling it again with the same values leaves the same flags.
        """
        wanted = self.schema.validate({**(changes or {}), **kw})
        own_size = item_size(to_wire(wanted))
        if own_size > MAX_ITEM_BYTES:
            raise ItemTooLarge(own_size, MAX_ITEM_BYTES)
        return self._apply(lambda _flags: wanted, ", ".join(wanted))

    def update(self, change: Callable[[Flags], Mapping[str, object]]) -> UpdateResult:
        """Like :meth:`set_flags`, but the new values depend on the current ones.

        ``change(flags)`` gets the flags as just read and returns the flags to set, e.g.
        ``lambda f: {"rate_limit_per_minute": f["rate_limit_per_minute"] + 10}``. On a
        conflict it is called again with the fresh flags — so it must not have side effects.
        Its result is validated before each write.

        Safe against lost responses: the store resolves them itself and never applies the
        change twice. Do NOT call it again after :class:`OutcomeUnknown` — read the flags
        and decide: the change may be in.
        """
        return self._apply(lambda flags: self.schema.validate(change(flags)), "the flags")

    def _apply(self, make: Callable[[Flags], Flags], what: str) -> UpdateResult:
        """The optimistic-locking loop: read, compute, conditional write; retry on conflict."""
        last: LabkitError | None = None
        sent: SentWrite | None = None
        for attempt in range(1, self.max_attempts + 1):
            current = self.read_item()
            if sent is not None:
                verdict = sent.verdict(current)
                if verdict == "ours":
                    self.cache.invalidate()
                    flags, _ = self.schema.decode(from_wire(sent.expected))
                    return UpdateResult(flags, (sent.base or 0) + 1, attempt - 1, created=sent.base is None)
                if verdict == "unknown":
                    raise self._unknown(what) from root_cause(last)
                sent = None
            flags, _ = self.schema.decode(from_wire(current) if current is not None else {})
            wanted = make(flags)
            try:
                result = self._create(wanted, attempt) if current is None else self._update(current, wanted, attempt)
            except LostAnswer as lost:
                sent, last = lost.sent, lost.error
                continue
            except ConflictError as exc:
                if exc.code != "ConditionalCheckFailedException":
                    raise
                last = exc
                if attempt < self.max_attempts:
                    self.sleep(self.backoff(attempt))
                continue
            self.cache.invalidate()
            return result
        if sent is not None:
            raise self._unknown(what) from root_cause(last)
        raise RetriesExhausted(
            f"gave up changing {what} after {self.max_attempts} attempt{'' if self.max_attempts == 1 else 's'}: "
            "another writer changed the settings item every time; nothing of this change was written. "
            "Retry later, or raise max_attempts.",
            self.max_attempts,
        ) from root_cause(last)

    def _unknown(self, what: str) -> OutcomeUnknown:
        return OutcomeUnknown(
            f"changing {what}: DynamoDB's answer was lost and another writer has changed the settings "
            "item since, so labkit cannot tell whether this change was applied. Read the flags "
            "(store.read(use_cache=False)) and decide; do not blindly apply the change again."
        )

    def _send(self, sent: SentWrite, action: str, call: Callable[[], Any]) -> Any:
        """Make a write call; a lost answer becomes LostAnswer (resolved by the caller's loop)."""
        try:
            with map_errors(action, self.table_name):
                return call()
        except OutcomeUnknown as exc:
            raise LostAnswer(sent, exc) from exc

    def _create(self, wanted: Flags, attempt: int) -> UpdateResult:
        item = {"PK": self.pk, "SK": self.sk, **self.schema.defaults(), **wanted, VERSION_ATTR: 1}
        wire = to_wire(item)
        check_size(0, item_size(wire))
        self._send(
            SentWrite(None, wire),
            Op.PUT_ITEM,
            lambda: self.client.put_item(
                TableName=self.table_name, Item=wire, ConditionExpression="attribute_not_exists(PK)"
            ),
        )
        flags, _ = self.schema.decode(item)
        return UpdateResult(flags, 1, attempt, created=True)

    def _update(self, current: dict[str, Any], wanted: Flags, attempt: int) -> UpdateResult:
        new_wire = {**current, **to_wire(wanted)}
        cur_version = version_of(from_wire(current))
        new_wire[VERSION_ATTR] = serialize((cur_version or 0) + 1)
        check_size(item_size(current), item_size(new_wire))
        names = {f"#f{i}": name for i, name in enumerate(wanted)}
        values = {f":f{i}": serialize(v, name) for i, (name, v) in enumerate(wanted.items())}
        sets = [f"#f{i} = :f{i}" for i in range(len(wanted))]
        names["#ver"] = VERSION_ATTR
        values[":next"] = serialize((cur_version or 0) + 1)
        if cur_version is None:
            condition = "attribute_exists(PK) AND attribute_not_exists(#ver)"
        else:
            condition = "#ver = :cur"
            values[":cur"] = serialize(cur_version)
        out = self._send(
            SentWrite(cur_version if cur_version is not None else 0, new_wire),
            Op.UPDATE_ITEM,
            lambda: self.client.update_item(
                TableName=self.table_name,
                Key=self.key,
                UpdateExpression="SET " + ", ".join([*sets, "#ver = :next"]),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            ),
        )
        stored = from_wire(out["Attributes"])
        flags, _ = self.schema.decode(stored)
        return UpdateResult(flags, version_of(stored) or 0, attempt)

    def create(self, changes: Mapping[str, object] | None = None, **kw: object) -> UpdateResult:
        """Write the item the first time: safe defaults plus ``changes``, version 1.

        Guarded by ``attribute_not_exists(PK)``: if the item already exists nothing is
        written and :class:`ConflictError` says so (use :meth:`set_flags` to change it).
        Safe to retry after a lost response: if the item that exists is exactly the one this
        call writes, that is this call's write and it succeeds.
        """
        wanted = self.schema.validate({**(changes or {}), **kw}) if (changes or kw) else {}
        try:
            result = self._create(wanted, 1)
        except LostAnswer as lost:
            if lost.sent.verdict(self.read_item()) != "ours":
                raise lost.error from lost.error.__cause__
            result = UpdateResult(self.schema.decode(from_wire(lost.sent.expected))[0], 1, 1, created=True)
        except ConflictError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            raise ConflictError(
                f"the settings item PK={self.pk} SK={self.sk} already exists; nothing was "
                "written. Change it with set_flags().",
                "ConditionalCheckFailedException",
            ) from exc.__cause__
        self.cache.invalidate()
        return result

    def toggle(self, name: str, value: bool, *, expected: bool) -> int:
        """One-shot flip with no prior read: set ``name`` to ``value`` only if it is ``expected``.

        A single conditional UpdateItem that also bumps the version (so version-guarded
        writers notice). Raises :class:`ConflictError` when the flag is not ``expected``
        (someone else already flipped it) or the item does not exist. Returns the new version.

        Safe to retry after a lost answer, which the store resolves itself: it re-reads the
        item; the flag at ``value`` counts as done (a toggle asks for a state, so this holds
        even if another admin made the same flip); the flag still at ``expected`` means the flip
        was not applied, and it is sent again (at most ``max_attempts`` times).
        """
        flag = self.schema[name]
        if flag.type is not bool:
            raise FlagTypeError(
                f"toggle works on bool flags; {name!r} is {a_type(flag.type)}. Use set_flags() instead."
            )
        flag.check(value)
        flag.check(expected)
        is_expected = "#f = :expected"
        if expected == flag.safe_default:  # an absent attribute reads as its safe default
            is_expected = f"({is_expected} OR attribute_not_exists(#f))"
        for _ in range(self.max_attempts - 1):
            try:
                return self._toggle(name, value, expected, is_expected)
            except OutcomeUnknown:
                current = self.read_item()
                state = self.schema.decode(from_wire(current))[0] if current is not None else {}
                if current is not None and state.get(name) == value:
                    self.cache.invalidate()
                    return version_of(from_wire(current)) or 0
                if state.get(name) != expected:
                    raise
        return self._toggle(name, value, expected, is_expected)

    def _toggle(self, name: str, value: bool, expected: bool, is_expected: str) -> int:
        """One conditional UpdateItem of one bool flag; ConflictError/NotFound say why it failed."""
        try:
            with map_errors(Op.UPDATE_ITEM, self.table_name):
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
        except ConflictError as exc:
            if exc.code != "ConditionalCheckFailedException":
                raise
            old: Mapping[str, Any] | None = getattr(exc.__cause__, "response", {}).get("Item")
            if old is None:
                raise NotFound(
                    f"the settings item PK={self.pk} SK={self.sk} does not exist; "
                    "nothing was written. Create it first with set_flags()"
                ) from exc.__cause__
            now = self.schema.decode(from_wire(old))[0][name]
            raise ConflictError(
                f"{name} is {now!r}, not the expected {expected!r}: someone else changed it; "
                "nothing was written. Read the flags again and decide.",
                "ConditionalCheckFailedException",
            ) from exc.__cause__
        self.cache.invalidate()
        return int(out["Attributes"][VERSION_ATTR]["N"])


__all__ = ["FlagStore"]
