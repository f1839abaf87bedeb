"""Faults on purpose in the embedded endpoint: rules (labkit serve --faults), the Labkit.* controls, the token clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.commands.cli import main
from labkit.engine_plugins.faults import (
    FaultRule,
    FaultRules,
    LabClock,
    advance_clock,
    control,
    endpoint_fault_log,
    endpoint_faults,
    lab_clock,
    load_rules,
    set_endpoint_faults,
)
from labkit.patterns import uniqueness as U
from labkit.races import run_interleaving
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.catalogue import WEAK_ANSWER_HEADER
from labkit.shared.errors import (
    ConfigurationError,
    StaleAccount,
    TransactionConflict,
    ValidationError,
)
from tests.faults.served import plain_table, serve_with_faults
from tests.faults.support import CONFLICT, client, get, item

# ---------------------------------------------------------------- endpoint rules


def test_endpoint_rule__throttle_twice__sdk_retries_and_succeeds(no_faults: Connection) -> None:
    """Two throttles on PutItem: a client with 3 attempts succeeds on the third (RetryAttempts 2)."""
    table = no_faults.table_name
    rule = {"operation": "PutItem", "table": table, "error": "ProvisionedThroughputExceededException", "count": 2}
    with endpoint_faults(no_faults, [rule]):
        out = client(no_faults, attempts=3).put_item(TableName=table, Item=item("P"))
    assert out["ResponseMetadata"]["RetryAttempts"] == 2
    assert [e["error"] for e in endpoint_fault_log(no_faults)][-2:] == ["ProvisionedThroughputExceededException"] * 2
    assert get(no_faults, "P") == item("P")


def test_endpoint_rule__throttle_without_retries__client_error_and_nothing_written(no_faults: Connection) -> None:
    """Without retries the caller sees ProvisionedThroughputExceededException (400); nothing written."""
    table = no_faults.table_name
    rule = {"operation": "PutItem", "table": table, "error": "ProvisionedThroughputExceededException"}
    with endpoint_faults(no_faults, [rule]), pytest.raises(ClientError) as exc:
        client(no_faults).put_item(TableName=table, Item=item("P"))
    assert exc.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert get(no_faults, "P") is None


def test_endpoint_rule__internal_error_apply_first__written_and_500(no_faults: Connection) -> None:
    """apply_first: the request is applied, then answered with InternalServerError (HTTP 500)."""
    table = no_faults.table_name
    rule = {"operation": "PutItem", "table": table, "error": "InternalServerError", "apply_first": True}
    with endpoint_faults(no_faults, [rule]), pytest.raises(ClientError) as exc:
        client(no_faults).put_item(TableName=table, Item=item("P"))
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert get(no_faults, "P") == item("P")


def test_endpoint_rule__transaction_conflict__register_retries_to_success(no_faults: Connection) -> None:
    """A TransactionConflict rule (once) cancels the sign-up; labkit raises TransactionConflict;
    the resend of the same Registration succeeds."""
    table = no_faults.table_name
    reg = U.prepare_registration(email="ada@lovelace.io", username="ada")
    with endpoint_faults(
        no_faults,
        [{"operation": "TransactWriteItems", "table": table, "error": "TransactionConflict", "item": 1, "count": 1}],
    ):
        with pytest.raises(TransactionConflict) as exc:
            U.submit(client(no_faults), table, reg)
        assert exc.value.reasons == ({"Code": "None"}, CONFLICT, {"Code": "None"})
        U.submit(client(no_faults), table, reg)
    assert U.audit(no_faults.client, table).ok


def test_endpoint_rule__key__only_that_partition(no_faults: Connection) -> None:
    """A rule with a key fires only for requests touching that partition key value."""
    table = no_faults.table_name
    with endpoint_faults(no_faults, [{"operation": "*", "table": table, "key": "HOT", "error": "ThrottlingException"}]):
        client(no_faults).put_item(TableName=table, Item=item("COLD"))
        with pytest.raises(ClientError, match="ThrottlingException"):
            client(no_faults).put_item(TableName=table, Item=item("HOT"))


def test_endpoint_rule__probability_with_seed__same_storm_every_time(no_faults: Connection) -> None:
    """probability + seed: the same requests meet the same faults on every run."""
    table = no_faults.table_name

    def storm() -> list[bool]:
        failed = []
        with endpoint_faults(
            no_faults,
            {
                "seed": 42,
                "rules": [{"operation": "GetItem", "table": table, "error": "ThrottlingException", "probability": 0.5}],
            },
        ):
            c = client(no_faults)
            for _ in range(20):
                try:
                    c.get_item(TableName=table, Key={"PK": {"S": "P"}, "SK": {"S": "X"}})
                    failed.append(False)
                except ClientError:
                    failed.append(True)
        return failed

    first, second = storm(), storm()
    assert first == second
    assert 0 < sum(first) < 20


def test_advance_clock__resend_after_window__applied_again_is_refused(no_faults: Connection) -> None:
    """Within 10 minutes a resend is a no-op; after them the same request is new, and the
    registration's guards refuse it: StaleAccount 'already exists'."""
    table = no_faults.table_name
    reg = U.prepare_registration(email="ada@lovelace.io", username="ada")
    U.submit(no_faults.client, table, reg)
    advance_clock(no_faults, 599)
    U.submit(no_faults.client, table, reg)  # still remembered
    advance_clock(no_faults, 2)
    with pytest.raises(StaleAccount, match="already exists"):
        U.submit(no_faults.client, table, reg)


