"""The first cell of every notebook: connect, give the lesson a fresh table, say where it runs.

Notebook authors: read docs/notebooks.md first (nbval conventions, asserting lessons, the race lab API).

The lab a notebook works in, a layer over the patterns and the race lab: this first cell
(``setup_lab``), pictures (``plots``, ``storms``, ``costs/``), checks (``invariants``), a failing
exploration's files for CI (``artifacts``) and the workshop's exercises (``exercises/``).

May import: shared, engine_plugins, races, patterns.
"""

from __future__ import annotations

import contextlib
import copy
import platform
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..engine_plugins.faults.control import control
from ..shared import constants as C
from ..shared.backend import Connection, connect
from ..shared.catalogue import Op
from ..shared.compat import DISTRIBUTION
from ..shared.errors import ConfigurationError
from ..shared.table import ensure_table, reset_table

#: Endpoint URL -> whether it answers labkit's control operations (asked once per process).
_ENGINES: dict[str, bool] = {}


def versions() -> dict[str, str]:
    """Versions of Python and the packages a lesson depends on."""
    out = {"python": platform.python_version()}
    for pkg in ("labkit", "boto3", "botocore", "moto", "pandas", "matplotlib"):
        try:
            out[pkg] = version(DISTRIBUTION if pkg == "labkit" else pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def setup_lab(lesson: str, *, backend: str | None = None, quiet: bool = False) -> Connection:
    """Connect, and give ``lesson`` its own empty table ``labkit-<lesson>``.

    Each notebook gets its own table, so notebooks can run side by side against
    DynamoDB Local or AWS without stepping on each other. Safe to re-run.
    """
    conn = connect(backend, table_name=f"{C.TABLE_PREFIX}{lesson}")
    ensure_table(conn)
    reset_table(conn)
    if not quiet:
        print(banner(conn))
    return conn


def banner(conn: Connection) -> str:
    """What a learner needs to know about where the lesson runs: the table, and the endpoint's URL.

    Versions are not in it (``labkit doctor`` prints them, or :func:`versions`): the same in every lesson.
    """
    where = {
        "embedded": f"labkit's embedded DynamoDB endpoint at {conn.endpoint_url} (moto's DynamoDB "
        "engine, run in this process)",
        "local": f"DynamoDB Local at {conn.endpoint_url}",
        "aws": f"AWS DynamoDB in {conn.region}" + (f" at {conn.endpoint_url}" if conn.endpoint_url else ""),
    }.get(conn.backend, f"the {conn.backend} backend at {conn.endpoint_url}")
    return f"table {conn.table_name} (on-demand, empty) on {where}"


def has_engine(conn: Connection) -> bool:
    """True when ``conn`` reaches labkit's own engine with its defaults (profile ``labkit``: the partition
    throttle, fault rules, held transactions, the ``Labkit.*`` controls) — the embedded endpoint. Not
    DynamoDB Local, AWS, or ``labkit serve --profile dynamodb-local``."""
    url = conn.endpoint_url
    if conn.backend != "embedded" or not url:
        return False
    if url not in _ENGINES:
        try:
            control(url, Op.GET_FAULTS, {})
            _ENGINES[url] = True
        except (ConfigurationError, OSError):
            _ENGINES[url] = False
    return _ENGINES[url]


def where(conn: Connection) -> str:
    """The backend in words, for a lesson's messages: "DynamoDB Local (LABKIT_BACKEND=local)", ..."""
    named = {"local": "DynamoDB Local (LABKIT_BACKEND=local)", "aws": "AWS (LABKIT_BACKEND=aws)"}
    return named.get(conn.backend, f"the endpoint at {conn.endpoint_url}")


def engine_available(conn: Connection, skip_reason: str) -> bool:
    """Whether a lesson's cell can use labkit's engine (:func:`has_engine`); if not, print why it skips::

        if engine_available(conn, "its throttling comes from labkit's partition model"):
            assert hot.throttled > 0

    prints, on DynamoDB Local, ``skipped on DynamoDB Local (LABKIT_BACKEND=local): its throttling comes
    from labkit's partition model``. On the embedded endpoint it prints nothing.
    """
    if has_engine(conn):
        return True
    print(f"skipped on {where(conn)}: {skip_reason}")
    return False


@contextlib.contextmanager
def recording(
    client: Any, operation: str = Op.TRANSACT_WRITE_ITEMS, drop: tuple[str, ...] = ("ClientRequestToken",)
) -> Iterator[list[dict[str, Any]]]:
    """``with recording(client) as sent:`` — the parameters of every ``operation`` call ``client`` makes
    in the block, as the caller passed them (botocore's ``provide-client-params`` event, before botocore
    adds anything), without the ``drop`` keys: what lesson 02 compares its plain boto3 recipes with."""
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append({k: v for k, v in copy.deepcopy(params).items() if k not in drop})

    event = f"provide-client-params.dynamodb.{operation}"
    client.meta.events.register(event, record)
    try:
        yield sent
    finally:
        client.meta.events.unregister(event, record)


__all__ = ["banner", "engine_available", "has_engine", "recording", "setup_lab", "versions", "where"]
