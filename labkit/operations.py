"""The operation catalogue: one record per operation labkit's engine serves, and what labkit knows of it.

Every set of operation names in labkit derives from :data:`CATALOGUE` — the engine's stages
(which operations are validated whole, metered, seen by hooks, answered by moto's fast path),
the race lab's reads, writes and whole-table calls, where the fault kinds can be given, and what
costs count as a write. Adding an operation is one record here and one module in the engine
(``docs/architecture.md`` walks through it). ``tests/architecture/test_operation_names.py``
fails on an operation-name string literal anywhere else in ``labkit/``: code names operations as
:class:`Op` members (``Op.GET_ITEM``, a ``str``) or through the derived sets below.

A record says, for one operation:

``access``
    what it does to items: ``read``, ``write``, ``statement`` (PartiQL: read or write, decided
    per statement), ``none`` (control plane, Streams, labkit's controls);
``scope``
    how much it touches: one ``item``; a ``batch`` of items; a ``transaction`` of items; the
    ``table`` (Query, Scan: many items, named by a condition, not by keys); a PartiQL
    ``statement``; ``control`` (tables, not items); ``stream``; ``labkit`` (a control operation);
``keys``
    where its item keys are in the request (:class:`KeysAt`; :func:`item_keys` reads them);
``conflicts``
    whether DynamoDB can refuse it with a transaction conflict (an item locked by a transaction
    in flight: ``TransactionConflictException``, or ``TransactionConflict`` cancellation reasons);
``metering``
    how its consumed capacity is computed (:class:`Metering`), None when it consumes none;
``moto``
    the ``DynamoHandler`` method the engine's fast path calls, None when moto's dispatch serves it;
``eventual``
    reads eventually consistent unless ``ConsistentRead`` is true (GetItem, Query, Scan, BatchGetItem);
``pages``
    may end a page early with ``LastEvaluatedKey`` (Query, Scan);
``partial``
    may answer 200 with part of the request left over (``UnprocessedItems``/``UnprocessedKeys``);
``token``
    takes a ``ClientRequestToken`` (idempotent for 10 minutes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

Access = Literal["read", "write", "statement", "none"]
Scope = Literal["item", "batch", "transaction", "table", "statement", "control", "stream", "labkit"]

#: ``X-Amz-Target`` prefixes: DynamoDB's, DynamoDB Streams', and labkit's control operations'.
DYNAMODB_TARGET: Final = "DynamoDB_20120810"
STREAMS_TARGET: Final = "DynamoDBStreams_20120810"
CONTROL_PREFIX: Final = "Labkit."


class Op(StrEnum):
    """Operation names. A member *is* its name (``Op.GET_ITEM == "GetItem"``)."""

    # data plane
    GET_ITEM = "GetItem"
    PUT_ITEM = "PutItem"
    UPDATE_ITEM = "UpdateItem"
    DELETE_ITEM = "DeleteItem"
    QUERY = "Query"
    SCAN = "Scan"
    BATCH_GET_ITEM = "BatchGetItem"
    BATCH_WRITE_ITEM = "BatchWriteItem"
    TRANSACT_GET_ITEMS = "TransactGetItems"
    TRANSACT_WRITE_ITEMS = "TransactWriteItems"
    # PartiQL
    EXECUTE_STATEMENT = "ExecuteStatement"
    BATCH_EXECUTE_STATEMENT = "BatchExecuteStatement"
    EXECUTE_TRANSACTION = "ExecuteTransaction"
    # control plane
    CREATE_TABLE = "CreateTable"
    DELETE_TABLE = "DeleteTable"
    DESCRIBE_TABLE = "DescribeTable"
    UPDATE_TABLE = "UpdateTable"
    LIST_TABLES = "ListTables"
    TAG_RESOURCE = "TagResource"
    UNTAG_RESOURCE = "UntagResource"
    LIST_TAGS_OF_RESOURCE = "ListTagsOfResource"
    DESCRIBE_TIME_TO_LIVE = "DescribeTimeToLive"
    UPDATE_TIME_TO_LIVE = "UpdateTimeToLive"
    DESCRIBE_CONTINUOUS_BACKUPS = "DescribeContinuousBackups"
    UPDATE_CONTINUOUS_BACKUPS = "UpdateContinuousBackups"
    DESCRIBE_ENDPOINTS = "DescribeEndpoints"
    DESCRIBE_LIMITS = "DescribeLimits"
    CREATE_BACKUP = "CreateBackup"
    DELETE_BACKUP = "DeleteBackup"
    DESCRIBE_BACKUP = "DescribeBackup"
    LIST_BACKUPS = "ListBackups"
    RESTORE_TABLE_FROM_BACKUP = "RestoreTableFromBackup"
    RESTORE_TABLE_TO_POINT_IN_TIME = "RestoreTableToPointInTime"
    EXPORT_TABLE_TO_POINT_IN_TIME = "ExportTableToPointInTime"
    DESCRIBE_EXPORT = "DescribeExport"
    LIST_EXPORTS = "ListExports"
    IMPORT_TABLE = "ImportTable"
    DESCRIBE_IMPORT = "DescribeImport"
    GET_RESOURCE_POLICY = "GetResourcePolicy"
    PUT_RESOURCE_POLICY = "PutResourcePolicy"
    DELETE_RESOURCE_POLICY = "DeleteResourcePolicy"
    DESCRIBE_CONTRIBUTOR_INSIGHTS = "DescribeContributorInsights"
    # DynamoDB Streams
    LIST_STREAMS = "ListStreams"
    DESCRIBE_STREAM = "DescribeStream"
    GET_SHARD_ITERATOR = "GetShardIterator"
    GET_RECORDS = "GetRecords"
    # labkit's control operations (X-Amz-Target ``Labkit.<name>``; profile ``labkit`` only)
    SET_FAULTS = "Labkit.SetFaults"
    GET_FAULTS = "Labkit.GetFaults"
    HOLD_TRANSACTION = "Labkit.HoldTransaction"
    RELEASE_TRANSACTION = "Labkit.ReleaseTransaction"
    ADVANCE_CLOCK = "Labkit.AdvanceClock"

    def __repr__(self) -> str:  # an Op is its name, in messages too: f"{op!r}" is 'GetItem'
        return repr(self.value)

    @property
    def short(self) -> str:
        """The name without labkit's ``Labkit.`` prefix (``"SetFaults"``); DynamoDB's names as they are."""
        return self.value.removeprefix(CONTROL_PREFIX)


class KeysAt(StrEnum):
    """Where a request names the items it touches."""

    KEY = "Key"  # params["Key"]
    ITEM = "Item"  # params["Item"] (the key attributes are among the item's)
    TRANSACT_ITEMS = "TransactItems"  # each action's Key or Item
    BATCH_GET = "RequestItems.Keys"  # RequestItems[table]["Keys"][i]
    BATCH_WRITE = "RequestItems.Requests"  # RequestItems[table][i]["PutRequest"]["Item"] / ["DeleteRequest"]["Key"]
    CONDITION = "KeyConditionExpression"  # Query: a partition (and a sort-key range), not item keys
    NONE = ""  # Scan (every item), PartiQL (in the statement), control plane


class Metering(StrEnum):
    """How consumed capacity is computed (:mod:`labkit.endpoint` meters, :mod:`labkit.costs` prices)."""

    ITEM = "item"  # 4 KB read steps / 1 KB write steps on one item
    SIZE_READ = "size-read"  # read steps on the total size read, before any FilterExpression
    BATCH = "batch"  # per item, summed per table
    TRANSACTION = "transaction"  # twice the item's units, per item
    STATEMENT = "statement"  # as the operation a statement becomes


@dataclass(frozen=True)
class Operation:
    """What labkit knows of one operation (see the module docstring for each field)."""

    name: Op
    access: Access
    scope: Scope
    keys: KeysAt = KeysAt.NONE
    conflicts: bool = False
    metering: Metering | None = None
    moto: str | None = None
    eventual: bool = False
    pages: bool = False
    partial: bool = False
    token: bool = False

    @property
    def service(self) -> str:
        """``dynamodb``, ``dynamodbstreams`` or ``labkit``."""
        if self.scope == "stream":
            return "dynamodbstreams"
        return "labkit" if self.scope == "labkit" else "dynamodb"

    @property
    def target(self) -> str:
        """The request's ``X-Amz-Target`` header."""
        if self.scope == "labkit":
            return self.name.value
        prefix = STREAMS_TARGET if self.scope == "stream" else DYNAMODB_TARGET
        return f"{prefix}.{self.name.value}"

    @property
    def data_plane(self) -> bool:
        """An operation on items (validated whole, metered, seen by hooks): not PartiQL, not control."""
        return self.scope in ("item", "batch", "transaction", "table")

    @property
    def reads(self) -> bool:
        return self.access in ("read", "statement")

    @property
    def writes(self) -> bool:
        return self.access in ("write", "statement")


