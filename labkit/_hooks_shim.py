"""Engine hooks on the old single-module engine (labkit/endpoint.py), until the engine rewrite lands.

The rewritten engine (``labkit/endpoint/``) runs hooks itself; at merge this module and its
three call sites in endpoint.py are dropped. It builds the contract's RequestInfo, calls the
hooks, and answers ``X-Amz-Target: Labkit.*`` control requests through :mod:`labkit.faults`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .endpoint_hooks import RequestInfo
from .faults import canonical, error_body, handle_control

Response = tuple[int, dict[str, str], bytes]


def _pk(core: Any, who: tuple[str, str], table: str, attrs: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    found = core.table(who, table)
    name = getattr(found, "hash_key_attr", None)
    if not attrs or not name or name not in attrs:
        return []
    return [(table, canonical(attrs[name]))]


def request_info(core: Any, who: tuple[str, str], operation: str, params: Mapping[str, Any]) -> RequestInfo:
    """The RequestInfo of a data-plane request: which partitions it reads and writes."""
    reads: list[tuple[str, str]] = []
    writes: list[tuple[str, str]] = []
    table = str(params.get("TableName", ""))
    if operation in ("PutItem",):
        writes += _pk(core, who, table, params.get("Item"))
    elif operation in ("UpdateItem", "DeleteItem"):
        writes += _pk(core, who, table, params.get("Key"))
    elif operation == "GetItem":
        reads += _pk(core, who, table, params.get("Key"))
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        for action in params.get("TransactItems") or []:
            for kind, body in action.items():
                keys = _pk(core, who, str(body.get("TableName", "")), body.get("Key") or body.get("Item"))
                (reads if kind in ("ConditionCheck", "Get") else writes).extend(keys)
    elif operation == "BatchWriteItem":
        for name, requests in (params.get("RequestItems") or {}).items():
            for r in requests:
                for body in r.values():
                    writes += _pk(core, who, name, body.get("Item") or body.get("Key"))
    elif operation == "BatchGetItem":
        for name, request in (params.get("RequestItems") or {}).items():
            for key in request.get("Keys", []):
                reads += _pk(core, who, name, key)
    return RequestInfo(operation, who[0], who[1], tuple(reads), tuple(writes), params)


def run(
    engine: Any, operation: str, params: dict[str, Any], who: tuple[str, str], apply: Callable[[], Response]
) -> Response:
    """before-hooks, apply (unless rejected), after-hooks, as HOOKS.md describes."""
    from ._moto_fast import response

    info = request_info(engine.core, who, operation, params)
    now = engine.tokens.clock()
    rejection = next((r for h in engine.hooks if (r := h.before(info, now)) is not None), None)
    if rejection is not None and not rejection.apply_first:
        return _error(rejection)
    result = apply()
    if result[0] == 200:
        for hook in engine.hooks:
            hook.after(info, {}, now)
    if rejection is not None:
        return _error(rejection)
    return result if result else response(200, {})


def _error(rejection: Any) -> Response:
    from ._moto_fast import _headers

    body = error_body(rejection)
    return rejection.status, _headers(body), body


def control(engine: Any, operation: str, params: dict[str, Any] | None) -> Response:
    from ._moto_fast import response

    with engine.lock:
        return response(*handle_control(engine, operation, params))
