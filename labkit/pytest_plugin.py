"""labkit's pytest plugin: race-check your own DynamoDB code, unchanged, against a lab endpoint.

Installed with labkit (entry point ``pytest11``: ``labkit = "labkit.pytest_plugin"``); nothing to
import or configure. What it adds:

``--labkit-backend``
    ``embedded`` (labkit's endpoint on 127.0.0.1, in the test process), ``local`` (DynamoDB Local,
    ``LABKIT_LOCAL_URL`` or http://localhost:8000), ``aws`` (real DynamoDB through the normal
    credential chain; a table is created per test, which takes seconds there), an ``http(s)://``
    URL of any DynamoDB-compatible endpoint, or ``none`` (labkit stays out of the session).
    Without the option: ``LABKIT_BACKEND`` if set, else the endpoint ``AWS_ENDPOINT_URL_DYNAMODB``
    (or ``AWS_ENDPOINT_URL``) already names, else ``embedded``. Anything else stops pytest at
    startup with a usage error.
**Every DynamoDB client of the session goes to that backend** (all but ``aws`` and ``none``)
    Before conftest files and test modules are imported, the plugin sets
    ``AWS_ENDPOINT_URL_DYNAMODB`` (botocore reads it when a client is created without an
    endpoint: boto3 clients and resources, PynamoDB models without ``host``, clients made at
    import time), and, when none are configured, dummy credentials (no ``AWS_ACCESS_KEY_ID`` and no
    ``AWS_PROFILE``: ``labkit``/``labkit``, the account labkit's own clients use) and a region
    (no ``AWS_REGION``/``AWS_DEFAULT_REGION``: us-east-1). The embedded endpoint's port is bound
    at once; its engine starts at the first request or the first labkit fixture, so a run that
    never talks to DynamoDB pays nothing for it. Every variable is restored when pytest ends.
    Tables that code creates *during a test* (its function-scoped fixtures, its body, its
    teardown) on that endpoint are dropped after the test; tables created at import time or by
    class-, module- or session-scoped fixtures live as long as their scope. A DynamoDB call while
    moto's ``mock_aws`` is active fails with a clear error (it would reach labkit, not moto).
``labkit_conn``
    a :class:`labkit.Connection` whose ``table_name`` is a fresh, empty lab table named
    ``labkit-t-<hex>`` (PK/SK strings, the ``email-index`` GSI), deleted after the test.
``labkit_backend``
    the backend the current test runs on (a name or a URL).
``@pytest.mark.labkit_backends("embedded", "local")``
    runs the test once per backend (ids ``[embedded]``, ``[local]``). A backend named only in the
    marker that cannot be reached (DynamoDB Local not started, no AWS credentials) is *skipped*
    with the reason; the backend chosen with ``--labkit-backend`` must work, or the test *errors*.
    Your own clients follow the session's backend, not the marker's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from . import constants as C
from .operations import Op

if TYPE_CHECKING:
    from .backend import Connection

MARKER = "labkit_backends"
TABLE_PREFIX = "labkit-t-"
#: ``--labkit-backend none``: labkit routes nothing and gives no ``labkit_conn``.
NONE = "none"
BACKEND_NAMES = ("embedded", "local", "aws", NONE)
#: The variables that already name a DynamoDB endpoint for botocore, most specific first.
ENDPOINT_VARS = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
#: Set to the URL the plugin routed clients to, so a child process (an xdist worker, a pytest run
#: in a subprocess) that inherits the variables knows they were labkit's, not the user's.
ENV_ROUTED = "LABKIT_ROUTED_URL"
_CHOSEN = pytest.StashKey[str]()
_ROUTING = pytest.StashKey["Routing"]()


def _is_url(value: str) -> bool:
    return value.startswith(("http://", "https://")) and len(value.split("://", 1)[1]) > 0


def _check_backend(value: str, where: str) -> str:
    name = value.strip()
    if name.lower() in BACKEND_NAMES:
        return name.lower()
    if _is_url(name):
        return name.rstrip("/")
    raise pytest.UsageError(
        f"{where}: unknown labkit backend {value!r}; choose one of: {', '.join(BACKEND_NAMES)}, "
        "or an http(s):// URL of a DynamoDB-compatible endpoint (e.g. --labkit-backend http://127.0.0.1:8000)"
    )


def user_endpoint(environ: Mapping[str, str]) -> str | None:
    """The DynamoDB endpoint the environment names, unless labkit's plugin set it (in a parent process)."""
    for var in ENDPOINT_VARS:
        url = environ.get(var)
        if url and url != environ.get(ENV_ROUTED):
            return url
    return None


