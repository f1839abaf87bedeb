"""Tables as plain definitions, and back: what the data directory (:mod:`.durable`) writes for a
control-plane change, and how a restart makes the tables again.

A table's definition is its CreateTable request (keys, attribute definitions, billing and
throughput, indexes with their projections, stream specification, deletion protection), its tags
and its TTL setting, read through moto's own DescribeTable and DescribeTimeToLive answers (the
DynamoDB API, not moto's objects). :func:`materialise` makes each table of a replayed state with
moto's CreateTable and UpdateTimeToLive, then puts its items straight into moto's table (no
stream records: a restart is not a write). :class:`Definitions` remembers what was last written,
so a control-plane request writes only the tables it changed. No moto import.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...shared.catalogue import DATA_PLANE, Op
from ..errors import ClientFault
from .changes import Commit

if TYPE_CHECKING:  # the data directory's module is imported by what runs with one only (decision 227)
    from .durable import DataDir, State

WireItem = dict[str, Any]
Who = tuple[str, str]
_READS = ("Describe", "List", "Get")


class Store(Protocol):
    """What this module asks of :class:`~labkit.endpoint.store.moto_store.MotoStore`."""

    def call(self, account: str, region: str, operation: str, params: dict[str, Any]) -> dict[str, Any]: ...

    def table_names(self, account: str, region: str) -> list[str]: ...

    def tags(self, account: str, region: str, table_name: str) -> dict[str, str]: ...

    def table_object(self, account: str, region: str, table_name: str) -> Any: ...

    def all_items(self, account: str, region: str, table_name: str) -> list[WireItem]: ...

    def insert(self, account: str, region: str, table_name: str, items: list[WireItem]) -> None: ...

    def accounts(self) -> list[Who]: ...

    def remove(self, account: str, region: str, table_name: str, key: Mapping[str, Any]) -> None: ...


def is_control_write(operation: str) -> bool:
    """A control-plane operation that may change tables (not Describe*, List*, Get*, not the data plane)."""
    return operation not in DATA_PLANE and not operation.startswith(_READS)


def definition(store: Store, account: str, region: str, name: str) -> dict[str, Any]:
    """The table as a CreateTable request, plus ``Tags`` and ``TimeToLive``."""
    table = store.call(account, region, Op.DESCRIBE_TABLE, {"TableName": name})["Table"]
    billing = (table.get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    out: dict[str, Any] = {
        "TableName": name,
        "KeySchema": table["KeySchema"],
        "AttributeDefinitions": table["AttributeDefinitions"],
        "BillingMode": billing,
    }

    def throughput(described: dict[str, Any]) -> dict[str, int]:
        units = described.get("ProvisionedThroughput") or {}
        return {k: int(units.get(k, 0)) for k in ("ReadCapacityUnits", "WriteCapacityUnits")}

    if billing == "PROVISIONED":
        out["ProvisionedThroughput"] = throughput(table)
    if table.get("GlobalSecondaryIndexes"):
        out["GlobalSecondaryIndexes"] = [
            {
                "IndexName": i["IndexName"],
                "KeySchema": i["KeySchema"],
                "Projection": i["Projection"],
                **({"ProvisionedThroughput": throughput(i)} if billing == "PROVISIONED" else {}),
            }
            for i in table["GlobalSecondaryIndexes"]
        ]
    if table.get("LocalSecondaryIndexes"):
        out["LocalSecondaryIndexes"] = [
            {"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]}
            for i in table["LocalSecondaryIndexes"]
        ]
    stream = table.get("StreamSpecification")
    if stream and stream.get("StreamEnabled"):
        out["StreamSpecification"] = stream
    if table.get("DeletionProtectionEnabled"):
        out["DeletionProtectionEnabled"] = True
    tags = store.tags(account, region, name)
    if tags:
        out["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
    ttl = store.call(account, region, Op.DESCRIBE_TIME_TO_LIVE, {"TableName": name}).get("TimeToLiveDescription") or {}
    if ttl.get("TimeToLiveStatus") == "ENABLED":
        out["TimeToLive"] = {"AttributeName": ttl["AttributeName"], "Enabled": True}
    return out


def materialise(store: Store, state: State) -> int:
    """Make every table of ``state`` in the store, with its items; how many items were put back."""
    from .durable import decode_item  # with a data directory only: `labkit serve` without --data never loads it

    count = 0
    for (account, region), tables in state.tables.items():
        for name, table in tables.items():
            create = {k: v for k, v in table.definition.items() if k != "TimeToLive"}
            store.call(account, region, Op.CREATE_TABLE, create)
            ttl = table.definition.get("TimeToLive")
            if ttl:
                store.call(account, region, Op.UPDATE_TIME_TO_LIVE, {"TableName": name, "TimeToLiveSpecification": ttl})
            items = [decode_item(item) for item in table.items.values()]
            store.insert(account, region, name, items)
            count += len(items)
    return count


class Definitions:
    """The definitions the data directory last holds, per account and region: what a control-plane
    request changed is written, and nothing else."""

    def __init__(self, store: Store, data: DataDir) -> None:
        self.store = store
        self.data = data
        self._known: dict[Who, dict[str, tuple[str, int]]] = {}
        for account, region in store.accounts():
            self._known[(account, region)] = self._current(account, region)

    def _current(self, account: str, region: str) -> dict[str, tuple[str, int]]:
        found = {}
        for name in self.store.table_names(account, region):
            text = json.dumps(definition(self.store, account, region, name), sort_keys=True)
            found[name] = (text, id(self.store.table_object(account, region, name)))
        return found

    def changed(self, account: str, region: str) -> None:
        """After a control-plane request in this account and region: write what changed (one record,
        and the items of each table that is new), fsync-ed."""
        before = self._known.get((account, region), {})
        now = self._current(account, region)
        changed: dict[str, Any] = {}
        new: dict[str, bool] = {}
        for name, (text, ident) in now.items():
            old = before.get(name)
            if old is None or old[1] != ident:
                new[name] = True
                changed[name] = json.loads(text)
            elif old[0] != text:
                changed[name] = json.loads(text)
        for name in before:
            if name not in now:
                changed[name] = None
        if changed:
            self.data.append({"t": "tables", "a": account, "r": region, "d": changed, "new": new})
            for name in new:
                self._dump(account, region, name)
        self._known[(account, region)] = now

    def _dump(self, account: str, region: str, name: str) -> None:
        items = self.store.all_items(account, region, name)
        key_names = [k["AttributeName"] for k in definition(self.store, account, region, name)["KeySchema"]]
        for start in range(0, len(items), 500):
            chunk = items[start : start + 500]
            self.data.write_items(account, region, [(name, {n: i[n] for n in key_names}, i) for i in chunk])


def _decoded(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Global tables' records as the store keeps them: the keys and images of deliveries with bytes."""
    from .durable import decode_item  # with a data directory only

    def delivery(raw: dict[str, Any]) -> dict[str, Any]:
        image = raw.get("image")
        return {**raw, "k": decode_item(raw["k"]), "image": None if image is None else decode_item(image)}

    out = []
    for record in records:
        if record.get("op") == "sent":
            record = {**record, "d": [delivery(d) for d in record["d"]]}
        elif record.get("op") == "state":
            record = {**record, "pending": [delivery(d) for d in record["pending"]]}
        out.append(record)
    return out


