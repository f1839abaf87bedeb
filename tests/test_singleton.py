"""The settings singleton: fail-closed reads, cache, safe updates, migration, size guard."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.backend import Connection
from labkit.constants import FLAGS_SK_V1, FLAGS_SK_V2, MAX_ITEM_BYTES, SETTINGS_PK
from labkit.errors import (
    BackendUnavailable,
    ConflictError,
    FlagTypeError,
    ItemSizeWarning,
    ItemTooLarge,
    NotFound,
    RetriesExhausted,
    TableError,
    TransactionCancelled,
    UnknownFlag,
    ValidationError,
)
from labkit.races import all_interleavings, run_interleaving, stress
from labkit.singleton import (
    DEFAULT_SCHEMA,
    Flag,
    FlagSchema,
    FlagStore,
    exponential_jitter,
    lost_changes,
    migrate,
    retire,
    stored_item,
    unsafe_scan_read,
    unsafe_set_flags,
    unsafe_update,
)

SAFE = {
    "signup_enabled": False,
    "maintenance_mode": True,
    "ai_search_enabled": False,
    "rate_limit_per_minute": 60,
    "banner_message": "",
}
#: The lesson's race: admin A turns signups on, admin B turns maintenance off.
ADMIN_CHANGES = {"A": {"signup_enabled": True}, "B": {"maintenance_mode": False}}
EXPECTED_AFTER_BOTH = {"signup_enabled": True, "maintenance_mode": False}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def no_sleep(_: float) -> None:
    """Backoff that does not wait (tests stay fast)."""


@pytest.fixture
def store(tconn: Connection) -> FlagStore:
    return FlagStore(tconn.client, tconn.table_name, sleep=no_sleep)


def count_calls(store: FlagStore) -> list[str]:
    """Record the name of every DynamoDB call the store's client makes from now on."""
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", record)
    return calls


def raw_put(store: FlagStore, **attrs: Any) -> None:
    """Write the settings item directly (bypassing labkit), plain Python values."""
    from boto3.dynamodb.types import TypeSerializer

    ser = TypeSerializer()
    item = {"PK": store.pk, "SK": store.sk, **attrs}
    store.client.put_item(TableName=store.table_name, Item={k: ser.serialize(v) for k, v in item.items()})


# ---------------------------------------------------------------- schema


def test_schema__bool_flag__rejects_int_and_int_flag_rejects_bool() -> None:
    """bool is a subclass of int in Python; neither passes for the other."""
    with pytest.raises(FlagTypeError):
        DEFAULT_SCHEMA.validate({"signup_enabled": 1})
    with pytest.raises(FlagTypeError):
        DEFAULT_SCHEMA.validate({"rate_limit_per_minute": True})
    assert DEFAULT_SCHEMA.validate({"rate_limit_per_minute": 120}) == {"rate_limit_per_minute": 120}


def test_schema__reserved_or_duplicate_names__refused() -> None:
    """A flag may not be called PK, SK or version, nor be declared twice."""
    with pytest.raises(ValidationError, match="reserved"):
        Flag("version", int, 0)
    with pytest.raises(ValidationError, match="declared twice"):
        FlagSchema((Flag("a", bool, False), Flag("a", bool, True)))
    with pytest.raises(FlagTypeError):
        Flag("a", bool, 0)


def test_schema__defaults__fail_closed() -> None:
    """Features off, maintenance on, conservative rate limit."""
    assert DEFAULT_SCHEMA.defaults() == SAFE


# ---------------------------------------------------------------- reads, fail closed


@pytest.mark.aws_verified
def test_read__item_missing__safe_defaults_with_reason(store: FlagStore) -> None:
    """No item yet: the safe defaults, marked as defaults, with the key in the reason."""
    res = store.read()
    assert (res.source, dict(res.flags), res.is_default) == ("defaults", SAFE, True)
    assert "no item at PK=SETTINGS#APP SK=FLAGS#V1" in res.reason