def test_lab_clock__window_passes_at_a_call_point_of_a_race__the_resend_is_a_new_request(
    no_faults: Connection,
) -> None:
    """DynamoDB: "After 10 minutes, any request with the same client token is treated as a new
    request." In the forced order A B B, B moves the frozen lab clock 10 minutes after its first call
    (after A's send has completed): its resend of A's token with other parameters is then a new
    request, applied; the same order without the move is an IdempotentParameterMismatch."""
    table = no_faults.table_name
    key = {"PK": {"S": "TOKEN"}, "SK": {"S": "X"}}

    def send(c: Any, value: str, token: str) -> None:
        item = {**key, "v": {"S": value}}
        c.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": item}}], ClientRequestToken=token)

    def resend(lab: LabClock | None, token: str) -> Any:
        def actor(c: Any) -> str:
            c.get_item(TableName=table, Key=key, ConsistentRead=True)  # B1: after A's send (the order)
            if lab is not None:
                lab.advance(C.CLIENT_REQUEST_TOKEN_TTL_SECONDS)  # the window passes here, between B1 and B2
            try:
                send(c, "second", token)  # B2
            except ClientError as exc:
                return str(exc.response["Error"]["Code"])
            return "applied"

        return actor

    outcomes = {}
    for moved in (False, True):
        token = f"t-{moved}"
        with lab_clock(no_faults) as lab:
            res = run_interleaving(
                {"A": lambda c, t=token: send(c, "first", t), "B": resend(lab if moved else None, token)},
                "A B B",
                conn=no_faults,
            )
        outcomes[moved] = res.results["B"]
    assert outcomes == {False: "IdempotentParameterMismatchException", True: "applied"}


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"operation": "PutIt", "error": "ThrottlingException"}, "unknown operation 'PutIt'.*did you mean 'PutItem'"),
        ({"operation": "PutItem", "error": "Boom"}, "unknown error 'Boom'"),
        (
            {"operation": "PutItem", "error": "ThrottlingException", "probability": 1.5},
            "probability must be a number from 0 to 1, not 1.5",
        ),
        (
            {"operation": "PutItem", "error": "ThrottlingException", "probability": -0.1},
            "probability must be a number from 0 to 1, not -0.1",
        ),
        ({"operation": "PutItem", "error": "ThrottlingException", "count": 0}, "count must be an int >= 1, not 0"),
        ({"operation": "GetItem", "error": "TransactionConflict"}, "never answers GetItem with a transaction conflict"),
        ({"operation": "PutItem", "error": "ThrottlingException", "tabel": "x"}, "unknown field.*tabel"),
        ({"error": "ThrottlingException"}, "needs operation"),
    ],
)
def test_fault_rules__bad_rule__validation_error(rule: dict[str, Any], message: str) -> None:
    """A rule DynamoDB could never produce, or a typo, is refused with what to fix."""
    with pytest.raises(ValidationError, match=message):
        FaultRules.parse({"rules": [rule]})


