"""The contract with moto: every internal the engine relies on (``moto_adapter.INTERNALS``), exercised
against the installed moto, one test per name. A moto release that moves, renames or changes one
fails here, and the test's id names it (``test_internal[moto.dynamodb.models.DynamoDBBackend.query]``)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labkit.endpoint import DynamoEngine
from labkit.endpoint.store import moto_adapter as _adapter
from labkit.shared.catalogue import MOTO_METHODS
from tests.endpoint.clients import engine_headers

adapter: Any = _adapter  # the contract reads what the module keeps to itself
adapter.prepare()

REGION, ACCOUNT, TABLE = "us-east-1", "123456789012", "tbl"
ROOT = Path(__file__).resolve().parents[3]


def _backend() -> Any:
    """A fresh engine's own DynamoDB backend (not moto's registry) with table tbl: PK (S) + SK (S), a GSI gsi on
    G (S) (KEYS_ONLY), an LSI lsi on L (S), tagged k=v, one item; made through the engine, as a client makes it."""
    engine = DynamoEngine()
    create = {
        "TableName": TABLE,
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK", "G", "L")],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "gsi",
                "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        "LocalSecondaryIndexes": [
            {
                "IndexName": "lsi",
                "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "L", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "Tags": [{"Key": "k", "Value": "v"}],
    }
    put = {"TableName": TABLE, "Item": {"PK": {"S": "a"}, "SK": {"S": "1"}, "G": {"S": "x"}, "n": {"N": "5"}}}
    for operation, params in (("CreateTable", create), ("PutItem", put)):
        status, _, body = engine.handle(engine_headers(operation), json.dumps(params).encode())
        assert status == 200, body
    return engine.store.real(ACCOUNT, REGION)


def _model_data() -> None:
    assert "dynamodb" in adapter.model_data and adapter.model_data["dynamodb"], "model_data['dynamodb'] is empty"


def _base_model_new() -> None:
    assert adapter.Item.__new__ is adapter._new, "Item.__new__ is not the untracked one: instances are registered"


def _limited_size_dict() -> None:
    item = adapter.Item(adapter.DynamoType({"S": "a"}), None, {"PK": {"S": "a"}, "big": {"S": "x" * 405_001}})
    assert item.attrs["big"].value == "x" * 405_001  # moto's cap is lifted


def _transaction_max_items() -> None:
    assert adapter.moto_responses.TRANSACTION_MAX_ITEMS == 100


def _dynamo_type_add() -> None:
    total = adapter.DynamoType({"N": "0.1"}) + adapter.DynamoType({"N": "0.2"})
    assert (total.type, total.value) == ("N", "0.3")
    assert (adapter.DynamoType({"N": "1E+2"}) - adapter.DynamoType({"N": "1"})).value == "99"


def _update_expression_parser() -> None:
    make = adapter.UpdateExpressionParser.make
    tree = make("SET n = n + :one REMOVE gone")
    assert make("SET n = n + :one REMOVE gone") is tree  # kept (decision 235)
    nodes, names = [tree], []
    while nodes:
        node = nodes.pop()
        names.append(type(node).__name__)
        nodes.extend(getattr(node, "children", None) or [])
    assert {"UpdateExpressionSetClause", "UpdateExpressionRemoveClause"} <= set(names)
    for _ in range(2):  # a refused text is not kept: moto's error each time
        with pytest.raises(Exception, match="Invalid UpdateExpression"):
            make("SET = :v")


def _dynamo_type() -> None:
    value = adapter.DynamoType({"N": "10"})
    assert (value.type, value.value) == ("N", "10")
    assert adapter.DynamoType({"N": "9"}) < value  # numbers compare as numbers (Decimal cast_value)
    assert adapter.DynamoType({"S": "ab"}).compare("BEGINS_WITH", [adapter.DynamoType({"S": "a"})])
    assert value.compare("BETWEEN", [adapter.DynamoType({"N": "1"}), adapter.DynamoType({"N": "10"})])
    assert hash(adapter.DynamoType({"S": "k"})) == hash(adapter.DynamoType({"S": "k"}))


def _item() -> None:
    item = adapter.Item(
        adapter.DynamoType({"S": "a"}), adapter.DynamoType({"S": "1"}), {"PK": {"S": "a"}, "SK": {"S": "1"}}
    )
    assert item.attrs["PK"].value == "a" and item.hash_key.value == "a" and item.range_key.value == "1"
    assert item.size() == len("PK") + 1 + len("SK") + 1
    assert item.to_json()["Attributes"] == {"PK": {"S": "a"}, "SK": {"S": "1"}}


def _is_within_segment() -> None:
    item = adapter.Item(adapter.DynamoType({"S": "a"}), None, {"PK": {"S": "a"}})
    assert sum(item.is_within_segment((s, 4)) for s in range(4)) == 1


def _dynamo_to_dict() -> None:
    item = adapter.Item(adapter.DynamoType({"S": "a"}), None, {"PK": {"S": "a"}, "m": {"M": {"n": {"N": "1"}}}})
    assert adapter.dynamo_to_dict(item.attrs) == {"PK": {"S": "a"}, "m": {"M": {"n": {"N": "1"}}}}


def _validate_number_type() -> None:
    table = _backend().get_table(TABLE)
    table._validate_number_type("9.9999999999999999999999999999999999999E+125")  # moto's float check is off


def _table_items() -> None:
    backend = _backend()
    table = backend.get_table(TABLE)
    hash_value, range_value = backend.get_keys_value(table, {"PK": {"S": "a"}, "SK": {"S": "1"}})
    assert isinstance(table.items, dict)
    assert table.items[hash_value][range_value] is table.get_item(hash_value, range_value)  # hash -> range -> Item
    assert table.get_item(hash_value, adapter.DynamoType({"S": "2"})) is None


def _streamed_table() -> Any:
    """A fresh engine's table PK (S) + SK (S) with its stream on (NEW_AND_OLD_IMAGES) and one item, made
    through the engine."""
    engine = DynamoEngine()
    create = {
        "TableName": TABLE,
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK")],
        "BillingMode": "PAY_PER_REQUEST",
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }
    put = {"TableName": TABLE, "Item": {"PK": {"S": "a"}, "SK": {"S": "1"}}}
    for operation, params in (("CreateTable", create), ("PutItem", put)):
        status, _, body = engine.handle(engine_headers(operation), json.dumps(params).encode())
        assert status == 200, body
    return engine.store.real(ACCOUNT, REGION).get_table(TABLE)


def _table_delete_item() -> None:
    table = _streamed_table()
    hash_value, range_value = adapter.key_values(table, {"PK": {"S": "a"}, "SK": {"S": "1"}})
    assert table.delete_item(hash_value, range_value) is not None  # the removed Item
    assert table.get_item(hash_value, range_value) is None
    assert table.stream_shard.items[-1].record["eventName"] == "REMOVE"


def _stream_shard() -> None:
    table = _streamed_table()
    shard = table.stream_shard
    before = len(shard.items)
    adapter.service_delete(table, {"PK": {"S": "a"}, "SK": {"S": "1"}}, {"Type": "Service"})
    assert len(shard.items) == before + 1  # StreamShard.add appended one record


def _set_stream_specification() -> None:
    """What UpdateTable's stream step reads and sets: the specification and label moto keeps, a new label and
    shard when a stream is enabled with the label set aside, and a shard let go."""
    table = _streamed_table()
    assert table.stream_specification == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    first, table.latest_stream_label = table.latest_stream_label, None
    table.set_stream_specification({"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
    assert isinstance(first, str) and table.latest_stream_label not in (None, first)
    assert isinstance(table.stream_shard, adapter.StreamShard)
    table.set_stream_specification({"StreamEnabled": False})
    assert table.stream_specification == {"StreamEnabled": False}
    table.stream_shard = None  # let go: a write then adds no record
    assert table.describe()["TableDescription"].get("StreamSpecification") is None


def _stream_record() -> None:
    table = _streamed_table()
    adapter.service_delete(table, {"PK": {"S": "a"}, "SK": {"S": "1"}}, {"Type": "Service", "PrincipalId": "x"})
    record = table.stream_shard.items[-1].record  # StreamRecord.record: the JSON GetRecords answers
    assert record["userIdentity"] == {"Type": "Service", "PrincipalId": "x"}
    assert record["dynamodb"]["Keys"] == {"PK": {"S": "a"}, "SK": {"S": "1"}}


def _last_evaluated_key() -> None:
    table = _backend().get_table(TABLE)
    (item,) = [i for part in table.items.values() for i in part.values()]
    assert table._get_last_evaluated_key(item, None) == {"PK": item.hash_key, "SK": item.range_key}
    assert set(table._get_last_evaluated_key(item, "gsi")) == {"PK", "SK", "G"}


def _get_index() -> None:
    table = _backend().get_table(TABLE)
    (item,) = [i for part in table.items.values() for i in part.values()]
    projected = table.get_index("gsi").project(item)
    assert set(projected.attrs) == {"PK", "SK", "G"}  # KEYS_ONLY: the table's and the index's keys


def _table_attributes() -> None:
    table = _backend().get_table(TABLE)
    assert (table.name, table.hash_key_attr, table.range_key_attr) == (TABLE, "PK", "SK")
    assert [a["AttributeName"] for a in table.attr] == ["PK", "SK", "G", "L"]
    assert [k["KeyType"] for k in table.schema] == ["HASH", "RANGE"]
    assert [i.name for i in table.global_indexes] == ["gsi"] and [i.name for i in table.indexes] == ["lsi"]
    assert table.global_indexes[0].schema == [{"AttributeName": "G", "KeyType": "HASH"}]
    assert table.global_indexes[0].projection == {"ProjectionType": "KEYS_ONLY"}
    assert table.tags == [{"Key": "k", "Value": "v"}]
    assert table.billing_mode == "PAY_PER_REQUEST" and table.table_arn.endswith(f":table/{TABLE}")
    assert table.describe()["TableDescription"]["TableName"] == TABLE


def _backend_basics() -> None:
    backend = _backend()
    assert list(backend.tables) == [TABLE] and backend.get_table(TABLE) is backend.tables[TABLE]
    assert (backend.region_name, backend.account_id) == (REGION, ACCOUNT)
    assert adapter.DynamoDBBackend(REGION, ACCOUNT).tables == {}  # a new backend is empty: nothing shared


def _update_item() -> None:
    backend = _backend()
    item = backend.update_item(
        TABLE,
        {"PK": {"S": "a"}, "SK": {"S": "1"}},
        update_expression="SET n = n + :one",
        expression_attribute_names=None,
        expression_attribute_values={":one": {"N": "1"}},
    )
    assert item.attrs["n"].value == "6"


def _takes(function: Callable[..., Any], first: list[str], also: frozenset[str] = frozenset()) -> None:
    """The function's parameters begin with ``first``, in order, and include ``also``: moto calls it that way."""
    parameters = list(inspect.signature(function).parameters)
    assert parameters[: len(first)] == first, parameters
    assert also <= set(parameters), parameters