def test_read__table_missing__safe_defaults_with_error_code(conn: Connection) -> None:
    """A table that does not exist: defaults, ResourceNotFoundException, no exception."""
    store = FlagStore(conn.client, "labkit-does-not-exist")
    res = store.read(consistent=True)
    assert (res.source, dict(res.flags)) == ("defaults", SAFE)
    assert res.error_code == "ResourceNotFoundException"
    assert "does not exist" in res.reason


def test_read__endpoint_unreachable__safe_defaults(conn: Connection) -> None:
    """A BotoCoreError (nothing listening) also fails closed."""
    dead = Connection("endpoint", "http://127.0.0.1:9", conn.region, "labkit-x")
    client = dead.new_client(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1)
    res = FlagStore(client, "labkit-x").read()
    assert (res.source, dict(res.flags)) == ("defaults", SAFE)
    assert res.error_code == "EndpointConnectionError"


def test_read__stored_item__flags_version_and_one_item_read(store: FlagStore) -> None:
    """A stored item is read with one GetItem: its flags, its version."""
    store.create(signup_enabled=True)
    calls = count_calls(store)
    res = store.read(consistent=True)
    assert (res.source, res["signup_enabled"], res["maintenance_mode"], res.version) == (
        "item",
        True,
        True,
        1,
    )
    assert calls == ["GetItem"]


@pytest.mark.parametrize("consistent", [True, False])
def test_read__consistency__is_the_callers_choice(store: FlagStore, consistent: bool) -> None:
    """read(consistent=...) sends exactly that ConsistentRead to GetItem."""
    sent: list[Any] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.GetItem",
        lambda params, **_: sent.append(params.get("ConsistentRead")),
    )
    store.read(consistent=consistent)
    assert sent == [consistent]


def test_read__unknown_attribute_and_wrong_type__ignored_with_notes(store: FlagStore) -> None:
    """Unknown attributes are ignored; a wrong-typed value falls back to that flag's default."""
    raw_put(
        store,
        version=3,
        signup_enabled="yes",
        maintenance_mode=False,
        legacy_color="red",
        rate_limit_per_minute=100,
    )
    res = store.read()
    assert res.source == "item"
    assert res["signup_enabled"] is False  # "yes" is not a bool -> safe default
    assert res["maintenance_mode"] is False
    assert res["rate_limit_per_minute"] == 100 and type(res["rate_limit_per_minute"]) is int
    assert any("legacy_color" in n for n in res.notes)
    assert any("signup_enabled" in n and "safe default" in n for n in res.notes)
    with pytest.raises(UnknownFlag):
        res["legacy_color"]


# ---------------------------------------------------------------- cache


