"""DynamoDB's weak answers on request (``X-Labkit-Weak-Answer``), through the real HTTP endpoint.

Each rule the engine follows is DynamoDB's, quoted from its documentation:

* "When issuing eventually consistent reads to a DynamoDB table or an index, the responses may
  not reflect the results of a recently completed write operation." "All reads from GSIs and
  streams are eventually consistent." "Strongly consistent reads are only supported on tables
  and local secondary indexes." (Developer Guide, *DynamoDB read consistency*)
* "When a transaction completes in DynamoDB, its changes start propagating to global secondary
  indexes (GSIs), streams, and backups. This propagation occurs gradually" (Developer Guide,
  *Amazon DynamoDB Transactions: How it works*): each base item's index entry lags on its own.
* "By default, BatchGetItem performs eventually consistent reads on every table in the request";
  "BatchGetItem may retrieve items in parallel" (API Reference, *BatchGetItem*): each key on its own.
* The isolation table (Developer Guide, *Isolation levels for DynamoDB transactions*): GetItem and
  TransactGetItems are *serializable* with a TransactWriteItems; BatchGetItem, Query and Scan are
  *read-committed* ("read operations always return committed values for an item"), so they may
  see some of one transaction's writes and not others (``torn-read``).
* BatchWriteItem: "If any requested operations fail because the table's provisioned throughput is
  exceeded or an internal processing failure occurs, the failed operations are returned in the
  UnprocessedItems response parameter." BatchGetItem: "If a partial result is returned, the
  operation returns a value for UnprocessedKeys." (API Reference)
* Query/Scan ``Limit``: "The maximum number of items to evaluate (not necessarily the number of
  matching items). If DynamoDB processes the number of items up to the limit while processing
  the results, it stops the operation and returns the matching values up to that point, and a
  key in LastEvaluatedKey"; "A filter expression is applied after a Query finishes, but before
  the results are returned." (API Reference; Developer Guide, *Filter expressions for Query*)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import DYNAMODB_LOCAL, start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint
from labkit.endpoint import engine as engine_module
from labkit.endpoint.checks.request import validate
from labkit.shared.catalogue import WEAK_ANSWER_HEADER, WEAK_ANSWER_WHERE, WeakAnswer, key_name

from .clients import engine_headers, raw_client, refused
from .tables import key, make_table

ECHO = WEAK_ANSWER_HEADER.lower()


def weak(client: Any, kind: str | None) -> Any:
    """``client`` sending ``X-Labkit-Weak-Answer: kind`` on its next requests (None: stop)."""
    client.meta.events.unregister("before-sign.dynamodb.*", unique_id="labkit-weak")
    if kind is not None:

        def add(request: Any, **_: Any) -> None:
            request.headers[WEAK_ANSWER_HEADER] = kind

        client.meta.events.register("before-sign.dynamodb.*", add, unique_id="labkit-weak")
    return client


def _query(table: str, attribute: str, value: str, index: str | None = None) -> dict[str, Any]:
    """A Query's parameters: the items (``index``'s entries) whose key ``attribute`` is the string ``value``."""
    params: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": f"{attribute} = :v",
        "ExpressionAttributeValues": {":v": {"S": value}},
    }
    return params if index is None else {**params, "IndexName": index}


def echo(answer: dict[str, Any]) -> str | None:
    found = answer["ResponseMetadata"]["HTTPHeaders"].get(ECHO)
    return None if found is None else str(found)


@pytest.fixture(scope="module")
def client(endpoint: EmbeddedEndpoint) -> Iterator[Any]:
    """A raw client whose weak-answer header each test sets (and the fixture clears)."""
    yield raw_client(endpoint.url)


@pytest.fixture
def asking(client: Any) -> Iterator[Any]:
    """A fresh client (its own event handlers) that each test sets a weak answer on."""
    mine = raw_client(client.meta.endpoint_url)
    yield mine
    weak(mine, None)


def _put(client: Any, table: str, pk: str, v: int, **extra: Any) -> None:
    client.put_item(TableName=table, Item={**key(pk), "v": {"N": str(v)}, **extra})


# stale-read: GetItem ------------------------------------------------------------------------------


def test_stale_read__get_item_after_update__answers_the_image_before_it_and_says_so(client: Any, asking: Any) -> None:
    """An eventually consistent GetItem "may not reflect the results of a recently completed write"."""
    table = make_table(client)
    _put(client, table, "order", 1)
    client.update_item(
        TableName=table, Key=key("order"), UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "2"}}
    )
    answer = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("order"))
    assert answer["Item"]["v"] == {"N": "1"}
    assert echo(answer) == "stale-read"
    fresh = weak(asking, None).get_item(TableName=table, Key=key("order"))
    assert fresh["Item"]["v"] == {"N": "2"} and echo(fresh) is None  # never by chance: only when asked


def test_stale_read__get_item_right_after_first_put__finds_no_item(client: Any, asking: Any) -> None:
    """No read-your-writes: the reader's own PutItem may be missing from its next default GetItem."""
    table = make_table(client)
    _put(client, table, "new", 1)
    answer = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("new"))
    assert "Item" not in answer and echo(answer) == "stale-read"


