"""labkit/shared/routing.py: while a route is on, DynamoDB calls bound for AWS go to the lab, signed for it.

These run in this process against the embedded endpoint, with clients built the way a team builds
them (no endpoint, sometimes no credentials); tests/plugin/ runs the plugin that pushes the routes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import NoCredentialsError

from labkit.shared import routing
from labkit.shared.backend import Connection
from labkit.shared.errors import ConfigurationError
from labkit.shared.intercept import endpoint_key, reached


@pytest.fixture
def lab(conn: Connection) -> Iterator[routing.Route]:
    route = routing.Route(str(conn.endpoint_url), "this test pushed it")
    routing.push(route)
    try:
        yield route
    finally:
        routing.pop(route)


def sent(client: Any) -> list[Any]:
    """The prepared requests the client sends (botocore's before-send), recorded."""
    seen: list[Any] = []
    client.meta.events.register("before-send.dynamodb", lambda request, **_: seen.append(request))
    return seen


@pytest.fixture
def anonymous(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """Clients with no endpoint and no credentials anywhere (no variables, no files, no metadata service)."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # the chain's last step, off loopback

    def make(region: str = "eu-west-1") -> Any:
        return boto3.session.Session().client("dynamodb", region_name=region)

    return make


@pytest.mark.parametrize(
    ("url", "aws"),
    [
        ("https://dynamodb.eu-west-1.amazonaws.com", True),
        ("https://123456789012.ddb.us-east-1.amazonaws.com/", True),
        ("https://dynamodb.cn-north-1.amazonaws.com.cn", True),
        ("https://dynamodb.us-east-1.api.aws", True),
        ("https://dynamodb-fips.us-gov-west-1.amazonaws.com", True),
        ("http://127.0.0.1:8000", False),
        ("http://localhost:8000", False),
        ("https://amazonaws.com.evil.example", False),
        (None, False),
    ],
)
def test_is_aws_endpoint__the_partitions_dns_suffixes(url: str | None, aws: bool) -> None:
    """AWS's hosts are told by the DNS suffixes of botocore's partitions, nothing else."""
    assert routing.is_aws_endpoint(url) is aws


def test_no_route__calls_untouched__no_credentials_fail_as_botocore_says(anonymous: Any) -> None:
    """Without a route, a client bound for AWS is left alone (here: it has no credentials, and says so)."""
    client = anonymous()
    with pytest.raises(NoCredentialsError):
        client.list_tables()
    assert routing.active_route() is None
    assert reached(client) == endpoint_key("https://dynamodb.eu-west-1.amazonaws.com")


def test_route_on__aws_bound_call_goes_to_the_lab__dummy_signed_for_its_host(
    lab: routing.Route, anonymous: Any
) -> None:
    """A client with no endpoint and no credentials: sent to the lab, signed as labkit for the client's region."""
    client = anonymous("eu-west-1")
    assert client._request_signer._credentials is None
    requests = sent(client)
    assert "TableNames" in client.list_tables()
    (request,) = requests
    assert request.url == f"{lab.url}/"
    auth = request.headers["Authorization"].decode()
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=labkit/") and "/eu-west-1/dynamodb/aws4_request" in auth
    assert reached(client) == lab.key


def test_route_on__a_client_with_keys__signs_with_its_own(lab: routing.Route) -> None:
    """Dummy credentials only when a client has none: a client with keys keeps them."""
    client = boto3.session.Session().client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="team-key", aws_secret_access_key="team-secret"
    )
    requests = sent(client)
    client.list_tables()
    assert requests[0].url.startswith(lab.url)
    assert requests[0].headers["Authorization"].startswith(b"AWS4-HMAC-SHA256 Credential=team-key/")


def test_route_on__a_client_with_its_own_endpoint__not_rerouted(lab: routing.Route, conn: Connection) -> None:
    """A client given an endpoint (here another URL on the lab's host) keeps it; reached() says where."""
    other = str(conn.endpoint_url).replace("127.0.0.1", "localhost")
    client = boto3.session.Session().client(
        "dynamodb", endpoint_url=other, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    requests = sent(client)
    client.list_tables()
    assert requests[0].url.startswith(other)
    assert reached(client) == endpoint_key(other)


def test_push_pop__nested_routes__the_innermost_is_on_and_the_outer_comes_back(conn: Connection) -> None:
    """Routes stack: a fixture's teardown route inside a test's, each popped by identity."""
    outer, inner = routing.Route(str(conn.endpoint_url), "outer"), routing.Route(str(conn.endpoint_url), "inner")
    routing.push(outer)
    routing.push(inner)
    assert routing.active_route() is inner
    routing.pop(inner)
    assert routing.active_route() is outer
    routing.pop(outer)
    assert routing.active_route() is None


def test_route_on__moto_mock_active__refused_before_sending(
    lab: routing.Route, monkeypatch: pytest.MonkeyPatch, conn: Connection
) -> None:
    """mock_aws and a route at once: the call would reach the lab, not moto, so it is refused, naming why.

    moto's mock is stood in for (its stubber's ``enabled`` flag): starting the real one resets moto's
    state, which holds the embedded engine's tables, for every test in this process
    (tests/plugin/test_plugin_routing.py runs the real one, in a subprocess).
    """
    monkeypatch.setattr(routing, "moto_mocking", lambda: True)
    client = boto3.session.Session().client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    requests = sent(client)
    with pytest.raises(ConfigurationError) as info:
        client.list_tables()
    assert str(info.value).startswith(
        "moto's mock_aws is active in a test that labkit routes (this test pushed it): labkit sends its "
        f"DynamoDB calls to {lab.url}, so this ListTables would not reach moto's mock"
    )
    assert requests == []  # nothing sent