def test_cache__within_ttl__serves_from_cache_without_a_call(tconn: Connection) -> None:
    """Reads within the TTL are hits; after it, one GetItem again."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, cache_ttl=30, clock=clock)
    store.create()
    calls = count_calls(store)
    first = store.read()
    clock.now += 29
    second = store.read()
    clock.now += 2
    third = store.read()
    assert [first.source, second.source, third.source] == ["item", "cache", "item"]
    assert calls == ["GetItem", "GetItem"]
    assert (store.cache.hits, store.cache.misses) == (1, 2)


def test_cache__invalidate__next_read_goes_to_dynamodb(tconn: Connection) -> None:
    """invalidate() forgets the cached flags; so does a successful write through the store."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, clock=clock)
    store.create()
    store.read()
    store.invalidate()
    assert store.read().source == "item"
    store.set_flags(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__defaults__not_cached(tconn: Connection) -> None:
    """A fail-closed read is not cached: the item appearing is seen at once."""
    store = FlagStore(tconn.client, tconn.table_name, clock=Clock())
    assert store.read().source == "defaults"
    FlagStore(tconn.client, tconn.table_name).create(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__negative_ttl__refused(tconn: Connection) -> None:
    """A negative TTL is a mistake, not 'never cache'."""
    with pytest.raises(ValidationError, match="ttl"):
        FlagStore(tconn.client, tconn.table_name, cache_ttl=-1)


# ---------------------------------------------------------------- safe update


def test_set_flags__first_write__creates_item_with_defaults_and_version_1(store: FlagStore) -> None:
    """The first write creates the whole item (safe defaults + the change) at version 1."""
    res = store.set_flags(signup_enabled=True)
    assert (res.created, res.version, res.attempts) == (True, 1, 1)
    assert stored_item(store) == {
        "PK": SETTINGS_PK,
        "SK": FLAGS_SK_V1,
        **SAFE,
        "signup_enabled": True,
        "version": 1,
    }


@pytest.mark.aws_verified
def test_set_flags__existing_item__touches_only_given_attributes(store: FlagStore) -> None:
    """Other flags and unknown attributes survive; the version goes up by one."""
    raw_put(store, version=7, signup_enabled=False, legacy_note="keep me", banner_message="hi")
    calls = count_calls(store)
    res = store.set_flags({"maintenance_mode": False}, rate_limit_per_minute=90)
    made = list(calls)
    item = stored_item(store)
    assert item is not None
    assert (res.version, item["version"]) == (8, 8)
    assert (item["maintenance_mode"], item["rate_limit_per_minute"]) == (False, 90)
    assert (item["legacy_note"], item["banner_message"]) == ("keep me", "hi")
    assert "ai_search_enabled" not in item  # absent stays absent: no whole-item write
    assert made == ["GetItem", "UpdateItem"]


def test_set_flags__item_without_version__guarded_by_attribute_not_exists(store: FlagStore) -> None:
    """A legacy item with no version attribute gets version 1 on its first safe write."""
    raw_put(store, signup_enabled=False)
    res = store.set_flags(signup_enabled=True)
    assert (res.version, stored_item(store)["version"]) == (1, 1)  # type: ignore[index]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"signup_enabeld": True}, UnknownFlag),
        ({"version": 99}, UnknownFlag),
        ({"signup_enabled": 1}, FlagTypeError),
        ({"signup_enabled": "true"}, FlagTypeError),
        ({"rate_limit_per_minute": True}, FlagTypeError),
        ({"rate_limit_per_minute": 1.5}, FlagTypeError),
        ({"banner_message": "x" * (MAX_ITEM_BYTES + 1)}, ItemTooLarge),
        ({}, ValidationError),
        ({"signup_enabled": True, "bogus": 1}, UnknownFlag),
    ],
)
def test_set_flags__bad_input__raises_before_any_call(
    store: FlagStore, changes: dict[str, Any], error: type[Exception]
) -> None:
    """Unknown names, wrong types, oversize values: a clear error and no DynamoDB call at all."""
    store.create()
    calls = count_calls(store)
    with pytest.raises(error):
        store.set_flags(changes)
    assert calls == []
    assert stored_item(store) == {"PK": SETTINGS_PK, "SK": FLAGS_SK_V1, **SAFE, "version": 1}


def test_set_flags__unknown_flag__error_names_the_flag_and_the_known_ones(store: FlagStore) -> None:
    """UnknownFlag carries the bad name and the declared names."""
    with pytest.raises(UnknownFlag) as info:
        store.set_flags(signup_enabeld=True)
    assert info.value.name == "signup_enabeld"
    assert "signup_enabled" in info.value.known
    assert "signup_enabled" in str(info.value)


def test_set_flags__item_would_pass_400kb__item_too_large_nothing_written(
    tconn: Connection,
) -> None:
    """Each value fits, but the item with both would not: ItemTooLarge, item unchanged."""
    schema = FlagSchema((Flag("blob_a", str, ""), Flag("blob_b", str, "")))
    store = FlagStore(tconn.client, tconn.table_name, schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ItemSizeWarning)
        store.set_flags(blob_a="a" * 300_000)
    with pytest.raises(ItemTooLarge) as info:
        store.set_flags(blob_b="b" * 200_000)
    assert info.value.size > MAX_ITEM_BYTES and info.value.limit == MAX_ITEM_BYTES
    item = stored_item(store)
    assert item is not None and (item["blob_b"], item["version"]) == ("", 1)


def test_set_flags__grows_past_4kb__warns_item_size_warning(store: FlagStore) -> None:
    """Crossing a 4 KB read-unit step warns (the read cost doubles) but still writes."""
    store.create()
    with pytest.warns(ItemSizeWarning, match="read unit") as record:
        store.set_flags(banner_message="x" * 5000)
    assert record[0].message.size > 4096  # type: ignore[union-attr]
    assert stored_item(store)["banner_message"] == "x" * 5000  # type: ignore[index]