def _control(name: Op) -> Operation:
    return Operation(name, "none", "control")


#: Tables, indexes, TTL, tags, backups, limits: served by moto's dispatch.
_CONTROL_PLANE = (
    Op.CREATE_TABLE,
    Op.DELETE_TABLE,
    Op.DESCRIBE_TABLE,
    Op.UPDATE_TABLE,
    Op.LIST_TABLES,
    Op.TAG_RESOURCE,
    Op.UNTAG_RESOURCE,
    Op.LIST_TAGS_OF_RESOURCE,
    Op.DESCRIBE_TIME_TO_LIVE,
    Op.UPDATE_TIME_TO_LIVE,
    Op.DESCRIBE_CONTINUOUS_BACKUPS,
    Op.UPDATE_CONTINUOUS_BACKUPS,
    Op.DESCRIBE_ENDPOINTS,
    Op.DESCRIBE_LIMITS,
    Op.CREATE_BACKUP,
    Op.DELETE_BACKUP,
    Op.DESCRIBE_BACKUP,
    Op.LIST_BACKUPS,
    Op.RESTORE_TABLE_FROM_BACKUP,
    Op.RESTORE_TABLE_TO_POINT_IN_TIME,
    Op.EXPORT_TABLE_TO_POINT_IN_TIME,
    Op.DESCRIBE_EXPORT,
    Op.LIST_EXPORTS,
    Op.IMPORT_TABLE,
    Op.DESCRIBE_IMPORT,
    Op.GET_RESOURCE_POLICY,
    Op.PUT_RESOURCE_POLICY,
    Op.DELETE_RESOURCE_POLICY,
    Op.DESCRIBE_CONTRIBUTOR_INSIGHTS,
)