def test_stale_read__after_delete__answers_the_deleted_item(client: Any, asking: Any) -> None:
    """An eventually consistent read may still see an item a recent DeleteItem removed."""
    table = make_table(client)
    _put(client, table, "gone", 7)
    client.delete_item(TableName=table, Key=key("gone"))
    answer = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("gone"))
    assert answer["Item"]["v"] == {"N": "7"}


def test_stale_read__item_never_written__answers_as_now_with_none_and_the_reason(client: Any, asking: Any) -> None:
    table = make_table(client)
    answer = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("nobody"))
    assert "Item" not in answer
    assert echo(answer) == "none; no earlier image of what it reads is kept"


def test_stale_read__projection_unchanged_by_latest_write__goes_back_to_the_write_that_changes_it(
    client: Any, asking: Any
) -> None:
    """ "As of before the latest write(s)": a write the projection cannot see is passed over."""
    table = make_table(client)
    _put(client, table, "p", 1)
    client.update_item(
        TableName=table, Key=key("p"), UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "2"}}
    )
    client.update_item(
        TableName=table, Key=key("p"), UpdateExpression="SET w = :w", ExpressionAttributeValues={":w": {"N": "9"}}
    )
    answer = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("p"), ProjectionExpression="v")
    assert answer["Item"] == {"v": {"N": "1"}} and echo(answer) == "stale-read"


def test_stale_read__leaves_the_store_as_it_was(client: Any, asking: Any) -> None:
    """A stale answer is a view, not a write: every later strong read (GetItem, Query, Scan) is fresh."""
    table = make_table(client)
    _put(client, table, "a", 1)
    _put(client, table, "a", 2)
    _put(client, table, "b", 1)
    stale = weak(asking, WeakAnswer.STALE_READ)
    stale.get_item(TableName=table, Key=key("a"))
    stale.scan(TableName=table)
    stale.query(**_query(table, "PK", "a"))
    got = client.get_item(TableName=table, Key=key("a"), ConsistentRead=True)["Item"]
    assert got["v"] == {"N": "2"}
    scanned = client.scan(TableName=table, ConsistentRead=True)["Items"]
    assert sorted((i["PK"]["S"], i["v"]["N"]) for i in scanned) == [("a", "2"), ("b", "1")]
    queried = client.query(**_query(table, "PK", "a"))["Items"]
    assert [i["v"] for i in queried] == [{"N": "2"}]


# stale-read: Query, Scan, GSI, BatchGetItem -----------------------------------------------------


def test_stale_read__query_of_a_partition__answers_before_the_latest_write_to_it(client: Any, asking: Any) -> None:
    table = make_table(client)
    client.put_item(TableName=table, Item=key("cart", "1"))
    client.put_item(TableName=table, Item=key("cart", "2"))
    client.put_item(TableName=table, Item=key("other", "1"))  # a later write elsewhere does not count
    answer = weak(asking, WeakAnswer.STALE_READ).query(**_query(table, "PK", "cart"))
    assert [i["SK"]["S"] for i in answer["Items"]] == ["1"] and echo(answer) == "stale-read"


def test_stale_read__query_of_a_gsi__the_index_lags_behind_the_table(client: Any, asking: Any) -> None:
    """ "All reads from GSIs ... are eventually consistent": a just-written email is not in the index yet."""
    table = make_table(client, gsi=True)
    client.put_item(TableName=table, Item={**key("user#1"), "email": {"S": "a@example.com"}})
    query = _query(table, "email", "a@example.com", "email-index")
    assert client.query(**query)["Count"] == 1
    answer = weak(asking, WeakAnswer.STALE_READ).query(**query)
    assert answer["Count"] == 0 and echo(answer) == "stale-read"


