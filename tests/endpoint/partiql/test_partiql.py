"""PartiQL: ExecuteStatement, BatchExecuteStatement and ExecuteTransaction.

DynamoDB Developer Guide, "PartiQL - a SQL-compatible query language for Amazon DynamoDB"
(SELECT, INSERT, UPDATE, DELETE statements; batch operations; transactions) and the API
reference pages of the three operations; messages as DynamoDB answers them. Over HTTP with boto3
(client-side validation off) to a real endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from tests.endpoint.clients import refused
from tests.endpoint.fuzz_settings import FUZZ
from tests.endpoint.tables import make_table, scan_all


@pytest.fixture
def table(client: Any) -> Iterator[str]:
    """PK (S) + SK (S), with three items under PK 'p'."""
    name = make_table(client)
    for sk, age in (("prefix-alpha", "30"), ("prefix-beta", "15"), ("other-gamma", "40")):
        client.put_item(
            TableName=name,
            Item={
                "PK": {"S": "p"},
                "SK": {"S": sk},
                "age": {"N": age},
                "mymap": {"M": {"nested": {"S": f"deep-{sk}"}}},
                "extra": {"S": "x"},
            },
        )
    yield name
    client.delete_table(TableName=name)


def _sks(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["SK"]["S"] for item in items)


# --- SELECT ----------------------------------------------------------------------------------------


def test_select__where_comparisons_and_begins_with(client: Any, table: str) -> None:
    """SELECT ... WHERE with comparisons (`age > 20`) and begins_with on the sort key."""
    older = client.execute_statement(Statement=f"SELECT * FROM \"{table}\" WHERE PK = 'p' AND age > 20")
    assert _sks(older["Items"]) == ["other-gamma", "prefix-alpha"]
    prefixed = client.execute_statement(
        Statement=f"SELECT * FROM \"{table}\" WHERE PK = 'p' AND begins_with(\"SK\", 'prefix-')"
    )
    assert _sks(prefixed["Items"]) == ["prefix-alpha", "prefix-beta"]
    scanned = client.execute_statement(Statement=f'SELECT * FROM "{table}" WHERE age BETWEEN 20 AND 35')
    assert _sks(scanned["Items"]) == ["prefix-alpha"]


def test_select__parameters_and_nested_map_paths(client: Any, table: str) -> None:
    """`?` parameters bind in order; `SELECT mymap.nested` answers the value under its last name ("nested")."""
    answer = client.execute_statement(
        Statement=f'SELECT mymap.nested, age FROM "{table}" WHERE PK = ? AND mymap.nested = ?',
        Parameters=[{"S": "p"}, {"S": "deep-prefix-beta"}],
    )
    assert answer["Items"] == [{"nested": {"S": "deep-prefix-beta"}, "age": {"N": "15"}}]


def test_select__no_match__empty_items_and_missing_table__resource_not_found(client: Any, table: str) -> None:
    """A SELECT that matches nothing answers `Items: []`; on a table that does not exist, ResourceNotFoundException."""
    assert client.execute_statement(Statement=f"SELECT * FROM \"{table}\" WHERE PK = 'none'")["Items"] == []
    code, message = refused(client.execute_statement, Statement="SELECT * FROM \"labkit-nope\" WHERE PK = 'x'")
    assert (code, message) == ("ResourceNotFoundException", "Requested resource not found")


@pytest.mark.parametrize("statement", ['SELECTT * FROMM "t"', 'SELECT * FROM "labkit-t', "SELECT * FROM"])
def test_statement__malformed__validation_exception(client: Any, statement: str) -> None:
    """ "Statement wasn't well formed, can't be processed: ..." for a statement DynamoDB cannot read."""
    code, message = refused(client.execute_statement, Statement=statement)
    assert code == "ValidationException"
    assert message.startswith("Statement wasn't well formed, can't be processed")


def test_select__ordering_comparison_on_a_boolean_refused(client: Any, table: str) -> None:
    """ "Incorrect operand type for operator or function; operator or function: <, operand type: BOOL"."""
    assert refused(
        client.execute_statement,
        Statement=f"SELECT PK FROM \"{table}\" WHERE PK = 'p' AND age < ?",
        Parameters=[{"BOOL": True}],
    ) == (
        "ValidationException",
        "Incorrect operand type for operator or function; operator or function: <, operand type: BOOL",
    )


# --- INSERT, UPDATE, DELETE ---------------------------------------------------------------------


def test_insert__new_item_written_existing_item_duplicate_item_exception(client: Any, table: str) -> None:
    """INSERT is not an upsert: an existing key is DuplicateItemException, "Duplicate primary key exists in table"."""
    client.execute_statement(
        Statement=f"INSERT INTO \"{table}\" VALUE {{'PK': ?, 'SK': 'new', 'n': 1.50, 'tags': <<'a', 'b'>>}}",
        Parameters=[{"S": "q"}],
    )
    item = client.get_item(TableName=table, Key={"PK": {"S": "q"}, "SK": {"S": "new"}})["Item"]
    assert item["n"] == {"N": "1.5"} and sorted(item["tags"]["SS"]) == ["a", "b"]
    code, message = refused(
        client.execute_statement, Statement=f"INSERT INTO \"{table}\" VALUE {{'PK': 'q', 'SK': 'new', 'n': 2}}"
    )
    assert (code, message) == ("DuplicateItemException", "Duplicate primary key exists in table")
    assert client.get_item(TableName=table, Key={"PK": {"S": "q"}, "SK": {"S": "new"}})["Item"]["n"] == {"N": "1.5"}


def test_update_and_delete__one_item_by_its_key(client: Any, table: str) -> None:
    """UPDATE ... SET / REMOVE ... WHERE <full key>; `SET age = age + 1`; DELETE ... RETURNING ALL OLD *."""
    key = {"PK": {"S": "p"}, "SK": {"S": "prefix-alpha"}}
    client.execute_statement(
        Statement=f"UPDATE \"{table}\" SET age = age + 1 SET note = 'hi' REMOVE extra "
        "WHERE PK = 'p' AND SK = 'prefix-alpha'"
    )
    item = client.get_item(TableName=table, Key=key)["Item"]
    assert item["age"] == {"N": "31"} and item["note"] == {"S": "hi"} and "extra" not in item
    gone = client.execute_statement(
        Statement=f"DELETE FROM \"{table}\" WHERE PK = 'p' AND SK = 'prefix-alpha' RETURNING ALL OLD *"
    )
    assert gone["Items"][0]["note"] == {"S": "hi"}
    assert "Item" not in client.get_item(TableName=table, Key=key)


def test_update__without_the_full_key_refused(client: Any, table: str) -> None:
    """UPDATE names exactly one item: "Where clause does not contain a mandatory equality on all key attributes"."""
    assert refused(client.execute_statement, Statement=f"UPDATE \"{table}\" SET a = 1 WHERE PK = 'p'") == (
        "ValidationException",
        "Where clause does not contain a mandatory equality on all key attributes",
    )


@pytest.fixture
def versioned(client: Any) -> Iterator[str]:
    """A table keyed `pk` (S) holding `{"pk": "ORDER#1", "rev": 1, "status": "new"}`: SQL-style optimistic locking."""
    name = make_table(client, keys=[("pk", "S")])
    client.put_item(TableName=name, Item={"pk": {"S": "ORDER#1"}, "rev": {"N": "1"}, "status": {"S": "new"}})
    yield name
    client.delete_table(TableName=name)


def test_update__one_condition_beside_the_key__applied_when_it_holds_refused_when_not(
    client: Any, versioned: str
) -> None:
    """`UPDATE ... WHERE pk = ? AND rev = ?` (one condition beside the key) runs: applied at the expected rev,
    ConditionalCheckFailedException at a stale one (Developer Guide, "PartiQL update statements")."""
    statement = f'UPDATE "{versioned}" SET status = ? SET rev = ? WHERE pk = ? AND rev = ?'
    client.execute_statement(Statement=statement, Parameters=[{"S": "paid"}, {"N": "2"}, {"S": "ORDER#1"}, {"N": "1"}])
    item = client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#1"}})["Item"]
    assert (item["status"], item["rev"]) == ({"S": "paid"}, {"N": "2"})
    assert refused(
        client.execute_statement,
        Statement=statement,
        Parameters=[{"S": "void"}, {"N": "2"}, {"S": "ORDER#1"}, {"N": "1"}],
    ) == ("ConditionalCheckFailedException", "The conditional request failed")
    assert client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#1"}})["Item"]["status"] == {"S": "paid"}


@pytest.mark.parametrize("condition", ["", " AND rev = 1", " AND rev = 1 AND status = 'new'"])
def test_update__key_names_no_item__conditional_check_failed_and_nothing_created(
    client: Any, versioned: str, condition: str
) -> None:
    """ "If the WHERE clause of the UPDATE statement does not evaluate to true for any item in the DynamoDB table,
    ConditionalCheckFailedException is returned" (Developer Guide, "PartiQL update statements"): no item is created."""
    statement = f"UPDATE \"{versioned}\" SET status = 'paid' WHERE pk = 'ORDER#2'{condition}"
    assert refused(client.execute_statement, Statement=statement) == (
        "ConditionalCheckFailedException",
        "The conditional request failed",
    )
    assert "Item" not in client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#2"}})


