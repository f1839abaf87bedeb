"""Backend selection: one entry point, clear errors, no silent fallback."""

from __future__ import annotations

import socket

import pytest

import labkit
from labkit.shared import constants as C
from labkit.shared.backend import Connection


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connect__no_setting__uses_embedded_endpoint_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing configured, labkit starts its own endpoint on 127.0.0.1."""
    for var in ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    conn = labkit.connect()
    assert conn.backend == "embedded"
    assert conn.endpoint_url is not None and conn.endpoint_url.startswith("http://127.0.0.1:")
    assert conn.client.list_tables()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_connect__unknown_backend__names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown LABKIT_BACKEND is a ConfigurationError listing the valid names."""
    monkeypatch.setenv("LABKIT_BACKEND", "dynamo-local")
    with pytest.raises(labkit.ConfigurationError) as info:
        labkit.connect()
    assert "LABKIT_BACKEND: unknown labkit backend 'dynamo-local'" in str(info.value)
    assert "embedded, local, aws" in str(info.value)


def test_connect__local_unreachable__says_how_to_start_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB Local not running: BackendUnavailable naming docker compose, no fallback."""
    monkeypatch.setenv("LABKIT_LOCAL_URL", f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(labkit.BackendUnavailable) as info:
        labkit.connect("local")
    assert "docker compose up -d dynamodb" in str(info.value)


def test_connect__endpoint_url_unreachable__raises_backend_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """LABKIT_ENDPOINT_URL pointing at nothing fails at connect time with the URL in the message."""
    url = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv("LABKIT_ENDPOINT_URL", url)
    with pytest.raises(labkit.BackendUnavailable) as info:
        labkit.connect()
    assert url in str(info.value)


def test_connect__endpoint_url__is_used_as_given(conn: Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any DynamoDB-compatible endpoint can be named with LABKIT_ENDPOINT_URL."""
    monkeypatch.setenv("LABKIT_ENDPOINT_URL", str(conn.endpoint_url))
    other = labkit.connect()
    assert (other.backend, other.endpoint_url) == ("endpoint", conn.endpoint_url)


def test_connect__endpoint_url_and_backend_both_given__refuses(conn: Connection) -> None:
    """Naming a backend and an endpoint URL at once is ambiguous, so it is refused."""
    with pytest.raises(labkit.ConfigurationError, match="choose one"):
        labkit.connect("local", endpoint_url=conn.endpoint_url)


def test_connect__embedded_url_from_lab__is_shared(conn: Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels started by `labkit lab` attach to its endpoint through LABKIT_EMBEDDED_URL."""
    monkeypatch.setenv("LABKIT_EMBEDDED_URL", str(conn.endpoint_url))
    assert labkit.connect().endpoint_url == conn.endpoint_url


def test_connect__aws_without_region__says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """backend aws with no region configured: a ConfigurationError naming AWS_REGION."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(labkit.ConfigurationError, match="AWS_REGION"):
        labkit.connect("aws")


def test_connect__aws_without_credentials__says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    """backend aws with no credentials: a ConfigurationError, and nothing secret printed."""
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    with pytest.raises(labkit.ConfigurationError, match="no AWS credentials"):
        labkit.connect("aws")


def test_connect__aws_with_credentials__never_shows_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The aws Connection's repr and description contain no key material."""
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret-example")
    conn = labkit.connect("aws")
    text = repr(conn) + conn.describe()
    assert conn.backend == "aws" and conn.region == "eu-central-1"
    assert "AKIAEXAMPLEKEYID0000" not in text and "secret-example" not in text


def test_connect__table_without_prefix__refused() -> None:
    """labkit only works on tables named labkit-*, so it never touches someone else's table."""
    with pytest.raises(labkit.ConfigurationError, match="must start with 'labkit-'"):
        labkit.connect(table_name="orders")


def test_new_client__each_call__returns_a_distinct_client(conn: Connection) -> None:
    """Fresh clients on demand, one per thread, as boto3 advises."""
    assert conn.new_client() is not conn.new_client()
    assert conn.client is conn.client


def test_new_client__throttled_every_time__3_attempts_1_call_and_2_retries() -> None:
    """A labkit client makes 3 attempts per call (botocore's standard mode: 1 call + 2 retries), as the lessons say."""
    from botocore.exceptions import ClientError

    from labkit.embedded import start_endpoint
    from labkit.engine_plugins.faults import FaultRules

    rules = FaultRules.parse([{"operation": "GetItem", "error": "ProvisionedThroughputExceededException"}])
    with start_endpoint(faults=rules) as endpoint:
        private = labkit.connect(endpoint_url=endpoint.url, table_name="labkit-retries", probe=False)
        labkit.ensure_table(private)
        client = private.new_client()
        with pytest.raises(ClientError) as info:
            client.get_item(TableName="labkit-retries", Key={"PK": {"S": "x"}, "SK": {"S": "y"}})
    assert info.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert info.value.response["ResponseMetadata"]["RetryAttempts"] == 2
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}  # type: ignore[attr-defined]


def test_new_session__every_connection__one_shared_loader_read_once_and_search_paths_kept_once() -> None:
    """Every session labkit makes is on one botocore data loader: a second connection's first client
    reads no JSON file again, and boto3's data folder is on the path once."""
    from botocore.loaders import JSONFileLoader

    from labkit.shared.backend import new_session

    first = Connection("embedded", "http://127.0.0.1:9", "us-east-1")
    first.new_client()
    reads: list[str] = []
    original = JSONFileLoader.load_file

    def counting(self: JSONFileLoader, file_path: str) -> object:
        reads.append(file_path)
        return original(self, file_path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(JSONFileLoader, "load_file", counting)  # the read from disk, below the loader's cache
        second = Connection("embedded", "http://127.0.0.1:9", "eu-west-1")
        second.new_client()
    assert reads == []  # served from the shared loader's cache
    aws = Connection("aws", None, "eu-west-1")
    sessions = (first._session, second._session, aws._session, new_session())
    loaders = {id(s._session.get_component("data_loader")) for s in sessions if s is not None}
    assert len(loaders) == 1
    paths = new_session()._session.get_component("data_loader").search_paths
    assert len(paths) == len(set(paths))


def test_connection__local_backends_share_one_session__aws_a_session_each() -> None:
    """Decision 233: a local endpoint's clients get labkit's keys, region and config explicitly, so one
    session serves every local connection; each AWS connection resolves its own credential chain."""
    from labkit.shared.backend import local_session

    local = [
        Connection(backend, "http://127.0.0.1:9", region)
        for backend, region in (("embedded", "us-east-1"), ("local", "eu-west-1"), ("endpoint", "us-west-2"))
    ]
    assert all(conn._session is local_session() for conn in local)
    first, second = Connection("aws", None, "eu-west-1"), Connection("aws", None, "eu-west-1")
    assert first._session is not second._session and first._session is not local_session()
    clients = [conn.new_client() for conn in local]
    assert [c.meta.region_name for c in clients] == ["us-east-1", "eu-west-1", "us-west-2"]
    keys = {c._request_signer._credentials.access_key for c in clients}  # type: ignore[attr-defined]
    assert keys == {C.LOCAL_ACCESS_KEY}
