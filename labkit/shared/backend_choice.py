"""Which backend labkit talks to: ONE resolver, shared by :func:`labkit.connect` and the pytest plugin.

A backend is a name (``embedded``, ``local``, ``aws``, or ``none``: labkit off, the plugin's) or the
http(s):// URL of any DynamoDB-compatible endpoint. The first of these that is set wins:

1. the caller's own choice: ``connect(backend)`` or ``connect(endpoint_url=...)`` (both at once is
   refused), the plugin's ``--labkit-backend`` or ``labkit_backend`` ini option;
2. ``LABKIT_ENDPOINT_URL`` (a URL);
3. ``LABKIT_BACKEND`` (a name or a URL; set beside ``LABKIT_ENDPOINT_URL`` naming something else: refused);
4. the caller's default: ``embedded`` (the plugin's: the endpoint ``AWS_ENDPOINT_URL_DYNAMODB`` names).

Where a named backend lives: ``embedded`` at ``LABKIT_EMBEDDED_URL`` when a ``labkit lab``/``labkit
serve`` set it (else an endpoint started in the process), ``local`` at ``LABKIT_LOCAL_URL`` or
http://localhost:8000, ``aws`` wherever the AWS SDK's configuration says.

This module imports the error tree only: the plugin resolves when pytest starts, and stays inert
(no botocore, no boto3) until a test uses labkit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from . import constants as C
from .errors import ConfigurationError

ENV_BACKEND = "LABKIT_BACKEND"
ENV_ENDPOINT_URL = "LABKIT_ENDPOINT_URL"
ENV_EMBEDDED_URL = "LABKIT_EMBEDDED_URL"
ENV_LOCAL_URL = "LABKIT_LOCAL_URL"

#: The backends ``connect()`` reaches by name.
BACKENDS = ("embedded", "local", "aws")
#: ``none``: labkit stays out (the plugin routes nothing and gives no ``labkit_conn``).
NONE = "none"
BACKEND_NAMES = (*BACKENDS, NONE)
#: The backend a URL names.
ENDPOINT = "endpoint"


def is_url(value: str) -> bool:
    return value.startswith(("http://", "https://")) and len(value.split("://", 1)[1]) > 0


def parse_backend(value: str, where: str) -> str:
    """A backend's name (lower case) or URL (no trailing slash); a :class:`ConfigurationError` naming
    ``where`` the value came from, and the choices, for anything else."""
    name = value.strip()
    if name.lower() in BACKEND_NAMES:
        return name.lower()
    if is_url(name):
        return name.rstrip("/")
    raise ConfigurationError(
        f"{where}: unknown labkit backend {value!r}; choose one of: {', '.join(BACKEND_NAMES)}, "
        "or an http(s):// URL of a DynamoDB-compatible endpoint (e.g. http://127.0.0.1:8000)"
    )


@dataclass(frozen=True)
class BackendChoice:
    """The backend chosen, where its clients go, and where the choice came from."""

    #: ``embedded``, ``local``, ``aws``, ``none``, or ``endpoint`` (a URL was named).
    backend: str
    #: The endpoint's URL; local's; the shared embedded endpoint's (``LABKIT_EMBEDDED_URL``). None for
    #: aws, none, and an embedded endpoint still to start.
    url: str | None
    #: How messages name where it came from: ``LABKIT_ENDPOINT_URL=http://...``, ``the default``, ...
    source: str

    @property
    def name(self) -> str:
        """The backend as the plugin spells it: the URL for an endpoint, else the name."""
        return self.url if self.backend == ENDPOINT and self.url else self.backend


def located(backend: str, source: str, environ: Mapping[str, str]) -> BackendChoice:
    """A parsed backend (a name or a URL) with where its clients go."""
    if is_url(backend):
        return BackendChoice(ENDPOINT, backend, source)
    if backend == "local":
        return BackendChoice("local", environ.get(ENV_LOCAL_URL) or C.DYNAMODB_LOCAL_URL, source)
    if backend == "embedded":
        shared = environ.get(ENV_EMBEDDED_URL)
        return BackendChoice("embedded", shared.rstrip("/") if shared else None, source)
    return BackendChoice(backend, None, source)


def _url(value: str, where: str) -> str:
    url = value.strip().rstrip("/")
    if not is_url(url):
        raise ConfigurationError(f"{where}: {value!r} is not an http(s):// URL of a DynamoDB-compatible endpoint")
    return url


def _same(backend: str, where: str, url: str, url_where: str) -> bool:
    """True when ``backend`` agrees with the endpoint URL given beside it (``endpoint``, or that URL)."""
    return backend.strip().lower() == ENDPOINT or parse_backend(backend, where) == parse_backend(url, url_where)


def resolve_backend(
    backend: str | None = None,
    *,
    endpoint_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    default: str = "embedded",
    default_source: str = "the default backend",
    where: str = "backend",
) -> BackendChoice:
    """The backend to use: the caller's ``backend`` or ``endpoint_url``, else ``LABKIT_ENDPOINT_URL``,
    else ``LABKIT_BACKEND``, else ``default`` (a name or a URL, from ``default_source``). ``where`` names
    the caller's argument in messages. Raises :class:`ConfigurationError` for an unknown backend, or
    two different choices at one level."""
    env = os.environ if environ is None else environ
    if backend and endpoint_url:
        if not _same(backend, where, endpoint_url, "endpoint_url"):
            raise ConfigurationError(
                f"both backend={backend!r} and an endpoint URL ({endpoint_url}) were given; choose one"
            )
        backend = None
    if endpoint_url:
        return located(_url(endpoint_url, "endpoint_url"), f"endpoint_url={endpoint_url}", env)
    if backend:
        return located(parse_backend(backend, where), f"{where} {backend}", env)
    url, named = env.get(ENV_ENDPOINT_URL), env.get(ENV_BACKEND)
    if url:
        chosen = _url(url, ENV_ENDPOINT_URL)
        if named and not _same(named, ENV_BACKEND, chosen, ENV_ENDPOINT_URL):
            raise ConfigurationError(
                f"both {ENV_BACKEND}={named} and {ENV_ENDPOINT_URL}={url} are set; unset one "
                f"({ENV_ENDPOINT_URL} names an endpoint, {ENV_BACKEND} a backend)"
            )
        return located(chosen, f"{ENV_ENDPOINT_URL}={url}", env)
    if named:
        return located(parse_backend(named, ENV_BACKEND), f"{ENV_BACKEND}={named}", env)
    return located(parse_backend(default, default_source), default_source, env)


__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "ENDPOINT",
    "ENV_BACKEND",
    "ENV_EMBEDDED_URL",
    "ENV_ENDPOINT_URL",
    "ENV_LOCAL_URL",
    "NONE",
    "BackendChoice",
    "is_url",
    "located",
    "parse_backend",
    "resolve_backend",
]