def test_set_flags__small_change__no_size_warning(store: FlagStore) -> None:
    """A change that stays within one read unit does not warn."""
    store.create()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ItemSizeWarning)
        res = store.set_flags(banner_message="hello")
    assert res.version == 2


def test_set_flags__missing_table__table_error_says_how_to_fix(conn: Connection) -> None:
    """Writes to a missing table: TableError naming ensure_table/setup_lab; ClientError kept."""
    store = FlagStore(conn.client, "labkit-does-not-exist")
    with pytest.raises(TableError, match="ensure_table") as info:
        store.set_flags(signup_enabled=True)
    assert isinstance(info.value.__cause__, ClientError)
    assert "setup_lab" in str(info.value)


def test_set_flags__endpoint_unreachable__backend_unavailable(conn: Connection) -> None:
    """A write that cannot reach DynamoDB says so (BackendUnavailable), cause kept."""
    dead = Connection("endpoint", "http://127.0.0.1:9", conn.region, "labkit-x")
    client = dead.new_client(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1)
    with pytest.raises(BackendUnavailable) as info:
        FlagStore(client, "labkit-x").set_flags(signup_enabled=True)
    assert info.value.__cause__ is not None


def competing_writer(store: FlagStore, rival: FlagStore, times: int = 10**6) -> list[int]:
    """Before ``store``'s next ``times`` UpdateItem calls, ``rival`` really bumps the version."""
    bumps: list[int] = []

    def bump(**_: Any) -> None:
        if len(bumps) < times:
            limit = int(rival.read(consistent=True, use_cache=False)["rate_limit_per_minute"])
            bumps.append(rival.set_flags(rate_limit_per_minute=limit + 1).version)

    store.client.meta.events.register("before-call.dynamodb.UpdateItem", bump)
    return bumps


def test_set_flags__rival_writes_before_every_attempt__retries_exhausted(
    tconn: Connection,
) -> None:
    """A writer that always wins: RetriesExhausted after max_attempts, our change not written."""
    delays: list[float] = []
    store = FlagStore(
        tconn.new_client(),
        tconn.table_name,
        max_attempts=4,
        sleep=delays.append,
        backoff=exponential_jitter(rng=random.Random(7)),
    )
    rival = FlagStore(tconn.new_client(), tconn.table_name)
    store.create()
    bumps = competing_writer(store, rival)
    with pytest.raises(RetriesExhausted) as info:
        store.set_flags(signup_enabled=True)
    err = info.value
    assert (err.attempts, err.code) == (4, "ConditionalCheckFailedException")
    assert isinstance(err.__cause__, ClientError)
    assert bumps == [2, 3, 4, 5]
    assert len(delays) == 3 and all(d >= 0 for d in delays)  # backoff between attempts only
    item = stored_item(store)
    assert item is not None and (item["signup_enabled"], item["version"]) == (False, 5)


def test_set_flags__rival_writes_once__retry_succeeds_and_keeps_both(tconn: Connection) -> None:
    """One conflict, one re-read and retry: the rival's change and ours are both in the item."""
    store = FlagStore(tconn.new_client(), tconn.table_name, sleep=no_sleep)
    rival = FlagStore(tconn.new_client(), tconn.table_name)
    store.create()
    bumps = competing_writer(store, rival, times=1)
    result = store.set_flags(signup_enabled=True)
    item = stored_item(store)
    assert item is not None
    assert (bumps, result.attempts, result.version) == ([2], 2, 3)
    assert (item["signup_enabled"], item["rate_limit_per_minute"], item["version"]) == (True, 61, 3)


def test_set_flags__backoff__full_jitter_is_bounded_and_grows() -> None:
    """exponential_jitter: delays within [0, min(cap, base*2**n)], seeded RNG reproducible."""
    d1 = exponential_jitter(base=0.01, cap=0.05, rng=random.Random(1))
    d2 = exponential_jitter(base=0.01, cap=0.05, rng=random.Random(1))
    first = [d1(n) for n in range(1, 8)]
    assert first == [d2(n) for n in range(1, 8)]
    assert all(0 <= d <= min(0.05, 0.01 * 2**n) for n, d in zip(range(1, 8), first, strict=True))