_RECORDS: tuple[Operation, ...] = (
    Operation(Op.GET_ITEM, "read", "item", KeysAt.KEY, metering=Metering.ITEM, moto="get_item", eventual=True),
    Operation(Op.PUT_ITEM, "write", "item", KeysAt.ITEM, conflicts=True, metering=Metering.ITEM, moto="put_item"),
    Operation(Op.UPDATE_ITEM, "write", "item", KeysAt.KEY, conflicts=True, metering=Metering.ITEM, moto="update_item"),
    Operation(Op.DELETE_ITEM, "write", "item", KeysAt.KEY, conflicts=True, metering=Metering.ITEM, moto="delete_item"),
    Operation(
        Op.QUERY,
        "read",
        "table",
        KeysAt.CONDITION,
        metering=Metering.SIZE_READ,
        moto="query",
        eventual=True,
        pages=True,
    ),
    Operation(Op.SCAN, "read", "table", metering=Metering.SIZE_READ, moto="scan", eventual=True, pages=True),
    Operation(
        Op.BATCH_GET_ITEM,
        "read",
        "batch",
        KeysAt.BATCH_GET,
        metering=Metering.BATCH,
        moto="batch_get_item",
        eventual=True,
        partial=True,
    ),
    Operation(
        Op.BATCH_WRITE_ITEM,
        "write",
        "batch",
        KeysAt.BATCH_WRITE,
        metering=Metering.BATCH,
        moto="batch_write_item",
        partial=True,
    ),
    Operation(
        Op.TRANSACT_GET_ITEMS,
        "read",
        "transaction",
        KeysAt.TRANSACT_ITEMS,
        conflicts=True,
        metering=Metering.TRANSACTION,
        moto="transact_get_items",
    ),
    Operation(
        Op.TRANSACT_WRITE_ITEMS,
        "write",
        "transaction",
        KeysAt.TRANSACT_ITEMS,
        conflicts=True,
        metering=Metering.TRANSACTION,
        moto="transact_write_items",
        token=True,
    ),
    Operation(Op.EXECUTE_STATEMENT, "statement", "statement", conflicts=True, metering=Metering.STATEMENT, pages=True),
    Operation(Op.BATCH_EXECUTE_STATEMENT, "statement", "statement", conflicts=True, metering=Metering.STATEMENT),
    Operation(
        Op.EXECUTE_TRANSACTION, "statement", "statement", conflicts=True, metering=Metering.STATEMENT, token=True
    ),
    *(_control(op) for op in _CONTROL_PLANE),
    *(
        Operation(op, "none", "stream")
        for op in (Op.LIST_STREAMS, Op.DESCRIBE_STREAM, Op.GET_SHARD_ITERATOR, Op.GET_RECORDS)
    ),
    *(
        Operation(op, "none", "labkit")
        for op in (Op.SET_FAULTS, Op.GET_FAULTS, Op.HOLD_TRANSACTION, Op.RELEASE_TRANSACTION, Op.ADVANCE_CLOCK)
    ),
)

