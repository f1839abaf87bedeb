"""labkit's one backend resolver: labkit.connect() and the pytest plugin choose the same backend."""

from __future__ import annotations

import pytest

import labkit
from labkit.pytest_plugin.options import choose_backend
from labkit.shared.backend import Connection
from labkit.shared.backend_choice import BackendChoice, resolve_backend
from labkit.shared.errors import ConfigurationError

URL = "http://127.0.0.1:9"


def test_resolve__argument_then_endpoint_url_then_labkit_backend_then_default() -> None:
    """The order: the caller's argument, LABKIT_ENDPOINT_URL, LABKIT_BACKEND, the default."""
    env = {"LABKIT_ENDPOINT_URL": f"{URL}/", "LABKIT_BACKEND": "endpoint"}
    assert resolve_backend("local", environ=env) == BackendChoice("local", "http://localhost:8000", "backend local")
    assert resolve_backend(environ=env) == BackendChoice("endpoint", URL, f"LABKIT_ENDPOINT_URL={URL}/")
    assert resolve_backend(environ={"LABKIT_BACKEND": "AWS"}) == BackendChoice("aws", None, "LABKIT_BACKEND=AWS")
    assert resolve_backend(environ={}) == BackendChoice("embedded", None, "the default backend")


def test_resolve__embedded_and_local__located_by_their_variables() -> None:
    """embedded lives where `labkit lab`/`labkit serve` said (LABKIT_EMBEDDED_URL), local at LABKIT_LOCAL_URL."""
    env = {"LABKIT_EMBEDDED_URL": f"{URL}/", "LABKIT_LOCAL_URL": "http://127.0.0.1:8001"}
    assert resolve_backend(environ=env).url == URL
    assert resolve_backend("local", environ=env).url == "http://127.0.0.1:8001"


def test_resolve__url_as_labkit_backend__is_an_endpoint() -> None:
    """LABKIT_BACKEND may name a URL, as the plugin always allowed: connect() takes it too."""
    assert resolve_backend(environ={"LABKIT_BACKEND": URL}).name == URL


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LABKIT_BACKEND": "local", "LABKIT_ENDPOINT_URL": URL}, "both LABKIT_BACKEND=local and LABKIT_ENDPOINT_URL="),
        ({"LABKIT_ENDPOINT_URL": "localhost:8000"}, "LABKIT_ENDPOINT_URL: 'localhost:8000' is not an http(s):// URL"),
        ({"LABKIT_BACKEND": "dynamo"}, "LABKIT_BACKEND: unknown labkit backend 'dynamo'; choose one of: embedded,"),
    ],
)
def test_resolve__contradictory_or_unknown_settings__configuration_error(env: dict[str, str], message: str) -> None:
    """Two variables naming different backends, a URL that is not one, an unknown name: refused, saying which."""
    with pytest.raises(ConfigurationError) as info:
        resolve_backend(environ=env)
    assert message in str(info.value)


def test_plugin_and_connect__same_environment__same_backend() -> None:
    """The plugin's session backend is the resolver's, for each way the environment can name one."""
    for env in ({}, {"LABKIT_ENDPOINT_URL": URL}, {"LABKIT_BACKEND": "local"}, {"LABKIT_BACKEND": URL}):
        assert choose_backend(None, env) == resolve_backend(environ=env).name, env


def test_connect__backend_argument_with_endpoint_url_set__argument_wins(
    conn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """connect('embedded') while LABKIT_ENDPOINT_URL is set: the argument wins (the plugin's labkit_conn
    passes its backend so; it used to fail with 'both backend=... and an endpoint URL were given')."""
    monkeypatch.setenv("LABKIT_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LABKIT_EMBEDDED_URL", str(conn.endpoint_url))
    chosen = labkit.connect("embedded")
    assert (chosen.backend, chosen.endpoint_url) == ("embedded", conn.endpoint_url)


def test_connect__labkit_backend_none__configuration_error_saying_labkit_is_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LABKIT_BACKEND=none (the plugin's "labkit off") gives connect() nowhere to go: a clear error."""
    monkeypatch.delenv("LABKIT_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("LABKIT_BACKEND", "none")
    with pytest.raises(ConfigurationError, match=r"LABKIT_BACKEND=none turns labkit off \(none\)"):
        labkit.connect()
