"""Pricing consumed capacity: the arithmetic, the documented unit rules, and the comparisons."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.lab.costs import (
    DEFAULT_PRICES,
    Prices,
    cached_vs_uncached,
    get_vs_scan,
    meter,
    on_demand_cost,
    plot_costs,
    provisioned_cost,
    put_vs_transaction,
    units_of,
    version_guard_contention,
)
from labkit.patterns.singleton import FlagStore
from labkit.patterns.uniqueness import prepare_registration
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.capacity import item_size
from labkit.shared.errors import ValidationError


def _item(pk: str, total_bytes: int) -> dict[str, Any]:
    """An item of exactly ``total_bytes`` by DynamoDB's size rules."""
    base = {"PK": {"S": pk}, "SK": {"S": "X"}, "pad": {"S": ""}}
    pad = total_bytes - item_size(base)
    return {**base, "pad": {"S": "x" * pad}}


# --- arithmetic --------------------------------------------------------------------------------


def test_on_demand_cost__default_prices__dollars_per_million_units() -> None:
    """One million RRU is $0.125 and one million WRU $0.625 (us-east-1, dated defaults)."""
    assert on_demand_cost(1_000_000, 0) == pytest.approx(0.125)
    assert on_demand_cost(0, 1_000_000) == pytest.approx(0.625)
    assert DEFAULT_PRICES.region == "us-east-1" and DEFAULT_PRICES.as_of == "2024-11-01"


def test_provisioned_cost__units_times_hours() -> None:
    """10 WCU and 50 RCU for 730 hours at $0.00065 and $0.00013 an hour."""
    assert provisioned_cost(50, 10, 730) == pytest.approx((50 * 0.00013 + 10 * 0.00065) * 730)


@pytest.mark.parametrize("field", ["per_million_rru", "per_million_wru", "per_rcu_hour", "per_wcu_hour"])
def test_prices__negative__validation_error_names_the_price(field: str) -> None:
    """A negative price is refused when the prices are made, before anything is priced."""
    with pytest.raises(ValidationError, match=f"price {field} must be a number of US dollars >= 0, not -0.01"):
        Prices(**{field: -0.01})  # type: ignore[arg-type]


def test_on_demand_cost__negative_units__validation_error() -> None:
    with pytest.raises(ValidationError, match="read_units must be a number >= 0"):
        on_demand_cost(-1, 0)


def test_units_of__entry_list_and_capacity_units_only() -> None:
    """Lists are summed; an entry with only CapacityUnits counts by the operation."""
    entries = [
        {"TableName": "a", "CapacityUnits": 3.0, "WriteCapacityUnits": 3.0},
        {"TableName": "b", "CapacityUnits": 2.0},
    ]
    assert units_of(entries, "TransactWriteItems") == (0.0, 5.0)
    assert units_of({"CapacityUnits": 0.5}, "GetItem") == (0.5, 0.0)
    assert units_of(None) == (0.0, 0.0)


# --- the documented unit rules, priced from what the endpoint reports ---------------------------


@pytest.mark.parametrize(
    ("size", "strong", "eventual"), [(C.READ_UNIT_BYTES, 1.0, 0.5), (C.READ_UNIT_BYTES + 1, 2.0, 1.0)]
)
def test_meter__get_item_at_4kb_boundary__one_then_two_read_units(
    tconn: Connection, size: int, strong: float, eventual: float
) -> None:
    """4,096 bytes is one strongly consistent read unit; 4,097 bytes is two (eventual: half)."""
    client = tconn.new_client()
    client.put_item(TableName=tconn.table_name, Item=_item("BIG", size))
    tally = meter(client)
    client.get_item(TableName=tconn.table_name, Key={"PK": {"S": "BIG"}, "SK": {"S": "X"}}, ConsistentRead=True)
    client.get_item(TableName=tconn.table_name, Key={"PK": {"S": "BIG"}, "SK": {"S": "X"}})
    assert tally.read_units == strong + eventual
    assert tally.cost() == pytest.approx((strong + eventual) * 0.125 / 1_000_000)


