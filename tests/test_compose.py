"""docker-compose.yml, checked by structure (no Docker engine runs on the machines that test this)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


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
    assert "http://localhost:8000" in " ".join(check["test"])
    assert check["retries"] >= 1


def test_compose__lab__runs_notebooks_against_dynamodb_local(compose: dict[str, Any]) -> None:
    """The lab service uses the local backend, points at the dynamodb service, and waits for it to be healthy."""
    lab = compose["services"]["lab"]
    assert lab["environment"]["LABKIT_BACKEND"] == "local"
    assert lab["environment"]["LABKIT_LOCAL_URL"] == "http://dynamodb:8000"
    assert lab["depends_on"]["dynamodb"]["condition"] == "service_healthy"
    assert lab["command"][:3] == ["python3", "bootstrap.py", "lab"]  # run for real in test_first_run.py
    assert "--ServerApp.port=8888" in lab["command"]  # the published port: jupyter must not move to another