def test_stale_read__gsi_query_after_email_change__still_finds_the_old_email(client: Any, asking: Any) -> None:
    """The index as it was before the latest write to an item in the partition it reads (the old email's)."""
    table = make_table(client, gsi=True)
    client.put_item(TableName=table, Item={**key("user#1"), "email": {"S": "old@example.com"}})
    client.put_item(TableName=table, Item={**key("user#1"), "email": {"S": "new@example.com"}})
    answer = weak(asking, WeakAnswer.STALE_READ).query(**_query(table, "email", "old@example.com", "email-index"))
    assert [i["PK"]["S"] for i in answer["Items"]] == ["user#1"]


def test_consistent_read_on_a_gsi__refused_with_dynamodbs_message(client: Any, asking: Any) -> None:
    """ "Strongly consistent reads are not supported on global secondary indexes"; DynamoDB's message:
    "Consistent reads are not supported on global secondary indexes"."""
    table = make_table(client, gsi=True)
    query = {
        **_query(table, "email", "a@example.com", "email-index"),
        "ConsistentRead": True,
    }
    expected = ("ValidationException", "Consistent reads are not supported on global secondary indexes")
    assert refused(client.query, **query) == expected
    assert refused(weak(asking, WeakAnswer.STALE_READ).query, **query) == expected


def test_stale_read__scan__answers_the_table_before_its_latest_write(client: Any, asking: Any) -> None:
    table = make_table(client)
    _put(client, table, "a", 1)
    _put(client, table, "b", 1)
    answer = weak(asking, WeakAnswer.STALE_READ).scan(TableName=table)
    assert [i["PK"]["S"] for i in answer["Items"]] == ["a"]


def test_stale_read__batch_get__eventual_table_stale_consistent_table_fresh(client: Any, asking: Any) -> None:
    """ConsistentRead is per table in BatchGetItem: a table read with it is never stale."""
    eventual, strong = make_table(client), make_table(client)
    for table in (eventual, strong):
        _put(client, table, "k", 1)
        _put(client, table, "k", 2)
    answer = weak(asking, WeakAnswer.STALE_READ).batch_get_item(
        RequestItems={eventual: {"Keys": [key("k")]}, strong: {"Keys": [key("k")], "ConsistentRead": True}}
    )
    assert answer["Responses"][eventual][0]["v"] == {"N": "1"}
    assert answer["Responses"][strong][0]["v"] == {"N": "2"}
    assert echo(answer) == "stale-read"


def test_stale_read__after_the_table_is_made_again__keeps_nothing_of_the_old_one(client: Any, asking: Any) -> None:
    """A control-plane change (DeleteTable, CreateTable) forgets the images kept in its region."""
    table = make_table(client)
    _put(client, table, "k", 1)
    client.delete_table(TableName=table)
    make_table(client, name=table)
    got = weak(asking, WeakAnswer.STALE_READ).get_item(TableName=table, Key=key("k"))
    assert "Item" not in got and echo(got) == "none; no earlier image of what it reads is kept"


# stale-read: a view named exactly (behind=N, misses=KEY, index-misses=KEY) ----------------------


def _cart(client: Any) -> str:
    """A table whose partition "cart" got three writes (items 1, 2, 3), each followed by a write elsewhere."""
    table = make_table(client)
    for sk in ("1", "2", "3"):
        client.put_item(TableName=table, Item=key("cart", sk))
        client.put_item(TableName=table, Item=key(f"other{sk}"))  # other partitions' writes do not count
    return table