def _query() -> None:
    """The engine overrides DynamoDBBackend.query (atomic.py): moto's handler must still call it this way."""
    _takes(
        adapter.DynamoDBBackend.query,
        [
            "self",
            "table_name",
            "hash_key_dict",
            "range_comparison",
            "range_value_dicts",
            "limit",
            "exclusive_start_key",
            "scan_index_forward",
            "projection_expressions",
        ],
        frozenset({"index_name", "hash_key_conditions", "range_key_conditions"}),
    )
    items, scanned, last = _backend().query(TABLE, {"S": "a"}, None, [], None, None, True, None)
    assert (len(items), scanned, last) == (1, 1, None)


def _scan() -> None:
    _takes(
        adapter.DynamoDBBackend.scan,
        ["self", "table_name", "filters", "limit", "exclusive_start_key"],
        frozenset({"index_name", "segments", "projection_expression"}),
    )
    items, scanned, last = _backend().scan(TABLE, {}, None, None, None, {}, {}, None, False, None, (None, None))
    assert (len(items), scanned, last) == (1, 1, None)


def _transact_write_items() -> None:
    parameters = inspect.signature(adapter.DynamoDBBackend.transact_write_items).parameters
    assert list(parameters) == ["self", "transact_items"]


def _handler_dispatch() -> None:
    assert inspect.ismethod(adapter.DynamoHandler.dispatch)  # a classmethod: cls()._dispatch(request)