def test_set_endpoint_faults__bad_rule__refused_and_old_rules_kept(no_faults: Connection) -> None:
    """A bad rule set is refused before it reaches the endpoint; the control operation also
    refuses one sent by hand (400 ValidationException)."""
    table = no_faults.table_name
    set_endpoint_faults(no_faults, [{"operation": "PutItem", "table": table, "error": "ThrottlingException"}])
    with pytest.raises(ValidationError, match="probability"):
        set_endpoint_faults(no_faults, [{"operation": "PutItem", "error": "ThrottlingException", "probability": 2}])
    with pytest.raises(ValidationError, match="probability"):
        control(
            str(no_faults.endpoint_url),
            "SetFaults",
            {"rules": [{"operation": "PutItem", "error": "ThrottlingException", "probability": 2}]},
        )
    assert len(control(str(no_faults.endpoint_url), "GetFaults", {})["rules"]) == 1


def test_control__unknown_operation__validation_error_naming_the_known_ones(no_faults: Connection) -> None:
    """Labkit.* targets the endpoint does not know are a 400 (UnknownOperationException) naming the ones it does."""
    with pytest.raises(ValidationError, match="Labkit.SetFaults"):
        control(str(no_faults.endpoint_url), "DropTables", {})


def test_endpoint_faults__not_embedded__configuration_error() -> None:
    """Endpoint rules need the embedded endpoint; the message points at race-lab faults."""
    local = Connection("local", "http://127.0.0.1:1", "us-east-1")
    with pytest.raises(ConfigurationError, match="race lab's per-call faults"):
        set_endpoint_faults(local, [])


def test_load_rules__file__parsed(tmp_path: Path) -> None:
    """A JSON faults file loads into FaultRules."""
    path = tmp_path / "faults.json"
    path.write_text(
        json.dumps({"seed": 3, "rules": [{"operation": "*", "error": "InternalServerError", "probability": 0.1}]})
    )
    rules = load_rules(path)
    assert rules == FaultRules((FaultRule("*", "InternalServerError", probability=0.1),), 3)


def test_load_rules__not_json__error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text("rules: [")
    with pytest.raises(ValidationError, match=f"faults file {path} is not valid JSON"):
        load_rules(path)
    with pytest.raises(ConfigurationError, match="cannot read faults file"):
        load_rules(tmp_path / "missing.json")