#: Every operation labkit's engine serves, by name.
CATALOGUE: Final[Mapping[str, Operation]] = {record.name.value: record for record in _RECORDS}


def record(name: str) -> Operation | None:
    """The catalogue's record of ``name`` (``"GetItem"``, ``"Labkit.SetFaults"``), or None."""
    return CATALOGUE.get(name)


def _names(test: Any) -> frozenset[str]:
    return frozenset(r.name for r in _RECORDS if test(r))


#: Operations on items: validated whole, metered (ReturnConsumedCapacity), seen by hooks and fault rules.
DATA_PLANE: Final = _names(lambda r: r.data_plane)
#: DATA_PLANE in DynamoDB's documentation order (what a fault rule may name, what costs meter).
DATA_PLANE_ORDER: Final = tuple(r.name for r in _RECORDS if r.data_plane)
#: Data-plane operations that only read items, and those that write them.
READS: Final = _names(lambda r: r.data_plane and r.access == "read")
WRITES: Final = _names(lambda r: r.data_plane and r.access == "write")
#: One item, or the items of one table named by a condition (not a batch or transaction).
SINGLE: Final = _names(lambda r: r.scope in ("item", "table"))
#: Writes of one item.
ITEM_WRITES: Final = _names(lambda r: r.scope == "item" and r.access == "write")
#: Query and Scan: items of a table named by a condition, not by keys.
WHOLE_TABLE: Final = _names(lambda r: r.scope == "table")
BATCHES: Final = _names(lambda r: r.scope == "batch")
TRANSACTIONS: Final = _names(lambda r: r.scope == "transaction")
#: PartiQL: ExecuteStatement, BatchExecuteStatement, ExecuteTransaction.
STATEMENTS: Final = _names(lambda r: r.scope == "statement")
#: Operations DynamoDB can refuse with a transaction conflict.
CONFLICTABLE: Final = _names(lambda r: r.conflicts)
#: Reads that are eventually consistent unless ConsistentRead is true.
EVENTUAL_READS: Final = _names(lambda r: r.eventual)
#: Operations that may end a page early (LastEvaluatedKey), and those that may leave items unprocessed.
PAGED: Final = _names(lambda r: r.pages and r.data_plane)
PARTIAL: Final = _names(lambda r: r.partial)
#: Operations that take a ClientRequestToken.
TOKENED: Final = _names(lambda r: r.token)
#: labkit's control operations (``Labkit.*``).
CONTROLS: Final = _names(lambda r: r.scope == "labkit")
#: Operation -> the moto ``DynamoHandler`` method the engine's fast path calls.
MOTO_METHODS: Final[Mapping[str, str]] = {r.name.value: r.moto for r in _RECORDS if r.moto is not None}