def _handler_backend() -> None:
    assert isinstance(inspect.getattr_static(adapter.DynamoHandler, "dynamodb_backend"), property)


def _handler_method(method: str) -> Callable[[], None]:
    def exercise() -> None:
        assert callable(getattr(adapter.DynamoHandler, method))
        handler = adapter.DynamoHandler()
        for attribute in ("body", "current_account", "region"):
            setattr(handler, attribute, None)  # the fast path sets these before calling the method

    return exercise


def _streams_handler() -> None:
    assert isinstance(inspect.getattr_static(adapter.DynamoDBStreamsHandler, "backend"), property)
    assert inspect.ismethod(adapter.DynamoDBStreamsHandler.dispatch)


def _streams_backend() -> None:
    assert isinstance(inspect.getattr_static(adapter.DynamoDBStreamsBackend, "dynamodb"), property)
    assert adapter.DynamoDBStreamsBackend(REGION, ACCOUNT).shard_iterators == {}


def _moto_request() -> None:
    body = json.dumps({"TableName": "t"}).encode()
    request = adapter.MotoRequest.from_primitives("POST", "http://127.0.0.1/", {"x-amz-target": "X.Y"}, body)
    assert request.data == body


def _json_rest_error() -> None:
    error = adapter.JsonRESTError("ValidationException", "no")
    assert error.code == 400 and json.loads(error.get_body()) == {"__type": "ValidationException", "message": "no"}


