"""The catalogue's records: one per operation labkit's engine serves, and the sets derived from them.

The one place in ``labkit/`` an operation's name is written (``tests/architecture/test_operation_names.py``
fails on an operation-name string literal anywhere else): code names operations as :class:`Op` members
(``Op.GET_ITEM``, a ``str``) or through the derived sets below.

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

from collections.abc import Mapping
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
    SET_CLOCK = "Labkit.SetClock"
    SETTLE_IMAGES = "Labkit.SettleImages"
    EXPIRE_ITEMS = "Labkit.ExpireItems"
    DESCRIBE_EXPIRY = "Labkit.DescribeExpiry"
    LIST_REPLICATIONS = "Labkit.ListReplications"
    DELIVER_REPLICATIONS = "Labkit.DeliverReplications"
    SET_REPLICATION_LAG = "Labkit.SetReplicationLag"

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
    """How consumed capacity is computed (:mod:`labkit.endpoint` meters, :mod:`labkit.lab.costs` prices)."""

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
        for op in (
            Op.SET_FAULTS,
            Op.GET_FAULTS,
            Op.HOLD_TRANSACTION,
            Op.RELEASE_TRANSACTION,
            Op.ADVANCE_CLOCK,
            Op.SET_CLOCK,
            Op.SETTLE_IMAGES,
            Op.EXPIRE_ITEMS,
            Op.DESCRIBE_EXPIRY,
            Op.LIST_REPLICATIONS,
            Op.DELIVER_REPLICATIONS,
            Op.SET_REPLICATION_LAG,
        )
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


__all__ = [
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
    "WHOLE_TABLE",
    "WRITES",
    "Access",
    "KeysAt",
    "Metering",
    "Op",
    "Operation",
    "Scope",
    "record",
]
