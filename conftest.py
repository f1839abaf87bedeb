"""Repository-wide pytest configuration: how nbval runs the notebooks (conventions: docs/notebooks.md),
and the order the test loop's xdist workers get their files in (tools/loop_order.py).

The notebooks' kernels share one embedded endpoint per pytest process, as every kernel of
``labkit lab`` shares the one it started (``LABKIT_EMBEDDED_URL``), unless a ``LABKIT_*`` variable
already chooses where they go (DynamoDB Local in CI). A kernel started on its own, with its own
endpoint, is what ``tools/notebooks.py`` runs and tests/lessons/test_notebook_sources.py checks.

stderr differs from run to run (kernel paths, warnings), so it is never compared.
Only cells marked ``# NBVAL_CHECK_OUTPUT`` compare their output (``--nbval-lax``);
every cell still fails the run if it raises, which is how lessons assert themselves.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _tool(name: str) -> Any:
    """``tools/<name>.py`` (scripts, not a package), registered as tests.conftest.load_tool does."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


loop_order = _tool("loop_order")
_kernels_endpoint: Any = None


class _ScopeSeconds:
    """``--write-scope-seconds``, on the controller: every report's duration, written at the end."""

    def __init__(self) -> None:
        self.durations: list[tuple[str, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations.append((report.nodeid, report.duration))

    def pytest_sessionfinish(self) -> None:
        loop_order.record(self.durations)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-scope-seconds",
        action="store_true",
        help=f"record each file's seconds in {loop_order.RECORD.name}, the xdist workers' order (longest first)",
    )


def pytest_configure(config: pytest.Config) -> None:
    gc.set_threshold(*loop_order.GC_THRESHOLDS)
    if hasattr(config.option, "loadscopereorder") and loop_order.RECORD.exists():
        config.option.loadscopereorder = False  # xdist hands scopes out in collection order: ours, below
    if config.getoption("write_scope_seconds") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ScopeSeconds(), "scope-seconds")


def pytest_collectstart(collector: Any) -> None:
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """A notebook's kernel starts in its first cell's setup (nbval): it inherits the variable then."""
    global _kernels_endpoint
    if item.path.suffix != ".ipynb":
        yield
        return
    from labkit.shared.backend import ENV_BACKEND, ENV_EMBEDDED_URL, ENV_ENDPOINT_URL

    if any(os.environ.get(name) for name in (ENV_BACKEND, ENV_ENDPOINT_URL, ENV_EMBEDDED_URL)):
        yield  # the variable already says where a kernel's labkit.connect() goes
        return
    if _kernels_endpoint is None:
        from labkit.embedded import start_endpoint

        _kernels_endpoint = start_endpoint()
    os.environ[ENV_EMBEDDED_URL] = _kernels_endpoint.url
    try:
        yield
    finally:
        del os.environ[ENV_EMBEDDED_URL]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seconds = loop_order.load() if hasattr(config, "workerinput") else {}
    if seconds:  # an xdist worker: the controller hands scopes out in this order
        order = loop_order.longest_first([item.nodeid for item in items], seconds)
        items[:] = [items[index] for index in order]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the process holds once collected (modules, botocore's models, the items) is frozen: a full
    collection then walks only what the tests made, not every object imported (decision 232)."""
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _kernels_endpoint is not None:
        _kernels_endpoint.stop()
