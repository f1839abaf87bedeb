"""The store: moto's DynamoDB, where a table's items live and are read (moto reached through
:mod:`.moto_adapter`, the one door to moto).

Runs under the engine's lock. :meth:`MotoStore.apply` applies a validated data-plane request
atomically: it calls moto's ``DynamoHandler`` methods on the decoded JSON (skipping moto's
~1.4 ms of generic parsing); binary values, control-plane operations and Streams go through
moto's full dispatch (:meth:`MotoStore.dispatch`). Both use :class:`_Backend`
(:mod:`labkit.endpoint.store.atomic`): transactions check every condition before writing and
restore what they wrote if a write fails; a failed UpdateItem leaves its item as it was. What a
request touched, and what a table holds, is reported as plain data (:meth:`MotoStore.item`,
:meth:`~MotoStore.collection`, :meth:`~MotoStore.schema`, :meth:`~MotoStore.tags`, ...).

When a MotoStore is created, :func:`.moto_adapter.prepare` checks every moto internal the engine
relies on (else one-line :class:`~labkit.shared.errors.ConfigurationError`) and makes its five changes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...shared.catalogue import ITEM_WRITES, MOTO_METHODS
from ..errors import ClientFault
from ..expressions.evaluate import as_bytes, holds
from ..expressions.syntax import Condition
from ..metering import item_collections
from ..plan import Plan
from ..schema import SchemaOf, TableSchema, schema_of
from ..wire.decode import STREAMS, Request
from ..wire.encode import Response, fault_response, headers_for
from .atomic import AtomicBackend
from .changes import Change, Commit, Listener
from .moto_adapter import (
    DynamoDBBackend,
    DynamoDBStreamsBackend,
    DynamoDBStreamsHandler,
    DynamoHandler,
    DynamoType,
    JsonRESTError,
    MotoRequest,
    ServiceException,
    camelcase_to_underscores,
    get_account_id_from,
    key_values,
    new_item,
    prepare,
    wire,
)
from .reads import Orders
from .replication import Replication
from .restore import Durable

WireItem = dict[str, Any]

DEFAULT_ACCOUNT = "123456789012"

#: Operations answered by calling moto's action methods directly (the catalogue's ``moto`` field).
FAST_OPERATIONS: Mapping[str, str] = MOTO_METHODS
_BINARY = re.compile(rb'"BS?"\s*:')


def _fault(exc: JsonRESTError | ServiceException) -> ClientFault:
    """moto's error as a ClientFault with the same code, message and extra fields."""
    if isinstance(exc, ServiceException):
        return ClientFault(exc.code, exc.message)
    raw = exc.get_body()
    return _fault_from_body(int(exc.code or 400), raw.encode("utf-8") if isinstance(raw, str) else raw)


def _fault_from_body(status: int, body: bytes) -> ClientFault:
    data = json.loads(body or b"{}")
    code = str(data.pop("__type", "ValidationException")).rpartition("#")[2]
    message = str(data.pop("message", data.pop("Message", "")))
    return ClientFault(code, message, status, data)


class _Backend(AtomicBackend):
    """The atomic backend over moto: moto's items as plain JSON, moto's errors as ClientFaults."""

    moto_errors = (JsonRESTError,)

    def wire(self, item: Any) -> WireItem | None:
        return wire(item)

    def fault(self, exc: BaseException) -> ClientFault:
        assert isinstance(exc, JsonRESTError | ServiceException)
        return _fault(exc)


class _Handler(DynamoHandler):
    """moto's handler, talking to the wrapped backend."""

    store: MotoStore

    @property
    def dynamodb_backend(self) -> Any:
        return self.store.backend(self.current_account, self.region)


class _StreamsBackend(DynamoDBStreamsBackend):
    """moto's Streams backend over the store's own DynamoDB backend (not moto's registry)."""

    store: MotoStore

    @property
    def dynamodb(self) -> Any:
        return self.store.real(self.account_id, self.region_name)


class _StreamsHandler(DynamoDBStreamsHandler):
    """moto's Streams handler, talking to the store's own Streams backend."""

    store: MotoStore

    @property
    def backend(self) -> Any:
        return self.store.streams(self.current_account, self.region)


@dataclass
class Applied:
    """A successful request's answer, and what it touched, as plain data."""

    payload: dict[str, Any]
    before: list[WireItem | None] = field(default_factory=list)  # per plan.writes, before the request
    after: list[WireItem | None] = field(default_factory=list)  # per plan.writes, after it
    gets: list[WireItem | None] = field(default_factory=list)  # per plan.gets
    scanned: list[tuple[str, str | None, list[WireItem]]] = field(default_factory=list)  # Query/Scan, pre-filter


