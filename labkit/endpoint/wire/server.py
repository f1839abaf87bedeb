"""The HTTP side: a bare ASGI app under uvicorn, on 127.0.0.1 only.

* the whole body is read before the engine sees it, at most ``MAX_REQUEST_BODY_BYTES``
  (413 otherwise), each chunk within ``body_timeout`` seconds (a half-sent body is answered
  408 and the connection closed, instead of holding it forever); headers that do not finish
  within ``body_timeout`` seconds close the connection;
* idle keep-alive connections are closed after ``keep_alive`` seconds;
* an exception that escapes the engine is an engine bug: 500 ``InternalServerError`` to the
  client, and its traceback on this process's stderr.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

from ...shared import constants as C
from ...shared.errors import BackendUnavailable, ConfigurationError
from .encode import Response, error_response

if TYPE_CHECKING:  # the engine is handed in; the server imports none of it
    from ..engine import DynamoEngine

LOOPBACK = "127.0.0.1"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class Engine(Protocol):
    def handle(self, headers: Mapping[str, str], body: bytes) -> Response: ...


class _App:
    """Reads the whole body, hands it to the engine, writes the answer."""

    def __init__(self, engine: Engine, body_timeout: float) -> None:
        self.engine = engine
        self.body_timeout = body_timeout

    async def _body(self, receive: Receive) -> bytes | Response:
        chunks = []
        size = 0
        while True:
            try:  # a deadline on this task: wait_for made a task per read (most bodies arrive in the first)
                async with asyncio.timeout(self.body_timeout):
                    message = await receive()
            except TimeoutError:
                return error_response(
                    "RequestTimeout",
                    f"the request body did not arrive within {self.body_timeout:g} s; send the whole body",
                    status=408,
                )
            if message["type"] == "http.disconnect":
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > C.MAX_REQUEST_BODY_BYTES:
                return error_response(
                    "RequestEntityTooLarge",
                    f"the request body is larger than {C.MAX_REQUEST_BODY_BYTES} bytes",
                    status=413,
                )
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await self._body(receive)
        close = not isinstance(body, bytes)
        if isinstance(body, bytes):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                status, resp_headers, payload = self.engine.handle(headers, body)
            except Exception as exc:  # an engine bug: answer in DynamoDB's shape, log it, keep serving
                print(f"labkit endpoint: engine bug on {headers.get('x-amz-target', '?')}: {exc!r}", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)
                status, resp_headers, payload = error_response(
                    "InternalServerError",
                    f"labkit's embedded endpoint failed on this request ({type(exc).__name__}: {exc}); "
                    "please report it with the request that caused it",
                    status=500,
                )
        else:
            status, resp_headers, payload = body
        raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in resp_headers.items() if k.lower() != "content-length"
        ]
        # An explicit length: otherwise uvicorn answers chunked, in two writes, ~2 ms slower.
        raw_headers.append((b"content-length", str(len(payload)).encode("ascii")))
        if close:
            raw_headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": payload})


def _protocol(timeout: float) -> Any:
    """uvicorn's httptools protocol, plus a timer for headers that never finish (uvicorn has none).

    Armed when a connection opens and when a request begins; disarmed when its headers are
    complete (the app then times the body). None if httptools is missing: uvicorn's default.
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] installs httptools
        return None

    class _Protocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(timeout, self.transport.close)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return _Protocol


