"""The control client (``labkit.engine_plugins.faults.control``): one kept connection per thread, never a resend.

A run of the race lab makes a few control calls (settling replication and images); each thread keeps
its connection to the endpoint (decision 230). A connection the server closed gets a new one before the
request is sent; a request whose answer is lost is raised, not sent
again (``DeliverReplications`` is not idempotent). Checked against a plain socket server that counts
the connections it accepts and the requests it reads.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from labkit.engine_plugins.faults.control import control
from labkit.shared.errors import ValidationError


def http_answer(status: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


OK = http_answer("200 OK", b'{"Ok": "1"}')
REFUSED = http_answer("400 Bad Request", b'{"__type": "x#ValidationException", "message": "bad seconds given!"}')


@dataclass
class Server:
    """A loopback HTTP/1.1 server: answers each request with ``answer``, then keeps or closes the connection."""

    answer: bytes = OK
    close_after_answer: bool = False
    drop_before_answer: bool = False
    accepted: int = 0
    requests: int = 0
    closed: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            buffered = b""
            while True:
                while b"\r\n\r\n" not in buffered:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffered += chunk
                head, _, rest = buffered.partition(b"\r\n\r\n")
                length = int(
                    next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                buffered = rest[length:]
                self.requests += 1
                if self.drop_before_answer:
                    return
                conn.sendall(self.answer)
                if self.close_after_answer:
                    conn.close()
                    self.closed.release()
                    return


@contextmanager
def server(**options: bool | bytes) -> Iterator[Server]:
    made = Server(**options)  # type: ignore[arg-type]
    threading.Thread(target=made.serve, daemon=True).start()
    try:
        yield made
    finally:
        made.sock.close()


def test_control__three_calls_on_one_thread__one_connection() -> None:
    """The thread's connection is kept between calls: three requests, one accept."""
    with server() as s:
        answers = [control(s.url, "GetFaults", {}) for _ in range(3)]
    assert answers == [{"Ok": "1"}] * 3
    assert (s.accepted, s.requests) == (1, 3)


def test_control__server_closed_the_idle_connection__next_call_opens_a_new_one() -> None:
    """A connection the server closed after answering is noticed before the next request is sent."""
    answers = []
    with server(close_after_answer=True) as s:
        for _ in range(3):
            answers.append(control(s.url, "GetFaults", {}))
            assert s.closed.acquire(timeout=30)  # the server's close has happened before the next call
    assert answers == [{"Ok": "1"}] * 3
    assert (s.accepted, s.requests) == (3, 3)


def test_control__answer_lost__raised_and_not_sent_again() -> None:
    """The server reads the request and closes without answering: one request, RemoteDisconnected raised."""
    with server(drop_before_answer=True) as s:
        with pytest.raises(http.client.RemoteDisconnected):
            control(s.url, "DeliverReplications", {"All": True})
        assert (s.accepted, s.requests) == (1, 1)


def test_control__refused__validation_error_with_the_servers_message_and_the_connection_kept() -> None:
    """A 400 answer is the server's message as a ValidationError; the connection stays usable."""
    with server(answer=REFUSED) as s:
        for _ in range(2):
            with pytest.raises(ValidationError, match="bad seconds given!"):
                control(s.url, "AdvanceClock", {"Seconds": -1})
    assert (s.accepted, s.requests) == (1, 2)


def test_control__two_threads__a_connection_each() -> None:
    """Connections are per thread: two threads, two accepts, however the calls interleave."""
    with server() as s:
        threads = [
            threading.Thread(target=lambda: [control(s.url, "GetFaults", {}) for _ in range(2)]) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert (s.accepted, s.requests) == (2, 4)