def _service_exception() -> None:
    class Refused(adapter.ServiceException):  # type: ignore[misc]
        code = "ValidationException"

    error = Refused("no")
    assert (error.code, error.message) == ("ValidationException", "no")


def _camelcase() -> None:
    assert adapter.camelcase_to_underscores("TransactGetItems") == "transact_get_items"


def _account_of() -> None:
    from moto.iam.models import iam_backends  # loaded here: the adapter asks moto's IAM from now on

    iam = iam_backends["111122223333"]["aws"]
    iam.create_user(REGION, "labkit-contract")
    key = iam.create_access_key("labkit-contract")
    try:
        assert adapter.get_account_id_from(key.access_key_id) == "111122223333"
        assert adapter.get_account_id_from("AKIAIOSFODNN7EXAMPLE") == ACCOUNT
    finally:
        iam.delete_access_key(key.access_key_id, "labkit-contract")
        iam.delete_user("labkit-contract")


EXERCISES: dict[str, Callable[[], None]] = {
    "moto.core.model_instances.model_data": _model_data,
    "moto.core.common_models.BaseModel.__new__": _base_model_new,
    "moto.dynamodb.models.dynamo_type.LimitedSizeDict": _limited_size_dict,
    "moto.dynamodb.responses.TRANSACTION_MAX_ITEMS": _transaction_max_items,
    "moto.dynamodb.models.dynamo_type.DynamoType.__add__": _dynamo_type_add,
    "moto.dynamodb.models.dynamo_type.DynamoType": _dynamo_type,
    "moto.dynamodb.parsing.expressions.UpdateExpressionParser.make": _update_expression_parser,
    "moto.dynamodb.models.dynamo_type.Item": _item,
    "moto.dynamodb.models.dynamo_type.Item.is_within_segment": _is_within_segment,
    "moto.dynamodb.models.utilities.dynamo_to_dict": _dynamo_to_dict,
    "moto.dynamodb.models.table.Table._validate_number_type": _validate_number_type,
    "moto.dynamodb.models.table.Table.items": _table_items,
    "moto.dynamodb.models.table.Table._get_last_evaluated_key": _last_evaluated_key,
    "moto.dynamodb.models.table.Table.get_index": _get_index,
    "moto.dynamodb.models.table.Table attributes": _table_attributes,
    "moto.dynamodb.models.DynamoDBBackend": _backend_basics,
    "moto.dynamodb.models.DynamoDBBackend.update_item": _update_item,
    "moto.dynamodb.models.DynamoDBBackend.query": _query,
    "moto.dynamodb.models.DynamoDBBackend.scan": _scan,
    "moto.dynamodb.models.DynamoDBBackend.transact_write_items": _transact_write_items,
    "moto.dynamodb.responses.DynamoHandler.dispatch": _handler_dispatch,
    "moto.dynamodb.responses.DynamoHandler.dynamodb_backend": _handler_backend,
    **{f"moto.dynamodb.responses.DynamoHandler.{m}": _handler_method(m) for m in MOTO_METHODS.values()},
    "moto.dynamodbstreams.responses.DynamoDBStreamsHandler": _streams_handler,
    "moto.dynamodbstreams.models.DynamoDBStreamsBackend": _streams_backend,
    "moto.core.request.Request.from_primitives": _moto_request,
    "moto.core.exceptions.JsonRESTError": _json_rest_error,
    "moto.core.exceptions.ServiceException": _service_exception,
    "moto.core.utils.camelcase_to_underscores": _camelcase,
    "moto.iam.models.get_account_id_from": _account_of,
    "moto.dynamodb.models.table.Table.delete_item": _table_delete_item,
    "moto.dynamodb.models.table.StreamShard": _stream_shard,
    "moto.dynamodb.models.table.Table.set_stream_specification": _set_stream_specification,
    "moto.dynamodb.models.table.StreamRecord": _stream_record,
}


