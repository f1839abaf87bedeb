"""The embedded DynamoDB endpoint: moto's DynamoDB behind a small HTTP server on 127.0.0.1.

Every request is applied under one lock, so a condition check and its write
never interleave with another request and a cancelled transaction leaves
nothing behind (moto alone does not guarantee either under concurrency).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .errors import BackendUnavailable

LOOPBACK = "127.0.0.1"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class DynamoEngine:
    """Applies DynamoDB JSON requests to moto's backend, one at a time."""

    def __init__(self) -> None:
        self.lock = threading.RLock()

    def handle(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        from moto.core.request import Request
        from moto.dynamodb.responses import DynamoHandler

        request = Request.from_primitives("POST", f"http://{LOOPBACK}/", headers, body)
        with self.lock:
            status, resp_headers, resp_body = DynamoHandler.dispatch(request)
        if isinstance(resp_body, str):
            resp_body = resp_body.encode("utf-8")
        return int(status), {k: str(v) for k, v in resp_headers.items()}, resp_body


class _App:
    """A bare ASGI app: reads the whole body, hands it to the engine, writes the answer."""

    def __init__(self, engine: DynamoEngine) -> None:
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        status, resp_headers, body = self.engine.handle(headers, b"".join(chunks))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in resp_headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _bind(host: str, port: int) -> socket.socket:
    if host != LOOPBACK:
        raise ValueError(f"labkit's endpoint listens on {LOOPBACK} only, not {host!r}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BackendUnavailable(
            f"port {port} on {host} is already in use; stop whatever listens there, "
            f"or choose another port (e.g. `labkit serve --port {port + 1}`)"
        ) from exc
    sock.listen(128)
    return sock


class EmbeddedEndpoint:
    """A DynamoDB-compatible HTTP endpoint running in a background thread.

    >>> with EmbeddedEndpoint() as ep:   # doctest: +SKIP
    ...     boto3.client("dynamodb", endpoint_url=ep.url, ...)
    """

    def __init__(self, port: int = 0, engine: DynamoEngine | None = None) -> None:
        self.engine = engine or DynamoEngine()
        self._requested_port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.host = LOOPBACK
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> EmbeddedEndpoint:
        import uvicorn

        sock = _bind(self.host, self._requested_port)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            _App(self.engine),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_keep_alive=300,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="labkit-endpoint", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise BackendUnavailable(f"the embedded endpoint did not start on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> EmbeddedEndpoint:
        return self if self.running else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_shared: EmbeddedEndpoint | None = None
_shared_lock = threading.Lock()


def shared_endpoint() -> EmbeddedEndpoint:
    """The process-wide embedded endpoint, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = EmbeddedEndpoint().start()
        return _shared