class Durable:
    """A store's data directory, open: restored from at start, written at every commit."""

    def __init__(self, store: Store, data: DataDir, definitions: Definitions) -> None:
        self.store = store
        self.data = data
        self.definitions = definitions

    @classmethod
    def open(cls, store: Store, where: str | os.PathLike[str]) -> Durable:
        """Hold ``where``, make its tables in ``store`` again, say so on stderr (one line)."""
        from .durable import DataDir  # with a data directory only

        data = DataDir.open(where)
        try:
            state = data.load()
            restored = materialise(store, state)
            durable = cls(store, data, Definitions(store, data))
            replication = getattr(store, "replication", None)
            if replication is not None:
                replication.restore(_decoded(state.replication))
                replication.writer = data.write_replication
                if state.replication:
                    data.write_replication(replication.state())
        except BaseException:
            data.close()
            raise
        tables = sum(len(store.table_names(*who)) for who in store.accounts())
        print(f"labkit: data directory {data.path}: {tables} table(s), {restored} item(s) restored", file=sys.stderr)
        return durable

    def write(self, commit: Commit) -> None:
        """A data-plane commit, written and fsync-ed; if it cannot be, its items are put back as they
        were and the request is answered InternalServerError (it was not acknowledged)."""
        if not commit.changes:
            return
        replication = getattr(self.store, "replication", None)
        sent = replication.prepare(commit) if replication is not None else None
        try:
            self.data.write_commit(commit, sent)
        except OSError as exc:
            for change in commit.changes:
                if change.before is None:
                    self.store.remove(commit.account, commit.region, change.table, change.key)
                else:
                    self.store.insert(commit.account, commit.region, change.table, [change.before])
            raise ClientFault(
                "InternalServerError",
                f"labkit could not write to its data directory {self.data.path} ({exc.strerror or exc}); nothing "
                "was written: free space or fix the directory, then retry",
                500,
            ) from exc

    def controlled(self, operation: str, account: str, region: str, status: int) -> None:
        """After a control-plane request that may have changed tables: write what changed."""
        if status == 200 and is_control_write(operation):
            self.definitions.changed(account, region)

    def close(self) -> None:
        replication = getattr(self.store, "replication", None)
        if replication is not None:
            replication.writer = None
        self.data.close()


__all__ = ["Definitions", "Durable", "definition", "is_control_write", "materialise"]
