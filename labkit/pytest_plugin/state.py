"""What the plugin knows about a pytest session: its backend and routing, made heavy only at the first labkit test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .artifacts import Artifacts
from .environment import EnvironmentOverrides, backend_url, default_region, route
from .options import ENVIRONMENT, NONE
from .tables import TableTracker

if TYPE_CHECKING:
    from ..shared.routing import Route

STATE = pytest.StashKey["PluginState"]()


@dataclass
class PluginState:
    """What the plugin knows about the session; the heavy parts are made at the first labkit test."""

    backend: str
    source: str
    mode: str
    every_test: bool
    artifacts_dir: Path | None = None
    artifacts: Artifacts | None = None
    environment: EnvironmentOverrides | None = None  # environment routing, or the session-wide default region
    base: Route | None = None  # the route on for the whole session (every test a labkit test)
    tracker: TableTracker | None = None
    controller: bool = False  # the xdist process that only hands out tests: routes nothing
    test_environment: EnvironmentOverrides | None = None  # the default region of the labkit test running now
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
            from ..shared.intercept import add_observer

            self.tracker = TableTracker(self._url)
            add_observer(self.tracker)
        return self._url

    def new_route(self, why: str) -> Route:
        from ..shared.routing import Route

        return Route(self.url(), why)

    def push(self, route: Route) -> None:
        from ..shared.routing import push

        push(route)
        self._routed.append(route)

    def pop(self, route: Route) -> None:
        from ..shared.routing import pop

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
            self.environment = EnvironmentOverrides()
            default_region(self.environment)
        if self.lab:
            self.base = self.new_route(f"{self.source} makes every test a labkit test")
            self.push(self.base)

    def close(self) -> None:
        if self.base is not None:
            self.pop(self.base)
        if self.environment is not None:
            self.environment.restore()
        if self.tracker is not None:
            from ..shared.intercept import remove_observer

            remove_observer(self.tracker)
        if self.artifacts is not None:
            self.artifacts.close()


def state_of(config: pytest.Config) -> PluginState | None:
    return config.stash.get(STATE, None)


__all__ = [
    "STATE",
    "PluginState",
    "state_of",
]