def test_store__max_attempts_zero__refused(tconn: Connection) -> None:
    """At least one attempt."""
    with pytest.raises(ValidationError, match="max_attempts"):
        FlagStore(tconn.client, tconn.table_name, max_attempts=0)


# ---------------------------------------------------------------- create and toggle


def test_create__item_exists__conflict_nothing_overwritten(store: FlagStore) -> None:
    """create() is guarded by attribute_not_exists(PK): a second create changes nothing."""
    store.create(signup_enabled=True)
    with pytest.raises(ConflictError, match="already exists") as info:
        store.create(signup_enabled=False)
    assert info.value.code == "ConditionalCheckFailedException"
    assert stored_item(store)["signup_enabled"] is True  # type: ignore[index]


def test_toggle__expected_value__one_call_and_version_bumped(store: FlagStore) -> None:
    """A one-shot conditional flip: a single UpdateItem, no prior read; version + 1."""
    store.create()
    calls = count_calls(store)
    version = store.toggle("maintenance_mode", False, expected=True)
    assert (calls, version) == (["UpdateItem"], 2)
    assert stored_item(store)["maintenance_mode"] is False  # type: ignore[index]


def test_toggle__value_already_changed__conflict_names_current_value(store: FlagStore) -> None:
    """Expecting True when it is already False: ConflictError, nothing written."""
    store.create(maintenance_mode=False)
    with pytest.raises(ConflictError, match="maintenance_mode is False") as info:
        store.toggle("maintenance_mode", False, expected=True)
    assert info.value.code == "ConditionalCheckFailedException"
    assert stored_item(store)["version"] == 1  # type: ignore[index]


def test_toggle__absent_attribute__reads_as_safe_default(store: FlagStore) -> None:
    """An attribute the item lacks counts as its safe default for the condition."""
    raw_put(store, version=1)
    assert store.toggle("ai_search_enabled", True, expected=False) == 2
    assert stored_item(store)["ai_search_enabled"] is True  # type: ignore[index]


def test_toggle__item_missing__not_found_nothing_created(store: FlagStore) -> None:
    """No item: NotFound (create it first); the toggle does not create a partial item."""
    with pytest.raises(NotFound, match="set_flags"):
        store.toggle("signup_enabled", True, expected=False)
    assert stored_item(store) is None


def test_toggle__non_bool_flag__flag_type_error(store: FlagStore) -> None:
    """toggle is for bool flags only."""
    with pytest.raises(FlagTypeError, match="set_flags"):
        store.toggle("rate_limit_per_minute", True, expected=False)
    assert stored_item(store) is None


# ---------------------------------------------------------------- races


def admins(store: FlagStore, write: Callable[..., Any]) -> dict[str, Callable[[Any], Any]]:
    """Admin A turns signups on, admin B turns maintenance off, each on its own client."""
    return {
        name: (lambda client, c=changes: write(store.with_client(client), **c))
        for name, changes in ADMIN_CHANGES.items()
    }


def race_table(tconn: Connection, store: FlagStore, write: Callable[..., Any], *, create_first: bool = True) -> Any:
    """Every order of the two admins; per order, which expected changes were lost."""

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key=store.key)
        if create_first:
            store.create()

    def outcome(_: Any) -> dict[str, Any]:
        item = stored_item(store) or {}
        return {"lost": lost_changes(store, EXPECTED_AFTER_BOTH), "version": item.get("version")}

    return all_interleavings(admins(store, write), conn=tconn, setup=setup, outcome=outcome)


def safe_write(store: FlagStore, **changes: Any) -> Any:
    return store.set_flags(changes)