class MotoStore:
    """moto's DynamoDB for one endpoint. Not thread-safe: the engine holds one lock around every call.

    The store owns its moto backends (one DynamoDB and one Streams backend per account and
    region), outside moto's process-wide registry: moto's ``mock_aws`` resets that registry when
    it starts and stops, and never touches these; the tables a ``mock_aws`` test makes never
    appear here. Every write it applies goes through :meth:`commit` (the durable log, the
    partition index, then each listener in :attr:`listeners`).
    """

    def __init__(self, data: str | os.PathLike[str] | None = None) -> None:
        prepare()
        self._backends: dict[tuple[str, str], _Backend] = {}
        self._reals: dict[tuple[str, str], Any] = {}  # the store's own moto DynamoDB backends
        self._streams: dict[tuple[str, str], Any] = {}  # ... and Streams backends
        self._schemas: dict[int, tuple[Any, tuple[int, int, int], TableSchema]] = {}
        self._accounts: dict[str, str] = {}
        self._handler: type[_Handler] = type("_BoundHandler", (_Handler,), {"store": self})
        self._streams_handler: type[_StreamsHandler] = type("_BoundStreams", (_StreamsHandler,), {"store": self})
        self._streams_backend: type[_StreamsBackend] = type("_OwnStreams", (_StreamsBackend,), {"store": self})
        #: Told of every commit, in order, after the store holds it (see :mod:`.changes`).
        self.listeners: list[Listener] = []
        #: Each table's keys in Query and Scan order (:mod:`.partitions`); ``indexed = False``: moto
        #: walks the whole table for each Query and Scan, as it does alone (the index's oracle in tests).
        self.orders = Orders(wire)
        self.indexed = True
        self.replication = Replication(self)  #: global tables and their deliveries (:mod:`.replication`)
        #: The data directory (``--data``, :mod:`.restore`): every commit written there before its answer.
        self.durable: Durable | None = Durable.open(self, data) if data is not None else None

    def close(self) -> None:
        """Release the data directory (if any); the store answers nothing durable after this."""
        if self.durable is not None:
            self.durable.close()
            self.durable = None

    def accounts(self) -> list[tuple[str, str]]:
        """The (account, region) pairs the store has backends for."""
        return list(self._reals)

    def table_object(self, account: str, region: str, table_name: str) -> Any:
        """moto's table object (its identity tells a table made again from the same one)."""
        return self._table(account, region, table_name)

    def all_items(self, account: str, region: str, table_name: str) -> list[WireItem]:
        """Every item of the table, as plain data (binary values as bytes)."""
        table = self._table(account, region, table_name)
        if table is None:
            return []
        entries = (e for part in table.items.values() for e in (part.values() if isinstance(part, dict) else [part]))
        return [w for w in map(wire, entries) if w is not None]

    def insert(self, account: str, region: str, table_name: str, items: list[WireItem]) -> None:
        """Put items straight into moto's table (a restart's restore: no conditions, no stream records)."""
        table = self._table(account, region, table_name)
        for attrs in items:
            item = new_item(table, attrs)
            if item.range_key is not None:
                table.items[item.hash_key][item.range_key] = item
            else:
                table.items[item.hash_key] = item

    def remove(self, account: str, region: str, table_name: str, key: Mapping[str, Any]) -> None:
        table = self._table(account, region, table_name)
        hash_value, range_value = key_values(table, dict(key))
        if range_value is not None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items.pop(hash_value, None)

    def controlled(self, request: Request, status: int) -> None:
        """After a control-plane request: with a data directory, write there what it changed."""
        if self.durable is not None:
            self.durable.controlled(request.operation, request.account, request.region, status)

    def key_values(self, table: Any, key: dict[str, Any]) -> tuple[Any, Any]:
        """moto's (hash, range) values of a plain key of ``table``."""
        return key_values(table, key)

    def real(self, account: str, region: str) -> Any:
        """The store's own moto DynamoDB backend for an account and region (made on first use)."""
        real = self._reals.get((account, region))
        if real is None:
            real = self._reals[(account, region)] = DynamoDBBackend(region, account)
        return real

    def streams(self, account: str, region: str) -> Any:
        """The store's own moto Streams backend for an account and region (made on first use)."""
        found = self._streams.get((account, region))
        if found is None:
            found = self._streams[(account, region)] = self._streams_backend(region, account)
        return found

    # plain-data views ---------------------------------------------------------------------------
    def account_of(self, access_key: str | None) -> str:
        """The account moto derives from an access key (remembered: moto's lookup scans IAM)."""
        if not access_key:
            return DEFAULT_ACCOUNT
        account = self._accounts.get(access_key)
        if account is None:
            if len(self._accounts) > 1000:
                self._accounts.clear()
            account = self._accounts[access_key] = str(get_account_id_from(access_key))
        return account

    def backend(self, account: str, region: str) -> _Backend:
        """The wrapped backend for an account and region."""
        wrapped = self._backends.get((account, region))
        if wrapped is None:
            wrapped = self._backends[(account, region)] = _Backend(self, self.real(account, region), (account, region))
        return wrapped

    def _table(self, account: str, region: str, table: str) -> Any:
        return self.real(account, region).tables.get(table)

    @staticmethod
    def key_names(table: Any) -> list[str]:
        return [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])

    def schema(self, account: str, region: str, table_name: str) -> TableSchema | None:
        """The table's keys and indexes, or None if it does not exist (cached until the table changes)."""
        table = self._table(account, region, table_name)
        if table is None:
            return None
        shape = (len(table.attr), len(table.global_indexes or ()), len(table.indexes or ()))
        cached = self._schemas.get(id(table))
        if cached is not None and cached[0] is table and cached[1] == shape:
            return cached[2]
        schema = schema_of(table)
        self._schemas[id(table)] = (table, shape, schema)
        return schema

    def schema_of(self, account: str, region: str) -> SchemaOf:
        """:meth:`schema` for one account and region: a table's schema by name."""
        return lambda table_name: self.schema(account, region, table_name)

    def table_names(self, account: str, region: str) -> list[str]:
        """The names of the account's tables in the region, in moto's order."""
        return list(self.real(account, region).tables)

    def tags(self, account: str, region: str, table_name: str) -> dict[str, str]:
        """The table's tags as a dict (empty if it has none or does not exist)."""
        table = self._table(account, region, table_name)
        return {} if table is None else {t["Key"]: t["Value"] for t in table.tags or []}

    def set_tags(self, account: str, region: str, table_name: str, tags: Mapping[str, str]) -> None:
        """Replace an existing table's tags."""
        self._table(account, region, table_name).tags = [{"Key": k, "Value": v} for k, v in tags.items()]

    def attribute_definitions(self, account: str, region: str, table_name: str) -> list[dict[str, str]] | None:
        """The table's AttributeDefinitions (copies), in its order; None if the table does not exist."""
        table = self._table(account, region, table_name)
        return None if table is None else [dict(a) for a in table.attr]

    def attribute_names(self, account: str, region: str, table_name: str) -> list[str] | None:
        """The names in the table's AttributeDefinitions, in its order; None if the table does not exist."""
        found = self.attribute_definitions(account, region, table_name)
        return None if found is None else [str(a["AttributeName"]) for a in found]

    def capacity(self, account: str, region: str, table_name: str) -> tuple[str, tuple[float, float] | None] | None:
        """(table ARN, (RCU, WCU) if PROVISIONED else None); None if the table does not exist."""
        table = self._table(account, region, table_name)
        if table is None:
            return None
        units = table.throughput or {} if getattr(table, "billing_mode", None) == "PROVISIONED" else None
        rcu_wcu = (
            None
            if units is None
            else (float(units.get("ReadCapacityUnits", 0)), float(units.get("WriteCapacityUnits", 0)))
        )
        return str(table.table_arn), rcu_wcu

    def item(self, account: str, region: str, table_name: str, key: Mapping[str, Any]) -> WireItem | None:
        """The stored item at a validated ``key`` (None if absent or the table is gone)."""
        real = self.real(account, region)
        table = real.tables.get(table_name)
        if table is None:
            return None
        stored = {k: {"B": as_bytes(v["B"])} if "B" in v else v for k, v in key.items()}  # moto keeps bytes
        return wire(table.get_item(*real.get_keys_value(table, stored)))

    def collection(
        self, account: str, region: str, table_name: str, hash_key: str, value: Mapping[str, Any]
    ) -> list[WireItem]:
        """Every item whose partition key is ``value`` (an item collection)."""
        table = self._table(account, region, table_name)
        stored = {"B": as_bytes(value["B"])} if "B" in value else dict(value)
        found = None if table is None else table.items.get(DynamoType(stored))
        if found is None:
            return []
        moto_items = found.values() if isinstance(found, dict) else [found]
        return [w for w in map(wire, moto_items) if w is not None]

    # applying -----------------------------------------------------------------------------------
    def apply(self, request: Request, plan: Plan, given: dict[str, Any], track: bool) -> Applied:
        """Apply a validated data-plane request, ``given`` to moto as its operation's module wrote it
        (:mod:`labkit.endpoint.store.rewrite`); ``track``: report the items it touched."""
        who = (request.account, request.region)
        wrapped = self.backend(*who)
        writes = [(t.table, t.key) for t in plan.writes]
        before = [self.item(*who, t, k) for t, k in writes]
        self._check_condition(request, plan)
        wrapped.track, wrapped.reads, wrapped.params, wrapped.plan = track, [], request.params, plan
        try:
            payload = self._call(request, given)
        finally:
            wrapped.track, wrapped.params = False, {}
        after = [self.item(*who, t, k) for t, k in writes]
        changes = tuple(
            Change(target.table, dict(target.key), old, new)
            for target, old, new in zip(plan.writes, before, after, strict=True)
            if not target.check_only and (old is not None or new is not None)
        )
        if changes:
            self.commit(Commit(request.account, request.region, request.operation, changes))
        item_collections.attach(
            request.operation,
            request.params,
            plan,
            payload,
            self.schema_of(*who),
            lambda table, name, value: self.collection(*who, table, name, value),
        )
        applied = Applied(payload, before if track else [])
        if track:
            applied.after = after
            applied.gets = [self.item(*who, t, k) for t, k, _, _ in plan.gets]
            applied.scanned, wrapped.reads = wrapped.reads, []
        return applied

    def commit(self, commit: Commit) -> None:
        """The one place every write goes through, once applied and before its answer is sent:
        each listener in :attr:`listeners`, in order, is told what changed (the items' images
        before and after, or the tables a control-plane request changed)."""
        if self.durable is not None:
            self.durable.write(commit)
        self.orders.follow(commit)
        for listener in self.listeners:
            listener(commit)
        self.replication.follow(commit)  # last: it may write to other regions (commits of their own)

    def _check_condition(self, request: Request, plan: Plan) -> None:
        """A single-item write's ConditionExpression, on the item as it is now (moto never sees it)."""
        params = request.params
        found = plan.parsed_of(params).get("ConditionExpression") if request.operation in ITEM_WRITES else None
        tree: Condition | None = None if found is None else found.tree
        if tree is None:
            return
        target = plan.writes[0]
        current = self.item(request.account, request.region, target.table, target.key)
        if holds(tree, current, params.get("ExpressionAttributeNames"), params.get("ExpressionAttributeValues")):
            return
        extra = {"Item": current} if current and params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" else {}
        raise ClientFault("ConditionalCheckFailedException", "The conditional request failed", extra=extra)

    def _call(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        method = FAST_OPERATIONS.get(request.operation)
        if method is None or _BINARY.search(request.body):
            headers = {k: v for k, v in request.headers.items() if k != "content-encoding"}
            body = json.dumps(params).encode("utf-8")
            status, _, answer = self.dispatch(dataclasses.replace(request, params=params, headers=headers, body=body))
            if status != 200:
                raise _fault_from_body(status, answer)
            payload: dict[str, Any] = json.loads(answer or b"{}")
            return payload
        return self._direct(request.account, request.region, method, params)

    def call(self, account: str, region: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """moto's answer to one request (no binary values), its handler method called on ``params``."""
        return self._direct(account, region, camelcase_to_underscores(operation), params)

    def _direct(self, account: str, region: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        handler = self._handler()
        handler.body = handler.params = params
        handler.uri_match = {}
        handler.current_account, handler.region = account, region
        try:
            result = getattr(handler, method)()
        except (JsonRESTError, ServiceException) as exc:
            raise _fault(exc) from exc
        return result.result  # type: ignore[no-any-return]

    def dispatch(self, request: Request) -> Response:
        """moto's own request handling (werkzeug Request, botocore parser and serializer)."""
        handler: Any = self._streams_handler if request.service == STREAMS else self._handler
        if not hasattr(handler(), camelcase_to_underscores(request.operation)):
            raise ClientFault(
                "UnknownOperationException",
                f"labkit's embedded endpoint does not implement {request.operation} (moto does not); "
                "use DynamoDB Local or real DynamoDB for it",
            )
        moto_request = MotoRequest.from_primitives("POST", "http://127.0.0.1/", dict(request.headers), request.body)
        try:
            status, _, body = handler.dispatch(moto_request)
        except ClientFault as fault:  # raised by _Backend inside moto's dispatch
            return fault_response(fault)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            if request.operation in FAST_OPERATIONS:
                raise  # data-plane requests were validated in full: this is an engine bug
            # Control-plane requests are checked only against botocore's model; what moto still
            # cannot read is the client's malformed request. Said, and logged, not hidden.
            print(f"labkit endpoint: moto could not read a {request.operation} request:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            raise ClientFault(
                "ValidationException",
                f"labkit's embedded endpoint (moto) could not read this {request.operation} request "
                f"({type(exc).__name__}: {exc}); check it against the DynamoDB API reference",
            ) from exc
        data = body.encode("utf-8") if isinstance(body, str) else body
        return int(status), headers_for(data), data


__all__ = ["Applied", "FAST_OPERATIONS", "MotoStore", "wire"]
