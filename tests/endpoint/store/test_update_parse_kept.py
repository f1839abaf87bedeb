"""moto's UpdateExpression trees, kept per text (decision 235), against moto parsing every request afresh.

The engine patches moto's ``UpdateExpressionParser.make`` to keep each text's tree
(:func:`labkit.endpoint.store.moto_adapter._parsed_once`). The differential: generated sequences of
UpdateItem and TransactWriteItems requests (SET, REMOVE, ADD and DELETE clauses, functions, nested and
indexed paths, overlapping paths that moto refuses) sent to two engines, one with the kept trees and
one with moto's own parser; every answer and the items after each request must be the same.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.endpoint import DynamoEngine
from labkit.endpoint.store import moto_adapter as _adapter
from tests.endpoint.clients import engine_headers
from tests.endpoint.tables import hash_table
from tests.helpers import derandomized

adapter: Any = _adapter  # the test reads what the module keeps to itself
TABLE = "labkit-kept-parse"
SET = [
    "n = n + :one",
    "n = if_not_exists(n, :zero) + :one",
    "a = :v",
    "#x = :v",
    "l = list_append(if_not_exists(l, :empty), :l)",
    "m = :m",
    "m.k = :v",
    "a = n",
]
REMOVE = ["a", "m.k", "l[0]", "#x"]
ADD = ["s :s", "n :one"]
DELETE = ["s :s"]
VALUES: dict[str, Any] = {
    ":one": {"N": "1"},
    ":zero": {"N": "0"},
    ":v": {"S": "v"},
    ":l": {"L": [{"N": "1"}]},
    ":empty": {"L": []},
    ":m": {"M": {"k": {"S": "k"}}},
    ":s": {"SS": ["x"]},
}


def _clause(word: str, parts: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(parts), min_size=1, max_size=2).map(lambda p: f"{word} {', '.join(p)}")


expressions = st.lists(
    st.one_of(_clause("SET", SET), _clause("REMOVE", REMOVE), _clause("ADD", ADD), _clause("DELETE", DELETE)),
    min_size=1,
    max_size=3,
).map(" ".join)


def _params(expression: str, key: str) -> dict[str, Any]:
    params: dict[str, Any] = {"TableName": TABLE, "Key": {"PK": {"S": key}}, "UpdateExpression": expression}
    used = {v: VALUES[v] for v in re.findall(r":[a-z]+", expression)}
    if used:
        params["ExpressionAttributeValues"] = used
    if "#x" in expression:
        params["ExpressionAttributeNames"] = {"#x": "x"}
    return params


@contextlib.contextmanager
def _moto_parses_afresh() -> Iterator[None]:
    kept = adapter.UpdateExpressionParser.make
    adapter.UpdateExpressionParser.make = staticmethod(kept.__wrapped__)
    try:
        yield
    finally:
        adapter.UpdateExpressionParser.make = staticmethod(kept)


def _engine() -> DynamoEngine:
    engine = DynamoEngine()
    assert engine.handle(engine_headers("CreateTable"), json.dumps(hash_table(TABLE)).encode())[0] == 200
    return engine


def _send(engine: DynamoEngine, operation: str, params: dict[str, Any]) -> tuple[int, Any]:
    status, _, body = engine.handle(engine_headers(operation), json.dumps(params).encode())
    return status, json.loads(body or b"{}")


def _items(engine: DynamoEngine) -> Any:
    return _send(engine, "Scan", {"TableName": TABLE, "ConsistentRead": True})


@settings(derandomized("LABKIT_KEPT_PARSE_EXAMPLES", 25))
@given(
    steps=st.lists(
        st.tuples(expressions, st.sampled_from(["a", "b"]), st.sampled_from(["UpdateItem", "TransactWriteItems"])),
        min_size=1,
        max_size=8,
    )
)
def test_kept_trees__generated_updates__same_answers_and_items_as_moto_parsing_afresh(
    steps: list[tuple[str, str, str]],
) -> None:
    kept, fresh = _engine(), _engine()
    for n, (expression, key, operation) in enumerate(steps):
        params = _params(expression, key)
        if operation == "TransactWriteItems":
            params = {"TransactItems": [{"Update": params}]}
        answer = _send(kept, operation, params), _items(kept)
        with _moto_parses_afresh():
            again = _send(fresh, operation, params), _items(fresh)
        assert answer == again, f"step {n}: {operation} {expression!r}"


def test_kept_trees__one_text_twice__parsed_once() -> None:
    """The second UpdateItem with the same text reuses the tree (a hit in the kept trees)."""
    engine = _engine()
    make = adapter.UpdateExpressionParser.make
    text = "SET kept_probe = if_not_exists(kept_probe, :zero) + :one"
    for _ in range(2):
        assert _send(engine, "UpdateItem", _params(text, "a"))[0] == 200
    before = make.cache_info().hits
    assert _send(engine, "UpdateItem", _params(text, "a"))[0] == 200
    assert make.cache_info().hits >= before + 2  # moto's handler and its backend each parse it
