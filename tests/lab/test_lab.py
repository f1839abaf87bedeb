"""labkit.lab: the first cell of every lesson, and what it prints."""

from __future__ import annotations

import pytest

from labkit.lab import banner, setup_lab
from labkit.shared.backend import Connection


def test_setup_lab__embedded__prints_one_line_with_the_table_and_the_endpoint_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The banner names the lesson's table, says it is empty and on-demand, and gives the endpoint's URL
    (a learner may point the AWS CLI at it); versions are `labkit doctor`'s business, not every lesson's."""
    conn = setup_lab("banner-test", backend="embedded")
    out = capsys.readouterr().out
    assert out.splitlines() == [banner(conn)]
    assert "table labkit-banner-test (on-demand, empty)" in out
    assert f"at {conn.endpoint_url} " in out and conn.endpoint_url and conn.endpoint_url.startswith("http://127.0.0.1:")
    assert "moto's DynamoDB" in out  # what the embedded endpoint is, in one phrase
    assert "boto3=" not in out and "python=" not in out


@pytest.mark.parametrize(
    ("backend", "url", "expected"),
    [
        ("local", "http://localhost:8000", "on DynamoDB Local at http://localhost:8000"),
        ("aws", None, "on AWS DynamoDB in eu-west-1"),
    ],
)
def test_banner__other_backends__say_where(backend: str, url: str | None, expected: str) -> None:
    """DynamoDB Local shows its URL; AWS its region (and nothing about credentials)."""
    conn = Connection(backend, url, "eu-west-1", "labkit-x")
    assert banner(conn) == f"table labkit-x (on-demand, empty) {expected}"