def test_delete__key_names_no_item__success_and_condition_false__conditional_check_failed(
    client: Any, versioned: str
) -> None:
    """DELETE of a key with no item is a SUCCESS with 0 items deleted; on an item whose other condition is false,
    ConditionalCheckFailedException (Developer Guide, "PartiQL delete statements")."""
    assert client.execute_statement(Statement=f"DELETE FROM \"{versioned}\" WHERE pk = 'ORDER#2' AND rev = 1")
    assert refused(
        client.execute_statement, Statement=f"DELETE FROM \"{versioned}\" WHERE pk = 'ORDER#1' AND rev = 7"
    ) == ("ConditionalCheckFailedException", "The conditional request failed")
    client.execute_statement(Statement=f"DELETE FROM \"{versioned}\" WHERE pk = 'ORDER#1' AND rev = 1")
    assert "Item" not in client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#1"}})


def test_delete__returning_other_than_all_old_refused(client: Any, table: str) -> None:
    """ "Invalid returning clause: RETURNING ALL NEW *. Only RETURNING ALL OLD * is allowed in DELETE statements."."""
    assert refused(
        client.execute_statement, Statement=f"DELETE FROM \"{table}\" WHERE PK = 'p' AND SK = 'x' RETURNING ALL NEW *"
    ) == (
        "ValidationException",
        "Invalid returning clause: RETURNING ALL NEW *. Only RETURNING ALL OLD * is allowed in DELETE statements.",
    )