CART = {"KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "cart"}}}


@pytest.mark.parametrize(("behind", "seen"), [(1, ["1", "2"]), (2, ["1"]), (3, [])])
def test_stale_read_behind__query_of_one_partition__answers_n_writes_behind_and_names_the_view(
    client: Any, asking: Any, behind: int, seen: list[str]
) -> None:
    """ "the responses may not reflect the results of a recently completed write operation": a replica
    behind by N of the partition's recent writes (a prefix of them); labkit's view is named exactly."""
    table = _cart(client)
    answer = weak(asking, f"stale-read; behind={behind}").query(TableName=table, **CART)
    assert [i["SK"]["S"] for i in answer["Items"]] == seen
    assert echo(answer) == f"stale-read; behind={behind}"


def test_stale_read_behind__more_writes_than_the_partition_has__strong_answer_and_none(
    client: Any, asking: Any
) -> None:
    table = _cart(client)
    answer = weak(asking, "stale-read; behind=4").query(TableName=table, **CART)
    assert [i["SK"]["S"] for i in answer["Items"]] == ["1", "2", "3"]
    assert echo(answer) == "none; fewer than 4 earlier writes to what it reads are kept"


def test_stale_read_behind__get_item__two_writes_back(client: Any, asking: Any) -> None:
    """An item read eventually consistently may be any of its recent committed images, not only the last but one."""
    table = make_table(client)
    for v in (1, 2, 3):
        _put(client, table, "k", v)
    answer = weak(asking, "stale-read; behind=2").get_item(TableName=table, Key=key("k"))
    assert answer["Item"]["v"] == {"N": "1"} and echo(answer) == "stale-read; behind=2"


def test_stale_read_index_misses__gsi_query__misses_an_earlier_write_and_shows_a_later_one(
    client: Any, asking: Any
) -> None:
    """ "This propagation occurs gradually": u1's entry (written first) has not reached the index, u2's
    (written after it) has; a partition prefix could never give this view, each entry on its own can."""
    table = make_table(client, gsi=True)
    client.put_item(TableName=table, Item={**key("u1"), "email": {"S": "same@example.com"}})
    client.put_item(TableName=table, Item={**key("u2"), "email": {"S": "same@example.com"}})
    view = f"stale-read; index-misses={key_name(key('u1'))}"
    answer = weak(asking, view).query(**_query(table, "email", "same@example.com", "email-index"))
    assert [i["PK"]["S"] for i in answer["Items"]] == ["u2"]
    assert echo(answer) == view


def test_stale_read_index_misses__two_writes_back__the_entry_before_both(client: Any, asking: Any) -> None:
    """``KEY@N``: the entry as of before the base item's N latest writes (an email changed twice)."""
    table = make_table(client, gsi=True)
    for email in ("a@example.com", "b@example.com", "c@example.com"):
        client.put_item(TableName=table, Item={**key("u1"), "email": {"S": email}})
    query = _query(table, "email", "a@example.com", "email-index")
    answer = weak(asking, f"stale-read; index-misses={key_name(key('u1'))}@2").query(**query)
    assert [i["PK"]["S"] for i in answer["Items"]] == ["u1"]
    assert echo(answer) == f"stale-read; index-misses={key_name(key('u1'))}@2"


def test_stale_read_misses__batch_get__each_key_on_its_own(client: Any, asking: Any) -> None:
    """BatchGetItem reads its keys "in parallel": the later-written key stale while the earlier one is fresh."""
    table = make_table(client)
    for pk in ("a", "b"):
        _put(client, table, pk, 1)
        _put(client, table, pk, 2)
    keys = {table: {"Keys": [key("a"), key("b")]}}
    for stale_one, fresh_one in (("a", "b"), ("b", "a")):
        answer = weak(asking, f"stale-read; misses={key_name(key(stale_one))}").batch_get_item(RequestItems=keys)
        got = {i["PK"]["S"]: i["v"]["N"] for i in answer["Responses"][table]}
        assert got == {stale_one: "1", fresh_one: "2"}


def test_stale_read_misses__key_the_batch_does_not_read__400_naming_it(client: Any, asking: Any) -> None:
    table = make_table(client)
    code, message = refused(
        weak(asking, f"stale-read; misses={key_name(key('zzz'))}").batch_get_item,
        RequestItems={table: {"Keys": [key("a")]}},
    )
    assert code == "ValidationException" and "is not one this BatchGetItem reads eventually consistently" in message


@pytest.mark.parametrize(
    ("form", "call", "says"),
    [
        (f"stale-read; misses={key_name(key('a'))}", "query", "a table's partition lags as a whole"),
        (f"stale-read; index-misses={key_name(key('a'))}", "query", "a table's partition lags as a whole"),
        (f"stale-read; index-misses={key_name(key('a'))}", "lsi-query", "a local secondary index follows its table"),
        ("stale-read; behind=0", "query", "behind must be a whole number of writes, 1 or more"),
        ("stale-read; ahead=1", "query", "unknown parameter 'ahead'"),
        ("stale-read; misses=a", "get", "misses takes item keys as JSON"),
        ("short-page; behind=1", "query", "short-page takes no parameters"),
        ("torn-read; behind=1", "query", "torn-read names its view with misses=KEY"),
    ],
)
def test_weak_answer_form_that_does_not_fit__400_saying_why(
    client: Any, asking: Any, form: str, call: str, says: str
) -> None:
    """A view is named exactly or refused: LSIs follow their table, a table's partition lags as a prefix."""
    table = make_table(client, gsi=True, lsi=True)
    query = {"TableName": table, **CART}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "query": ("query", query),
        "lsi-query": ("query", {**query, "IndexName": "at-index"}),
        "get": ("get_item", {"TableName": table, "Key": key("a")}),
    }
    method, params = calls[call]
    code, message = refused(getattr(weak(asking, form), method), **params)
    assert code == "ValidationException" and says in message and message.endswith(WEAK_ANSWER_WHERE)


