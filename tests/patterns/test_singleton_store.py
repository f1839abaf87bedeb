"""FlagStore's writes are safe to retry: a lost answer is resolved, never applied twice."""

from __future__ import annotations

import random
import warnings
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from labkit.patterns.singleton import (
    Flag,
    FlagSchema,
    FlagStore,
    exponential_jitter,
    stored_item,
)
from labkit.patterns.uniqueness import lose_next_response
from labkit.shared.backend import Connection
from labkit.shared.constants import FLAGS_SK_V1, MAX_ITEM_BYTES, SETTINGS_PK
from labkit.shared.errors import (
    BackendUnavailable,
    ConflictError,
    FlagTypeError,
    ItemSizeWarning,
    ItemTooLarge,
    NotFound,
    OutcomeUnknown,
    RetriesExhausted,
    TableError,
    UnknownFlag,
    ValidationError,
)
from tests.patterns.flags import SAFE, competing_writer, count_calls, limit_race, no_sleep, raise_limit, raw_put


def flaky_store(tconn: Connection) -> tuple[FlagStore, Any]:
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    return FlagStore(client, tconn.table_name, sleep=lambda _: None), client


def test_set_flags__response_lost__applied_once_and_reported_as_success(tconn: Connection) -> None:
    """The UpdateItem is applied but its answer lost: set_flags succeeds with version 2, not an error."""
    store, client = flaky_store(tconn)
    store.create()
    lose_next_response(client, "UpdateItem")
    result = store.set_flags(rate_limit_per_minute=12)
    assert (result.version, result.flags["rate_limit_per_minute"]) == (2, 12)
    item = stored_item(store)
    assert item is not None and (item["version"], item["rate_limit_per_minute"]) == (2, 12)


def test_update__response_lost__change_applied_exactly_once(tconn: Connection) -> None:
    """update(+10) whose answer is lost ends at 70 (60 + 10), not 80: the version guard knows its own write."""
    store, client = flaky_store(tconn)
    store.create()
    lose_next_response(client, "UpdateItem")
    result = store.update(lambda f: {"rate_limit_per_minute": int(f["rate_limit_per_minute"]) + 10})
    item = stored_item(store)
    assert item is not None and (item["rate_limit_per_minute"], item["version"]) == (70, 2)
    assert result.version == 2


def test_update__response_lost_then_rival_writes__outcome_unknown_not_reapplied(tconn: Connection) -> None:
    """Answer lost AND a rival wrote on top: labkit cannot tell, so it says OutcomeUnknown and writes no more."""
    store, client = flaky_store(tconn)
    store.create()
    rival = FlagStore(tconn.new_client(), tconn.table_name)
    fired: list[int] = []

    def rival_writes(**_: Any) -> None:
        if not fired:
            fired.append(rival.set_flags(banner_message="rival").version)

    client.meta.events.register("after-call.dynamodb.UpdateItem", rival_writes)
    lose_next_response(client, "UpdateItem")
    with pytest.raises(OutcomeUnknown, match="cannot tell") as info:
        store.update(lambda f: {"rate_limit_per_minute": int(f["rate_limit_per_minute"]) + 10})
    assert info.value.__cause__ is not None
    item = stored_item(store)
    assert item is not None and (item["rate_limit_per_minute"], item["version"]) == (70, 3)


def test_create__response_lost__succeeds_once(tconn: Connection) -> None:
    """create() whose PutItem answer is lost recognises its own item instead of saying 'already exists'."""
    store, client = flaky_store(tconn)
    lose_next_response(client, "PutItem")
    result = store.create(signup_enabled=True)
    assert (result.version, result.created) == (1, True)
    assert stored_item(store)["signup_enabled"] is True  # type: ignore[index]


@pytest.mark.filterwarnings("ignore::labkit.shared.errors.ItemSizeWarning")
def test_set_flags__item_of_406_kb__stored_like_dynamodb(tconn: Connection) -> None:
    """~406 KB is under DynamoDB's 400 KB (409,600 bytes) limit: stored (moto alone refused it at 405,000)."""
    store, _ = flaky_store(tconn)
    store.create()
    store.set_flags(banner_message="x" * 406_000)
    assert len(stored_item(store)["banner_message"]) == 406_000  # type: ignore[index]


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


def test_set_flags__one_attempt_lost__message_says_1_attempt(tconn: Connection) -> None:
    """max_attempts=1: "after 1 attempt:" (singular), then what to do next."""
    store = FlagStore(tconn.new_client(), tconn.table_name, max_attempts=1, sleep=no_sleep)
    store.create()
    competing_writer(store, FlagStore(tconn.new_client(), tconn.table_name))
    with pytest.raises(RetriesExhausted, match=r"after 1 attempt: another writer changed the settings item"):
        store.set_flags(signup_enabled=True)


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


def test_update__two_admins_raise_same_limit__both_raises_count_in_all_6_orders(
    tconn: Connection, store: FlagStore
) -> None:
    """The version guard re-reads on conflict, so a read-dependent change is recomputed."""
    df = limit_race(tconn, store, lambda s: s.update(raise_limit))
    assert list(df["outcome"]) == [80] * 6


def test_update__change_returns_bad_value__flag_type_error_nothing_written(
    store: FlagStore,
) -> None:
    """update() validates the computed values before writing."""
    store.create()
    with pytest.raises(FlagTypeError):
        store.update(lambda f: {"rate_limit_per_minute": "lots"})
    assert stored_item(store)["version"] == 1  # type: ignore[index]


def test_toggle__response_lost__flip_applied_once_and_reported(tconn: Connection) -> None:
    """A toggle whose answer is lost: the store re-reads, sees the flip, returns its version (no ConflictError)."""
    store, client = flaky_store(tconn)
    store.create()
    lose_next_response(client, "UpdateItem")
    assert store.toggle("maintenance_mode", False, expected=True) == 2
    item = stored_item(store)
    assert item is not None and (item["maintenance_mode"], item["version"]) == (False, 2)


def test_toggle__response_lost_before_the_request__sent_again(tconn: Connection) -> None:
    """The request never reached DynamoDB (the flag is still as expected): the store sends it again."""
    store, client = flaky_store(tconn)
    store.create()
    dropped: list[bool] = []

    def drop_before_sending(**_: Any) -> None:
        if not dropped:
            dropped.append(True)
            raise ConnectionClosedError(endpoint_url=client.meta.endpoint_url)

    client.meta.events.register("before-send.dynamodb.UpdateItem", drop_before_sending)
    assert store.toggle("maintenance_mode", False, expected=True) == 2
    assert dropped == [True]
    assert stored_item(store)["version"] == 2  # type: ignore[index]