def test_meter__transaction__twice_the_write_units_of_plain_puts(tconn: Connection) -> None:
    """Two 1.5 KB items: 2 + 2 WRU as Puts, 8 WRU in one TransactWriteItems."""
    client = tconn.new_client()
    tally = meter(client)
    items = [_item("T1", 1536), _item("T2", 1536)]
    for item in items:
        client.put_item(TableName=tconn.table_name, Item=item)
    assert tally.write_units == 4.0
    tally.reset()
    client.transact_write_items(TransactItems=[{"Put": {"TableName": tconn.table_name, "Item": i}} for i in items])
    assert tally.write_units == 8.0
    assert tally.requests == 1


def test_meter__failed_conditional_write__still_charged_by_item_size(tconn: Connection) -> None:
    """A refused conditional write costs what the write would have (2 WRU for a 1.5 KB item)."""
    client = tconn.new_client()
    client.put_item(TableName=tconn.table_name, Item=_item("C", 1536))
    tally = meter(client)
    with pytest.raises(ClientError):
        client.put_item(
            TableName=tconn.table_name,
            Item=_item("C", 1536),
            ConditionExpression="attribute_not_exists(PK)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert (tally.failed_writes, tally.write_units) == (1, 2.0)


# --- the comparisons -------------------------------------------------------------------------


def test_get_vs_scan__scan_costs_more_and_grows_with_the_table(tconn: Connection) -> None:
    """GetItem stays at 0.5 units; the Scan pays for every item it reads, so it grows."""
    store = FlagStore.connect(tconn)
    store.set_flags(maintenance_mode=False)
    df = get_vs_scan(tconn.new_client(), tconn.table_name, store.key, [0, 100, 400])
    assert list(df["getitem_read_units"]) == [0.5, 0.5, 0.5]
    scan = list(df["scan_read_units"])
    assert scan[0] >= 0.5 and scan[0] < scan[1] < scan[2]
    assert (df["scan_usd_per_million_reads"] > df["getitem_usd_per_million_reads"]).iloc[1:].all()


def test_cached_vs_uncached__cache_ttl__one_get_item_per_ttl(tconn: Connection) -> None:
    """1,000 reads at 100/s over 10 virtual seconds: 1,000 GetItems uncached, 10 with a 1 s cache."""
    FlagStore.connect(tconn).set_flags(maintenance_mode=False)
    df = cached_vs_uncached(lambda **kw: FlagStore(tconn.new_client(), tconn.table_name, **kw))
    assert list(df["getitem_calls"]) == [1000, 10]
    assert list(df["read_units"]) == [500.0, 5.0]


def test_put_vs_transaction__transaction_doubles_the_table_write_units(tconn: Connection) -> None:
    """Account + 2 markers: 3 table WRU as Puts, 6 in a transaction; the index write is not doubled."""
    reg = prepare_registration(email="ana@example.com", username="ana")
    df = put_vs_transaction(tconn.new_client(), tconn.table_name, reg)
    assert list(df["table_write_units"]) == [1.0, 3.0, 6.0]
    assert list(df["index_write_units"]) == [1.0, 1.0, 1.0]


def test_version_guard_contention__every_change_lands_and_failures_cost_writes(tconn: Connection) -> None:
    """One writer never fails; a failed guard adds a write unit, so units per change >= 1."""
    df = version_guard_contention(tconn, (1, 4), updates_per_writer=5)
    one, four = df.iloc[0], df.iloc[1]
    assert (one["failed_writes"], one["write_units_per_change"]) == (0, 1.0)
    expected = (four["changes"] + four["failed_writes"]) / four["changes"]
    assert four["write_units_per_change"] == pytest.approx(expected, abs=0.001)
    dollars = four["write_units_per_change"] * 0.625 + four["read_units_per_change"] * 0.125  # default prices
    assert four["usd_per_million_changes"] == pytest.approx(dollars, abs=0.0006)  # the printed figures agree


def test_plot_costs__two_panels_titled_with_region_and_date(tconn: Connection) -> None:
    """The cost figure names the prices it used."""
    FlagStore.connect(tconn).set_flags(maintenance_mode=False)
    scan = get_vs_scan(tconn.new_client(), tconn.table_name, FlagStore.connect(tconn).key, [0, 50])
    contention = version_guard_contention(tconn, (1, 2), updates_per_writer=2)
    fig = plot_costs(scan, contention)
    assert len(fig.axes) == 2
    assert fig.get_suptitle() == "On-demand prices, us-east-1, as of 2024-11-01"
