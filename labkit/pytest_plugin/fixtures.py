"""The plugin's fixtures: ``labkit_conn`` (a fresh lab table per test), ``labkit_backend``, and the
session's connections behind them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .options import NONE, TABLE_PREFIX
from .state import PluginState, state_of

if TYPE_CHECKING:
    from ..shared.backend import Connection


class Connections:
    """One connection per backend for the whole session; a failed connect is remembered."""

    def __init__(self, state: PluginState | None) -> None:
        self.known: dict[str, Connection | Exception] = {}
        self.state = state

    def get(self, backend: str) -> Connection:
        from ..shared.backend import connect
        from ..shared.errors import BackendUnavailable, ConfigurationError

        if backend not in self.known:
            try:
                # the backend as an argument: it wins over LABKIT_ENDPOINT_URL and LABKIT_BACKEND, as the
                # session's choice already did (labkit.shared.backend_choice, the resolver connect() uses too)
                if backend == "aws" and self.state is not None:
                    with self.state.original():  # real credentials and region, not the plugin's defaults
                        self.known[backend] = connect(backend)
                else:
                    self.known[backend] = connect(backend)
            except (BackendUnavailable, ConfigurationError) as exc:
                self.known[backend] = exc
        found = self.known[backend]
        if isinstance(found, Exception):
            raise found
        return found


@pytest.fixture(scope="session")
def _labkit_connections(pytestconfig: pytest.Config) -> Connections:
    return Connections(state_of(pytestconfig))


@pytest.fixture
def labkit_backend(request: pytest.FixtureRequest) -> str:
    """The labkit backend this test runs on: ``--labkit-backend``, or one of the marker's backends."""
    param: Any = getattr(request, "param", None)
    state = state_of(request.config)
    return str(param) if param is not None else (state.backend if state is not None else "embedded")


@pytest.fixture
def labkit_conn(
    labkit_backend: str, _labkit_connections: Connections, request: pytest.FixtureRequest
) -> Iterator[Connection]:
    """A connection to a fresh, empty lab table ``labkit-t-<hex>`` on the test's backend; deleted after.

    Use ``labkit_conn.client`` for plain calls, ``labkit_conn.new_client()`` for a client per thread,
    and pass ``conn=labkit_conn`` to ``run_interleaving``, ``all_interleavings`` or ``explore``.
    """
    from ..shared.backend import Connection
    from ..shared.errors import BackendUnavailable, ConfigurationError
    from ..shared.table import delete_table, ensure_table

    state = state_of(request.config)
    chosen = state.backend if state is not None else "embedded"
    if labkit_backend == NONE:
        source = state.source if state is not None else "--labkit-backend none"
        raise pytest.UsageError(
            f"labkit_conn needs a backend, and this run has {source} (labkit off); choose embedded, local, aws or a URL"
        )
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


__all__ = [
    "Connections",
    "labkit_backend",
    "labkit_conn",
]