def test_serve__bad_faults_file__exit_2_before_listening(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`labkit serve --faults` with a bad rule fails in one line, before anything listens."""
    path = tmp_path / "faults.json"
    path.write_text(json.dumps([{"operation": "PutItem", "error": "ThrottlingException", "probability": 7}]))
    assert main(["serve", "--port", "1", "--faults", str(path)]) == 2
    assert "probability must be a number from 0 to 1, not 7" in capsys.readouterr().err


def test_serve__faults_file__aws_client_sees_the_faults(tmp_path: Path) -> None:
    """`labkit serve --faults FILE`: a plain boto3 client (as the AWS CLI) gets the injected error."""
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"rules": [{"operation": "ListTables", "error": "InternalServerError"}]}))
    out = subprocess.run(
        [sys.executable, "-m", "labkit", "serve", "--faults", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "unknown operation 'ListTables'" in out.stderr
    path.write_text(json.dumps({"rules": [{"operation": "GetItem", "error": "ServiceUnavailable"}]}))
    with serve_with_faults(path) as url:
        aws = plain_table(url, "labkit-t", attempts=1)
        with pytest.raises(ClientError) as exc:
            aws.get_item(TableName="labkit-t", Key={"PK": {"S": "a"}})
        assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert exc.value.response["Error"]["Code"] == "ServiceUnavailable"


# ---------------------------------------------------------------- weak answers by rule


def _weak_echo(answer: Any) -> str | None:
    found = answer["ResponseMetadata"]["HTTPHeaders"].get(WEAK_ANSWER_HEADER.lower())
    return None if found is None else str(found)


def test_endpoint_rule__stale_read_count_1__one_default_get_item_reads_the_earlier_image(
    no_faults: Connection,
) -> None:
    """An eventually consistent GetItem "may not reflect the results of a recently completed write"
    (Developer Guide, read consistency): a rule gives that answer once; ConsistentRead=True never gets it."""
    table = no_faults.table_name
    c = client(no_faults)
    c.put_item(TableName=table, Item=item("ORDER", state="new"))
    c.put_item(TableName=table, Item=item("ORDER", state="paid"))
    with endpoint_faults(no_faults, [{"operation": "GetItem", "table": table, "error": "stale-read", "count": 1}]):
        strong = c.get_item(TableName=table, Key=item("ORDER"), ConsistentRead=True)
        stale = c.get_item(TableName=table, Key=item("ORDER"))
        fresh = c.get_item(TableName=table, Key=item("ORDER"))
        log = endpoint_fault_log(no_faults)
    assert strong["Item"]["state"] == {"S": "paid"} and _weak_echo(strong) is None
    assert stale["Item"]["state"] == {"S": "new"} and _weak_echo(stale) == "stale-read"
    assert fresh["Item"]["state"] == {"S": "paid"}  # count 1: once
    assert log[-1]["error"] == "stale-read" and log[-1]["status"] == 200


def test_endpoint_rule__torn_read_on_scan__a_plain_scan_sees_part_of_a_transaction(no_faults: Connection) -> None:
    """Scan is read-committed against transactions (isolation table): a rule makes a plain Scan see some
    of a TransactWriteItems' writes and not others, and the echo names which it missed."""
    table = no_faults.table_name
    c = client(no_faults)
    c.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": item("EMAIL#a")}},
            {"Put": {"TableName": table, "Item": item("USER#1")}},
        ]
    )
    with endpoint_faults(no_faults, [{"operation": "Scan", "error": "torn-read", "count": 1}]):
        torn = c.scan(TableName=table)
        whole = c.scan(TableName=table)
    assert torn["Count"] == 1 and str(_weak_echo(torn)).startswith("torn-read; misses=")
    assert whole["Count"] == 2 and _weak_echo(whole) is None


def test_endpoint_rule__unprocessed_items_on_any_operation__only_batches_get_it(no_faults: Connection) -> None:
    """ "*" with a weak answer matches only where DynamoDB can give it: a PutItem is applied as ever."""
    table = no_faults.table_name
    c = client(no_faults)
    with endpoint_faults(no_faults, [{"operation": "*", "error": "unprocessed-items"}]):
        c.put_item(TableName=table, Item=item("A"))
        out = c.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": item("B")}}, {"PutRequest": {"Item": item("C")}}]}
        )
    assert out["UnprocessedItems"] == {table: [{"PutRequest": {"Item": item("C")}}]}
    assert get(no_faults, "A") is not None and get(no_faults, "B") is not None and get(no_faults, "C") is None