def choose_backend(option: str | None, environ: Mapping[str, str]) -> str:
    """``--labkit-backend``, else ``LABKIT_BACKEND``, else the endpoint the environment names, else embedded."""
    if option:
        return _check_backend(option, "--labkit-backend")
    if environ.get("LABKIT_BACKEND"):
        return _check_backend(environ["LABKIT_BACKEND"], "LABKIT_BACKEND")
    return _check_backend(user_endpoint(environ) or "embedded", "AWS_ENDPOINT_URL_DYNAMODB")


# ---------------------------------------------------------------- routing every client


@dataclass
class Routing:
    """What the plugin changed in ``os.environ`` (restored at the end) and where clients go."""

    url: str | None = None
    saved: dict[str, str | None] = field(default_factory=dict)
    tracker: TableTracker | None = None

    def set(self, var: str, value: str) -> None:
        if var not in self.saved:
            self.saved[var] = os.environ.get(var)
        os.environ[var] = value

    @contextlib.contextmanager
    def original(self) -> Iterator[None]:
        """The environment as it was before the plugin touched it (for the real-AWS backend's connect)."""
        mine = {var: os.environ.get(var) for var in self.saved}
        self._put(self.saved)
        try:
            yield
        finally:
            self._put(mine)

    @staticmethod
    def _put(values: Mapping[str, str | None]) -> None:
        for var, value in values.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value

    def restore(self) -> None:
        self._put(self.saved)
        self.saved.clear()
        if self.tracker is not None:
            from .intercept import remove_observer

            remove_observer(self.tracker)


def backend_url(backend: str) -> str | None:
    """The URL a backend's clients use (None for aws and none); the embedded one is reserved, not started."""
    if backend in ("aws", NONE):
        return None
    if _is_url(backend):
        return backend
    if backend == "local":
        return os.environ.get("LABKIT_LOCAL_URL", C.DYNAMODB_LOCAL_URL)
    if os.environ.get("LABKIT_EMBEDDED_URL"):  # a `labkit lab`/`labkit serve` connect() will use
        return os.environ["LABKIT_EMBEDDED_URL"].rstrip("/")
    from .embedded import reserve_shared_endpoint

    return reserve_shared_endpoint()


