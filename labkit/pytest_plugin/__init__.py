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
    without ``host``, client created at import time (:mod:`labkit.shared.routing`). Calls of every other
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
    test. Without it: the ``labkit_backend`` ini option (the same), else ``LABKIT_ENDPOINT_URL``,
    else ``LABKIT_BACKEND`` (the backend of labkit tests only), else the endpoint
    ``AWS_ENDPOINT_URL_DYNAMODB`` (or ``AWS_ENDPOINT_URL``) already names, else ``embedded``: the
    resolver ``labkit.connect()`` uses (:mod:`labkit.shared.backend_choice`). Anything else stops pytest
    at startup with a usage error.
Tables
    Tables that code creates during a labkit test (its function-scoped fixtures, its body, its
    teardown) on a lab backend (embedded, local, a URL) are dropped after the test; tables
    created at import time or by class-, module- or session-scoped fixtures live as long as their
    scope. On ``aws`` labkit deletes only the ``labkit_conn`` tables it created itself.
``--labkit-artifacts DIR``
    A failing test whose ``explore`` failed writes the failing run's ``<test id>.race.json`` and
    ``<test id>.timeline.png`` there (:mod:`labkit.lab.artifacts`), named in the report.
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

This module holds the hooks; the rest is one module per job, every name re-exported here:
:mod:`~labkit.pytest_plugin.options` (which backend, which routing), ``environment`` (the
variables environment routing sets and restores), ``tables`` (the tables a labkit test made),
``artifacts`` (``--labkit-artifacts``), ``session`` (what the plugin knows of the session) and
``fixtures`` (``labkit_conn``, ``labkit_backend``).

A layer on top, beside the commands.

May import: shared, endpoint, engine_plugins, embedded, races, patterns, lab.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .artifacts import Artifacts
from .environment import EnvironmentOverrides, default_region
from .fixtures import _labkit_connections as _labkit_connections  # the fixture behind labkit_conn
from .fixtures import labkit_backend, labkit_conn
from .options import (
    ENVIRONMENT,
    FIXTURES,
    MARKER,
    NONE,
    PER_TEST,
    ROUTE_MARKER,
    ROUTING_MODES,
    check_backend,
    choose_backend,
    source_of,
)
from .state import STATE, PluginState, state_of

if TYPE_CHECKING:
    from ..shared.routing import Route

_TEST_ROUTE: pytest.StashKey[Route | None] = pytest.StashKey()


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
    if STATE in config.stash:
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
    state = PluginState(
        backend, source_of(option, os.environ, ini), mode, every, Path(artifacts).resolve() if artifacts else None
    )
    config.stash[STATE] = state
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
    state = config.stash[STATE]
    if state.artifacts_dir is not None and state.artifacts is None and not state.controller:
        state.artifacts = Artifacts(state.artifacts_dir)  # after conftest.py: the race lab's listeners


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.close()


def labkit_reason(item: pytest.Item, state: PluginState) -> str | None:
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
    state = state_of(request.config)
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
    state = state_of(item.config)
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
        state.test_environment = EnvironmentOverrides()
        default_region(state.test_environment)
    item.stash[_TEST_ROUTE] = test_route
    if state.tracker is not None:
        state.tracker.created = []


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        return (yield)
    finally:
        state = state_of(item.config)
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
    state = state_of(item.config)
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
    names = [check_backend(str(arg), where) for arg in marker.args]
    metafunc.parametrize("labkit_backend", names, indirect=True, ids=names)


__all__ = [
    "labkit_backend",
    "labkit_conn",
    "labkit_reason",
]