def test_stale_read_behind__lsi_query__follows_its_tables_partition(client: Any, asking: Any) -> None:
    """ "Both tables and LSIs provide two read consistency options": an LSI reads its table's partition."""
    table = make_table(client, lsi=True)
    client.put_item(TableName=table, Item={**key("p", "1"), "at": {"S": "09:00"}})
    client.put_item(TableName=table, Item={**key("p", "2"), "at": {"S": "10:00"}})
    answer = weak(asking, "stale-read; behind=1").query(**_query(table, "PK", "p", "at-index"))
    assert [i["SK"]["S"] for i in answer["Items"]] == ["1"]


def test_stale_read__partiql_select__runs_stale_as_the_query_it_stands_for(client: Any, asking: Any) -> None:
    """An ExecuteStatement SELECT without ConsistentRead reads eventually consistently, as its Query does."""
    table = make_table(client)
    client.put_item(TableName=table, Item=key("cart", "1"))
    client.put_item(TableName=table, Item=key("cart", "2"))
    answer = weak(asking, "stale-read; behind=1").execute_statement(
        Statement=f"SELECT * FROM \"{table}\" WHERE PK = 'cart'"
    )
    assert [i["SK"]["S"] for i in answer["Items"]] == ["1"] and echo(answer) == "stale-read; behind=1"
    code, _ = refused(
        weak(asking, "stale-read").execute_statement,
        Statement=f"SELECT * FROM \"{table}\" WHERE PK = 'cart'",
        ConsistentRead=True,
    )
    assert code == "ValidationException"


# torn-read: some of one transaction's writes seen, not all --------------------------------------


def _sign_up(client: Any, table: str, user: str = "u1", email: str = "a@example.com") -> None:
    """Lesson 02's sign-up: the account and its email's marker in one TransactWriteItems."""
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {**key(f"EMAIL#{email}"), "owner": {"S": user}}}},
            {"Put": {"TableName": table, "Item": {**key(f"USER#{user}"), "email": {"S": email}}}},
        ]
    )


def test_torn_read__scan_beside_a_sign_up__sees_the_marker_and_not_the_account(client: Any, asking: Any) -> None:
    """Scan is "Read-committed" in the isolation table: the items of one TransactWriteItems may be read
    at different moments, so the new marker shows and the new account does not (the audit's orphan)."""
    table = make_table(client)
    _sign_up(client, table)
    view = f"torn-read; misses={key_name(key('USER#u1'))}"
    answer = weak(asking, view).scan(TableName=table)
    assert [i["PK"]["S"] for i in answer["Items"]] == ["EMAIL#a@example.com"]
    assert echo(answer) == view


def test_torn_read__unnamed__the_first_subset_that_answers_otherwise_named_in_the_echo(
    client: Any, asking: Any
) -> None:
    table = make_table(client)
    _sign_up(client, table)
    answer = weak(asking, WeakAnswer.TORN_READ).scan(TableName=table)
    assert answer["Count"] == 1
    missed = "EMAIL#a@example.com" if answer["Items"][0]["PK"]["S"] == "USER#u1" else "USER#u1"
    assert echo(answer) == f"torn-read; misses={key_name(key(missed))}"


def test_torn_read__every_write_of_the_transaction_named__strong_answer_and_none(client: Any, asking: Any) -> None:
    """A torn read sees some of the transaction's writes: missing all of them is not one."""
    table = make_table(client)
    _sign_up(client, table)
    both = f"{key_name(key('EMAIL#a@example.com'))}, {key_name(key('USER#u1'))}"
    answer = weak(asking, f"torn-read; misses={both}").scan(TableName=table)
    assert answer["Count"] == 2
    assert echo(answer) == "none; a torn read sees at least one of the transaction's writes"


