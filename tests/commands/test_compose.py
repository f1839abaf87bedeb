"""docker-compose.yml, checked by structure (no Docker engine runs on the machines that test this)."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from labkit.shared.backend import Connection

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_compose__images__are_pinned(compose: dict[str, Any]) -> None:
    """Every image names an exact tag: no `latest`, no bare name."""
    for name, service in compose["services"].items():
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest", f"{name}: image {image!r} is not pinned"
        assert any(ch.isdigit() for ch in tag), f"{name}: tag {tag!r} is not a version"


def test_compose__dynamodb__is_the_official_image(compose: dict[str, Any]) -> None:
    """DynamoDB Local comes from Amazon's own image."""
    assert compose["services"]["dynamodb"]["image"].startswith("amazon/dynamodb-local:")


def test_compose__ports__published_on_loopback_only(compose: dict[str, Any]) -> None:
    """Every published port is bound to 127.0.0.1 on the host."""
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: port {port!r} is not loopback-only"


def test_compose__dynamodb__publishes_8000_with_a_healthcheck(compose: dict[str, Any]) -> None:
    """DynamoDB Local is on 127.0.0.1:8000, where the local backend looks, and has a healthcheck."""
    dynamodb = compose["services"]["dynamodb"]
    assert "127.0.0.1:8000:8000" in dynamodb["ports"]
    check = dynamodb["healthcheck"]
    assert check["test"][:3] == ["CMD", "bash", "-c"]
    assert "/dev/tcp/127.0.0.1/8000" in check["test"][3]
    assert check["retries"] >= 1


def _healthcheck_script(compose: dict[str, Any], port: int) -> str:
    """The healthcheck's bash script as the container runs it: compose's $$ -> $, 8000 -> port."""
    script = compose["services"]["dynamodb"]["healthcheck"]["test"][3]
    return str(script).replace("$$", "$").replace("/8000", f"/{port}")


def test_compose__dynamodb_healthcheck__uses_only_bash_builtins(compose: dict[str, Any]) -> None:
    """The image is not documented to ship curl or wget: the check is bash alone (decisions.md)."""
    script = compose["services"]["dynamodb"]["healthcheck"]["test"][3]
    for tool in ("curl", "wget", "nc ", "python", "aws "):
        assert tool not in script, f"the healthcheck calls {tool.strip()!r}, which the image may not ship"
    assert re.search(r"(?<!\$)\$(?!\$)", script) is None, "a single $ would be interpolated by compose; write $$"


def test_compose__dynamodb_healthcheck__passes_when_http_answers_fails_when_nothing_listens(
    conn: Connection, compose: dict[str, Any]
) -> None:
    """Run the healthcheck's script with bash against a live HTTP endpoint (exit 0) and a closed port (not 0)."""
    port = int(str(conn.endpoint_url).rsplit(":", 1)[1])
    up = subprocess.run(["bash", "-c", _healthcheck_script(compose, port)], capture_output=True, timeout=30)
    assert up.returncode == 0, up.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = subprocess.run(["bash", "-c", _healthcheck_script(compose, closed)], capture_output=True, timeout=30)
    assert down.returncode != 0


def test_compose__lab__runs_notebooks_against_dynamodb_local(compose: dict[str, Any]) -> None:
    """The lab service uses the local backend, points at the dynamodb service, and waits for it to be healthy."""
    lab = compose["services"]["lab"]
    assert lab["environment"]["LABKIT_BACKEND"] == "local"
    assert lab["environment"]["LABKIT_LOCAL_URL"] == "http://dynamodb:8000"
    assert lab["depends_on"]["dynamodb"]["condition"] == "service_healthy"
    assert lab["command"][:3] == ["python3", "bootstrap.py", "lab"]  # run for real in test_first_run.py
    assert "--ServerApp.port=8888" in lab["command"]  # the published port: jupyter must not move to another