#: The request header that asks labkit's embedded endpoint (profile ``labkit``) for one of DynamoDB's
#: weak answers (:class:`WeakAnswer`); the answer carries it back, saying what it did.
WEAK_ANSWER_HEADER: Final = "X-Labkit-Weak-Answer"


class WeakAnswer(StrEnum):
    """The answers DynamoDB may give that a fresh, whole, full answer hides (``X-Labkit-Weak-Answer``)."""

    STALE_READ = "stale-read"  # an eventually consistent read, as of before the latest write to what it reads
    UNPROCESSED_ITEMS = "unprocessed-items"  # a batch's last item left in UnprocessedItems / UnprocessedKeys
    SHORT_PAGE = "short-page"  # a Query or Scan page that ends after its first item, with a LastEvaluatedKey


#: Where DynamoDB can give each weak answer (stale-read also needs a read without ``ConsistentRead``).
WEAK_ANSWER_OPERATIONS: Final[Mapping[WeakAnswer, frozenset[str]]] = {
    WeakAnswer.STALE_READ: EVENTUAL_READS,
    WeakAnswer.UNPROCESSED_ITEMS: PARTIAL,
    WeakAnswer.SHORT_PAGE: PAGED,
}
#: The echo of an answer that could not differ from the strong one starts with this: ``none; <reason>``.
WEAK_ANSWER_NONE: Final = "none"


def _listed(names: frozenset[str]) -> str:
    ordered = [name for name in DATA_PLANE_ORDER if name in names]
    return ", ".join(ordered[:-1]) + " and " + ordered[-1] if len(ordered) > 1 else "".join(ordered)


#: Where each weak answer applies, in words (the endpoint's 400 and the race lab's error say it).
WEAK_ANSWER_WHERE: Final = (
    f"{WeakAnswer.STALE_READ} applies to {_listed(EVENTUAL_READS)} without ConsistentRead=True "
    f"(a global secondary index only reads that way); {WeakAnswer.UNPROCESSED_ITEMS} to "
    f"{_listed(PARTIAL)}; {WeakAnswer.SHORT_PAGE} to {_listed(PAGED)}"
)


def weak_answer_misuse(kind: str, operation: str, params: Mapping[str, Any]) -> str | None:
    """Why DynamoDB cannot give the weak answer ``kind`` to this request, in one sentence that says
    where each kind applies; None when it can. ``params``: the request (its ``ConsistentRead``)."""
    if kind not in WeakAnswer.__members__.values():
        known = ", ".join(WeakAnswer)
        return f"{WEAK_ANSWER_HEADER}: unknown weak answer {kind!r} (use one of {known}); {WEAK_ANSWER_WHERE}"
    if operation not in WEAK_ANSWER_OPERATIONS[WeakAnswer(kind)]:
        return f"{WEAK_ANSWER_HEADER}: DynamoDB never answers {operation} with {kind}; {WEAK_ANSWER_WHERE}"
    if kind == WeakAnswer.STALE_READ and not _reads_eventually(operation, params):
        return (
            f"{WEAK_ANSWER_HEADER}: this {operation} reads with ConsistentRead=True, which is never stale; "
            f"{WEAK_ANSWER_WHERE}"
        )
    return None


def _reads_eventually(operation: str, params: Mapping[str, Any]) -> bool:
    if operation == Op.BATCH_GET_ITEM:  # ConsistentRead is per table: one eventually consistent table is enough
        tables = params.get("RequestItems")
        entries = tables.values() if isinstance(tables, Mapping) else ()
        return any(not (isinstance(e, Mapping) and e.get("ConsistentRead") is True) for e in entries)
    return params.get("ConsistentRead") is not True


#: The action names inside TransactItems, and the operation each one is a part of.
TRANSACT_ACTIONS: Final[Mapping[str, Op]] = {
    "Get": Op.GET_ITEM,
    "Put": Op.PUT_ITEM,
    "Update": Op.UPDATE_ITEM,
    "Delete": Op.DELETE_ITEM,
    "ConditionCheck": Op.GET_ITEM,
}
#: The action (inside TransactItems) that does what each single-item operation does.
ACTION_OF: Final[Mapping[str, str]] = {
    Op.GET_ITEM: "Get",
    Op.PUT_ITEM: "Put",
    Op.UPDATE_ITEM: "Update",
    Op.DELETE_ITEM: "Delete",
}