def test_torn_read__item_written_again_after_the_transaction__not_missed(client: Any, asking: Any) -> None:
    """Only items whose latest write is the transaction's: a later write to one is seen with it."""
    table = make_table(client)
    _sign_up(client, table)
    client.put_item(TableName=table, Item={**key("USER#u1"), "email": {"S": "a@example.com"}, "v": {"N": "2"}})
    answer = weak(asking, f"torn-read; misses={key_name(key('USER#u1'))}").scan(TableName=table)
    assert answer["Count"] == 2
    assert echo(answer) == "none; no one transaction kept is the latest write of every item named"


def test_torn_read__batch_get_with_consistent_read__still_torn(client: Any, asking: Any) -> None:
    """BatchGetItem is read-committed against transactions whatever its ConsistentRead: each key is serializable
    on its own, the batch is not."""
    table = make_table(client)
    _sign_up(client, table)
    view = f"torn-read; misses={key_name(key('EMAIL#a@example.com'))}"
    answer = weak(asking, view).batch_get_item(
        RequestItems={table: {"Keys": [key("EMAIL#a@example.com"), key("USER#u1")], "ConsistentRead": True}}
    )
    assert [i["PK"]["S"] for i in answer["Responses"][table]] == ["USER#u1"] and echo(answer) == view


def test_torn_read__no_transaction_wrote_what_it_reads__none(client: Any, asking: Any) -> None:
    table = make_table(client)
    _put(client, table, "plain", 1)
    answer = weak(asking, WeakAnswer.TORN_READ).scan(TableName=table)
    assert answer["Count"] == 1
    assert echo(answer) == "none; no transaction kept in the history wrote what it reads"


@pytest.mark.parametrize("call", ["get", "transact-get"])
def test_torn_read__single_item_read_or_transact_get__400_they_are_serializable(
    client: Any, asking: Any, call: str
) -> None:
    """GetItem and TransactGetItems are "Serializable" with TransactWriteItems in the isolation table: never torn."""
    table = make_table(client)
    _sign_up(client, table)
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "get": ("get_item", {"TableName": table, "Key": key("USER#u1")}),
        "transact-get": (
            "transact_get_items",
            {"TransactItems": [{"Get": {"TableName": table, "Key": key("USER#u1")}}]},
        ),
    }
    method, params = calls[call]
    code, message = refused(getattr(weak(asking, WeakAnswer.TORN_READ), method), **params)
    assert code == "ValidationException" and "with torn-read" in message


# unprocessed-items ------------------------------------------------------------------------------


def test_unprocessed_items__batch_write__last_request_not_written_and_returned_as_sent(
    client: Any, asking: Any
) -> None:
    """ "the failed operations are returned in the UnprocessedItems response parameter"; resending them writes them."""
    a, b = make_table(client), make_table(client)
    requests = {
        a: [{"PutRequest": {"Item": key("1")}}, {"PutRequest": {"Item": key("2")}}],
        b: [{"PutRequest": {"Item": {**key("3"), "n": {"N": "1"}}}}, {"DeleteRequest": {"Key": key("4")}}],
    }
    client.put_item(TableName=b, Item=key("4"))
    answer = weak(asking, WeakAnswer.UNPROCESSED_ITEMS).batch_write_item(RequestItems=requests)
    assert answer["UnprocessedItems"] == {b: [{"DeleteRequest": {"Key": key("4")}}]}
    assert echo(answer) == "unprocessed-items"
    assert "Item" in client.get_item(TableName=b, Key=key("4"), ConsistentRead=True)  # not applied
    assert all("Item" in client.get_item(TableName=t, Key=key(k)) for t, k in ((a, "1"), (a, "2"), (b, "3")))
    again = weak(asking, None).batch_write_item(RequestItems=answer["UnprocessedItems"])
    assert again["UnprocessedItems"] == {}
    assert "Item" not in client.get_item(TableName=b, Key=key("4"), ConsistentRead=True)


def test_unprocessed_items__batch_write_of_one_item__writes_nothing(client: Any, asking: Any) -> None:
    table = make_table(client)
    requests = {table: [{"PutRequest": {"Item": key("only")}}]}
    answer = weak(asking, WeakAnswer.UNPROCESSED_ITEMS).batch_write_item(RequestItems=requests)
    assert answer["UnprocessedItems"] == requests and echo(answer) == "unprocessed-items"
    assert client.scan(TableName=table, ConsistentRead=True)["Count"] == 0


