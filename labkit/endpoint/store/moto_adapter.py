"""The one door to moto: every moto internal the engine touches, listed, checked and imported here.

moto's DynamoDB code changes in patch releases (its request layer moved in 5.2.0,
``transact_write_items`` was rewritten in 5.1.16), and the engine relies on more than moto's public
``mock_aws``: it subclasses moto's handlers and backends, reads moto's tables and items, and
patches six things. :data:`INTERNALS` names each such internal and what the engine relies on;
:func:`prepare` checks each is there (else one :class:`~labkit.shared.errors.ConfigurationError` naming
what is missing and what to install) and makes the six changes, once per process; moto's IAM, which
the engine reads only once something else has imported it (:func:`get_account_id_from`), is checked
if loaded.
``tests/endpoint/store/test_moto_contract.py`` exercises every entry against the installed moto,
one test per name, so a moto release that moves one fails there, naming it.

The changes: moto's registry of every model instance (the leak: 3 items per UpdateItem, forever)
is off for DynamoDB's models; moto's 405,000-byte item cap is lifted (the engine checks DynamoDB's
409,600); TransactGetItems takes 100; ``+`` and ``-`` on numbers are exact (:mod:`labkit.shared.numbers`);
moto's float-based number range check is off (:mod:`labkit.endpoint.values` checks DynamoDB's
range exactly); an UpdateExpression's text is parsed once and its tree kept (:func:`_parsed_once`,
decision 235).

This is the only module of labkit that imports moto (``tests/architecture/test_endpoint_layout.py``).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...shared import numbers
from ...shared.catalogue import MOTO_METHODS
from ...shared.compat import INSTALL_MOTO
from ...shared.errors import ConfigurationError
from ..errors import ClientFault

try:
    import moto
    import moto.dynamodb.responses as moto_responses
    from moto.core.common_models import BaseModel
    from moto.core.exceptions import JsonRESTError, ServiceException
    from moto.core.model_instances import model_data
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.core.request import Request as MotoRequest
    from moto.core.utils import camelcase_to_underscores
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.table import StreamRecord, StreamShard, Table
    from moto.dynamodb.models.utilities import dynamo_to_dict
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]  # as moto
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.models import DynamoDBStreamsBackend
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
except ImportError as _exc:  # pragma: no cover - depends on the installed moto
    raise ConfigurationError(
        f"labkit's embedded endpoint cannot use the installed moto ({_exc}); {INSTALL_MOTO}"
    ) from _exc

WireItem = dict[str, Any]
MOTO_VERSION: str = str(moto.__version__)


@dataclass(frozen=True)
class Internal:
    """One moto internal the engine relies on: where it is, what for, and whether it is there."""

    name: str
    use: str
    #: the object that has ``attribute``, or the dotted name of a module labkit imports only when it is used
    owner: Any
    attribute: str

    def loaded(self) -> bool:
        """Whether its owner is in this process (a module named by ``owner`` may not be imported yet)."""
        return not isinstance(self.owner, str) or self.owner in sys.modules

    def present(self) -> bool:
        owner = importlib.import_module(self.owner) if isinstance(self.owner, str) else self.owner
        return hasattr(owner, self.attribute)


def _at(owner: Any, attribute: str, name: str, use: str) -> Internal:
    return Internal(name, use, owner, attribute)


_T = "moto.dynamodb.models.table.Table"
_B = "moto.dynamodb.models.DynamoDBBackend"
_H = "moto.dynamodb.responses.DynamoHandler"
_IAM = "moto.iam.models"
_P = "moto.dynamodb.parsing.expressions.UpdateExpressionParser.make"

#: Every moto internal the engine touches (beyond ``import moto``), by dotted name.
INTERNALS: tuple[Internal, ...] = (
    _at(model_data, "get", "moto.core.model_instances.model_data", "the registry of model classes per service (leak)"),
    _at(BaseModel, "__new__", "moto.core.common_models.BaseModel.__new__", "patched: model instances not tracked"),
    _at(LimitedSizeDict, "__setitem__", "moto.dynamodb.models.dynamo_type.LimitedSizeDict", "patched: no 405,000 cap"),
    _at(moto_responses, "TRANSACTION_MAX_ITEMS", "moto.dynamodb.responses.TRANSACTION_MAX_ITEMS", "patched to 100"),
    _at(DynamoType, "__add__", "moto.dynamodb.models.dynamo_type.DynamoType.__add__", "patched: exact + and -"),
    _at(DynamoType, "cast_value", "moto.dynamodb.models.dynamo_type.DynamoType", "key values, their order, compare()"),
    _at(Item, "size", "moto.dynamodb.models.dynamo_type.Item", "Item(hash, range, attrs), .attrs, .size()"),
    _at(Item, "is_within_segment", "moto.dynamodb.models.dynamo_type.Item.is_within_segment", "parallel scans"),
    _at(dynamo_to_dict, "__call__", "moto.dynamodb.models.utilities.dynamo_to_dict", "a moto item as plain JSON"),
    _at(Table, "_validate_number_type", f"{_T}._validate_number_type", "patched off: values.py checks exactly"),
    _at(UpdateExpressionParser, "make", _P, "patched: parsed once per text; every user reads it or copies it first"),
    _at(Table, "get_item", f"{_T}.items", "items by hash key, then range key: read, restored, indexed"),
    _at(Table, "_get_last_evaluated_key", f"{_T}._get_last_evaluated_key", "a Query's or Scan's LastEvaluatedKey"),
    _at(Table, "get_index", f"{_T}.get_index", "an index's projection of an item (index.project)"),
    _at(Table, "describe", f"{_T} attributes", "attr, schema, indexes, tags, throughput, billing_mode, table_arn"),
    _at(Table, "delete_item", f"{_T}.delete_item", "a TTL deletion: the item removed, a REMOVE stream record added"),
    _at(StreamShard, "add", "moto.dynamodb.models.table.StreamShard", "table.stream_shard.items: a TTL record stamped"),
    _at(
        Table,
        "set_stream_specification",
        f"{_T}.set_stream_specification",
        "stream_specification, latest_stream_label, stream_shard: UpdateTable's stream rules, a new stream when "
        "re-enabled, the shard let go when disabled",
    ),
    _at(StreamRecord, "__init__", "moto.dynamodb.models.table.StreamRecord", ".record: the record's JSON"),
    _at(DynamoDBBackend, "get_keys_value", f"{_B}", "made per account and region; tables, get_table, get_keys_value"),
    _at(DynamoDBBackend, "update_item", f"{_B}.update_item", "called by keyword (atomic.py, transactions)"),
    _at(DynamoDBBackend, "query", f"{_B}.query", "its signature: the engine serves it from its partition index"),
    _at(DynamoDBBackend, "scan", f"{_B}.scan", "its signature: the engine serves it from its scan order"),
    _at(DynamoDBBackend, "transact_write_items", f"{_B}.transact_write_items", "replaced by the atomic version"),
    _at(DynamoHandler, "dispatch", f"{_H}.dispatch", "moto's full request handling (binary values, control plane)"),
    _at(DynamoHandler, "dynamodb_backend", f"{_H}.dynamodb_backend", "overridden: the store's own backend"),
    *(
        _at(DynamoHandler, method, f"{_H}.{method}", f"{op}: called with .body/.params set, answers .result")
        for op, method in sorted(MOTO_METHODS.items())
    ),
    _at(DynamoDBStreamsHandler, "backend", "moto.dynamodbstreams.responses.DynamoDBStreamsHandler", "its backend"),
    _at(DynamoDBStreamsBackend, "dynamodb", "moto.dynamodbstreams.models.DynamoDBStreamsBackend", "its tables"),
    _at(MotoRequest, "from_primitives", "moto.core.request.Request.from_primitives", "a request for dispatch"),
    _at(JsonRESTError, "get_body", "moto.core.exceptions.JsonRESTError", "moto's refusals: .code, get_body()"),
    _at(ServiceException, "code", "moto.core.exceptions.ServiceException", "moto's refusals: .code, .message"),
    _at(camelcase_to_underscores, "__call__", "moto.core.utils.camelcase_to_underscores", "a handler's method"),
    _at(_IAM, "get_account_id_from", f"{_IAM}.get_account_id_from", "the account of an access key, once loaded"),
)

_prepared = False


def missing() -> list[str]:
    """The names of :data:`INTERNALS` the installed moto lacks, of those whose module is loaded."""
    found = [internal.name for internal in INTERNALS if internal.loaded() and not internal.present()]
    if "dynamodb" not in model_data:
        found.append("moto.core.model_instances.model_data['dynamodb']")
    return found


def prepare() -> None:
    """Check every internal is there; switch off the leak and the wrong limits. Once per process."""
    global _prepared
    if _prepared:
        return
    lacking = missing()
    if lacking:
        raise ConfigurationError(
            f"labkit's embedded endpoint does not support moto {MOTO_VERSION}: it lacks {', '.join(lacking)}; "
            + INSTALL_MOTO
        )
    for service in ("dynamodb", "dynamodbstreams"):
        for cls in model_data.get(service, {}).values():
            cls.__new__ = _untracked  # type: ignore[method-assign]
            cls.instances_tracked = []  # type: ignore[attr-defined]
    LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[method-assign]
    moto_responses.TRANSACTION_MAX_ITEMS = 100
    DynamoType.__add__ = _arithmetic(DynamoType.__add__, numbers.add)  # type: ignore[method-assign]
    DynamoType.__sub__ = _arithmetic(DynamoType.__sub__, numbers.subtract)  # type: ignore[method-assign]
    Table._validate_number_type = _unchecked  # type: ignore[method-assign]  # float-based; values.py is exact
    UpdateExpressionParser.make = _parsed_once(UpdateExpressionParser.make)
    _prepared = True


#: UpdateExpression texts whose parsed trees are kept (a program uses a handful; a fuzzer many).
PARSED_KEPT = 1024


def _parsed_once(make: Callable[[str], Any]) -> Any:
    """moto's ``UpdateExpressionParser.make``, its tree kept per expression text (a refused text is not kept:
    it raises each time). moto parses an UpdateItem's expression twice (the handler, then the backend) and
    each tree is cyclic garbage; the tree is shared safely because every user of it only reads it
    (``find_clauses``) or deep-copies it first (moto's ``Validator``, which then changes its copy)."""
    return staticmethod(functools.lru_cache(maxsize=PARSED_KEPT)(make))


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


def get_account_id_from(access_key: str) -> str:
    """The account moto gives an access key (``moto.iam.models.get_account_id_from``), without importing
    moto's IAM when nothing in this process has: its models hold every access key moto made (through
    ``mock_aws``, IAM or STS), so before they are imported no key maps to another account and moto's answer
    is its default. Importing them (and ``cryptography``) cost more than the rest of moto's DynamoDB
    together, on every endpoint's start."""
    iam = sys.modules.get(_IAM)
    lookup = getattr(iam, "get_account_id_from", None)  # None: not imported (or still importing)
    return DEFAULT_ACCOUNT_ID if lookup is None else str(lookup(access_key))


def wire(item: Any) -> WireItem | None:
    """A moto ``Item`` as plain DynamoDB JSON (binary values as bytes), or None."""
    return None if item is None else dynamo_to_dict(item.attrs)


def new_item(table: Any, attrs: WireItem) -> Any:
    """A moto ``Item`` for ``table`` from plain DynamoDB JSON (binary values as bytes, as moto keeps them)."""
    hash_value = DynamoType(attrs[table.hash_key_attr])
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    return Item(hash_value, range_value, attrs)


def service_delete(table: Any, key: WireItem, identity: dict[str, str]) -> None:
    """Delete the item at ``key`` as DynamoDB's TTL process does: with the table's stream on, its
    REMOVE record carries ``identity`` as ``userIdentity`` (moto writes the record; labkit stamps it)."""
    shard = table.stream_shard
    records = len(shard.items) if shard is not None else 0
    table.delete_item(*key_values(table, key))
    if shard is not None and len(shard.items) > records:
        shard.items[-1].record["userIdentity"] = dict(identity)


def key_values(table: Any, key: WireItem) -> tuple[Any, Any]:
    """moto's (hash, range) DynamoType values of a plain key (range None for a hash-only table)."""
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    return hash_value, range_value


__all__ = [
    "INTERNALS",
    "MOTO_VERSION",
    "DynamoDBBackend",
    "DynamoDBStreamsBackend",
    "DynamoDBStreamsHandler",
    "DynamoHandler",
    "DynamoType",
    "Internal",
    "JsonRESTError",
    "MotoRequest",
    "ServiceException",
    "camelcase_to_underscores",
    "get_account_id_from",
    "key_values",
    "missing",
    "new_item",
    "prepare",
    "service_delete",
    "wire",
]
