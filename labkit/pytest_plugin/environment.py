"""Environment routing: the variables the plugin sets for a whole session (``--labkit-routing environment``)
or a labkit test (a default region), restored at the end; and the URL a backend's clients use.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..shared import constants as C
from ..shared.backend_choice import located
from .options import ENV_ROUTED


@dataclass
class EnvironmentOverrides:
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
    choice = located(backend, backend, os.environ)  # where connect(backend) goes: one resolver
    if choice.backend != "embedded" or choice.url is not None:
        return choice.url  # a URL, local's, a `labkit lab`/`labkit serve`'s embedded endpoint, or None
    from ..embedded import reserve_shared_endpoint

    return reserve_shared_endpoint()


def region_configured() -> bool:
    """True when botocore finds a region (``AWS_DEFAULT_REGION``, the profile's config)."""
    import botocore.session

    try:
        return bool(botocore.session.Session().get_config_variable("region"))
    except Exception:  # a broken config file: botocore will say so when a client is created
        return True


def default_region(into: EnvironmentOverrides) -> None:
    if not region_configured():
        into.set("AWS_DEFAULT_REGION", C.LOCAL_REGION)


def route(backend: str) -> EnvironmentOverrides:
    """Environment routing: every DynamoDB client created from now on goes to ``backend``, with
    credentials and a region when none are configured."""
    url = backend_url(backend)
    routing = EnvironmentOverrides(url)
    if url is None:
        return routing
    from ..shared.intercept import endpoint_key

    if endpoint_key(os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")) != endpoint_key(url):  # else: the user's, kept
        routing.set("AWS_ENDPOINT_URL_DYNAMODB", url)
        routing.set(ENV_ROUTED, url)
    if not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE"):
        routing.set("AWS_ACCESS_KEY_ID", C.LOCAL_ACCESS_KEY)
        routing.set("AWS_SECRET_ACCESS_KEY", C.LOCAL_SECRET_KEY)
    default_region(routing)
    return routing


__all__ = [
    "EnvironmentOverrides",
    "backend_url",
    "default_region",
    "region_configured",
    "route",
]