def bind_loopback(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host`` (127.0.0.1 only) and ``port`` (0: any free port)."""
    if host != LOOPBACK:
        raise ConfigurationError(
            f"labkit's endpoint listens on {LOOPBACK} only, not {host!r}: it has no "
            f"authentication, so other machines must not reach it. Use host={LOOPBACK!r}."
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # else 40 ms: Nagle + delayed ACK
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart despite TIME_WAIT
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


#: The last guard against a uvicorn that never finishes starting: on an already-listening loopback socket its
#: startup takes milliseconds, so even a machine at load 10 is far from a minute. start() returns at the event.
START_TIMEOUT_SECONDS = 60.0


def _announcing_server(config: Any) -> Any:
    """A uvicorn server whose ``startup_over`` event is set when its startup ends, started or failed."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            self.startup_over = threading.Event()

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().startup(sockets=sockets)
            finally:
                self.startup_over.set()

    return AnnouncingServer(config)


class EmbeddedEndpoint:
    """A DynamoDB-compatible HTTP endpoint serving ``engine`` from a background thread.

    :func:`labkit.embedded.start_endpoint` builds one around an engine with labkit's defaults::

        with start_endpoint() as ep:
            boto3.client("dynamodb", endpoint_url=ep.url, ...)
    """

    def __init__(
        self,
        port: int = 0,
        engine: DynamoEngine | None = None,
        *,
        host: str = LOOPBACK,
        body_timeout: float = C.REQUEST_BODY_TIMEOUT_SECONDS,
        keep_alive: float = C.IDLE_KEEP_ALIVE_SECONDS,
        sock: socket.socket | None = None,
    ) -> None:
        """``sock``: serve on this listening socket (from :func:`bind_loopback`) instead of binding one."""
        if engine is None:
            raise ConfigurationError(
                "EmbeddedEndpoint serves the engine it is given; pass engine=..., or call "
                "labkit.embedded.start_endpoint(port) for an engine with labkit's defaults"
            )
        self.engine = engine
        self.body_timeout = body_timeout
        self.keep_alive = keep_alive
        self._requested_port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._given = sock
        self._ended: threading.Event | None = None
        self.host = host
        self.port = 0

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of the listening socket, as the operating system reports it."""
        if self._socket is None:
            raise BackendUnavailable("the embedded endpoint is not running; call start() first")
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> EmbeddedEndpoint:
        """Serve from a background thread; return once uvicorn's startup is over (an event, not a poll)."""
        import uvicorn

        given, self._given = self._given, None
        if given is not None and given.getsockname()[0] != LOOPBACK:
            raise ConfigurationError(f"labkit's endpoint listens on {LOOPBACK} only, not {given.getsockname()[0]!r}")
        sock = self._socket = given if given is not None else bind_loopback(self.host, self._requested_port)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            _App(self.engine, self.body_timeout),
            log_level="warning",
            lifespan="off",
            ws="none",  # DynamoDB speaks no WebSocket: uvicorn then imports no WebSocket protocol at startup
            access_log=False,
            timeout_keep_alive=max(1, round(self.keep_alive)),
            **({"http": protocol} if (protocol := _protocol(self.body_timeout)) is not None else {}),
        )
        server = self._server = _announcing_server(config)
        ended = self._ended = threading.Event()

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except SystemExit:
                pass  # uvicorn's way of saying its startup failed: start() reports it as BackendUnavailable
            finally:
                server.startup_over.set()  # a run that failed before its startup ended wakes start() too
                ended.set()

        self._thread = threading.Thread(target=serve, name="labkit-endpoint", daemon=True)
        self._thread.start()
        if not server.startup_over.wait(timeout) or not server.started:
            url = self.url
            self.stop()  # the socket and the engine are released; the thread, if hung, is a daemon
            raise BackendUnavailable(f"the embedded endpoint did not start on {url}")
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the serving thread ends (:meth:`stop`, or a crash); True once it has ended."""
        ended = self._ended
        return ended is None or ended.wait(timeout)

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            # uvicorn waits for open connections to finish; a client that hangs mid-request holds it until the
            # body timeout. Past this bound, stop() goes on (the thread is a daemon): no wait on the machine's speed.
            self._thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None
        self._socket = None
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()  # an engine with a data directory releases it

    def __enter__(self) -> EmbeddedEndpoint:
        return self if self.running else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["LOOPBACK", "Engine", "EmbeddedEndpoint", "bind_loopback"]