# --- BatchExecuteStatement -------------------------------------------------------------------------


def test_batch__each_statement_answered_in_place_errors_included(client: Any, table: str) -> None:
    """One Responses entry per statement, in order; a failed one carries Error {Code, Message} (ValidationError,
    ResourceNotFound, DuplicateItem) and the others still run."""
    answer = client.batch_execute_statement(
        Statements=[
            {"Statement": f"SELECT * FROM \"{table}\" WHERE PK = 'p' AND SK = 'prefix-beta'"},
            {"Statement": f'SLECT * FROM "{table}"'},
            {"Statement": "SELECT * FROM \"labkit-nope\" WHERE PK = 'x' AND SK = 'y'"},
            {"Statement": f"INSERT INTO \"{table}\" VALUE {{'PK': 'p', 'SK': 'prefix-beta'}}"},
            {"Statement": f"INSERT INTO \"{table}\" VALUE {{'PK': 'b', 'SK': 'new'}}"},
            {"Statement": f'SELECT * FROM "{table}" WHERE age = 15'},
        ]
    )["Responses"]
    assert answer[0]["Item"]["age"] == {"N": "15"}
    assert answer[1]["Error"] == {
        "Code": "ValidationError",
        "Message": "Statement wasn't well formed, can't be processed: Expected data manipulation",
    }
    assert answer[2]["Error"]["Code"] == "ResourceNotFound"
    assert answer[3]["Error"] == {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}
    assert "Error" not in answer[4]
    assert answer[5]["Error"]["Code"] == "ValidationError"
    assert "must specify the primary key in the where clause" in answer[5]["Error"]["Message"]
    assert client.get_item(TableName=table, Key={"PK": {"S": "b"}, "SK": {"S": "new"}})["Item"]