def test_endpoint_rule__short_page_with_probability_and_seed__the_same_pages_every_run(no_faults: Connection) -> None:
    """Probability + seed: the same Queries get short pages on every run; a client that follows
    LastEvaluatedKey still reads every item (Query: "If LastEvaluatedKey is not empty, it does not
    necessarily mean that there is more data in the result set")."""
    table = no_faults.table_name
    c = client(no_faults)
    for sk in "ABC":
        c.put_item(TableName=table, Item={"PK": {"S": "Q"}, "SK": {"S": sk}})
    query = {"TableName": table, "KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "Q"}}}

    def pages() -> list[int]:
        counts = []
        rules = {"seed": 5, "rules": [{"operation": "Query", "error": "short-page", "probability": 0.5}]}
        with endpoint_faults(no_faults, rules):
            for _ in range(10):
                page = c.query(**query)
                counts.append(page["Count"])
                seen, start = page["Count"], page.get("LastEvaluatedKey")
                while start is not None:
                    page = c.query(**query, ExclusiveStartKey=start)
                    seen, start = seen + page["Count"], page.get("LastEvaluatedKey")
                assert seen == 3
        return counts

    first, second = pages(), pages()
    assert first == second and 1 in first and 3 in first


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"operation": "PutItem", "error": "stale-read"}, "DynamoDB never answers PutItem with stale-read"),
        ({"operation": "GetItem", "error": "short-page"}, "short-page to Query and Scan"),
        ({"operation": "Query", "error": "unprocessed-items"}, "unprocessed-items to BatchGetItem and BatchWriteItem"),
        ({"operation": "GetItem", "error": "stale-read", "apply_first": True}, "apply_first is for errors"),
        ({"operation": "GetItem", "error": "stale-reads"}, "did you mean 'stale-read'"),
        ({"operation": "GetItem", "error": "torn-read"}, "DynamoDB never answers GetItem with torn-read"),
        ({"operation": "Query", "error": "stale-read; behind=0"}, "behind must be a whole number of writes"),
        ({"operation": "Query", "error": "stale-read; ahead=1"}, "unknown parameter 'ahead'"),
    ],
)
def test_fault_rules__weak_answer_where_dynamodb_cannot_give_it__validation_error(
    rule: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        FaultRules.parse([rule])


def test_serve__faults_file_with_a_named_stale_view_and_a_torn_read__a_plain_client_gets_each(
    tmp_path: Path,
) -> None:
    """`labkit serve --faults FILE` takes the new forms: a Query two writes behind its partition
    (``stale-read; behind=2``), a Scan that sees part of a transaction (``torn-read``)."""
    path = tmp_path / "faults.json"
    rules = [
        {"operation": "Query", "error": "stale-read; behind=2", "count": 1},
        {"operation": "Scan", "error": "torn-read", "count": 1},
    ]
    path.write_text(json.dumps({"rules": rules}))
    with serve_with_faults(path, rules=2) as url:
        aws = plain_table(url, "labkit-carts")
        for n in range(3):  # three writes to the one item of partition "cart"
            aws.put_item(TableName="labkit-carts", Item={"PK": {"S": "cart"}, "n": {"N": str(n)}})
        behind = aws.query(
            TableName="labkit-carts",
            KeyConditionExpression="PK = :p",
            ExpressionAttributeValues={":p": {"S": "cart"}},
        )
        assert [i["n"] for i in behind["Items"]] == [{"N": "0"}] and _weak_echo(behind) == "stale-read; behind=2"
        aws.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": "labkit-carts", "Item": {"PK": {"S": "EMAIL#a"}}}},
                {"Put": {"TableName": "labkit-carts", "Item": {"PK": {"S": "USER#1"}}}},
            ]
        )
        torn = aws.scan(TableName="labkit-carts")  # the cart, and one of the transaction's two items
        assert torn["Count"] == 2 and str(_weak_echo(torn)).startswith("torn-read; misses=")


def test_serve__faults_file_with_a_stale_read_rule__a_plain_client_reads_the_earlier_image(tmp_path: Path) -> None:
    """`labkit serve --faults FILE` with a weak answer, started for real: a plain boto3 client's
    default GetItem after an update reads the image before it, once (count 1)."""
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"rules": [{"operation": "GetItem", "error": "stale-read", "count": 1}]}))
    with serve_with_faults(path) as url:
        aws = plain_table(url, "labkit-orders")
        aws.put_item(TableName="labkit-orders", Item={"PK": {"S": "o1"}, "state": {"S": "new"}})
        aws.update_item(
            TableName="labkit-orders",
            Key={"PK": {"S": "o1"}},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":s": {"S": "paid"}},
        )
        stale = aws.get_item(TableName="labkit-orders", Key={"PK": {"S": "o1"}})
        fresh = aws.get_item(TableName="labkit-orders", Key={"PK": {"S": "o1"}})
        assert stale["Item"]["state"] == {"S": "new"} and _weak_echo(stale) == "stale-read"
        assert fresh["Item"]["state"] == {"S": "paid"} and _weak_echo(fresh) is None