def test_unprocessed_items__batch_get__last_key_left_with_its_tables_projection(client: Any, asking: Any) -> None:
    """UnprocessedKeys holds KeysAndAttributes as sent: the key, and the table's ProjectionExpression."""
    table = make_table(client)
    for k in ("1", "2", "3"):
        _put(client, table, k, int(k))
    entry = {"Keys": [key("1"), key("2"), key("3")], "ProjectionExpression": "PK, v"}
    answer = weak(asking, WeakAnswer.UNPROCESSED_ITEMS).batch_get_item(RequestItems={table: entry})
    assert sorted(i["PK"]["S"] for i in answer["Responses"][table]) == ["1", "2"]
    assert answer["UnprocessedKeys"] == {table: {"Keys": [key("3")], "ProjectionExpression": "PK, v"}}
    assert echo(answer) == "unprocessed-items"


def test_unprocessed_items__batch_get_of_one_key__reads_nothing(client: Any, asking: Any) -> None:
    table = make_table(client)
    _put(client, table, "1", 1)
    answer = weak(asking, WeakAnswer.UNPROCESSED_ITEMS).batch_get_item(RequestItems={table: {"Keys": [key("1")]}})
    assert answer["Responses"] == {} and answer["UnprocessedKeys"] == {table: {"Keys": [key("1")]}}


