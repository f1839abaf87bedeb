"""The store: moto's DynamoDB, where a table's items live and are read. The ONLY module that imports moto.

Runs under the engine's lock. :meth:`MotoStore.apply` applies a validated data-plane request
atomically: it calls moto's ``DynamoHandler`` methods on the decoded JSON (skipping moto's
~1.4 ms of generic parsing); binary values, control-plane operations and Streams go through
moto's full dispatch (:meth:`MotoStore.dispatch`). Both use :class:`_Backend`
(:mod:`labkit.endpoint.store.atomic`): transactions check every condition before writing and
restore what they wrote if a write fails; a failed UpdateItem leaves its item as it was. What a
request touched, and what a table holds, is reported as plain data (:meth:`MotoStore.item`,
:meth:`~MotoStore.collection`, :meth:`~MotoStore.schema`, :meth:`~MotoStore.tags`, ...).

When a MotoStore is created, :func:`_prepare_moto` checks moto's internals (else one-line
:class:`~labkit.errors.ConfigurationError`) and changes five: moto's registry of every model
instance (the leak: 3 items per UpdateItem, forever) is off for DynamoDB's models; moto's
405,000-byte item cap is lifted (the engine checks DynamoDB's 409,600); TransactGetItems takes 100;
``+`` and ``-`` on numbers are exact (:mod:`labkit.numbers`) and moto's float-based number range
check is off (:mod:`labkit.endpoint.values` checks DynamoDB's range exactly).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ... import numbers
from ...compat import INSTALL_MOTO
from ...errors import ConfigurationError
from ...operations import ITEM_WRITES, MOTO_METHODS, WRITES
from ..errors import ClientFault
from ..expressions.evaluate import as_bytes, holds
from ..expressions.syntax import Condition
from ..metering import item_collections
from ..plan import Plan
from ..schema import SchemaOf, TableSchema, schema_of
from ..wire.decode import STREAMS, Request
from ..wire.encode import Response, fault_response, headers_for
from .atomic import AtomicBackend

WireItem = dict[str, Any]

try:
    import moto
    import moto.dynamodb.responses as _moto_responses
    from moto.core.common_models import BaseModel
    from moto.core.exceptions import JsonRESTError, ServiceException
    from moto.core.model_instances import model_data
    from moto.core.request import Request as MotoRequest
    from moto.core.utils import camelcase_to_underscores
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.models.utilities import dynamo_to_dict
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.iam.models import get_account_id_from
except ImportError as _exc:  # pragma: no cover - depends on the installed moto
    raise ConfigurationError(
        f"labkit's embedded endpoint cannot use the installed moto ({_exc}); {INSTALL_MOTO}"
    ) from _exc

DEFAULT_ACCOUNT = "123456789012"

#: Operations answered by calling moto's action methods directly (the catalogue's ``moto`` field).
FAST_OPERATIONS: Mapping[str, str] = MOTO_METHODS
_BINARY = re.compile(rb'"BS?"\s*:')
_prepared = False


def _prepare_moto() -> None:
    """Check moto's internals this module relies on; switch off the leak and the wrong limits. Once."""
    global _prepared
    if _prepared:
        return
    expected = [
        (BaseModel, "__new__"),
        (Item, "__init__"),
        (LimitedSizeDict, "__setitem__"),
        (Table, "_validate_number_type"),
        (_moto_responses, "TRANSACTION_MAX_ITEMS"),
        *((DynamoHandler, method) for method in FAST_OPERATIONS.values()),
        (DynamoHandler, "dispatch"),
        (DynamoDBStreamsHandler, "dispatch"),
    ]
    missing = [f"{getattr(owner, '__name__', owner)}.{name}" for owner, name in expected if not hasattr(owner, name)]
    if missing or "dynamodb" not in model_data:
        raise ConfigurationError(
            f"labkit's embedded endpoint does not support moto {moto.__version__}: it lacks {', '.join(missing)}; "
            + INSTALL_MOTO
        )
    for service in ("dynamodb", "dynamodbstreams"):
        for cls in model_data.get(service, {}).values():
            cls.__new__ = _untracked  # type: ignore[method-assign]
            cls.instances_tracked = []  # type: ignore[attr-defined]
    LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[method-assign]
    _moto_responses.TRANSACTION_MAX_ITEMS = 100
    DynamoType.__add__ = _arithmetic(DynamoType.__add__, numbers.add)  # type: ignore[method-assign]
    DynamoType.__sub__ = _arithmetic(DynamoType.__sub__, numbers.subtract)  # type: ignore[method-assign]
    Table._validate_number_type = _unchecked  # type: ignore[method-assign]  # float-based; values.py is exact
    _prepared = True


def _arithmetic(moto_operator: Any, exact: Callable[[str, str], str]) -> Any:
    """moto's ``+``/``-`` on two numbers, done exactly and written as DynamoDB stores numbers
    (moto's Decimal arithmetic rounds to 28 digits and may answer ``3.0E+2``)."""

    def operator(self: Any, other: Any) -> Any:
        if getattr(self, "type", None) != "N" or getattr(other, "type", None) != "N":
            return moto_operator(self, other)
        try:
            return DynamoType({"N": exact(self.value, other.value)})
        except numbers.NumberError as exc:
            raise ClientFault("ValidationException", str(exc)) from exc

    return operator