@pytest.mark.aws_verified
def test_race__read_modify_write__loses_an_update_in_4_of_6_orders(tconn: Connection, store: FlagStore) -> None:
    """Two admins, different flags, GetItem+PutItem: every overlapping order loses one change."""
    df = race_table(tconn, store, unsafe_set_flags)
    lost = df[df["lost"].map(len) > 0]
    assert len(df) == 6 and len(lost) == 4
    assert set(lost["order"]) == {"A B A B", "A B B A", "B A A B", "B A B A"}
    assert set(df.loc[df["lost"].map(len) == 0, "order"]) == {"A A B B", "B B A A"}
    assert set(lost["version"]) == {2}  # two changes, one bump: the loss is visible


@pytest.mark.aws_verified
def test_race__safe_update__loses_nothing_in_all_6_orders(tconn: Connection, store: FlagStore) -> None:
    """Version-guarded UpdateItem on the same 6 orders: both changes always survive."""
    df = race_table(tconn, store, safe_write)
    assert len(df) == 6
    assert df["lost"].map(len).sum() == 0
    assert set(df["version"]) == {3}


def test_race__two_first_writers__creation_guarded_nothing_lost(tconn: Connection, store: FlagStore) -> None:
    """Both admins find no item and both try to create it: one creates, the other updates."""
    df = race_table(tconn, store, safe_write, create_first=False)
    assert len(df) == 6
    assert df["lost"].map(len).sum() == 0
    assert set(df["version"]) == {2}


def test_race__overlapping_safe_update__loser_sees_conditional_check_failed(
    tconn: Connection, store: FlagStore
) -> None:
    """In A B A B the second writer's first UpdateItem fails its condition, then it retries."""
    store.create()
    res = run_interleaving(admins(store, safe_write), "ABAB", conn=tconn)
    outcomes = list(res.history["outcome"])
    assert outcomes[:4] == ["ok", "ok", "ok", "ConditionalCheckFailedException"]
    assert (res.results["A"].attempts, res.results["B"].attempts) == (1, 2)
    assert lost_changes(store, EXPECTED_AFTER_BOTH) == []


@pytest.mark.aws_verified
def test_stress__16_threads_safe_updates_to_different_flags__none_lost(tconn: Connection) -> None:
    """16 writers at once, each turning on its own flag: all 16 are on, version 1 + 16."""
    schema = FlagSchema(tuple(Flag(f"feature_{i:02d}", bool, False) for i in range(16)))
    store = FlagStore(
        tconn.client,
        tconn.table_name,
        schema=schema,
        max_attempts=100,
        backoff=exponential_jitter(base=0.001, cap=0.02),
    )
    store.create()

    def op(client: Any, worker: int, seq: int) -> int:
        return store.with_client(client).set_flags({f"feature_{worker:02d}": True}).attempts

    df = stress(op, conn=tconn, threads=16, ops=1)
    item = stored_item(store)
    assert item is not None
    assert bool(df["ok"].all()) and len(df) == 16
    assert lost_changes(store, {f.name: True for f in schema.flags}) == []
    assert item["version"] == 17


# ---------------------------------------------------------------- anti-patterns


def test_unsafe_set_flags__alone__writes_whole_item(store: FlagStore) -> None:
    """The anti-pattern works when nobody else writes: GetItem then an unconditioned PutItem."""
    store.create()
    calls = count_calls(store)
    version = unsafe_set_flags(store, signup_enabled=True)
    assert (calls, version) == (["GetItem", "PutItem"], 2)
    assert stored_item(store)["signup_enabled"] is True  # type: ignore[index]


def test_unsafe_set_flags__bad_input__rejected_before_any_call(store: FlagStore) -> None:
    """Even the anti-pattern validates input first."""
    calls = count_calls(store)
    with pytest.raises(UnknownFlag):
        unsafe_set_flags(store, nope=True)
    assert calls == []


def test_unsafe_scan_read__reads_every_item_to_return_one(store: FlagStore) -> None:
    """Scan + filter finds the singleton, but examines every item in the table."""
    store.create(signup_enabled=True)
    requests = [{"PutRequest": {"Item": {"PK": {"S": f"USER#{i}"}, "SK": {"S": "PROFILE"}}}} for i in range(60)]
    for start in range(0, 60, 25):
        store.client.batch_write_item(RequestItems={store.table_name: requests[start : start + 25]})
    scan = unsafe_scan_read(store)
    get = store.read(use_cache=False)
    assert (scan.source, scan["signup_enabled"], scan.items_read) == ("item", True, 61)
    assert dict(scan.flags) == dict(get.flags) and get.items_read == 1