def test_unprocessed_items__batch_write__validated_once_its_plan_narrowed_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The weak answer is planned once: the batch left short keeps the plan of the whole request, narrowed
    (its last write target dropped), and the request is validated once."""
    engine = DynamoEngine(weak_answers=True)
    table = {
        "TableName": "once",
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    assert engine.handle(engine_headers("CreateTable"), json.dumps(table).encode())[0] == 200
    validated: list[str] = []
    real = validate

    def counting(request: Any, *args: Any) -> Any:
        validated.append(request.operation)
        return real(request, *args)

    monkeypatch.setattr(engine_module, "validate", counting)
    puts = [{"PutRequest": {"Item": {"PK": {"S": pk}}}} for pk in ("1", "2", "3")]
    headers = {**engine_headers("BatchWriteItem"), ECHO: "unprocessed-items"}
    status, answered, body = engine.handle(headers, json.dumps({"RequestItems": {"once": puts}}).encode())
    assert status == 200 and answered[ECHO] == "unprocessed-items"
    assert json.loads(body)["UnprocessedItems"] == {"once": puts[-1:]}
    assert validated == ["BatchWriteItem"]


# short-page -------------------------------------------------------------------------------------


def test_short_page__query__ends_after_the_first_item_with_a_last_evaluated_key(client: Any, asking: Any) -> None:
    """A page may end before the key range does; the next page starts at its LastEvaluatedKey."""
    table = make_table(client)
    for sk in ("1", "2", "3"):
        client.put_item(TableName=table, Item=key("p", sk))
    query = _query(table, "PK", "p")
    page = weak(asking, WeakAnswer.SHORT_PAGE).query(**query)
    assert [i["SK"]["S"] for i in page["Items"]] == ["1"]
    assert page["LastEvaluatedKey"] == key("p", "1") and echo(page) == "short-page"
    seen = [i["SK"]["S"] for i in page["Items"]]
    start = page.get("LastEvaluatedKey")
    while start is not None:  # reading every page finds every item, short pages or not
        page = asking.query(**query, ExclusiveStartKey=start)
        seen += [i["SK"]["S"] for i in page["Items"]]
        start = page.get("LastEvaluatedKey")
    assert seen == ["1", "2", "3"]


def test_short_page__filter_drops_the_first_item__an_empty_page_that_is_not_the_last(client: Any, asking: Any) -> None:
    """Limit counts the items evaluated before the FilterExpression: a filtered page may come back empty."""
    table = make_table(client)
    client.put_item(TableName=table, Item={**key("p", "1"), "open": {"BOOL": False}})
    client.put_item(TableName=table, Item={**key("p", "2"), "open": {"BOOL": True}})
    page = weak(asking, WeakAnswer.SHORT_PAGE).query(
        TableName=table,
        KeyConditionExpression="PK = :p",
        FilterExpression="#o = :t",
        ExpressionAttributeNames={"#o": "open"},
        ExpressionAttributeValues={":p": {"S": "p"}, ":t": {"BOOL": True}},
    )
    assert page["Items"] == [] and page["Count"] == 0 and page["ScannedCount"] == 1
    assert page["LastEvaluatedKey"] == key("p", "1")


def test_short_page__only_item_in_range__still_ends_with_a_last_evaluated_key(client: Any, asking: Any) -> None:
    """As with Limit=1: the page stops at its limit and says where, even when nothing follows."""
    table = make_table(client)
    client.put_item(TableName=table, Item=key("solo"))
    page = weak(asking, WeakAnswer.SHORT_PAGE).scan(TableName=table)
    assert page["Count"] == 1 and page["LastEvaluatedKey"] == key("solo") and echo(page) == "short-page"
    last = asking.scan(TableName=table, ExclusiveStartKey=page["LastEvaluatedKey"])
    assert last["Count"] == 0 and "LastEvaluatedKey" not in last


def test_short_page__gsi_query__last_evaluated_key_has_the_table_and_index_keys(client: Any, asking: Any) -> None:
    table = make_table(client, gsi=True)
    for pk in ("u1", "u2"):
        client.put_item(TableName=table, Item={**key(pk), "email": {"S": "same@example.com"}})
    page = weak(asking, WeakAnswer.SHORT_PAGE).query(**_query(table, "email", "same@example.com", "email-index"))
    assert page["Count"] == 1
    assert set(page["LastEvaluatedKey"]) == {"PK", "SK", "email"}


def test_short_page__empty_range__says_none(client: Any, asking: Any) -> None:
    table = make_table(client)
    page = weak(asking, WeakAnswer.SHORT_PAGE).query(**_query(table, "PK", "none"))
    assert page["Count"] == 0 and "LastEvaluatedKey" not in page
    assert echo(page) == "none; the page holds no item"


# misuse: a 400 that says where each kind applies, nothing applied -------------------------------


@pytest.mark.parametrize(
    ("kind", "call"),
    [
        ("stale-read", "put"),
        ("unprocessed-items", "put"),
        ("short-page", "get"),
        ("stale-read", "consistent-get"),
        ("stale-read", "transact-get"),
        ("stale-read", "consistent-batch-get"),
        ("unprocessed-items", "query"),
        ("stale", "get"),
    ],
)
def test_weak_answer_where_dynamodb_cannot_give_it__400_saying_where_each_applies(
    client: Any, asking: Any, kind: str, call: str
) -> None:
    table = make_table(client)
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "put": ("put_item", {"TableName": table, "Item": key("x")}),
        "get": ("get_item", {"TableName": table, "Key": key("x")}),
        "consistent-get": ("get_item", {"TableName": table, "Key": key("x"), "ConsistentRead": True}),
        "transact-get": ("transact_get_items", {"TransactItems": [{"Get": {"TableName": table, "Key": key("x")}}]}),
        "consistent-batch-get": (
            "batch_get_item",
            {"RequestItems": {table: {"Keys": [key("x")], "ConsistentRead": True}}},
        ),
        "query": (
            "query",
            _query(table, "PK", "x"),
        ),
    }
    method, params = calls[call]
    code, message = refused(getattr(weak(asking, kind), method), **params)
    assert code == "ValidationException"
    assert message.startswith(WEAK_ANSWER_HEADER) and message.endswith(WEAK_ANSWER_WHERE)
    assert client.scan(TableName=table, ConsistentRead=True)["Count"] == 0  # nothing applied


def test_weak_answer_on_dynamodb_local_profile__400_it_gives_none() -> None:
    """Profile dynamodb-local answers as DynamoDB Local does: no image history, no weak answers."""
    with start_endpoint(profile=DYNAMODB_LOCAL) as ep:
        plain = raw_client(ep.url)
        table = make_table(plain)
        plain.put_item(TableName=table, Item=key("x"))
        for form in ("stale-read", "stale-read; behind=2", f"torn-read; misses={key_name(key('x'))}"):
            code, message = refused(weak(raw_client(ep.url), form).get_item, TableName=table, Key=key("x"))
            assert code == "ValidationException" and "gives no weak answers" in message
        assert ep.engine.history is None


def test_weak_answer_header_on_a_control_operation__400(client: Any, asking: Any) -> None:
    with pytest.raises(ClientError) as caught:
        weak(asking, "stale-read").list_tables()
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_weak_answer_on_execute_statement__400_not_run(client: Any, asking: Any) -> None:
    """PartiQL is not where these answers are given: refused before its statement runs."""
    table = make_table(client)
    code, _ = refused(
        weak(asking, "stale-read").execute_statement,
        Statement=f"INSERT INTO \"{table}\" VALUE {{'PK': 'x', 'SK': 'A'}}",
    )
    assert code == "ValidationException"
    assert client.scan(TableName=table, ConsistentRead=True)["Count"] == 0
