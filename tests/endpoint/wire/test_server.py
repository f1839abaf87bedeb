"""The HTTP side: half-sent bodies time out, idle connections close, oversized bodies are refused,
DynamoDB Streams requests are served; the socket listens on 127.0.0.1 only, a taken port says what
to do, another process reaches the endpoint. Real sockets to a real endpoint."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import labkit
from labkit.embedded import start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.shared.backend import Connection
from tests.endpoint.clients import raw_client, streams_client
from tests.endpoint.tables import make_table

SAFETY = 20.0  # seconds a socket waits before the test gives up (never reached when the server behaves)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(body_timeout=0.5, keep_alive=1) as ep:
        yield ep


def _connect(ep: EmbeddedEndpoint) -> socket.socket:
    sock = socket.create_connection((ep.host, ep.port), timeout=SAFETY)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _request(body: bytes, length: int | None = None, target: str = "DynamoDB_20120810.ListTables") -> bytes:
    return (
        f"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: {target}\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nContent-Length: {len(body) if length is None else length}\r\n\r\n"
    ).encode() + body


def test_server__body_shorter_than_content_length__408_and_connection_closed(endpoint: EmbeddedEndpoint) -> None:
    with _connect(endpoint) as sock:
        sock.sendall(_request(b'{"Lim', length=100))
        answer = _read_all(sock)  # returns only because the server closes the connection
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"RequestTimeout" in answer


def test_server__headers_never_finished__connection_closed(endpoint: EmbeddedEndpoint) -> None:
    with _connect(endpoint) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n")
        assert _read_all(sock) == b""  # returns only because the server closes the connection


def test_server__connection_that_sends_nothing__closed(endpoint: EmbeddedEndpoint) -> None:
    with _connect(endpoint) as sock:
        assert _read_all(sock) == b""


def test_server__idle_keep_alive_connection__closed_by_the_server(endpoint: EmbeddedEndpoint) -> None:
    with _connect(endpoint) as sock:
        sock.sendall(_request(b"{}"))
        answer = _read_all(sock)  # one answer, then the idle connection is closed
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.count(b"HTTP/1.1") == 1


def test_server__content_length_over_the_limit__413(endpoint: EmbeddedEndpoint) -> None:
    from labkit.shared import constants as C

    with _connect(endpoint) as sock:
        sock.sendall(_request(b"", length=C.MAX_REQUEST_BODY_BYTES + 1))
        sock.sendall(b"{" * (C.MAX_REQUEST_BODY_BYTES + 1))
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413")


def test_streams__a_consumer_reads_the_writes_of_a_stream_enabled_table(endpoint: EmbeddedEndpoint) -> None:
    """ListStreams, DescribeStream, GetShardIterator, GetRecords on the endpoint's URL."""
    client = raw_client(endpoint.url)
    table = make_table(client, range_key=False, stream=True)
    client.put_item(TableName=table, Item={"PK": {"S": "a"}, "n": {"N": "1"}})
    client.update_item(
        TableName=table,
        Key={"PK": {"S": "a"}},
        UpdateExpression="SET n = :two",
        ExpressionAttributeValues={":two": {"N": "2"}},
    )
    streams = streams_client(endpoint.url)
    arn = next(s["StreamArn"] for s in streams.list_streams(TableName=table)["Streams"])
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY"]
    assert records[1]["dynamodb"]["NewImage"]["n"] == {"N": "2"}


# --- the socket -------------------------------------------------------------------------------


def test_socket__listens_on_loopback_only(endpoint: EmbeddedEndpoint) -> None:
    """The bound socket's address is 127.0.0.1."""
    assert endpoint.address == ("127.0.0.1", endpoint.port)


def test_socket__any_other_host__configuration_error() -> None:
    """Asking for 0.0.0.0 is refused before anything is bound."""
    with pytest.raises(labkit.ConfigurationError, match="127.0.0.1 only"):
        start_endpoint(host="0.0.0.0")


def test_socket__port_in_use__backend_unavailable_saying_what_to_do() -> None:
    """A taken port raises BackendUnavailable that names the port and suggests another."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(labkit.BackendUnavailable) as caught:
            start_endpoint(port)
    assert f"port {port}" in str(caught.value)
    assert "choose another port" in str(caught.value)


def test_socket__another_process_with_a_plain_boto3_client__lists_tables(
    endpoint: EmbeddedEndpoint, lab: Connection
) -> None:
    """Like `aws dynamodb list-tables --endpoint-url ...`: a separate process sees the tables."""
    code = (
        "import boto3, sys; c = boto3.client('dynamodb', endpoint_url=sys.argv[1], "
        "region_name='us-east-1', aws_access_key_id='x', aws_secret_access_key='y'); "
        "print(' '.join(c.list_tables()['TableNames']))"
    )
    out = subprocess.run([sys.executable, "-c", code, endpoint.url], capture_output=True, text=True, timeout=60)
    assert lab.table_name in out.stdout.split(), out.stderr


def test_lifecycle__started_then_stopped__wait_blocks_while_serving_and_returns_once_stopped() -> None:
    """wait() is the event a caller blocks on (``labkit serve``'s main thread): not over while the endpoint
    serves, over once stop() ended its thread."""
    ep = start_endpoint()
    try:
        assert ep.running and ep.wait(0) is False
    finally:
        ep.stop()
    assert ep.wait(0) is True


def test_lifecycle__startup_fails__backend_unavailable_without_waiting_out_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A startup that fails (uvicorn exits its thread with SystemExit, as it does when it cannot serve) ends
    start()'s wait at once: the startup's end is an event, so a generous timeout costs nothing."""
    import uvicorn

    async def fails(self: Any, sockets: Any = None) -> None:
        raise SystemExit(3)

    monkeypatch.setattr(uvicorn.Server, "startup", fails)
    with pytest.raises(labkit.BackendUnavailable, match="did not start"):
        start_endpoint()