def test_batch__update_of_no_item__conditional_check_failed_in_its_place(client: Any, versioned: str) -> None:
    """In a batch, an UPDATE whose key names no item is answered in its place with Error Code ConditionalCheckFailed
    (API reference: BatchStatementError) and creates nothing; the statement beside it still runs."""
    answer = client.batch_execute_statement(
        Statements=[
            {"Statement": f"UPDATE \"{versioned}\" SET status = 'paid' WHERE pk = 'ORDER#2' AND rev = 1"},
            {"Statement": f"UPDATE \"{versioned}\" SET status = 'paid' WHERE pk = 'ORDER#1' AND rev = 1"},
        ]
    )["Responses"]
    assert answer[0]["Error"] == {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
    assert "Error" not in answer[1]
    assert "Item" not in client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#2"}})
    assert client.get_item(TableName=versioned, Key={"pk": {"S": "ORDER#1"}})["Item"]["status"] == {"S": "paid"}


# --- ExecuteTransaction ------------------------------------------------------------------------------


def test_transaction__insert_and_update_apply_together(client: Any, table: str) -> None:
    """ExecuteTransaction applies all its statements or none."""
    client.execute_transaction(
        TransactStatements=[
            {"Statement": f"INSERT INTO \"{table}\" VALUE {{'PK': 't', 'SK': '1'}}"},
            {"Statement": f"UPDATE \"{table}\" SET age = 99 WHERE PK = 'p' AND SK = 'other-gamma'"},
        ]
    )
    assert client.get_item(TableName=table, Key={"PK": {"S": "t"}, "SK": {"S": "1"}})["Item"]
    assert client.get_item(TableName=table, Key={"PK": {"S": "p"}, "SK": {"S": "other-gamma"}})["Item"]["age"] == {
        "N": "99"
    }


def test_transaction__duplicate_key_insert__cancelled_and_rolled_back(client: Any, table: str) -> None:
    """A duplicate-key INSERT cancels the transaction: TransactionCanceledException, reason DuplicateItem in its
    position, and the other statements are not applied."""
    statements = [
        f"INSERT INTO \"{table}\" VALUE {{'PK': 'new', 'SK': '1'}}",
        f"INSERT INTO \"{table}\" VALUE {{'PK': 'p', 'SK': 'prefix-alpha'}}",
    ]
    cancelled_by_the_second(client, table, statements, "DuplicateItem", "Duplicate primary key exists in table")


def test_transaction__update_of_no_item__cancelled_conditional_check_failed(client: Any, versioned: str) -> None:
    """An UPDATE whose key names no item cancels the transaction: TransactionCanceledException with reason
    ConditionalCheckFailed in its position (Developer Guide, "Performing transactions with PartiQL"); none applied."""
    statements = [
        f"UPDATE \"{versioned}\" SET status = 'paid' WHERE pk = 'ORDER#1' AND rev = 1",
        f"UPDATE \"{versioned}\" SET status = 'paid' WHERE pk = 'ORDER#2'",
    ]
    cancelled_by_the_second(client, versioned, statements, "ConditionalCheckFailed", "The conditional request failed")


def cancelled_by_the_second(client: Any, table: str, statements: list[str], code: str, message: str) -> None:
    """ExecuteTransaction of ``statements`` is cancelled by the second: TransactionCanceledException whose
    reasons are [None, ``code``], ``message`` in the second's; the table as it was before."""
    before = scan_all(client, table)
    with pytest.raises(ClientError) as caught:
        client.execute_transaction(TransactStatements=[{"Statement": statement} for statement in statements])
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert error["Error"]["Message"] == (
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [None, {code}]"
    )
    assert error["CancellationReasons"][1] == {"Code": code, "Message": message}
    assert scan_all(client, table) == before


def test_transaction__returning_clause_refused(client: Any, table: str) -> None:
    """ "Validation failed in TransactStatements[0]: RETURNING clause is not supported in ExecuteTransaction."."""
    assert refused(
        client.execute_transaction,
        TransactStatements=[
            {"Statement": f"UPDATE \"{table}\" SET a = 1 WHERE PK = 'p' AND SK = 'prefix-beta' RETURNING ALL NEW *"}
        ],
    ) == (
        "ValidationException",
        "Validation failed in TransactStatements[0]: RETURNING clause is not supported in ExecuteTransaction.",
    )


#: Developer Guide, "Using the EXISTS function with PartiQL for DynamoDB".
EXISTS_RULE = (
    "You can use EXISTS to perform the same function as ConditionCheck does in the TransactWriteItems API. "
    "The EXISTS function can only be used in transactions."
)


def test_transaction__exists_holds__the_writes_apply(client: Any, table: str) -> None:
    """EXISTS(SELECT ... full key AND a condition) that holds lets the transaction's writes apply (EXISTS_RULE)."""
    client.execute_transaction(
        TransactStatements=[
            {"Statement": f"EXISTS(SELECT * FROM \"{table}\" WHERE PK = 'p' AND SK = 'prefix-alpha' AND age = 30)"},
            {"Statement": f"UPDATE \"{table}\" SET age = 31 WHERE PK = 'p' AND SK = 'other-gamma'"},
        ]
    )
    item = client.get_item(TableName=table, Key={"PK": {"S": "p"}, "SK": {"S": "other-gamma"}})["Item"]
    assert item["age"] == {"N": "31"}


@pytest.mark.parametrize(
    "where",
    [
        "PK = 'p' AND SK = 'prefix-alpha' AND age = 99",
        "PK = 'p' AND SK = 'no-such-item' AND age = 30",
        "PK = ? AND SK = ? AND age = ?",
    ],
    ids=["condition fails", "item missing", "parameters, item missing"],
)
def test_transaction__exists_fails__cancelled_as_a_condition_check_nothing_written(
    client: Any, table: str, where: str
) -> None:
    """A failing EXISTS cancels the transaction as a failed ConditionCheck would: reason ConditionalCheckFailed in
    its position, and the other statements are not applied (EXISTS_RULE)."""
    before = scan_all(client, table)
    params = [{"S": "p"}, {"S": "gone"}, {"N": "30"}] if "?" in where else None
    with pytest.raises(ClientError) as caught:
        client.execute_transaction(
            TransactStatements=[
                {"Statement": f"UPDATE \"{table}\" SET age = 1 WHERE PK = 'p' AND SK = 'prefix-beta'"},
                {
                    "Statement": f'EXISTS(SELECT * FROM "{table}" WHERE {where})',
                    **({"Parameters": params} if params else {}),
                },
            ]
        )
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in error["CancellationReasons"]] == ["None", "ConditionalCheckFailed"]
    assert scan_all(client, table) == before


