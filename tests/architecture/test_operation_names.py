"""The operation catalogue's records (labkit/shared/catalogue/records.py) are the one place operation names are written.

Every set of operation names in labkit derives from it; an operation-name string literal anywhere
else in labkit/ fails here, with the file, the line and the name to use instead.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from labkit.shared import catalogue as ops
from labkit.shared.catalogue import CATALOGUE, Op

PACKAGE = Path(__file__).resolve().parents[2] / "labkit"
#: What a literal may spell: DynamoDB's name, labkit's control name with or without its prefix,
#: or a whole X-Amz-Target.
SPELLINGS = {spelling: op for op in Op for spelling in {op.value, op.short, CATALOGUE[op].target}}


def literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in ``path`` that spells an operation name (f-string parts too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in SPELLINGS
    )


def test_operation_names__no_literal_outside_the_catalogue() -> None:
    """`"GetItem"` is written once, in labkit/shared/catalogue/records.py; elsewhere Op.GET_ITEM or a derived set."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r} (use Op.{SPELLINGS[text].name})"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "shared" / "catalogue" / "records.py"
        for line, text in literals(path)
    ]
    assert found == []


def test_operation_names__the_guard_catches_a_planted_literal(tmp_path: Path) -> None:
    """The check above can fail: a planted literal, a control name and an f-string part are all found."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        'x = "TransactGetItems"\ny = f"{p}HoldTransaction"\nz = "DynamoDB_20120810.Query"\n'
        '"""A docstring naming GetItem is prose, not a literal."""\n'
    )
    assert literals(planted) == [(1, "TransactGetItems"), (2, "HoldTransaction"), (3, "DynamoDB_20120810.Query")]


def test_catalogue__every_dynamodb_name_is_botocores() -> None:
    """Every DynamoDB (and Streams) operation in the catalogue is an operation of botocore's model."""
    session = botocore.session.get_session()
    known = {
        service: set(session.get_service_model(service).operation_names) for service in ("dynamodb", "dynamodbstreams")
    }
    unknown = [r.name for r in CATALOGUE.values() if r.service != "labkit" and r.name not in known[r.service]]
    assert unknown == []


def test_catalogue__derived_sets_are_what_dynamodb_documents() -> None:
    """The sets the engine, the race lab, faults and costs use, spelled out once as a spec."""
    assert {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"} == ops.READS
    assert {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"} == ops.WRITES
    assert ops.DATA_PLANE == ops.READS | ops.WRITES
    assert {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"} == ops.SINGLE
    assert {"GetItem", "Query", "Scan", "BatchGetItem"} == ops.EVENTUAL_READS  # ConsistentRead=False by default
    assert {"BatchGetItem", "BatchWriteItem"} == ops.PARTIAL  # UnprocessedKeys / UnprocessedItems
    assert {"Query", "Scan"} == ops.PAGED  # LastEvaluatedKey
    assert {"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"} == ops.STATEMENTS
    assert set(ops.MOTO_METHODS) == ops.DATA_PLANE
    assert {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems"} <= ops.CONFLICTABLE
    assert not ops.CONFLICTABLE & {"GetItem", "Query", "Scan", "BatchGetItem"}  # reads see the last commit


@pytest.mark.parametrize(
    ("operation", "params", "expected"),
    [
        ("GetItem", {"TableName": "t", "Key": {"id": {"S": "1"}}}, [("t", {"id": {"S": "1"}}, False)]),
        (
            "PutItem",
            {"TableName": "t", "Item": {"id": {"S": "1"}, "n": {"N": "2"}}},
            [("t", {"id": {"S": "1"}, "n": {"N": "2"}}, True)],
        ),
        (
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"ConditionCheck": {"TableName": "a", "Key": {"k": {"S": "x"}}}},
                    {"Put": {"TableName": "b", "Item": {"k": {"S": "y"}}}},
                ]
            },
            [("a", {"k": {"S": "x"}}, False), ("b", {"k": {"S": "y"}}, True)],
        ),
        (
            "BatchWriteItem",
            {
                "RequestItems": {
                    "t": [{"PutRequest": {"Item": {"k": {"S": "1"}}}}, {"DeleteRequest": {"Key": {"k": {"S": "2"}}}}]
                }
            },
            [("t", {"k": {"S": "1"}}, True), ("t", {"k": {"S": "2"}}, True)],
        ),
        ("BatchGetItem", {"RequestItems": {"t": {"Keys": [{"k": {"S": "1"}}]}}}, [("t", {"k": {"S": "1"}}, False)]),
        ("Query", {"TableName": "t", "KeyConditionExpression": "k = :k"}, []),
        ("GetItem", {"TableName": "t", "Key": "not a map"}, []),
    ],
)
def test_item_keys__every_item_a_request_names(
    operation: str, params: dict[str, Any], expected: list[tuple[str, dict[str, Any], bool]]
) -> None:
    """item_keys reads Key, Item, each TransactItems action, each batch entry; Query names no item."""
    assert list(ops.item_keys(operation, params)) == expected
