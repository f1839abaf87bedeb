"""Item identity from the table's key schema: which calls conflict (labkit.races.identity, calls.conflicts).

Replaces the call_key-based conflict table: a call names the items it touches through the
table's KeySchema, so a PutItem of ``{id: x, visits: 1}`` and a GetItem of ``{id: x}`` are the
same item (the issue's defect: they looked like two items, and DPOR never reordered them).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from labkit.races.calls import Call, conflicts
from labkit.races.identity import EVERYTHING, Access, KeySchemas, accesses, canonical, statement_access
from labkit.shared.backend import Connection
from labkit.shared.intercept import CallRecord

#: T is keyed PK/SK, U is keyed id; anything else is not described (it does not exist).
SCHEMAS = {"T": ("PK", "SK"), "U": ("id", None)}


def schema_of(region: str | None, table: str) -> tuple[str, str | None] | None:
    return SCHEMAS.get(table)


def call(actor: str, operation: str, **params: Any) -> Call:
    return Call.of(CallRecord(operation, params, actor=actor), schema_of)


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def get(actor: str, pk: str, sk: str) -> Call:
    return call(actor, "GetItem", TableName="T", Key=key(pk, sk))


def put(actor: str, pk: str, sk: str) -> Call:
    return call(actor, "PutItem", TableName="T", Item={**key(pk, sk), "n": {"N": "1"}, "note": {"S": "x"}})


def query(actor: str, pk: str, **extra: Any) -> Call:
    return call(
        actor,
        "Query",
        TableName="T",
        KeyConditionExpression="#p = :p AND begins_with(SK, :s)",
        ExpressionAttributeNames={"#p": "PK"},
        ExpressionAttributeValues={":p": {"S": pk}, ":s": {"S": "a"}},
        **extra,
    )


def partiql(actor: str, statement: str, parameters: list[Any] | None = None) -> Call:
    extra = {"Parameters": parameters} if parameters is not None else {}
    return call(actor, "ExecuteStatement", Statement=statement, **extra)


CASES = [
    ("two reads of one item commute", get("A", "k", "1"), get("B", "k", "1"), False),
    ("a read and a write of one item", get("A", "k", "1"), put("B", "k", "1"), True),
    ("writes of two items commute", put("A", "k", "1"), put("B", "k", "2"), False),
    ("program order", get("A", "k", "1"), get("A", "z", "9"), True),
    (
        "the issue's case: PutItem of the whole item, GetItem of its key, table keyed id",
        call("A", "PutItem", TableName="U", Item={"id": {"S": "x"}, "visits": {"N": "1"}}),
        call("B", "GetItem", TableName="U", Key={"id": {"S": "x"}}),
        True,
    ),
    (
        "numbers are compared as numbers",
        call("A", "PutItem", TableName="U", Item={"id": {"N": "10"}, "v": {"S": "a"}}),
        call("B", "GetItem", TableName="U", Key={"id": {"N": "1E+1"}}),
        True,
    ),
    ("a Scan reads the whole table", call("A", "Scan", TableName="T"), put("B", "k", "2"), True),
    ("a Query reads its partition", query("A", "k"), put("B", "k", "zz"), True),
    ("a Query does not read another partition", query("A", "k"), put("B", "other", "1"), False),
    ("a Query on an index reads the whole table", query("A", "k", IndexName="gsi1"), put("B", "other", "1"), True),
    (
        "legacy KeyConditions name the partition",
        call(
            "A",
            "Query",
            TableName="T",
            KeyConditions={"PK": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "k"}]}},
        ),
        put("B", "other", "1"),
        False,
    ),
    (
        "a ConditionCheck in a transaction reads: it commutes with a read",
        call(
            "A",
            "TransactWriteItems",
            TransactItems=[
                {"Put": {"TableName": "T", "Item": {**key("k", "1"), "n": {"N": "1"}}}},
                {
                    "ConditionCheck": {
                        "TableName": "T",
                        "Key": key("m", "2"),
                        "ConditionExpression": "attribute_exists(n)",
                    }
                },
            ],
        ),
        get("B", "m", "2"),
        False,
    ),
    (
        "a ConditionCheck meets a write of its item",
        call(
            "A",
            "TransactWriteItems",
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": "T",
                        "Key": key("m", "2"),
                        "ConditionExpression": "attribute_exists(n)",
                    }
                },
            ],
        ),
        put("B", "m", "2"),
        True,
    ),
    (
        "TransactGetItems reads",
        call("A", "TransactGetItems", TransactItems=[{"Get": {"TableName": "T", "Key": key("m", "2")}}]),
        get("B", "m", "2"),
        False,
    ),
    (
        "each item of a batch, not the whole table",
        call(
            "A",
            "BatchWriteItem",
            RequestItems={"T": [{"PutRequest": {"Item": key("k", "1")}}, {"DeleteRequest": {"Key": key("k", "2")}}]},
        ),
        get("B", "k", "3"),
        False,
    ),
    (
        "a batch delete meets a read of its item",
        call("A", "BatchWriteItem", RequestItems={"T": [{"DeleteRequest": {"Key": key("k", "2")}}]}),
        get("B", "k", "2"),
        True,
    ),
    (
        "BatchGetItem reads",
        call("A", "BatchGetItem", RequestItems={"T": {"Keys": [key("k", "1"), key("k", "2")]}}),
        put("B", "k", "3"),
        False,
    ),
    (
        "PartiQL with the full key: that item",
        partiql("A", "SELECT * FROM \"T\" WHERE PK = 'a' AND SK = 'b'"),
        put("B", "a", "b"),
        True,
    ),
    (
        "PartiQL with the full key: not another",
        partiql("A", "UPDATE \"T\" SET n = 1 WHERE PK = 'a' AND SK = 'b'"),
        put("B", "a", "c"),
        False,
    ),
    (
        "PartiQL parameters",
        partiql("A", 'DELETE FROM "T" WHERE "PK" = ? AND "SK" = ?', [{"S": "a"}, {"S": "c"}]),
        put("B", "a", "c"),
        True,
    ),
    (
        "PartiQL without the full key: the whole table",
        partiql("A", "UPDATE T SET n = 1 WHERE PK = 'a'"),
        get("B", "z", "z"),
        True,
    ),
    (
        "PartiQL with OR: the whole table",
        partiql("A", "SELECT * FROM T WHERE PK = 'a' AND SK = 'b' OR PK = 'z'"),
        put("B", "z", "q"),
        True,
    ),
    (
        "PartiQL INSERT names its item",
        partiql("A", "INSERT INTO \"T\" VALUE {'PK': 'a', 'SK': 'b', 'n': 1}"),
        get("B", "a", "c"),
        False,
    ),
    ("two tables commute", call("A", "PutItem", TableName="U", Item={"id": {"S": "k"}}), get("B", "k", "1"), False),
    (
        "a table that cannot be described: the whole table",
        call("A", "PutItem", TableName="Gone", Item={"x": {"S": "1"}}),
        call("B", "GetItem", TableName="Gone", Key={"x": {"S": "2"}}),
        True,
    ),
    ("the control plane meets everything", call("A", "DescribeTable", TableName="T"), get("B", "k", "1"), True),
    (
        "one ClientRequestToken: DynamoDB's idempotency check",
        call(
            "A",
            "TransactWriteItems",
            ClientRequestToken="t1",
            TransactItems=[{"Put": {"TableName": "T", "Item": key("a", "1")}}],
        ),
        call(
            "B",
            "TransactWriteItems",
            ClientRequestToken="t1",
            TransactItems=[{"Put": {"TableName": "T", "Item": key("b", "1")}}],
        ),
        True,
    ),
]


@pytest.mark.parametrize(("a", "b", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_conflicts__items_from_the_key_schema__conflict_when_one_writes(a: Call, b: Call, expected: bool) -> None:
    """Two calls conflict when they touch a common item and one writes it; both ways round."""
    assert conflicts(a, b) is expected
    assert conflicts(b, a) is expected


def test_accesses__put_item__the_key_only_whatever_else_the_item_holds() -> None:
    found = accesses(
        "PutItem", {"TableName": "U", "Item": {"id": {"S": "x"}, "a": {"S": "1"}}}, lambda t: SCHEMAS.get(t)
    )
    assert found == frozenset({Access("U", ("S", "x"), None, True)})


def test_accesses__unreadable_statement__everything() -> None:
    assert statement_access("FROB THE TABLE", None, lambda t: SCHEMAS.get(t)).table == EVERYTHING


#: Spellings DynamoDB folds to one number ("Supported data types", Number: "Leading and trailing zeroes
#: are trimmed"; -0 is stored as 0), each beside the spelling the engine stores.
ONE_NUMBER = [("1", "1.0"), ("1", "1E0"), ("0.1", "0.10"), ("7", "007"), ("0", "-0"), ("0", "0E5"), ("150", "1.5E2")]


@pytest.mark.parametrize(("stored", "spelled"), ONE_NUMBER)
def test_canonical__number_spellings__one_value_as_the_engine_folds_them(stored: str, spelled: str) -> None:
    """Every spelling of one number is one key value to the race lab, as it is one item to the engine."""
    assert canonical({"N": spelled}) == canonical({"N": stored}) == ("N", stored)


def test_canonical__binary_given_as_text__its_utf8_bytes_as_botocore_sends_it() -> None:
    """botocore sends a text B value as its UTF-8 bytes (serialize.py ``_get_base64``), never base64-decoded."""
    assert canonical({"B": "key0"}) == canonical({"B": b"key0"}) == canonical({"B": bytearray(b"key0")})
    assert canonical({"B": "AQ=="}) != canonical({"B": b"\x01"})  # the text's bytes, not what it decodes to


@pytest.mark.parametrize(
    ("written", "read"),
    [
        *(({"N": a}, {"N": b}) for a, b in ONE_NUMBER),
        ({"B": "key0"}, {"B": b"key0"}),
        ({"B": b"\x00\xff"}, {"B": b"\x00\xff"}),
    ],
    ids=[*(f"N {a}={b}" for a, b in ONE_NUMBER), "B text=bytes", "B bytes"],
)
def test_canonical__same_item_to_the_engine__same_access_to_the_race_lab(
    tconn: Connection, written: dict[str, Any], read: dict[str, Any]
) -> None:
    """The oracle is the engine: a key written one way and read the other finds the item, and identity agrees."""
    kind = next(iter(written))
    name = f"labkit-ident-{kind}-{uuid.uuid4().hex[:6]}"
    client = tconn.client
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": kind}],  # type: ignore[typeddict-item]
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        client.put_item(TableName=name, Item={"k": written, "v": {"S": "x"}})
        assert "Item" in client.get_item(TableName=name, Key={"k": read}, ConsistentRead=True)
        assert len(client.scan(TableName=name)["Items"]) == 1
        schema = {name: ("k", None)}
        put = accesses("PutItem", {"TableName": name, "Item": {"k": written}}, schema.get)
        get = accesses("GetItem", {"TableName": name, "Key": {"k": read}}, schema.get)
        assert {(a.table, a.hash) for a in put} == {(a.table, a.hash) for a in get}
    finally:
        client.delete_table(TableName=name)


def test_key_schemas__asked_once_per_table__a_missing_table_is_not_kept(tconn: Connection) -> None:
    """DescribeTable once per table; a table that does not exist is the whole table, asked again later."""
    schemas = KeySchemas(tconn)
    assert schemas(tconn.region, tconn.table_name) == ("PK", "SK")
    assert schemas(tconn.region, tconn.table_name) == ("PK", "SK")
    assert schemas.asked == 1
    assert schemas(tconn.region, "labkit-no-such-table") is None
    assert schemas(tconn.region, "labkit-no-such-table") is None
    assert schemas.asked == 3


def test_explore__a_table_that_does_not_exist__the_actors_own_call_gets_resource_not_found(tconn: Connection) -> None:
    """Its key schema cannot be read: the whole table, and the actor meets DynamoDB's own error, no crash."""
    from labkit.races import Interleaving, explore

    seen: list[dict[str, str]] = []

    def ghost(client: Any) -> None:
        client.get_item(TableName="labkit-no-such-table", Key={"id": {"S": "x"}})

    def real(client: Any) -> None:
        client.get_item(TableName=tconn.table_name, Key=key("k", "1"))

    def record(res: Interleaving) -> None:
        seen.append(res.error_codes())

    result = explore({"A": ghost, "B": real}, conn=tconn, setup=None, invariant=record, strategy="dpor")
    assert result.passed, result.summary()
    assert seen and all(codes == {"A": "ResourceNotFoundException"} for codes in seen)
