"""Which backend and which routing a session asked for: the options' names, values and checks.

``--labkit-backend``, else the ``labkit_backend`` ini option, else ``LABKIT_BACKEND``, else the endpoint
the environment names, else ``embedded`` (:func:`choose_backend`); anything else is a usage error.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

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


def is_url(value: str) -> bool:
    return value.startswith(("http://", "https://")) and len(value.split("://", 1)[1]) > 0


def check_backend(value: str, where: str) -> str:
    name = value.strip()
    if name.lower() in BACKEND_NAMES:
        return name.lower()
    if is_url(name):
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
        return check_backend(option, "--labkit-backend")
    if ini:
        return check_backend(ini, "labkit_backend (ini option)")
    if environ.get("LABKIT_BACKEND"):
        return check_backend(environ["LABKIT_BACKEND"], "LABKIT_BACKEND")
    return check_backend(user_endpoint(environ) or "embedded", "AWS_ENDPOINT_URL_DYNAMODB")


def source_of(option: str | None, environ: Mapping[str, str], ini: str | None) -> str:
    """How messages name where the backend came from."""
    if option:
        return f"--labkit-backend {option}"
    if ini:
        return f"labkit_backend = {ini} (ini option)"
    if environ.get("LABKIT_BACKEND"):
        return f"LABKIT_BACKEND={environ['LABKIT_BACKEND']}"
    return "the default backend"


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
    "choose_backend",
    "is_url",
    "source_of",
    "user_endpoint",
]
