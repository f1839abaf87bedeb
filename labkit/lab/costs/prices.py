"""Prices and metering: what consumed capacity costs, and a client that tallies it (see :mod:`labkit.lab.costs`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...shared.capacity import item_size, write_units
from ...shared.catalogue import DATA_PLANE, ITEM_WRITES, WRITES
from ...shared.validation import check_non_negative

if TYPE_CHECKING:
    pass


PRICES_AS_OF = "2024-11-01"
PRICES_SOURCE = "https://aws.amazon.com/dynamodb/pricing/ (us-east-1, Standard table class)"
MILLION = 1_000_000
HOURS_PER_MONTH = 730  # AWS's pricing examples use 730 hours a month

#: Operations that accept ReturnConsumedCapacity.
METERED_OPERATIONS = DATA_PLANE


@dataclass(frozen=True)
class Prices:
    """Prices in US dollars. Negative or non-finite prices are refused."""

    region: str = "us-east-1"
    per_million_rru: float = 0.125
    per_million_wru: float = 0.625
    per_rcu_hour: float = 0.00013
    per_wcu_hour: float = 0.00065
    as_of: str = PRICES_AS_OF
    source: str = PRICES_SOURCE

    def __post_init__(self) -> None:
        for name in ("per_million_rru", "per_million_wru", "per_rcu_hour", "per_wcu_hour"):
            check_non_negative(f"price {name}", getattr(self, name), "US dollars")

    def describe(self) -> str:
        return (
            f"{self.region} prices as of {self.as_of}: ${self.per_million_rru:g}/M RRU, "
            f"${self.per_million_wru:g}/M WRU (on-demand); ${self.per_rcu_hour:g}/RCU-hour, "
            f"${self.per_wcu_hour:g}/WCU-hour (provisioned)"
        )


DEFAULT_PRICES = Prices()


def _check_units(**units: float) -> None:
    for name, value in units.items():
        check_non_negative(name, value, "")


def on_demand_cost(read_units: float, write_units: float, prices: Prices = DEFAULT_PRICES) -> float:
    """US dollars for ``read_units`` RRU and ``write_units`` WRU on an on-demand table."""
    _check_units(read_units=read_units, write_units=write_units)
    return (read_units * prices.per_million_rru + write_units * prices.per_million_wru) / MILLION


def provisioned_cost(rcu: float, wcu: float, hours: float, prices: Prices = DEFAULT_PRICES) -> float:
    """US dollars for keeping ``rcu`` and ``wcu`` provisioned for ``hours`` (used or not)."""
    _check_units(rcu=rcu, wcu=wcu, hours=hours)
    return (rcu * prices.per_rcu_hour + wcu * prices.per_wcu_hour) * hours


def units_of(
    consumed: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None, operation: str = ""
) -> tuple[float, float]:
    """(read units, write units) in a response's ``ConsumedCapacity`` (one entry or a list).

    An entry with only ``CapacityUnits`` counts as reads or writes by ``operation``.
    """
    if not consumed:
        return 0.0, 0.0
    entries = [consumed] if isinstance(consumed, Mapping) else list(consumed)
    read = write = 0.0
    for entry in entries:
        if "ReadCapacityUnits" in entry or "WriteCapacityUnits" in entry:
            read += float(entry.get("ReadCapacityUnits", 0.0))
            write += float(entry.get("WriteCapacityUnits", 0.0))
        elif operation in WRITES:
            write += float(entry.get("CapacityUnits", 0.0))
        else:
            read += float(entry.get("CapacityUnits", 0.0))
    return read, write


@dataclass
class Tally:
    """Requests and units a metered client used. ``failed_writes``: conditional writes refused."""

    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    failed_writes: int = 0
    by_operation: dict[str, int] = field(default_factory=dict)

    def cost(self, prices: Prices = DEFAULT_PRICES) -> float:
        """On-demand cost of what was used, in US dollars."""
        return on_demand_cost(self.read_units, self.write_units, prices)

    def reset(self) -> None:
        self.requests, self.read_units, self.write_units, self.failed_writes = 0, 0.0, 0.0, 0
        self.by_operation.clear()


def meter(client: Any) -> Tally:
    """Count every request ``client`` makes and the units it consumes; returns the live tally.

    Asks for ``ReturnConsumedCapacity="TOTAL"`` on every metered call that did not ask, and charges
    a failed conditional write as DynamoDB bills it (see the module docstring).
    """
    tally = Tally()

    def ask(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in METERED_OPERATIONS:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def record(http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        op = model.name
        tally.requests += 1
        tally.by_operation[op] = tally.by_operation.get(op, 0) + 1
        code = parsed.get("Error", {}).get("Code")
        if code == "ConditionalCheckFailedException" and op in ITEM_WRITES:
            tally.failed_writes += 1
            tally.write_units += write_units(item_size(parsed.get("Item")))
            return
        read, write = units_of(parsed.get("ConsumedCapacity"), op)
        tally.read_units += read
        tally.write_units += write

    client.meta.events.register("provide-client-params.dynamodb.*", ask)
    client.meta.events.register("after-call.dynamodb.*", record)
    return tally
