"""moto's DynamoDB backend made atomic: what a transaction or a failed update leaves behind.

Runs under the engine's lock, wrapped around moto's ``DynamoDBBackend`` (every other method
passes through). TransactWriteItems checks every condition first (the engine's own evaluator,
:mod:`labkit.endpoint.expressions.evaluate`), writes only if all hold, and restores what it wrote if a write
fails; a failed UpdateItem leaves its item as it was; Query and Scan apply the engine's
FilterExpression to what moto read, and remember the items read before it (for metering).
No moto import: :mod:`labkit.endpoint.store.moto_store` subclasses :class:`AtomicBackend`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..checks.items import check_stored_item
from ..errors import ClientFault, cancelled
from ..expressions.evaluate import holds
from ..plan import Plan
from ..schema import TableSchema
from . import reads

WireItem = dict[str, Any]
#: The keyword arguments moto's handler passes to ``DynamoDBBackend.query`` that the index reads (or
#: leaves for the engine: the engine evaluates filters; ``consistent_read`` changes nothing in one store).
_QUERY_OPTIONS = frozenset(
    {"consistent_read", "expr_names", "expr_values", "filter_expression", "hash_key_conditions", "range_key_conditions"}
)
#: ``DynamoDBBackend.scan``'s parameters after ``filter_expression``, in moto's order.
_SCAN_ARGS = ("expr_names", "expr_values", "index_name", "consistent_read", "projection_expression", "segments")


class Store(Protocol):
    """What the backend asks of :class:`~labkit.endpoint.store.moto_store.MotoStore`."""

    #: The tables' orders a Query or Scan reads (False: moto walks the table, as it does alone).
    orders: reads.Orders
    indexed: bool

    def schema(self, account: str, region: str, table_name: str) -> TableSchema | None: ...

    @staticmethod
    def key_names(table: Any) -> list[str]: ...

    def key_values(self, table: Any, key: dict[str, Any]) -> tuple[Any, Any]: ...


def restore(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    """Put ``item`` back at its key in moto's storage (or remove the key if it was absent)."""
    if item is None:
        if range_value is not None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items.pop(hash_value, None)
    elif range_value is not None:
        table.items[hash_value][range_value] = item
    else:
        table.items[hash_value] = item


