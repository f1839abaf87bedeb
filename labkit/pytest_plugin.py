"""labkit's pytest plugin: race-check your own DynamoDB code against a fresh lab table per test.

Installed with labkit (entry point ``pytest11``: ``labkit = "labkit.pytest_plugin"``); nothing to
import or configure. What it adds:

``--labkit-backend``
    ``embedded`` (default: labkit's endpoint on 127.0.0.1, in the test process), ``local``
    (DynamoDB Local, ``LABKIT_LOCAL_URL`` or http://localhost:8000), ``aws`` (real DynamoDB through
    the normal credential chain; a table is created per test, which takes seconds there), or an
    ``http(s)://`` URL of any DynamoDB-compatible endpoint. Anything else stops pytest at startup
    with a usage error.
``labkit_conn``
    a :class:`labkit.Connection` whose ``table_name`` is a fresh, empty lab table named
    ``labkit-t-<hex>`` (PK/SK strings, the ``email-index`` GSI), deleted after the test.
``labkit_backend``
    the backend the current test runs on (a name or a URL).
``@pytest.mark.labkit_backends("embedded", "local")``
    runs the test once per backend (ids ``[embedded]``, ``[local]``). A backend named only in the
    marker that cannot be reached (DynamoDB Local not started, no AWS credentials) is *skipped*
    with the reason; the backend chosen with ``--labkit-backend`` must work, or the test *errors*.
    So a laptop without Docker still runs the embedded half, and a CI job that passes
    ``--labkit-backend local`` fails loudly when its DynamoDB Local is missing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .backend import BACKENDS, Connection, connect
from .errors import BackendUnavailable, ConfigurationError
from .table import delete_table, ensure_table

MARKER = "labkit_backends"
TABLE_PREFIX = "labkit-t-"
_CHOSEN = pytest.StashKey[str]()


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://")) and len(value.split("://", 1)[1]) > 0


def _check_backend(value: str, where: str) -> str:
    name = value.strip()
    if name.lower() in BACKENDS:
        return name.lower()
    if _is_url(name):
        return name.rstrip("/")
    raise pytest.UsageError(
        f"{where}: unknown labkit backend {value!r}; choose one of: {', '.join(BACKENDS)}, "
        "or an http(s):// URL of a DynamoDB-compatible endpoint (e.g. --labkit-backend http://127.0.0.1:8000)"
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labkit", "labkit: DynamoDB race checks")
    group.addoption(
        "--labkit-backend",
        default="embedded",
        metavar="BACKEND",
        help="where labkit_conn's tables live: embedded (default), local, aws, or an http(s):// URL",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*backends): run the test once per labkit backend (embedded, local, aws or a URL); "
        "backends other than --labkit-backend's are skipped when unreachable",
    )
    config.stash[_CHOSEN] = _check_backend(config.getoption("--labkit-backend"), "--labkit-backend")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "labkit_backend" not in metafunc.fixturenames:
        return
    if not marker.args:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER}() names no backend; "
            f"pass e.g. @pytest.mark.{MARKER}('embedded', 'local')"
        )
    where = f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER}"
    names = [_check_backend(str(arg), where) for arg in marker.args]
    metafunc.parametrize("labkit_backend", names, indirect=True, ids=names)


class _Connections:
    """One connection per backend for the whole session; a failed connect is remembered."""

    def __init__(self) -> None:
        self.known: dict[str, Connection | Exception] = {}

    def get(self, backend: str) -> Connection:
        if backend not in self.known:
            try:
                if _is_url(backend):
                    self.known[backend] = connect(endpoint_url=backend)
                else:
                    self.known[backend] = connect(backend)
            except (BackendUnavailable, ConfigurationError) as exc:
                self.known[backend] = exc
        found = self.known[backend]
        if isinstance(found, Exception):
            raise found
        return found


@pytest.fixture(scope="session")
def _labkit_connections() -> _Connections:
    return _Connections()


@pytest.fixture
def labkit_backend(request: pytest.FixtureRequest) -> str:
    """The labkit backend this test runs on: ``--labkit-backend``, or one of the marker's backends."""
    param: Any = getattr(request, "param", None)
    return str(param) if param is not None else request.config.stash[_CHOSEN]


@pytest.fixture
def labkit_conn(
    labkit_backend: str, _labkit_connections: _Connections, request: pytest.FixtureRequest
) -> Iterator[Connection]:
    """A connection to a fresh, empty lab table ``labkit-t-<hex>`` on the test's backend; deleted after.

    Use ``labkit_conn.client`` for plain calls, ``labkit_conn.new_client()`` for a client per thread,
    and pass ``conn=labkit_conn`` to ``run_interleaving``, ``all_interleavings`` or ``explore``.
    """
    chosen = request.config.stash[_CHOSEN]
    try:
        base = _labkit_connections.get(labkit_backend)
    except (BackendUnavailable, ConfigurationError) as exc:
        if labkit_backend == chosen:
            raise  # the backend this run was asked for must work
        pytest.skip(f"labkit backend {labkit_backend!r} unavailable: {exc}")
    name = f"{TABLE_PREFIX}{uuid.uuid4().hex[:10]}"
    conn = Connection(base.backend, base.endpoint_url, base.region, name, _session=base._session)
    ensure_table(conn)
    try:
        yield conn
    finally:
        delete_table(conn)


__all__ = ["MARKER", "TABLE_PREFIX", "labkit_backend", "labkit_conn"]