def test_unsafe_scan_read__no_item__defaults(store: FlagStore) -> None:
    """Scan that finds nothing also fails closed."""
    res = unsafe_scan_read(store)
    assert (res.source, dict(res.flags)) == ("defaults", SAFE)


# ---------------------------------------------------------------- migration


def to_v2(attrs: dict[str, Any]) -> dict[str, Any]:
    """V2 shape: the three feature flags move into one map, plus a new flag."""
    return {
        "features": {k: attrs[k] for k in ("signup_enabled", "ai_search_enabled")},
        "maintenance_mode": attrs["maintenance_mode"],
        "rate_limit_per_minute": attrs["rate_limit_per_minute"],
        "dark_launch": False,
    }


def test_migrate__v1_to_v2__transform_output_written_v1_kept(store: FlagStore) -> None:
    """V2 holds the transform's output, version 1 and where it came from; V1 is untouched."""
    store.create(signup_enabled=True)
    res = migrate(store, to_v2)
    v2 = stored_item(store, FLAGS_SK_V2)
    assert res.won and v2 is not None
    assert v2["features"] == {"signup_enabled": True, "ai_search_enabled": False}
    assert (v2["version"], v2["migrated_from"], v2["migrated_from_version"]) == (1, FLAGS_SK_V1, 1)
    assert stored_item(store, FLAGS_SK_V1)["signup_enabled"] is True  # type: ignore[index]


def test_migrate__readers_switch_by_configuration(tconn: Connection, store: FlagStore) -> None:
    """A reader configured with sk=FLAGS#V2 and the V2 schema reads the new item."""
    store.create(maintenance_mode=False)
    migrate(store, to_v2)
    v2_schema = FlagSchema((Flag("maintenance_mode", bool, True), Flag("dark_launch", bool, False)))
    reader = FlagStore(tconn.client, tconn.table_name, sk=FLAGS_SK_V2, schema=v2_schema)
    res = reader.read()
    assert (res.source, res["maintenance_mode"], res.version) == ("item", False, 1)
    assert any("features" in n for n in res.notes)


@pytest.mark.aws_verified
def test_migrate__two_migrators_all_orders__exactly_one_wins(tconn: Connection, store: FlagStore) -> None:
    """Two migrators race on every order: one writes V2, the other is told, V2 written once."""

    def tagged(tag: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda attrs: {**to_v2(attrs), "migrated_by": tag}

    actors = {t: (lambda client, t=t: migrate(store.with_client(client), tagged(t))) for t in ("A", "B")}

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key={"PK": {"S": SETTINGS_PK}, "SK": {"S": FLAGS_SK_V2}})
        if stored_item(store) is None:
            store.create(signup_enabled=True)

    def outcome(res: Any) -> dict[str, Any]:
        h = res.history
        puts_ok = h[(h["operation"] == "PutItem") & (h["outcome"] == "ok")]
        v2 = stored_item(store, FLAGS_SK_V2) or {}
        winners = [n for n, r in res.results.items() if r.won]
        return {
            "winners": winners,
            "puts_ok": len(puts_ok),
            "by": v2.get("migrated_by"),
            "intact": {k: v for k, v in v2.items() if k in to_v2(SAFE)} == to_v2({**SAFE, "signup_enabled": True}),
            "loser_told": all("already exists" in r.reason for r in res.results.values() if not r.won),
        }

    df = all_interleavings(actors, conn=tconn, setup=setup, outcome=outcome)
    assert len(df) == 6
    assert list(df["winners"].map(len)) == [1] * 6
    assert list(df["puts_ok"]) == [1] * 6
    assert list(df["by"]) == [w[0] for w in df["winners"]]
    assert bool(df["intact"].all()) and bool(df["loser_told"].all())


def test_migrate__no_source_item__not_found(store: FlagStore) -> None:
    """Nothing to migrate: NotFound, no V2 written."""
    with pytest.raises(NotFound, match="set_flags"):
        migrate(store, to_v2)
    assert stored_item(store, FLAGS_SK_V2) is None