def route(backend: str) -> Routing:
    """Point every DynamoDB client created from now on at ``backend``, with credentials and a region."""
    url = backend_url(backend)
    routing = Routing(url)
    if url is None:
        return routing
    from .intercept import add_observer, endpoint_key

    if endpoint_key(os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")) != endpoint_key(url):  # else: the user's, kept
        routing.set("AWS_ENDPOINT_URL_DYNAMODB", url)
        routing.set(ENV_ROUTED, url)
    if not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE"):
        routing.set("AWS_ACCESS_KEY_ID", C.LOCAL_ACCESS_KEY)
        routing.set("AWS_SECRET_ACCESS_KEY", C.LOCAL_SECRET_KEY)
    if not os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION"):
        routing.set("AWS_DEFAULT_REGION", C.LOCAL_REGION)
    routing.tracker = TableTracker(url)
    add_observer(routing.tracker)
    return routing


def moto_mocking() -> bool:
    """True while moto's ``mock_aws`` is active (its botocore stubber is enabled)."""
    models = sys.modules.get("moto.core.models")
    return bool(getattr(getattr(models, "botocore_stubber", None), "enabled", False))


class TableTracker:
    """Sees every CreateTable on the routed endpoint; the tables a test created are dropped after it."""

    def __init__(self, url: str) -> None:
        from .intercept import endpoint_key

        self.url = url
        self.key = endpoint_key(url)
        self.created: list[tuple[str, str]] | None = None  # (region, table) while a test runs
        self.paused = 0  # inside a class/module/session-scoped fixture's setup
        self._clients: dict[str, Any] = {}

    def _ours(self, client: Any) -> bool:
        from .intercept import endpoint_key

        return endpoint_key(client.meta.endpoint_url) == self.key

    def before(self, client: Any, operation: str) -> None:
        if moto_mocking() and self._ours(client):
            from .errors import ConfigurationError

            raise ConfigurationError(
                f"moto's mock_aws is active, but labkit's pytest plugin points every DynamoDB client at "
                f"{self.url}, so this {operation} would reach labkit's endpoint, not moto's mock. Run these "
                "tests with `-p no:labkit` (or `--labkit-backend none`), or drop mock_aws for DynamoDB: "
                "labkit's embedded endpoint is moto behind HTTP"
            )

    def after(self, client: Any, operation: str, params: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        if operation != Op.CREATE_TABLE or self.created is None or self.paused or not self._ours(client):
            return
        name = str(params.get("TableName") or "")
        if name and not name.startswith(TABLE_PREFIX):  # labkit_conn deletes its own
            self.created.append((str(client.meta.region_name), name))

    def drop(self, tables: list[tuple[str, str]]) -> None:
        """DeleteTable for each; a table the test already deleted is fine."""
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        for region, name in dict.fromkeys(tables):
            client = self._clients.get(region)
            if client is None:
                client = self._clients[region] = boto3.session.Session().client(
                    "dynamodb", endpoint_url=self.url, region_name=region
                )
            with contextlib.suppress(ClientError, BotoCoreError):
                client.delete_table(TableName=name)


# ---------------------------------------------------------------- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labkit", "labkit: DynamoDB race checks")
    group.addoption(
        "--labkit-backend",
        default=None,
        metavar="BACKEND",
        help="where labkit_conn's tables live and every DynamoDB client goes: embedded (default), local, "
        "aws (clients untouched), an http(s):// URL, or none (labkit off)",
    )


def _start(config: pytest.Config, option: str | None) -> None:
    if _CHOSEN in config.stash:
        return
    backend = choose_backend(option, os.environ)
    config.stash[_CHOSEN] = backend
    config.stash[_ROUTING] = route(backend)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Route before conftest.py and the test modules are imported: their clients read the variables."""
    _start(early_config, getattr(early_config.known_args_namespace, "labkit_backend", None))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*backends): run the test once per labkit backend (embedded, local, aws or a URL); "
        "backends other than --labkit-backend's are skipped when unreachable",
    )
    _start(config, config.getoption("--labkit-backend"))  # a plugin loaded late (conftest's pytest_plugins)


def pytest_unconfigure(config: pytest.Config) -> None:
    routing = config.stash.get(_ROUTING, None)
    if routing is not None:
        routing.restore()


def _tracker(config: pytest.Config) -> TableTracker | None:
    routing = config.stash.get(_ROUTING, None)
    return routing.tracker if routing is not None else None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    tracker = _tracker(request.config)
    if tracker is None or fixturedef.scope == "function":
        return (yield)
    tracker.paused += 1  # a table made for a whole class/module/session outlives the test
    try:
        return (yield)
    finally:
        tracker.paused -= 1


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    tracker = _tracker(item.config)
    if tracker is not None:
        tracker.created = []


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        tracker = _tracker(item.config)
        if tracker is not None and tracker.created is not None:
            tables, tracker.created = tracker.created, None
            tracker.drop(tables)


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


# ---------------------------------------------------------------- fixtures


class _Connections:
    """One connection per backend for the whole session; a failed connect is remembered."""

    def __init__(self, routing: Routing | None) -> None:
        self.known: dict[str, Connection | Exception] = {}
        self.routing = routing

    def get(self, backend: str) -> Connection:
        from .backend import connect
        from .errors import BackendUnavailable, ConfigurationError

        if backend not in self.known:
            try:
                if _is_url(backend):
                    self.known[backend] = connect(endpoint_url=backend)
                elif backend == "aws" and self.routing is not None:
                    with self.routing.original():  # real credentials and region, not the plugin's dummies
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
def _labkit_connections(pytestconfig: pytest.Config) -> _Connections:
    return _Connections(pytestconfig.stash.get(_ROUTING, None))


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
    from .backend import Connection
    from .errors import BackendUnavailable, ConfigurationError
    from .table import delete_table, ensure_table

    chosen = request.config.stash[_CHOSEN]
    if labkit_backend == NONE:
        raise pytest.UsageError(
            "labkit_conn needs a backend, and this run has --labkit-backend none (labkit off); "
            "choose embedded, local, aws or a URL"
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
    "BACKEND_NAMES",
    "ENDPOINT_VARS",
    "ENV_ROUTED",
    "MARKER",
    "NONE",
    "TABLE_PREFIX",
    "Routing",
    "TableTracker",
    "backend_url",
    "choose_backend",
    "labkit_backend",
    "labkit_conn",
    "moto_mocking",
    "route",
    "user_endpoint",
]
