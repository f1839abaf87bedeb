"""Global tables (version 2019.11.21): one table's replicas in several regions, and replication as
explicit pending deliveries.

The developer guide ("How DynamoDB global tables work"): "A global table consists of two or more
replica tables across different AWS Regions ... All replicas in a global table share the same table
name, primary key schema, and item data." A table becomes global, and gains or loses a replica, by
``UpdateTable`` with ``ReplicaUpdates`` (:mod:`labkit.endpoint.operations.update_table`).

Multi-Region eventual consistency (MREC, the default): "Changes to items in an MREC global table
replica are asynchronously replicated to all other replicas"; "If the same item is modified in
multiple Regions simultaneously, DynamoDB will resolve the conflict by using the modification with the
latest internal timestamp on a per-item basis, referred to as a 'last writer wins' conflict resolution
method"; "Conditional writes evaluate the condition expression against the version of the item in the
Region". In the lab each applied write of an item of a global table (a commit, :mod:`.changes`) is
applied in its own region only and becomes one :class:`Delivery` per other replica, pending: item by
item (a transaction's items are separate deliveries). A delivery is applied when the lab says
(``Labkit.DeliverReplications``) or, by default, once the engine's clock passes its write time plus
the lag (:attr:`Replication.lag`, at the next request). Last writer wins by :class:`Stamp`: the
engine's epoch at the write, then the engine's commit order (a frozen lab clock gives every write the
same time: the later commit wins; decision 181). An older delivery than the item's latest write in the
target region is superseded: it changes nothing.

Multi-Region strong consistency (MRSC): a write is applied in every replica before it is answered
(strongly consistent reads agree in every region); its replication stays in flight as pending
deliveries that change nothing when delivered; a write to the same item from another region while one
is in flight fails with ReplicatedWriteConflictException (decision 183).

The state (groups, pending deliveries, the stamps they need) is written to the data directory. No moto.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...shared import constants as C
from ..errors import ClientFault
from ..plan import Target
from .changes import Change, Commit
from .deliveries import (
    CONFLICT_MESSAGE,
    DEFAULT_LAG_SECONDS,
    DELIVERED,
    GLOBAL_TABLE_VERSION,
    STRONG,
    Delivery,
    Group,
    Stamp,
    WireItem,
    delivery_of,
    key_id,
    record_of,
)

if TYPE_CHECKING:
    from ..wire.encode import Response
    from .moto_store import MotoStore


@dataclass
class Replication:
    """Every global table of a store, and every delivery not yet made. Runs under the engine's lock."""

    store: MotoStore
    #: Epoch seconds (the engine sets its own: :meth:`labkit.endpoint.DynamoEngine.epoch`).
    clock: Callable[[], float] = time.time
    #: Seconds after a write when the default policy delivers it (None: only ``Labkit.DeliverReplications``).
    lag: float | None = DEFAULT_LAG_SECONDS
    groups: dict[tuple[str, str], Group] = field(default_factory=dict)
    pending: dict[int, Delivery] = field(default_factory=dict)
    stamps: dict[tuple[str, str, str, str], Stamp] = field(default_factory=dict)
    #: False: global tables are refused (the ``dynamodb-local`` profile, as DynamoDB Local has none).
    offered: bool = True
    #: Called with each record to keep (the data directory's writer); None: memory only.
    writer: Callable[[dict[str, Any]], None] | None = None
    _seq: int = 0
    _next_id: int = 1
    _prepared: tuple[Commit, list[Delivery]] | None = None
    _made_ids: list[int] = field(default_factory=list)

    # groups ------------------------------------------------------------------------------------
    def group(self, account: str, region: str, table: str) -> Group | None:
        """The global table ``table`` is a replica of in ``region`` (None: a regional table)."""
        found = self.groups.get((account, table))
        return found if found is not None and region in found.regions else None

    def set_group(self, account: str, table: str, group: Group | None) -> None:
        """Make (``group``) or end (None) a global table; pending deliveries to a region that left are dropped."""
        if group is None or len(group.regions) < 2:
            self.groups.pop((account, table), None)
            kept: list[str] = []
        else:
            self.groups[(account, table)] = group
            kept = group.regions
        for d in list(self.pending.values()):
            if d.account == account and d.table == table and d.target not in kept:
                del self.pending[d.id]
        g = self.groups.get((account, table))
        shape = None if g is None else {"regions": g.regions, "consistency": g.consistency, "witness": g.witness}
        self._keep({"op": "group", "a": account, "n": table, "g": shape})

    def describe(self, account: str, region: str, table: str, description: dict[str, Any]) -> None:
        """Add what a global table's TableDescription says of its replicas (in place): the other regions'
        replicas, as DynamoDB was seen to answer (decision 180)."""
        group = self.group(account, region, table)
        if group is None:
            return
        arn = str(description.get("TableArn", ""))
        description["GlobalTableVersion"] = GLOBAL_TABLE_VERSION
        description["Replicas"] = [
            {
                "RegionName": r,
                "ReplicaStatus": "ACTIVE",
                **({"ReplicaArn": arn.replace(f":{region}:", f":{r}:", 1)} if arn else {}),
            }
            for r in group.regions
            if r != region
        ]
        description["MultiRegionConsistency"] = group.consistency
        if group.witness is not None:
            description["GlobalTableWitnesses"] = [{"RegionName": group.witness, "WitnessStatus": "ACTIVE"}]

    # writes ------------------------------------------------------------------------------------
    def before(self, account: str, region: str, writes: Iterable[Target]) -> None:
        """Before a validated request: every delivery due by the clock is made (the default policy); then, MRSC,
        a write to an item whose write from another region is still in flight fails
        (ReplicatedWriteConflictException), before anything is written."""
        if not self.pending:
            return
        due = self.due()
        if due:
            self.deliver(due)
        for target in writes:
            if target.check_only:
                continue
            table, key = target.table, target.key
            group = self.group(account, region, table)
            if group is None or group.consistency != STRONG:
                continue
            kid = key_id(key)
            for d in self.pending.values():
                if d.account == account and d.table == table and d.source != region and key_id(d.key) == kid:
                    raise ClientFault("ReplicatedWriteConflictException", CONFLICT_MESSAGE)

    def prepare(self, commit: Commit) -> dict[str, Any] | None:
        """The deliveries a commit makes, stamped but not yet pending, as the record the data directory
        writes in the commit's own record (a write is never kept without its deliveries); None: none."""
        made = self._made(commit)
        self._prepared = (commit, made)
        return {"op": "sent", "d": [record_of(d) for d in made]} if made else None

    def _made(self, commit: Commit) -> list[Delivery]:
        if commit.operation == DELIVERED or not commit.changes or not self.groups:
            return []
        made = []
        for change in commit.changes:
            group = self.group(commit.account, commit.region, change.table)
            if group is None:
                continue
            self._seq += 1
            stamp = Stamp(self.clock(), self._seq)
            for target in group.regions:
                if target != commit.region:
                    due = None if self.lag is None else stamp.at + self.lag
                    made.append(
                        Delivery(
                            self._next_id,
                            commit.account,
                            change.table,
                            dict(change.key),
                            commit.region,
                            target,
                            stamp,
                            change.after,
                            commit.operation,
                            due,
                            group.consistency,
                        )
                    )
                    self._next_id += 1
        return made

    def answering(self, answer: Callable[[], Response]) -> Response:
        """``answer()``, with the ids of the deliveries it made in :data:`~labkit.shared.constants.REPLICATIONS_HEADER`
        (the race lab names a delivery after the call that made it)."""
        self._made_ids = []
        try:
            response = answer()
        finally:
            made, self._made_ids = self._made_ids, []
        if made:
            response[1][C.REPLICATIONS_HEADER] = ",".join(map(str, made))
        return response

    def follow(self, commit: Commit) -> None:
        """After the store holds a commit: each item of a global table it wrote is stamped, and becomes one
        delivery per other replica (MRSC: applied there now as well)."""
        prepared, self._prepared = self._prepared, None
        kept = prepared is not None and prepared[0] is commit
        made = prepared[1] if prepared is not None and kept else self._made(commit)
        for delivery in made:
            self.stamps[(delivery.account, delivery.source, delivery.table, key_id(delivery.key))] = delivery.stamp
            self.pending[delivery.id] = delivery
            self._made_ids.append(delivery.id)
            if delivery.consistency == STRONG:
                self._apply(delivery)
        if made and not kept:
            self._keep({"op": "sent", "d": [record_of(d) for d in made]})

    # deliveries --------------------------------------------------------------------------------
    def deliver(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        """Deliver these pending deliveries, in the order given: each is ``applied`` (the target's item
        takes its image), ``superseded`` (the target holds a later write: last writer wins) or, MRSC,
        ``acknowledged`` (applied when it was written). An id not pending is a ClientFault, nothing delivered."""
        wanted = list(ids)
        missing = [i for i in wanted if i not in self.pending]
        if len(set(wanted)) != len(wanted):
            raise ClientFault("ValidationException", f"a delivery is made once: Ids {wanted} names one twice")
        if missing:
            raise ClientFault(
                "ValidationException",
                f"no pending delivery {', '.join(map(str, missing))} (delivered already, dropped with its replica, or "
                "never made); Labkit.ListReplications lists the pending ones",
            )
        outcomes = []
        for i in wanted:
            delivery = self.pending.pop(i)
            outcome = "acknowledged" if delivery.consistency == STRONG else self._apply(delivery)
            self._keep({"op": "delivered", "id": i, "applied": outcome == "applied"})
            outcomes.append({"Id": i, "Outcome": outcome})
        return outcomes

    def due(self) -> list[int]:
        """The pending deliveries the default policy delivers now (due by the clock), in due order."""
        if not self.pending:
            return []
        now = self.clock()
        found = [d for d in self.pending.values() if d.due is not None and d.due <= now]
        return [d.id for d in sorted(found, key=lambda d: (d.due, d.id))]

    def _apply(self, delivery: Delivery) -> str:
        """The delivery's image written in its target region unless a later write is there: ``applied`` or
        ``superseded``."""
        where = (delivery.account, delivery.target, delivery.table, key_id(delivery.key))
        current = self.stamps.get(where)
        if current is not None and current > delivery.stamp:
            return "superseded"
        store = self.store
        if store.table_object(delivery.account, delivery.target, delivery.table) is None:
            return "superseded"  # the replica's table is gone
        before = store.item(delivery.account, delivery.target, delivery.table, delivery.key)
        if delivery.image is None:
            if before is not None:
                store.remove(delivery.account, delivery.target, delivery.table, _stored_key(before, delivery.key))
        else:
            store.insert(delivery.account, delivery.target, delivery.table, [delivery.image])
        self.stamps[where] = delivery.stamp
        if before is not None or delivery.image is not None:
            change = Change(delivery.table, dict(delivery.key), before, delivery.image)
            store.commit(Commit(delivery.account, delivery.target, DELIVERED, (change,)))
        return "applied"

    # the data directory ------------------------------------------------------------------------
    def _keep(self, record: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer(record)

    def restore(self, records: Iterable[Mapping[str, Any]]) -> None:
        """The state the data directory's ``replication`` records leave (at start, before any request)."""
        for record in records:
            op = record["op"]
            if op == "group":
                g = record["g"]
                key = (str(record["a"]), str(record["n"]))
                if g is None:
                    self.groups.pop(key, None)
                else:
                    self.groups[key] = Group(list(g["regions"]), g["consistency"], g.get("witness"))
            elif op == "sent":
                for raw in record["d"]:
                    d = delivery_of(raw)
                    self.pending[d.id] = d
                    self.stamps[(d.account, d.source, d.table, key_id(d.key))] = d.stamp
                    self._next_id = max(self._next_id, d.id + 1)
                    self._seq = max(self._seq, d.stamp.seq)
                    if d.consistency == STRONG:
                        self.stamps[(d.account, d.target, d.table, key_id(d.key))] = d.stamp
            elif op == "delivered":
                gone = self.pending.pop(int(record["id"]), None)
                if gone is not None and record.get("applied"):
                    self.stamps[(gone.account, gone.target, gone.table, key_id(gone.key))] = gone.stamp
            elif op == "state":
                self.groups = {
                    (a, n): Group(list(g["regions"]), g["consistency"], g.get("witness"))
                    for a, n, g in record["groups"]
                }
                self.pending = {d.id: d for d in map(delivery_of, record["pending"])}
                self.stamps = {(k[0], k[1], k[2], k[3]): Stamp(at, seq) for k, (at, seq) in record["stamps"]}
                self._seq = int(record["seq"])
                self._next_id = int(record["next"])
        live = {(d.account, r, d.table, key_id(d.key)) for d in self.pending.values() for r in (d.source, d.target)}
        self.stamps = {k: v for k, v in self.stamps.items() if k in live}  # only pending deliveries need them

    def state(self) -> dict[str, Any]:
        """The whole state as one record (a snapshot)."""
        return {
            "op": "state",
            "groups": [
                [a, n, {"regions": g.regions, "consistency": g.consistency, "witness": g.witness}]
                for (a, n), g in self.groups.items()
            ],
            "pending": [record_of(d) for d in self.pending.values()],
            "stamps": [[list(k), [s.at, s.seq]] for k, s in self.stamps.items()],
            "seq": self._seq,
            "next": self._next_id,
        }


def _stored_key(item: WireItem, key: Mapping[str, Any]) -> dict[str, Any]:
    """The key as the stored item holds it (binary values as bytes)."""
    return {name: item.get(name, value) for name, value in key.items()}


__all__ = ["Replication"]