def test_execute_statement__exists_outside_a_transaction__refused(client: Any, table: str) -> None:
    """EXISTS "can only be used in transactions" (EXISTS_RULE): ExecuteStatement refuses it, a 400."""
    code, message = refused(
        client.execute_statement, Statement=f"EXISTS(SELECT * FROM \"{table}\" WHERE PK = 'p' AND SK = 'prefix-alpha')"
    )
    assert code == "ValidationException" and "only be used in transactions" in message


def test_transaction__exists_without_the_full_key__refused(client: Any, table: str) -> None:
    """EXISTS's SELECT "must specify a full primary key" (EXISTS_RULE's page): without the sort key, a 400."""
    code, message = refused(
        client.execute_transaction,
        TransactStatements=[{"Statement": f"EXISTS(SELECT * FROM \"{table}\" WHERE PK = 'p' AND age = 30)"}],
    )
    assert code == "ValidationException" and "key" in message


# --- no statement is an engine failure -----------------------------------------------------------

_WORDS = [
    *("SELECT", "INSERT", "INTO", "UPDATE", "DELETE", "FROM", "WHERE", "SET", "REMOVE", "VALUE", "RETURNING", "EXISTS"),
    *("ALL", "OLD", "NEW", "*", "$T", '"$T"."i"', "PK", "SK", "a", "a.b", "a[0]", "=", "<>", "<", "AND", "OR"),
    *("NOT", "BETWEEN", "IN", "IS", "MISSING", "NULL", "(", ")", "[", "]", "{", "}", "<<", ">>", ",", ":"),
    *("'x'", "1", "-2.5", "?", "begins_with", "contains", "size", "true", "+", "-", "list_append", "'PK'", "'SK'"),
]


@FUZZ
@given(
    words=st.lists(st.sampled_from(_WORDS), max_size=12),
    operation=st.sampled_from(["execute_statement", "batch_execute_statement", "execute_transaction"]),
    parameters=st.lists(st.sampled_from([{"S": "a"}, {"N": "1"}, {"B": b"\x00"}, {"NULL": True}]), max_size=2),
)
def test_fuzz__any_statement__never_500(
    client: Any, table: str, words: list[str], operation: str, parameters: list[Any]
) -> None:
    """Statements built from PartiQL's words, well formed or not: a 200 or a 4xx, never an engine failure."""
    statement: dict[str, Any] = {"Statement": " ".join(words).replace("$T", f'"{table}"')}
    if parameters:
        statement["Parameters"] = parameters
    request = {
        "execute_statement": statement,
        "batch_execute_statement": {"Statements": [statement]},
        "execute_transaction": {"TransactStatements": [statement]},
    }[operation]
    try:
        getattr(client, operation)(**request)
    except ClientError as exc:
        assert exc.response["ResponseMetadata"]["HTTPStatusCode"] < 500, (statement, exc.response["Error"])