def test_migrate__transform_sets_reserved_attribute__refused(store: FlagStore) -> None:
    """The transform may not write PK, SK or version; nothing is written."""
    store.create()
    with pytest.raises(ValidationError, match="version"):
        migrate(store, lambda attrs: {**attrs, "version": 5})
    assert stored_item(store, FLAGS_SK_V2) is None


def test_migrate__output_fails_target_schema__refused(store: FlagStore) -> None:
    """A target schema checks the transform's output before the write."""
    store.create()
    v2_schema = FlagSchema((Flag("maintenance_mode", bool, True),))
    with pytest.raises(FlagTypeError):
        migrate(store, lambda attrs: {"maintenance_mode": "on"}, target_schema=v2_schema)
    assert stored_item(store, FLAGS_SK_V2) is None


def test_retire__v2_exists__deletes_v1(store: FlagStore) -> None:
    """With V2 in place, retire() deletes V1 and keeps V2."""
    store.create()
    migrate(store, to_v2)
    retire(store)
    assert stored_item(store, FLAGS_SK_V1) is None
    assert stored_item(store, FLAGS_SK_V2) is not None


def test_retire__no_v2__cancelled_and_v1_kept(store: FlagStore) -> None:
    """Without V2 the ConditionCheck fails: TransactionCancelled with reasons, V1 kept."""
    store.create()
    with pytest.raises(TransactionCancelled, match="migrate first") as info:
        retire(store)
    assert info.value.reason_codes[0] == "ConditionalCheckFailed"
    assert isinstance(info.value.__cause__, ClientError)
    assert stored_item(store, FLAGS_SK_V1) is not None


def test_retire__v1_changed_after_migration__cancelled_and_v1_kept(store: FlagStore) -> None:
    """A change to V1 after the migration would be lost: retire refuses, V1 kept."""
    store.create()
    migrate(store, to_v2)
    store.set_flags(signup_enabled=True)
    with pytest.raises(TransactionCancelled, match="changed since it was migrated") as info:
        retire(store)
    assert info.value.reason_codes == ("None", "ConditionalCheckFailed")
    assert stored_item(store, FLAGS_SK_V1)["signup_enabled"] is True  # type: ignore[index]


# ---------------------------------------------------------------- updates that depend on the read


def raise_limit(flags: Any) -> dict[str, Any]:
    """An admin raises the rate limit by 10 from what they read."""
    return {"rate_limit_per_minute": flags["rate_limit_per_minute"] + 10}


def limit_race(tconn: Connection, store: FlagStore, write: Callable[..., Any]) -> Any:
    """Both admins raise the limit by 10 (60 -> 80 expected), every order."""

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key=store.key)
        store.create()

    actors = {n: (lambda client: write(store.with_client(client))) for n in ("A", "B")}
    return all_interleavings(
        actors,
        conn=tconn,
        setup=setup,
        outcome=lambda _: stored_item(store)["rate_limit_per_minute"],  # type: ignore[index]
    )


def test_update__two_admins_raise_same_limit__both_raises_count_in_all_6_orders(
    tconn: Connection, store: FlagStore
) -> None:
    """The version guard re-reads on conflict, so a read-dependent change is recomputed."""
    df = limit_race(tconn, store, lambda s: s.update(raise_limit))
    assert list(df["outcome"]) == [80] * 6


def test_unsafe_update__two_admins_raise_same_limit__one_raise_lost_in_4_of_6(
    tconn: Connection, store: FlagStore
) -> None:
    """Read-modify-write: both read 60, both write 70."""
    df = limit_race(tconn, store, lambda s: unsafe_update(s, raise_limit))
    assert sorted(df["outcome"]) == [70, 70, 70, 70, 80, 80]


def test_update__change_returns_bad_value__flag_type_error_nothing_written(
    store: FlagStore,
) -> None:
    """update() validates the computed values before writing."""
    store.create()
    with pytest.raises(FlagTypeError):
        store.update(lambda f: {"rate_limit_per_minute": "lots"})
    assert stored_item(store)["version"] == 1  # type: ignore[index]
