"""Comparisons on real requests (GetItem vs Scan, a cache, Put vs a transaction, a version guard
under contention) and their picture."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import Op
from ...shared.compat import require
from ...shared.validation import check_int
from .prices import DEFAULT_PRICES, HOURS_PER_MONTH, MILLION, Prices, Tally, meter, on_demand_cost

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ...shared.backend import Connection


def fill(client: Any, table_name: str, count: int, *, start: int = 0, item_bytes: int = 200) -> None:
    """Write items ``FILLER#start .. FILLER#count-1`` of about ``item_bytes`` each (BatchWriteItem)."""
    check_int("count", count, least=0)
    check_int("item_bytes", item_bytes, least=0)
    pad = "x" * max(0, item_bytes - 40)
    puts = [
        {"PutRequest": {"Item": {"PK": {"S": f"FILLER#{i:06d}"}, "SK": {"S": "ROW"}, "pad": {"S": pad}}}}
        for i in range(start, count)
    ]
    for i in range(0, len(puts), 25):
        request: dict[str, Any] = {table_name: puts[i : i + 25]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


def get_vs_scan(
    client: Any,
    table_name: str,
    key: Mapping[str, Any],
    table_sizes: Iterable[int],
    *,
    item_bytes: int = 200,
    prices: Prices = DEFAULT_PRICES,
) -> pd.DataFrame:
    """Read the item at ``key`` with one GetItem and with a Scan + filter, as the table grows.

    For each size the table is filled up to that many filler items (plus what it holds), then both
    reads run once (eventually consistent) and are priced per million reads.
    """
    import pandas as pd

    rows, filled = [], 0
    tally = meter(client)
    for size in sorted(table_sizes):
        fill(client, table_name, size, start=filled, item_bytes=item_bytes)
        filled = max(filled, size)
        tally.reset()
        client.get_item(TableName=table_name, Key=dict(key))
        get_units = tally.read_units
        tally.reset()
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "FilterExpression": "PK = :pk AND SK = :sk",
            "ExpressionAttributeValues": {":pk": key["PK"], ":sk": key["SK"]},
        }
        found = 0
        while True:
            page = client.scan(**kwargs)
            found += len(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        assert found == 1, f"the Scan should find the one item at {dict(key)}, found {found}"
        rows.append(
            {
                "filler_items": size,
                "getitem_read_units": get_units,
                "scan_read_units": tally.read_units,
                "scan_requests": tally.requests,
                "getitem_usd_per_million_reads": MILLION * on_demand_cost(get_units, 0, prices),
                "scan_usd_per_million_reads": MILLION * on_demand_cost(tally.read_units, 0, prices),
            }
        )
    return pd.DataFrame(rows)


def cached_vs_uncached(
    make_store: Callable[..., Any],
    *,
    requests: int = 1000,
    requests_per_second: float = 100.0,
    ttl: float = 1.0,
    prices: Prices = DEFAULT_PRICES,
) -> pd.DataFrame:
    """Serve ``requests`` flag reads at ``requests_per_second`` on a virtual clock, with and without cache.

    ``make_store(clock=..., cache_ttl=...)`` returns a :class:`labkit.patterns.singleton.FlagStore` on a
    metered client (its ``.client``). Columns: reads that reached DynamoDB, read units, USD per
    month at that rate (30 days).
    """
    import pandas as pd

    rows = []
    for cached in (False, True):
        now = [0.0]
        store = make_store(clock=lambda now=now: now[0], cache_ttl=ttl)
        tally = meter(store.client)
        for _ in range(requests):
            store.read(use_cache=cached)
            now[0] += 1 / requests_per_second
        per_request = tally.read_units / requests
        monthly = per_request * requests_per_second * 3600 * HOURS_PER_MONTH
        rows.append(
            {
                "cache": f"ttl {ttl:g} s" if cached else "none",
                "requests": requests,
                "getitem_calls": tally.by_operation.get(Op.GET_ITEM, 0),
                "read_units": tally.read_units,
                "usd_per_month": round(on_demand_cost(monthly, 0, prices), 4),
            }
        )
    return pd.DataFrame(rows)


def put_vs_transaction(
    client: Any, table_name: str, registration: Any, *, prices: Prices = DEFAULT_PRICES
) -> pd.DataFrame:
    """The same sign-up written three ways, each on an empty slate: account only, plain Puts, one transaction.

    ``registration`` is a :class:`labkit.patterns.uniqueness.Registration` (an account and its markers).
    Units are split into the table's and the secondary indexes' (the account's email is indexed):
    inside a transaction the table's write units double.
    """
    import pandas as pd
    from boto3.dynamodb.types import TypeSerializer

    ser = TypeSerializer()
    items = [registration.account_item(), *registration.marker_items()]
    wire = [{k: ser.serialize(v) for k, v in item.items()} for item in items]

    def clear() -> None:
        for item in wire:
            client.delete_item(TableName=table_name, Key={"PK": item["PK"], "SK": item["SK"]})

    def split(consumed: Any) -> tuple[float, float]:
        entries = [consumed] if isinstance(consumed, Mapping) else list(consumed or [])
        table = sum(float(e.get("Table", {}).get("WriteCapacityUnits", 0.0)) for e in entries)
        index = sum(
            float(units.get("WriteCapacityUnits", 0.0))
            for e in entries
            for units in e.get("GlobalSecondaryIndexes", {}).values()
        )
        return table, index

    rows = []
    for how, calls in (
        ("PutItem: account only (no uniqueness)", [("put", wire[0])]),
        (f"{len(wire)} x PutItem: account + markers, not atomic", [("put", w) for w in wire]),
        (f"TransactWriteItems: {len(wire)} Puts, atomic", [("transact", None)]),
    ):
        clear()
        table_units = index_units = 0.0
        for kind, item in calls:
            if kind == "put":
                out = client.put_item(TableName=table_name, Item=item, ReturnConsumedCapacity="INDEXES")
            else:
                out = client.transact_write_items(
                    TransactItems=registration.transact_items(table_name), ReturnConsumedCapacity="INDEXES"
                )
            t, i = split(out.get("ConsumedCapacity"))
            table_units, index_units = table_units + t, index_units + i
        rows.append(
            {
                "how": how,
                "requests": len(calls),
                "table_write_units": table_units,
                "index_write_units": index_units,
                "usd_per_million_signups": round(MILLION * on_demand_cost(0, table_units + index_units, prices), 4),
            }
        )
    clear()
    return pd.DataFrame(rows)


def version_guard_contention(
    conn: Connection,
    writers: Sequence[int] = (1, 2, 4, 8),
    *,
    updates_per_writer: int = 10,
    prices: Prices = DEFAULT_PRICES,
) -> pd.DataFrame:
    """``w`` writers each make ``updates_per_writer`` read-dependent changes to the settings item.

    Each change is :meth:`labkit.patterns.singleton.FlagStore.update` (strong read + version-guarded update,
    retried on conflict without waiting). Failed conditional writes are billed like successful
    ones. Columns per ``w``: changes, attempts, failed writes, units and cost per change.
    """
    import pandas as pd

    from ...patterns.singleton import FlagStore
    from ...races import stress

    rows = []
    for w in writers:
        setup = FlagStore.connect(conn)
        conn.client.delete_item(TableName=conn.table_name, Key=setup.key)
        setup.set_flags(rate_limit_per_minute=0)
        tallies: list[Tally] = []

        def change(client: Any, worker: int, seq: int) -> int:
            store = FlagStore(client, conn.table_name, max_attempts=1000, sleep=lambda s: None)
            return store.update(lambda f: {"rate_limit_per_minute": int(f["rate_limit_per_minute"]) + 1}).attempts

        started = time.perf_counter()
        df = _stress_metered(stress, change, conn, w, updates_per_writer, tallies)
        elapsed = time.perf_counter() - started
        final = FlagStore.connect(conn).read(consistent=True, use_cache=False)["rate_limit_per_minute"]
        total = Tally()
        for t in tallies:
            total.requests += t.requests
            total.read_units += t.read_units
            total.write_units += t.write_units
            total.failed_writes += t.failed_writes
        changes = w * updates_per_writer
        assert final == changes, f"lesson broken: {changes} guarded changes but the value is {final}"
        rows.append(
            {
                "writers": w,
                "changes": changes,
                "attempts": int(df["result"].sum()),
                "failed_writes": total.failed_writes,
                # 3 decimals for units, 4 for dollars: a reader recomputing the dollars from the
                # units gets the printed figure (3.75 x 0.625 + 3.75 x 0.125 = 2.8125, not 2.812)
                "write_units_per_change": round(total.write_units / changes, 3),
                "read_units_per_change": round(total.read_units / changes, 3),
                "usd_per_million_changes": round(MILLION * total.cost(prices) / changes, 4),
                "seconds": round(elapsed, 2),
            }
        )
    return pd.DataFrame(rows)


def _stress_metered(stress: Any, change: Any, conn: Connection, threads: int, ops: int, tallies: list[Tally]) -> Any:
    """races.stress, with each worker's client metered (one tally per client)."""
    metered: dict[int, Tally] = {}

    def op(client: Any, worker: int, seq: int) -> Any:
        if id(client) not in metered:
            metered[id(client)] = meter(client)
            tallies.append(metered[id(client)])
        return change(client, worker, seq)

    return stress(op, conn=conn, threads=threads, ops=ops, progress=False)


def plot_costs(scan: pd.DataFrame, contention: pd.DataFrame, prices: Prices = DEFAULT_PRICES) -> Figure:
    """Left: cost per million reads vs table size (Scan vs GetItem). Right: cost per change vs writers."""
    require("matplotlib", "lab", "labkit.lab.costs.plot_costs")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = scan["filler_items"]
    left.plot(x, scan["scan_usd_per_million_reads"], marker="o", color="#C44E52", label="Scan + filter")
    left.plot(x, scan["getitem_usd_per_million_reads"], marker="o", color="#4C72B0", label=Op.GET_ITEM)
    left.set_xlabel("other items in the table (about 200 bytes each)")
    left.set_ylabel("USD per million reads of the singleton")
    left.set_title("Reading one item: GetItem vs Scan", fontsize=10)
    left.legend()
    w = contention["writers"]
    right.bar(w.astype(str), contention["usd_per_million_changes"], color="#DD8452")
    for xi, (cost, failed, changes) in enumerate(
        zip(contention["usd_per_million_changes"], contention["failed_writes"], contention["changes"], strict=True)
    ):
        right.text(xi, cost, f"{failed} failed writes\nfor {changes} changes", ha="center", va="bottom", fontsize=8)
    right.set_xlabel("concurrent writers of the settings item")
    right.set_ylabel("USD per million successful changes")
    right.set_title("Version-guarded update: contention costs failed writes", fontsize=10)
    right.set_ylim(0, float(contention["usd_per_million_changes"].max()) * 1.3)
    fig.suptitle(f"On-demand prices, {prices.region}, as of {prices.as_of}", fontsize=10)
    return fig
