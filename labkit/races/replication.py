"""Replication as steps: a global table's deliveries, ordered by the race lab like calls (issue 38, item 3).

On labkit's embedded endpoint a write of a global table's item becomes one pending *delivery* per other
replica (MREC: applied there when delivered, last writer wins; MRSC: in flight until delivered;
docs/reference.md "Regions and global tables"). While a race-lab run is on, replication is *held*
(``Labkit.SetReplicationLag`` null: the engine delivers nothing on its own), and each delivery a call's
answer names (``X-Labkit-Replications``) becomes a task of the run, waiting from the moment its call was
answered: the scheduler orders it like any call, and a counterexample names it after the call that
made it and its target region: ``'A B [A1 -> us-east-1] A'`` (``[A.1#2 -> eu-west-1]`` for a sub-actor's
call; ``#2``, ``#3`` after the region for a call's further items bound there: a transaction's items are
separate deliveries).

A delivery writes its item in its target region (MREC; MRSC: its pending keeps another region's write
of the item out), so for explore's conflicts it writes the item (:func:`delivery_access`); accesses
carry no region, so it meets every access to the item in any region (wider than needed: sound).

A run starts converged: deliveries pending when it starts (setup's writes) are made first. Those a run
never made are made when it ends, before the invariant is judged (the table converges), unless the
run is asked not to (``converge=False``: the invariant sees the replicas as the run left them). With
a lag of 0 set before the run (``set_replication_lag(conn, 0)``: replication as if synchronous) the lab
holds nothing and makes no steps: the engine delivers at the next request (decision 210).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine_plugins.faults.control import deliver_replications, replications, set_replication_lag
from ..shared.errors import LabkitError, ValidationError
from .identity import Access, item_access

if TYPE_CHECKING:
    from ..shared.backend import Connection

#: The operation a delivery step is recorded with (never a DynamoDB operation).
REPLICATE = "Replicate"
#: The last step of a ``converge=False`` run with deliveries still waiting: the run ends at its turn.
END = "[end]"

_DELIVERY = re.compile(r"^\[(?P<call>\S+) -> (?P<region>[a-z0-9-]+)(?: #(?P<n>[1-9][0-9]*))?\]$")
#: one turn of an order string: a bracketed delivery, or a word
TURN = re.compile(r"\[[^\]]*\]|\S+")


def call_label(actor: str, seq: int) -> str:
    """``A1`` (actor A's first call), ``A.1#2`` (sub-actor A.1's second): the faults' own spelling."""
    return f"{actor}#{seq + 1}" if "." in actor else f"{actor}{seq + 1}"


def delivery_name(actor: str, seq: int, region: str, n: int = 1) -> str:
    """``[A1 -> us-east-1]``: the delivery to ``region`` of actor ``actor``'s call ``seq`` (0-based);
    ``n`` > 1 for the call's further items bound to that region (``[A1 -> us-east-1 #2]``)."""
    more = f" #{n}" if n > 1 else ""
    return f"[{call_label(actor, seq)} -> {region}{more}]"


def is_delivery(name: str) -> bool:
    """A delivery's turn (``[A1 -> us-east-1]``), or the end of a run that leaves deliveries pending."""
    return name == END or bool(_DELIVERY.match(name))


def writer_of(name: str) -> str | None:
    """The task whose call made the delivery ``name`` (``A`` for ``[A1 -> us-east-1]``), or None."""
    found = _DELIVERY.match(name)
    if found is None:
        return "" if name == END else None
    call = found["call"]
    if "#" in call:
        return call.rpartition("#")[0]
    return call.rstrip("0123456789") or None


def split_turns(order: str) -> list[str]:
    """An order string's turns: words, and bracketed deliveries (which hold spaces) as one turn each."""
    return TURN.findall(order)


def check_converge(value: Any) -> bool:
    """``converge`` as given, or a ValidationError: it is True or False."""
    if not isinstance(value, bool):
        raise ValidationError(
            f"converge must be True (make the deliveries a run left pending before judging it) or False "
            f"(judge the replicas as the run left them), not {value!r}"
        )
    return value


def delivery_access(params: Mapping[str, Any], schema_of: Any) -> frozenset[Access]:
    """What a delivery step touches: its item, written (the schema as in its target region)."""
    table, key = params.get("TableName"), params.get("Key")
    if not isinstance(table, str) or not isinstance(key, Mapping):
        return frozenset({Access("*", None, None, True)})
    return frozenset({item_access(table, key, True, schema_of)})


@dataclass
class Replication:
    """The lab's hold on a connection's replication: who lists and makes deliveries, and whether runs converge.

    ``active`` once :meth:`held` has set the lag to null (False on an endpoint without global tables'
    controls, or when the lag was 0: replication asked to be synchronous).
    """

    conn: Connection
    converge: bool = True
    active: bool = False
    previous: float | None = field(default=None, repr=False)

    @contextlib.contextmanager
    def held(self) -> Iterator[Replication]:
        """Hold replication (lag null) for the block, then give the lag back; inert where it cannot."""
        if self.active or self.conn.backend != "embedded":
            yield self
            return
        try:
            previous = set_replication_lag(self.conn, None)
        except LabkitError:  # not labkit's endpoint with its defaults (the dynamodb-local profile): no replication
            yield self
            return
        if previous == 0:  # replication asked to be synchronous: the engine delivers at the next request
            set_replication_lag(self.conn, 0)
            yield self
            return
        self.previous, self.active = previous, True
        try:
            yield self
        finally:
            self.active = False
            with contextlib.suppress(LabkitError):
                set_replication_lag(self.conn, self.previous)

    def settle(self) -> None:
        """Make every pending delivery (oldest first): the replicas converge."""
        if self.active:
            deliver_replications(self.conn, None)

    def pending(self, ids: tuple[int, ...]) -> list[dict[str, Any]]:
        """The pending deliveries among ``ids``, in id order (those made already are left out)."""
        wanted = set(ids)
        return sorted((d for d in replications(self.conn) if int(d["Id"]) in wanted), key=lambda d: int(d["Id"]))

    def deliver(self, delivery: int) -> str:
        """Make one delivery: its outcome (``applied``, ``superseded``, ``acknowledged``)."""
        return str(deliver_replications(self.conn, [delivery])[0]["Outcome"])


__all__ = [
    "END",
    "REPLICATE",
    "Replication",
    "call_label",
    "check_converge",
    "delivery_access",
    "delivery_name",
    "is_delivery",
    "split_turns",
    "writer_of",
]