def _unchecked(self: Any, value: Any) -> None:
    """moto's number check compares floats (9.99...E+125 written out overflows); the engine checked it exactly."""


def _new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


_untracked = staticmethod(_new)


def wire(item: Any) -> WireItem | None:
    """A moto ``Item`` as plain DynamoDB JSON (binary values as bytes), or None."""
    return None if item is None else dynamo_to_dict(item.attrs)


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


@dataclass
class Applied:
    """A successful request's answer, and what it touched, as plain data."""

    payload: dict[str, Any]
    before: list[WireItem | None] = field(default_factory=list)  # per plan.writes, before the request
    after: list[WireItem | None] = field(default_factory=list)  # per plan.writes, after it
    gets: list[WireItem | None] = field(default_factory=list)  # per plan.gets
    scanned: list[tuple[str, str | None, list[WireItem]]] = field(default_factory=list)  # Query/Scan, pre-filter


class MotoStore:
    """moto's DynamoDB for one endpoint. Not thread-safe: the engine holds one lock around every call."""

    def __init__(self) -> None:
        _prepare_moto()
        self._backends: dict[tuple[str, str], _Backend] = {}
        self._reals: dict[tuple[str, str], Any] = {}  # moto's backends, looked up once per request
        self._schemas: dict[int, tuple[Any, tuple[int, int, int], TableSchema]] = {}
        self._accounts: dict[str, str] = {}
        self._handler: type[_Handler] = type("_BoundHandler", (_Handler,), {"store": self})

    def begin(self) -> None:
        """A new request: look moto's backends up afresh (moto may have been reset meanwhile)."""
        self._reals.clear()

    def _real(self, account: str, region: str) -> Any:
        real = self._reals.get((account, region))
        if real is None:
            real = self._reals[(account, region)] = dynamodb_backends[account][region]
        return real

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
        """The wrapped backend for an account and region (rewrapped if moto was reset)."""
        real = self._real(account, region)
        wrapped = self._backends.get((account, region))
        if wrapped is None or wrapped.real is not real:
            wrapped = self._backends[(account, region)] = _Backend(self, real, (account, region))
        return wrapped

    def _table(self, account: str, region: str, table: str) -> Any:
        return self._real(account, region).tables.get(table)

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
        return list(self._real(account, region).tables)

    def tags(self, account: str, region: str, table_name: str) -> dict[str, str]:
        """The table's tags as a dict (empty if it has none or does not exist)."""
        table = self._table(account, region, table_name)
        return {} if table is None else {t["Key"]: t["Value"] for t in table.tags or []}

    def set_tags(self, account: str, region: str, table_name: str, tags: Mapping[str, str]) -> None:
        """Replace an existing table's tags."""
        self._table(account, region, table_name).tags = [{"Key": k, "Value": v} for k, v in tags.items()]

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
        real = self._real(account, region)
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
        before = [self.item(*who, t, k) for t, k in writes] if track else []
        self._check_condition(request, plan)
        wrapped.track, wrapped.reads, wrapped.params, wrapped.plan = track, [], request.params, plan
        try:
            payload = self._call(request, given)
        finally:
            wrapped.track, wrapped.params = False, {}
        self._collection_metrics(request, plan, payload)
        applied = Applied(payload, before)
        if track:
            applied.after = [self.item(*who, t, k) for t, k in writes]
            applied.gets = [self.item(*who, t, k) for t, k, _, _ in plan.gets]
            applied.scanned, wrapped.reads = wrapped.reads, []
        return applied

    def _collection_metrics(self, request: Request, plan: Plan, payload: dict[str, Any]) -> None:
        """ItemCollectionMetrics for ReturnItemCollectionMetrics=SIZE (tables with a local secondary index)."""
        payload.pop("ItemCollectionMetrics", None)
        if request.params.get("ReturnItemCollectionMetrics") != "SIZE" or request.operation not in WRITES:
            return
        found: dict[str, dict[str, dict[str, Any]]] = {}  # table -> canonical pk -> metrics
        for target in plan.writes:
            schema = self.schema(request.account, request.region, target.table)
            if (
                schema is None
                or not item_collections.has_collections(schema)
                or target.pk in found.get(target.table, {})
            ):
                continue
            key_value = target.key[schema.hash_key]
            items = self.collection(request.account, request.region, target.table, schema.hash_key, key_value)
            found.setdefault(target.table, {})[target.pk] = item_collections.metrics(schema, key_value, items)
        if request.operation in ITEM_WRITES:
            for per_table in found.values():
                payload["ItemCollectionMetrics"] = next(iter(per_table.values()))
        elif found:
            payload["ItemCollectionMetrics"] = {table: list(per_key.values()) for table, per_key in found.items()}

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
        handler = self._handler()
        handler.body = handler.params = params
        handler.uri_match = {}
        handler.current_account, handler.region = request.account, request.region
        try:
            result = getattr(handler, method)()
        except (JsonRESTError, ServiceException) as exc:
            raise _fault(exc) from exc
        return result.result  # type: ignore[no-any-return]

    def dispatch(self, request: Request) -> Response:
        """moto's own request handling (werkzeug Request, botocore parser and serializer)."""
        handler: Any = DynamoDBStreamsHandler if request.service == STREAMS else self._handler
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
