"""labkit's pytest plugin: race-check your own DynamoDB code, unchanged, against a lab endpoint.

Installed with labkit (entry point ``pytest11``: ``labkit = "labkit.pytest_plugin"``); nothing to
import or configure. **Inert until used**: loading it imports neither botocore nor boto3, pandas,
moto, the engine or the race lab, and a session whose tests never ask for labkit pays only for
this module. A test asks for labkit — it is a *labkit test* — when it uses ``labkit_conn`` or
``labkit_backend``, or is marked ``@pytest.mark.labkit`` or ``@pytest.mark.labkit_backends(...)``;
every test is one when the session passes ``--labkit-backend`` or sets the ``labkit_backend`` ini
option.

**Routing, per test, at send time** (the default, ``--labkit-routing test``)
    While a labkit test runs (its setup, its body, its teardown) every DynamoDB call bound for
    AWS's own endpoint goes to the backend instead — any boto3 client or resource, PynamoDB model
    without ``host``, client created at import time (:mod:`labkit.routing`). Calls of every other
    test are left alone: moto's ``mock_aws`` works in them, a real-AWS call goes to AWS. A client
    with an endpoint of its own is not rerouted (the race lab refuses it inside an actor when it
    is not the lab's). A routed call whose client has no credentials is signed with labkit's
    dummy ones; when no region is configured, ``AWS_DEFAULT_REGION=us-east-1`` is set for the
    test's duration (clients are created with a region). A fixture wider than a test that was set
    up during a labkit test is torn down routed too. moto's ``mock_aws`` active in a labkit test:
    its first DynamoDB call fails, saying so. On the ``aws`` backend nothing is routed.
``--labkit-routing environment`` (or the ``labkit_routing`` ini option)
    The session-wide routing of labkit 0.x: before conftest files and test modules are imported,
    ``AWS_ENDPOINT_URL_DYNAMODB`` (and, when none are configured, dummy credentials and a region)
    are set for the whole session, so subprocesses a test starts inherit them; every test is a
    labkit test. Every variable is restored when pytest ends.
``--labkit-backend``
    ``embedded`` (labkit's endpoint on 127.0.0.1, in the test process: each xdist worker its
    own), ``local`` (DynamoDB Local, ``LABKIT_LOCAL_URL`` or http://localhost:8000), ``aws``
    (real DynamoDB through the normal credential chain; a table per ``labkit_conn`` test takes
    seconds there), an ``http(s)://`` URL of any DynamoDB-compatible endpoint, or ``none``
    (labkit stays out; a labkit test errors, naming both). Passing it makes every test a labkit
    test. Without it: the ``labkit_backend`` ini option (the same), else ``LABKIT_BACKEND`` (the
    backend of labkit tests only), else the endpoint ``AWS_ENDPOINT_URL_DYNAMODB`` (or
    ``AWS_ENDPOINT_URL``) already names, else ``embedded``. Anything else stops pytest at
    startup with a usage error.
Tables
    Tables that code creates during a labkit test (its function-scoped fixtures, its body, its
    teardown) on a lab backend (embedded, local, a URL) are dropped after the test; tables
    created at import time or by class-, module- or session-scoped fixtures live as long as their
    scope. On ``aws`` labkit deletes only the ``labkit_conn`` tables it created itself.
``--labkit-artifacts DIR``
    A failing test whose ``explore`` failed writes the failing run's ``<test id>.race.json`` and
    ``<test id>.timeline.png`` there (:mod:`labkit.artifacts`), named in the report.
``labkit_conn``
    a :class:`labkit.Connection` whose ``table_name`` is a fresh, empty lab table named
    ``labkit-t-<hex>`` (PK/SK strings, the ``email-index`` GSI), deleted after the test.
``labkit_backend``
    the backend the current test runs on (a name or a URL).
``@pytest.mark.labkit``
    makes a test a labkit test without the fixture (your own clients, routed to the backend).
``@pytest.mark.labkit_backends("embedded", "local")``
    runs the test once per backend (ids ``[embedded]``, ``[local]``). A backend named only in the
    marker that cannot be reached (DynamoDB Local not started, no AWS credentials) is *skipped*
    with the reason; the backend chosen with ``--labkit-backend`` must work, or the test *errors*.
    Your own clients follow the session's backend, not the marker's.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import uuid
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import constants as C
from .operations import Op

if TYPE_CHECKING:
    from .backend import Connection
    from .routing import Route

MARKER = "labkit_backends"
#: ``@pytest.mark.labkit``: a labkit test without the fixture.
ROUTE_MARKER = "labkit"
#: The fixtures that make a test a labkit test.
FIXTURES = ("labkit_conn", "labkit_backend")
TABLE_PREFIX = "labkit-t-"
#: ``--labkit-backend none``: labkit routes nothing and gives no ``labkit_conn``.
NONE = "none"
BACKEND_NAMES = ("embedded", "local", "aws", NONE)
#: ``--labkit-routing``: per labkit test at send time (the default), or the whole session's environment.
PER_TEST = "test"
ENVIRONMENT = "environment"
ROUTING_MODES = (PER_TEST, ENVIRONMENT)
#: The variables that already name a DynamoDB endpoint for botocore, most specific first.
ENDPOINT_VARS = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
#: Set to the URL the plugin routed clients to (environment routing), so a child process (an xdist
#: worker, a pytest run in a subprocess) that inherits the variables knows they were labkit's.
ENV_ROUTED = "LABKIT_ROUTED_URL"
#: Where ``--labkit-artifacts`` gets its writer (the race lab's; imported only when the option is given).
ARTIFACTS_MODULE = "labkit.artifacts"
_STATE = pytest.StashKey["LabkitSession"]()
_TEST_ROUTE = pytest.StashKey["Route | None"]()


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


def choose_backend(option: str | None, environ: Mapping[str, str], ini: str | None = None) -> str:
    """``--labkit-backend``, else the ``labkit_backend`` ini option, else ``LABKIT_BACKEND``, else the
    endpoint the environment names, else embedded."""
    if option:
        return _check_backend(option, "--labkit-backend")
    if ini:
        return _check_backend(ini, "labkit_backend (ini option)")
    if environ.get("LABKIT_BACKEND"):
        return _check_backend(environ["LABKIT_BACKEND"], "LABKIT_BACKEND")
    return _check_backend(user_endpoint(environ) or "embedded", "AWS_ENDPOINT_URL_DYNAMODB")


def _source(option: str | None, environ: Mapping[str, str], ini: str | None) -> str:
    """How messages name where the backend came from."""
    if option:
        return f"--labkit-backend {option}"
    if ini:
        return f"labkit_backend = {ini} (ini option)"
    if environ.get("LABKIT_BACKEND"):
        return f"LABKIT_BACKEND={environ['LABKIT_BACKEND']}"
    return "the default backend"


# ---------------------------------------------------------------- environment routing


@dataclass
class Routing:
    """Variables the plugin set in ``os.environ`` (restored at the end), and the URL clients go to."""

    url: str | None = None
    saved: dict[str, str | None] = field(default_factory=dict)

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


def region_configured() -> bool:
    """True when botocore finds a region (``AWS_DEFAULT_REGION``, the profile's config)."""
    import botocore.session

    try:
        return bool(botocore.session.Session().get_config_variable("region"))
    except Exception:  # a broken config file: botocore will say so when a client is created
        return True


def _default_region(into: Routing) -> None:
    if not region_configured():
        into.set("AWS_DEFAULT_REGION", C.LOCAL_REGION)


def route(backend: str) -> Routing:
    """Environment routing: every DynamoDB client created from now on goes to ``backend``, with
    credentials and a region when none are configured."""
    url = backend_url(backend)
    routing = Routing(url)
    if url is None:
        return routing
    from .intercept import endpoint_key

    if endpoint_key(os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")) != endpoint_key(url):  # else: the user's, kept
        routing.set("AWS_ENDPOINT_URL_DYNAMODB", url)
        routing.set(ENV_ROUTED, url)
    if not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE"):
        routing.set("AWS_ACCESS_KEY_ID", C.LOCAL_ACCESS_KEY)
        routing.set("AWS_SECRET_ACCESS_KEY", C.LOCAL_SECRET_KEY)
    _default_region(routing)
    return routing


def moto_mocking() -> bool:
    """True while moto's ``mock_aws`` is active (its botocore stubber is enabled)."""
    from .routing import moto_mocking as mocking

    return mocking()


class TableTracker:
    """Sees every CreateTable that reaches the lab; the tables a labkit test created are dropped after it."""

    def __init__(self, url: str) -> None:
        from .intercept import endpoint_key

        self.url = url
        self.key = endpoint_key(url)
        self.created: list[tuple[str, str]] | None = None  # (region, table) while a labkit test runs
        self.paused = 0  # inside a class/module/session-scoped fixture's setup
        self._clients: dict[str, Any] = {}

    def _ours(self, client: Any) -> bool:
        from .intercept import reached

        return reached(client) == self.key

    def before(self, client: Any, operation: str) -> None:
        return None

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
                    "dynamodb",
                    endpoint_url=self.url,
                    region_name=region,
                    aws_access_key_id=C.LOCAL_ACCESS_KEY,
                    aws_secret_access_key=C.LOCAL_SECRET_KEY,
                )
            with contextlib.suppress(ClientError, BotoCoreError):
                client.delete_table(TableName=name)


class Artifacts:
    """``--labkit-artifacts DIR``: the failing explorations of a failing test, written as files."""

    def __init__(self, directory: Path) -> None:
        try:
            self.module: Any = importlib.import_module(ARTIFACTS_MODULE)
        except ImportError as exc:
            raise pytest.UsageError(
                f"--labkit-artifacts needs {ARTIFACTS_MODULE}, which this labkit cannot import ({exc}); "
                "upgrade labkit, or drop the option"
            ) from exc
        self.directory = directory
        self.failed: list[Any] = []
        self.module.add_listener(self.seen)

    def seen(self, exploration: Any) -> None:
        if getattr(exploration, "passed", True) is False:
            self.failed.append(exploration)

    def write(self, nodeid: str) -> list[Path]:
        """Each failing exploration of the test, as ``<test id>[-N].race.json`` / ``.timeline.png``."""
        failed, self.failed = self.failed, []
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_.") or "test"
        written: list[Path] = []
        for i, exploration in enumerate(failed, 1):
            self.directory.mkdir(parents=True, exist_ok=True)
            written += self.module.write_artifacts(exploration, self.directory, stem if i == 1 else f"{stem}-{i}")
        return written

    def close(self) -> None:
        self.module.remove_listener(self.seen)


@dataclass
class LabkitSession:
    """What the plugin knows about the session; the heavy parts are made at the first labkit test."""

    backend: str
    source: str
    mode: str
    every_test: bool
    artifacts_dir: Path | None = None
    artifacts: Artifacts | None = None
    environment: Routing | None = None  # environment routing, or the session-wide default region
    base: Route | None = None  # the route on for the whole session (every test a labkit test)
    tracker: TableTracker | None = None
    controller: bool = False  # the xdist process that only hands out tests: routes nothing
    test_environment: Routing | None = None  # the default region of the labkit test running now
    _url: str | None = None
    _routed: list[Route] = field(default_factory=list)

    @property
    def lab(self) -> bool:
        """True when labkit tests are routed: a lab backend, not aws or none."""
        return self.backend not in ("aws", NONE)

    def url(self) -> str:
        if self._url is None:
            self._url = backend_url(self.backend)
            assert self._url is not None
            from .intercept import add_observer

            self.tracker = TableTracker(self._url)
            add_observer(self.tracker)
        return self._url

    def new_route(self, why: str) -> Route:
        from .routing import Route

        return Route(self.url(), why)

    def push(self, route: Route) -> None:
        from .routing import push

        push(route)
        self._routed.append(route)

    def pop(self, route: Route) -> None:
        from .routing import pop

        pop(route)
        with contextlib.suppress(ValueError):
            self._routed.remove(route)

    @contextlib.contextmanager
    def original(self) -> Iterator[None]:
        """The environment as it was before the plugin set anything (session-wide and for this test)."""
        with contextlib.ExitStack() as stack:
            for changed in (self.test_environment, self.environment):
                if changed is not None:
                    stack.enter_context(changed.original())
            yield

    def active(self) -> Route | None:
        """The route the plugin has on now (a labkit test, a fixture's teardown), or None."""
        return self._routed[-1] if self._routed else None

    def open(self) -> None:
        """Every test a labkit test: route from now on (before conftest files and test modules load)."""
        if self.mode == ENVIRONMENT:
            self.environment = route(self.backend)
        elif self.lab:
            self.environment = Routing()
            _default_region(self.environment)
        if self.lab:
            self.base = self.new_route(f"{self.source} makes every test a labkit test")
            self.push(self.base)

    def close(self) -> None:
        if self.base is not None:
            self.pop(self.base)
        if self.environment is not None:
            self.environment.restore()
        if self.tracker is not None:
            from .intercept import remove_observer

            remove_observer(self.tracker)
        if self.artifacts is not None:
            self.artifacts.close()


# ---------------------------------------------------------------- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labkit", "labkit: DynamoDB race checks")
    group.addoption(
        "--labkit-backend",
        default=None,
        metavar="BACKEND",
        help="make every test a labkit test, on this backend: embedded (default backend), local, "
        "aws (clients untouched), an http(s):// URL, or none (labkit off)",
    )
    group.addoption(
        "--labkit-routing",
        default=None,
        choices=ROUTING_MODES,
        help="test (default): route each labkit test's DynamoDB calls at send time; environment: "
        "set AWS_ENDPOINT_URL_DYNAMODB for the whole session (subprocesses inherit it)",
    )
    group.addoption(
        "--labkit-artifacts",
        default=None,
        metavar="DIR",
        help="write a failing test's failing race run there (<test id>.race.json, .timeline.png)",
    )
    parser.addini("labkit_backend", "as --labkit-backend (every test a labkit test)", default="")
    parser.addini("labkit_routing", "as --labkit-routing: test (default) or environment", default="")


def _xdist_controller(config: pytest.Config, namespace: Any) -> bool:
    """True in the process that only hands tests to xdist workers (each worker routes for itself)."""
    return not os.environ.get("PYTEST_XDIST_WORKER") and bool(getattr(namespace, "numprocesses", None))


def _start(config: pytest.Config, namespace: Any) -> None:
    if _STATE in config.stash:
        return
    option = getattr(namespace, "labkit_backend", None)
    ini = str(config.getini("labkit_backend") or "").strip() or None
    backend = choose_backend(option, os.environ, ini)
    mode = getattr(namespace, "labkit_routing", None) or str(config.getini("labkit_routing") or "").strip()
    mode = mode.lower() or PER_TEST
    if mode not in ROUTING_MODES:
        raise pytest.UsageError(f"labkit_routing (ini option): unknown mode {mode!r}; choose one of: test, environment")
    artifacts = getattr(namespace, "labkit_artifacts", None)
    if artifacts and Path(artifacts).exists() and not Path(artifacts).is_dir():
        raise pytest.UsageError(f"--labkit-artifacts: {artifacts} is a file, not a folder; name a folder")
    every = backend != NONE and (mode == ENVIRONMENT or bool(option or ini))
    state = LabkitSession(
        backend, _source(option, os.environ, ini), mode, every, Path(artifacts).resolve() if artifacts else None
    )
    config.stash[_STATE] = state
    state.controller = _xdist_controller(config, namespace)
    if every and not state.controller:
        state.open()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Check the options, and route before conftest.py and the test modules are imported when asked to."""
    _start(early_config, early_config.known_args_namespace)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{ROUTE_MARKER}: a labkit test: its DynamoDB calls bound for AWS go to the labkit backend",
    )
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*backends): run the test once per labkit backend (embedded, local, aws or a URL); "
        "backends other than --labkit-backend's are skipped when unreachable",
    )
    _start(config, config.option)  # a plugin loaded late (conftest's pytest_plugins)
    state = config.stash[_STATE]
    if state.artifacts_dir is not None and state.artifacts is None and not state.controller:
        state.artifacts = Artifacts(state.artifacts_dir)  # after conftest.py: the race lab's listeners


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


def _state(config: pytest.Config) -> LabkitSession | None:
    return config.stash.get(_STATE, None)


def labkit_reason(item: pytest.Item, state: LabkitSession) -> str | None:
    """Why ``item`` is a labkit test ("it uses labkit_conn"), or None when it is not one."""
    if state.every_test:
        return f"{state.source} makes every test a labkit test"
    names = getattr(item, "fixturenames", ())
    for name in FIXTURES:
        if name in names:
            return f"it uses {name}"
    for marker in (ROUTE_MARKER, MARKER):
        if item.get_closest_marker(marker) is not None:
            return f"it is marked @pytest.mark.{marker}"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    state = _state(request.config)
    route = state.active() if state is not None else None
    if state is None or route is None or fixturedef.scope == "function":
        return (yield)
    # A fixture wider than the test, set up while a labkit test runs: routed when torn down too
    # (finalizers run last-in first-out: push, the fixture's own teardown, pop).
    fixturedef.addfinalizer(lambda: state.pop(route))
    tracker = state.tracker
    if tracker is not None:
        tracker.paused += 1  # a table made for a whole class/module/session outlives the test
    try:
        return (yield)
    finally:
        if tracker is not None:
            tracker.paused -= 1
        fixturedef.addfinalizer(lambda: state.push(route))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = _state(item.config)
    if state is None:
        return
    if state.artifacts is not None:
        state.artifacts.failed = []
    why = labkit_reason(item, state)
    if why is None:
        return
    if state.backend == NONE:
        asked = why.removeprefix("it uses ").removeprefix("it is marked ")
        raise pytest.UsageError(
            f"{asked} needs a backend, and this run has {state.source} (labkit off); "
            "choose embedded, local, aws or a URL, or leave the option out"
        )
    if not state.lab:
        return  # aws: nothing routed
    test_route = None if state.every_test else state.new_route(why)
    if test_route is not None:
        state.push(test_route)
        state.test_environment = Routing()
        _default_region(state.test_environment)
    item.stash[_TEST_ROUTE] = test_route
    if state.tracker is not None:
        state.tracker.created = []


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        state = _state(item.config)
        if state is not None and _TEST_ROUTE in item.stash:
            tracker = state.tracker
            if tracker is not None and tracker.created is not None:
                tables, tracker.created = tracker.created, None
                tracker.drop(tables)
            test_route = item.stash[_TEST_ROUTE]
            if test_route is not None:
                state.pop(test_route)
            if state.test_environment is not None:
                state.test_environment.restore()
                state.test_environment = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    state = _state(item.config)
    artifacts = state.artifacts if state is not None else None
    if artifacts is not None and artifacts.failed and report.failed:
        written = artifacts.write(item.nodeid)
        if written:
            report.sections.append(("labkit artifacts", "\n".join(str(path) for path in written)))
    return report


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

    def __init__(self, state: LabkitSession | None) -> None:
        self.known: dict[str, Connection | Exception] = {}
        self.state = state

    def get(self, backend: str) -> Connection:
        from .backend import connect
        from .errors import BackendUnavailable, ConfigurationError

        if backend not in self.known:
            try:
                if _is_url(backend):
                    self.known[backend] = connect(endpoint_url=backend)
                elif backend == "aws" and self.state is not None:
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
def _labkit_connections(pytestconfig: pytest.Config) -> _Connections:
    return _Connections(_state(pytestconfig))


@pytest.fixture
def labkit_backend(request: pytest.FixtureRequest) -> str:
    """The labkit backend this test runs on: ``--labkit-backend``, or one of the marker's backends."""
    param: Any = getattr(request, "param", None)
    state = _state(request.config)
    return str(param) if param is not None else (state.backend if state is not None else "embedded")


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

    state = _state(request.config)
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
    "ARTIFACTS_MODULE",
    "BACKEND_NAMES",
    "ENDPOINT_VARS",
    "ENVIRONMENT",
    "ENV_ROUTED",
    "FIXTURES",
    "MARKER",
    "NONE",
    "PER_TEST",
    "ROUTE_MARKER",
    "ROUTING_MODES",
    "TABLE_PREFIX",
    "Artifacts",
    "LabkitSession",
    "Routing",
    "TableTracker",
    "backend_url",
    "choose_backend",
    "labkit_backend",
    "labkit_conn",
    "labkit_reason",
    "moto_mocking",
    "region_configured",
    "route",
    "user_endpoint",
]
