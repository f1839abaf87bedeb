"""Which backend and which routing a session asked for: the options' names, values and checks.

``--labkit-backend``, else the ``labkit_backend`` ini option, else ``LABKIT_ENDPOINT_URL``, else
``LABKIT_BACKEND``, else the endpoint the environment names, else ``embedded`` (:func:`choose_backend`):
labkit's one resolver, :func:`labkit.shared.backend_choice.resolve_backend`, the one ``labkit.connect()`` uses.
Anything else is a usage error.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ..shared.backend_choice import BACKEND_NAMES, NONE, BackendChoice, is_url, parse_backend, resolve_backend
from ..shared.errors import ConfigurationError

MARKER = "labkit_backends"
#: ``@pytest.mark.labkit``: a labkit test without the fixture.
ROUTE_MARKER = "labkit"
#: The fixtures that make a test a labkit test.
FIXTURES = ("labkit_conn", "labkit_backend")
TABLE_PREFIX = "labkit-t-"
#: ``--labkit-routing``: per labkit test at send time (the default), or the whole session's environment.
PER_TEST = "test"
ENVIRONMENT = "environment"
ROUTING_MODES = (PER_TEST, ENVIRONMENT)
#: The variables that already name a DynamoDB endpoint for botocore, most specific first.
ENDPOINT_VARS = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
#: Set to the URL the plugin routed clients to (environment routing), so a child process (an xdist
#: worker, a pytest run in a subprocess) that inherits the variables knows they were labkit's.
ENV_ROUTED = "LABKIT_ROUTED_URL"


def check_backend(value: str, where: str) -> str:
    """A backend's name or URL (:func:`labkit.shared.backend_choice.parse_backend`); anything else a usage error."""
    try:
        return parse_backend(value, where)
    except ConfigurationError as exc:
        raise pytest.UsageError(str(exc)) from None


def user_endpoint(environ: Mapping[str, str]) -> str | None:
    """The DynamoDB endpoint the environment names, unless labkit's plugin set it (in a parent process)."""
    for var in ENDPOINT_VARS:
        url = environ.get(var)
        if url and url != environ.get(ENV_ROUTED):
            return url
    return None


def choice_of(option: str | None, environ: Mapping[str, str], ini: str | None = None) -> BackendChoice:
    """labkit's one resolver (:func:`labkit.shared.backend_choice.resolve_backend`, as ``labkit.connect()``):
    ``--labkit-backend``, else the ``labkit_backend`` ini option, else ``LABKIT_ENDPOINT_URL``, else
    ``LABKIT_BACKEND``, else the endpoint the environment names for botocore, else embedded."""
    named = user_endpoint(environ)
    source, default = ("AWS_ENDPOINT_URL_DYNAMODB", named) if named else ("the default backend", "embedded")
    given, where = (option, "--labkit-backend") if option else (ini, "labkit_backend (ini option)")
    try:
        return resolve_backend(given or None, environ=environ, default=default, default_source=source, where=where)
    except ConfigurationError as exc:
        raise pytest.UsageError(str(exc)) from None


def choose_backend(option: str | None, environ: Mapping[str, str], ini: str | None = None) -> str:
    """The backend's name, or its URL (:func:`choice_of`)."""
    return choice_of(option, environ, ini).name


def source_of(option: str | None, environ: Mapping[str, str], ini: str | None) -> str:
    """How messages name where the backend came from."""
    if option:
        return f"--labkit-backend {option}"
    if ini:
        return f"labkit_backend = {ini} (ini option)"
    return choice_of(option, environ, ini).source


__all__ = [
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
    "check_backend",
    "choice_of",
    "choose_backend",
    "is_url",
    "source_of",
    "user_endpoint",
]