def test_contract__every_internal_the_adapter_lists_has_an_exercise_here() -> None:
    """An internal added to the adapter without a contract (or a contract for one it no longer lists) fails."""
    assert sorted(i.name for i in adapter.INTERNALS) == sorted(EXERCISES)


@pytest.mark.parametrize("name", [i.name for i in adapter.INTERNALS])
def test_internal(name: str) -> None:
    """The installed moto still has this internal, and it behaves as the engine relies on it."""
    (internal,) = [i for i in adapter.INTERNALS if i.name == name]
    assert internal.present(), f"moto {adapter.MOTO_VERSION} lacks {name} ({internal.use})"
    EXERCISES[name]()


def test_prepare__a_missing_internal__is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up check names what moto lacks (the first line a user sees after an unsupported upgrade)."""
    monkeypatch.delattr(adapter.Table, "_get_last_evaluated_key")
    assert adapter.missing() == ["moto.dynamodb.models.table.Table._get_last_evaluated_key"]


def test_account_of__moto_iam_not_imported__default_account_and_iam_stays_unloaded() -> None:
    """An endpoint that starts and answers does not import moto's IAM (cryptography; the slowest part of
    moto's import): before IAM is loaded no access key is in it, and the lookup answers moto's default account."""
    code = (
        "import sys\n"
        "from labkit.embedded import start_endpoint\n"
        "from labkit.endpoint.store import moto_adapter\n"
        "import boto3\n"
        "with start_endpoint() as ep:\n"
        "    c = boto3.client('dynamodb', endpoint_url=ep.url, region_name='us-east-1',\n"
        "                     aws_access_key_id='AKIAIOSFODNN7EXAMPLE', aws_secret_access_key='x')\n"
        "    assert c.list_tables()['TableNames'] == []\n"
        "print(moto_adapter.get_account_id_from('AKIAIOSFODNN7EXAMPLE'), 'moto.iam.models' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [ACCOUNT, "False"]