class AtomicBackend:
    """moto's DynamoDBBackend with atomic multi-item writes; everything else passes through.

    Subclassed in :mod:`labkit.endpoint.store.moto_store` (moto through its adapter): :meth:`wire` turns a moto
    item into plain JSON, :meth:`fault` a moto error into a ClientFault, and :attr:`moto_errors`
    are the errors moto raises for a request it refuses.
    """

    moto_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, store: Store, real: Any, who: tuple[str, str]) -> None:
        self.store = store
        self.real = real
        self.who = who
        self.track = False
        self.reads: list[tuple[str, str | None, list[WireItem]]] = []
        #: The request being applied, as validated (moto is given a copy without the expressions
        #: the engine evaluates: its filter and its transaction's conditions are read from here).
        self.params: Mapping[str, Any] = {}
        self.plan = Plan()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def wire(self, item: Any) -> WireItem | None:
        raise NotImplementedError

    def fault(self, exc: BaseException) -> ClientFault:
        raise NotImplementedError

    def _post_check(self, table: Any, hash_value: Any, range_value: Any) -> None:
        schema = self.store.schema(*self.who, table.name)
        after = self.wire(table.get_item(hash_value, range_value))
        if schema is not None and after is not None:
            check_stored_item(schema, after, updated=True)

    def update_item(self, table_name: str, key: dict[str, Any], **kwargs: Any) -> Any:
        """moto's update_item, but an update that fails (or makes a bad item) leaves the item as it was."""
        table = self.real.get_table(table_name)
        hash_value, range_value = self.real.get_keys_value(table, key)
        current = table.get_item(hash_value, range_value)
        before = copy.deepcopy(current)  # moto updates the stored item in place
        try:
            result = self.real.update_item(table_name, key, **kwargs)
            self._post_check(table, hash_value, range_value)
            return result
        except BaseException:
            restore(table, hash_value, range_value, before)
            raise

    def query(
        self,
        table_name: str,
        hash_key_dict: dict[str, Any] | None,
        range_comparison: str | None,
        range_value_dicts: list[dict[str, Any]],
        limit: int | None,
        exclusive_start_key: dict[str, Any] | None,
        scan_index_forward: bool,
        projection_expressions: Any,
        index_name: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """moto's query, called as moto's handler calls it: served from the store's index (the
        partition's range only, :mod:`.reads`) when it can be, else by moto; remembers the items read
        before the engine's filter."""
        served = None
        conditions = kwargs.get("range_key_conditions") or []
        if (
            self.store.indexed
            and not projection_expressions
            and not kwargs.get("filter_expression")
            and len(kwargs.get("hash_key_conditions") or []) <= 1
            and len(conditions) <= 1
            and not set(kwargs) - _QUERY_OPTIONS
        ):
            served = self._served(
                table_name,
                reads.query,
                hash_key=hash_key_dict,
                comparison=range_comparison,
                values=range_value_dicts,
                limit=limit,
                start=exclusive_start_key,
                forward=scan_index_forward,
                index_name=index_name,
                range_conditions=conditions,
            )
        if served is None:
            served = self.real.query(
                table_name,
                hash_key_dict,
                range_comparison,
                range_value_dicts,
                limit,
                exclusive_start_key,
                scan_index_forward,
                projection_expressions,
                index_name=index_name,
                **kwargs,
            )
        items, scanned, last_key = served
        return self._filter(table_name, items, scanned, last_key, {"index_name": index_name})

    def scan(
        self,
        table_name: str,
        filters: dict[str, Any],
        limit: int | None,
        exclusive_start_key: dict[str, Any] | None,
        filter_expression: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        """moto's scan, called as moto's handler calls it: one page from the store's scan order
        (:mod:`.reads`) when it can be, else by moto; remembers the items read before the engine's filter."""
        options = dict(zip(_SCAN_ARGS, args, strict=False)) | kwargs
        served = None
        if (
            self.store.indexed
            and not filters
            and filter_expression is None
            and not options.get("projection_expression")
        ):
            served = self._served(
                table_name,
                reads.scan,
                limit=limit,
                start=exclusive_start_key,
                index_name=options.get("index_name"),
                segments=options.get("segments") or (None, None),
            )
        if served is None:
            served = self.real.scan(table_name, filters, limit, exclusive_start_key, filter_expression, *args, **kwargs)
        items, scanned, last_key = served
        return self._filter(table_name, items, scanned, last_key, {"index_name": options.get("index_name")})

    def _served(self, table_name: str, read: Callable[..., Any], **options: Any) -> Any:
        """``read`` (:func:`.reads.query` or :func:`.reads.scan`) from the store's orders; None: moto's to answer."""
        table = self.real.tables.get(table_name)
        schema = self.store.schema(*self.who, table_name)
        if table is None or schema is None:
            return None
        return read(self.store.orders, self.who, table, schema, self.store.key_values, **options)

    def _filter(
        self, table_name: str, items: list[Any], scanned: int, last_key: Any, kwargs: dict[str, Any]
    ) -> tuple[list[Any], int, Any]:
        """The engine's FilterExpression (moto was given none), after Limit, as DynamoDB applies it."""
        if self.track:
            reads = [w for w in map(self.wire, items) if w is not None]
            self.reads.append((table_name, kwargs.get("index_name"), reads))
        tree = self.plan.parsed_of(self.params).get("FilterExpression")
        if tree is not None and tree.tree is not None:
            names, values = self.params.get("ExpressionAttributeNames"), self.params.get("ExpressionAttributeValues")
            items = [item for item in items if holds(tree.tree, self.wire(item), names, values)]
        return items, scanned, last_key

    def transact_write_items(self, transact_items: list[dict[str, Any]]) -> None:
        """Check every condition first; write only if all hold; undo every write if one fails.

        The request was validated in full (one action per element, keys of the right types, no
        two actions on one item), so a check here fails only by its condition.
        """
        real = self.real
        plan: list[tuple[str, dict[str, Any], Any, Any, Any, dict[str, Any]]] = []
        reasons: list[tuple[str | None, str | None, Any]] = []
        for action, original in zip(transact_items, self.params["TransactItems"], strict=True):
            ((op_type, op),) = ((k, v) for k, v in action.items() if v is not None)
            table = real.get_table(op["TableName"])
            key = op["Key"] if op_type != "Put" else {k: op["Item"][k] for k in self.store.key_names(table)}
            hash_value, range_value = real.get_keys_value(table, key)
            current = table.get_item(hash_value, range_value)
            scope = original[op_type]
            condition = self.plan.parsed_of(scope).get("ConditionExpression")
            reason: tuple[str | None, str | None, Any] = (None, None, None)
            if condition is not None and condition.tree is not None:
                names, values = scope.get("ExpressionAttributeNames"), scope.get("ExpressionAttributeValues")
                if not holds(condition.tree, self.wire(current), names, values):
                    old = None
                    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        old = current.to_json()["Attributes"]
                    reason = ("ConditionalCheckFailed", "The conditional request failed", old)
            reasons.append(reason)
            plan.append((op_type, op, table, hash_value, range_value, key))
        if any(code is not None for code, _, _ in reasons):
            raise cancelled(reasons)

        refusals: tuple[type[BaseException], ...] = (ClientFault, *self.moto_errors)
        saved = [(table, h, r, copy.deepcopy(table.get_item(h, r))) for _, _, table, h, r, _ in plan]
        done = 0
        try:
            for op_type, op, table, h, r, key in plan:
                if op_type == "Put":
                    real.put_item(table.name, op["Item"])
                elif op_type == "Delete":
                    real.delete_item(table.name, key)
                elif op_type == "Update":
                    real.update_item(
                        table.name,
                        key,
                        update_expression=op["UpdateExpression"],
                        expression_attribute_names=op.get("ExpressionAttributeNames"),
                        expression_attribute_values=op.get("ExpressionAttributeValues"),
                    )
                    self._post_check(table, h, r)
                done += 1
        except refusals as exc:
            for table, h, r, item in reversed(saved):
                restore(table, h, r, item)
            fault = exc if isinstance(exc, ClientFault) else self.fault(exc)
            failed: list[tuple[str | None, str | None, Any]] = [(None, None, None)] * len(plan)
            code = "ValidationError" if fault.code == "ValidationException" else fault.code  # DynamoDB's reason code
            failed[done] = (code, fault.message, None)
            raise cancelled(failed) from exc
        except BaseException:
            for table, h, r, item in reversed(saved):
                restore(table, h, r, item)
            raise


__all__ = ["AtomicBackend", "Store", "restore"]