def is_write(operation: str) -> bool:
    """Does ``operation`` write items? (PartiQL may: True; control plane: False.)"""
    found = CATALOGUE.get(operation)
    return found is not None and found.writes


def item_keys(operation: str, params: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """Every item a request names: (table, the attributes that hold its key, writes it?), in request order.

    The attributes are the request's ``Key`` — or its ``Item``, which holds the key among other
    attributes: the caller picks the key attributes with the table's key schema. A ConditionCheck
    inside a transaction reads its item. Query, Scan, PartiQL and control operations name no
    items (they yield nothing); a malformed request yields what can be read of it.
    """
    found = CATALOGUE.get(operation)
    if found is None:
        return
    at = found.keys
    table = params.get("TableName")
    if at in (KeysAt.KEY, KeysAt.ITEM):
        attrs = params.get(at.value)
        if isinstance(table, str) and isinstance(attrs, Mapping):
            yield table, attrs, found.writes
    elif at is KeysAt.TRANSACT_ITEMS:
        for action in params.get("TransactItems") or ():
            if not isinstance(action, Mapping):
                continue
            for kind, body in action.items():
                if not isinstance(body, Mapping) or kind not in TRANSACT_ACTIONS:
                    continue
                name, attrs = body.get("TableName"), body.get("Key") or body.get("Item")
                if isinstance(name, str) and isinstance(attrs, Mapping):
                    yield name, attrs, kind not in ("Get", "ConditionCheck")
    elif at is KeysAt.BATCH_GET:
        for name, request in (params.get("RequestItems") or {}).items():
            for key in (request.get("Keys") or ()) if isinstance(request, Mapping) else ():
                if isinstance(key, Mapping):
                    yield name, key, False
    elif at is KeysAt.BATCH_WRITE:
        for name, requests in (params.get("RequestItems") or {}).items():
            for entry in requests if isinstance(requests, list) else ():
                put = entry.get("PutRequest") if isinstance(entry, Mapping) else None
                delete = entry.get("DeleteRequest") if isinstance(entry, Mapping) else None
                attrs = (put or {}).get("Item") if put else (delete or {}).get("Key")
                if isinstance(attrs, Mapping):
                    yield name, attrs, True


def tables_of(operation: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The tables a request names (``TableName``, or the tables of its batch or transaction), in order."""
    names: dict[str, None] = {}
    table = params.get("TableName")
    if isinstance(table, str):
        names[table] = None
    for name, _, _ in item_keys(operation, params):
        names[name] = None
    requests = params.get("RequestItems")
    if isinstance(requests, Mapping):
        names.update(dict.fromkeys(str(t) for t in requests))
    return tuple(names)


__all__ = [
    "ACTION_OF",
    "BATCHES",
    "CATALOGUE",
    "CONFLICTABLE",
    "CONTROLS",
    "CONTROL_PREFIX",
    "DATA_PLANE",
    "DATA_PLANE_ORDER",
    "DYNAMODB_TARGET",
    "EVENTUAL_READS",
    "ITEM_WRITES",
    "MOTO_METHODS",
    "PAGED",
    "PARTIAL",
    "READS",
    "SINGLE",
    "STATEMENTS",
    "STREAMS_TARGET",
    "TOKENED",
    "TRANSACTIONS",
    "TRANSACT_ACTIONS",
    "WEAK_ANSWER_HEADER",
    "WEAK_ANSWER_NONE",
    "WEAK_ANSWER_OPERATIONS",
    "WEAK_ANSWER_WHERE",
    "WHOLE_TABLE",
    "WRITES",
    "Access",
    "KeysAt",
    "Metering",
    "Op",
    "Operation",
    "Scope",
    "WeakAnswer",
    "is_write",
    "item_keys",
    "record",
    "tables_of",
    "weak_answer_misuse",
]
