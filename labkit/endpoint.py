"""The embedded DynamoDB endpoint: moto's DynamoDB behind a small HTTP server on 127.0.0.1.

Every request is applied under one lock, so a condition check and its write
never interleave with another request and a cancelled transaction leaves
nothing behind (moto alone guarantees neither under concurrency). On top of
moto the endpoint does what DynamoDB does and moto does not: it honours
ClientRequestToken, reports ConsumedCapacity by DynamoDB's rules, and rejects
unused expression placeholders and empty or oversized transactions. The hot
operations skip moto's generic HTTP layer (see :mod:`labkit._moto_fast`).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from ._dynamo_rules import TokenMemory, check_request, fingerprint
from ._metering import METERED, Meter
from .endpoint_hooks import Hook
from .errors import BackendUnavailable, ConfigurationError

LOOPBACK = "127.0.0.1"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Response = tuple[int, dict[str, str], bytes]


class DynamoEngine:
    """Applies DynamoDB JSON requests to moto's backend, one at a time.

    ``clock`` (seconds, monotonic) dates ClientRequestTokens; tests inject a fake one.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, hooks: Iterable[Hook] | None = None) -> None:
        from ._moto_fast import MotoCore
        from .throughput import PartitionThrottle

        self.lock = threading.RLock()
        self.core = MotoCore()
        self.tokens = TokenMemory(clock)
        self.clock = clock
        # default: the partition throttle, which acts only on tables tagged labkit:partition-scale
        self.hooks: list[Hook] = list(hooks) if hooks is not None else [PartitionThrottle()]

    def add_hook(self, hook: Hook) -> None:
        with self.lock:
            self.hooks.append(hook)

    def remove_hook(self, hook: Hook) -> None:
        with self.lock:
            self.hooks.remove(hook)

    def handle(self, headers: dict[str, str], body: bytes) -> Response:
        """Answer one request: (HTTP status, headers, body). ``headers`` keys are lower-case."""
        from ._moto_fast import error_response

        operation = headers.get("x-amz-target", "").rpartition(".")[2]
        params = _json_object(body)
        if params is not None:
            problem = check_request(operation, params)
            if problem is not None:
                return error_response("ValidationException", problem)
        with self.lock:
            return self._apply(operation, params, headers, body)

    def _apply(self, operation: str, params: dict[str, Any] | None, headers: dict[str, str], body: bytes) -> Response:
        from ._moto_fast import error_response, response

        who = self.core.who(headers)
        if params is None or who is None or operation not in METERED:
            return self.core.dispatch(operation, params, headers, body)
        meter = Meter(self.core, who, operation, params, always=bool(self.hooks))
        info = None
        if self.hooks:
            from ._hook_sites import request_info

            info = request_info(self.core, who, operation, params)
            now = self.clock()
            for hook in list(self.hooks):
                rejection = hook.before(info, now)
                if rejection is not None:
                    return error_response(rejection.code, rejection.message, rejection.status, **rejection.extra)
        token = params.get("ClientRequestToken") if operation == "TransactWriteItems" else None
        if token is None:
            result = self.core.dispatch(operation, params, headers, body, meter.finish, who)
            self._after(info, meter, result)
            return result

        print_ = fingerprint(params)
        earlier = self.tokens.recall(token)
        if earlier is not None:
            if earlier.fingerprint != print_:
                return error_response(
                    "IdempotentParameterMismatchException",
                    f"ClientRequestToken {token!r} was used within the last "
                    f"{self.tokens.ttl_seconds:g} seconds for a different request; "
                    "use a new token for a new request",
                )
            payload: dict[str, Any] = {}
            if meter.wanted:
                payload["ConsumedCapacity"] = meter.replay(earlier.keys)
            return response(200, payload)
        result = self.core.dispatch(operation, params, headers, body, meter.finish, who)
        if result[0] == 200:
            self.tokens.remember(token, print_, _action_keys(self.core, who, params))
        self._after(info, meter, result)
        return result

    def _after(self, info: Any, meter: Meter, result: Response) -> None:
        if info is not None and result[0] == 200:
            consumed, now = meter.by_partition(), self.clock()
            for hook in list(self.hooks):
                hook.after(info, consumed, now)


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        params = json.loads(body) if body else {}
    except ValueError:
        return None
    return params if isinstance(params, dict) else None


def _action_keys(core: Any, who: tuple[str, str], params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    keys = []
    for action in params.get("TransactItems", []):
        ((_, body),) = action.items()
        key = body.get("Key") or core.key_of(who, body["TableName"], body["Item"])
        keys.append((body["TableName"], json.dumps(key, sort_keys=True)))
    return tuple(keys)


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
        try:
            status, resp_headers, body = self.engine.handle(headers, b"".join(chunks))
        except Exception as exc:  # a bug in labkit or moto: answer in DynamoDB's shape, keep serving
            from ._moto_fast import error_response

            status, resp_headers, body = error_response(
                "InternalServerError",
                f"labkit's embedded endpoint failed on this request ({type(exc).__name__}: {exc}); "
                "please report it with the request that caused it",
                status=500,
            )
        raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in resp_headers.items() if k.lower() != "content-length"
        ]
        # An explicit length: otherwise uvicorn answers chunked, in two writes, ~2 ms slower.
        raw_headers.append((b"content-length", str(len(body)).encode("ascii")))
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": body})


def _bind(host: str, port: int) -> socket.socket:
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


class EmbeddedEndpoint:
    """A DynamoDB-compatible HTTP endpoint running in a background thread.

    >>> with EmbeddedEndpoint() as ep:   # doctest: +SKIP
    ...     boto3.client("dynamodb", endpoint_url=ep.url, ...)
    """

    def __init__(
        self,
        port: int = 0,
        engine: DynamoEngine | None = None,
        *,
        host: str = LOOPBACK,
        hooks: Iterable[Hook] | None = None,
    ) -> None:
        self.engine = engine or DynamoEngine(hooks=hooks)
        self._requested_port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
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

    def start(self, timeout: float = 10.0) -> EmbeddedEndpoint:
        import uvicorn

        sock = self._socket = _bind(self.host, self._requested_port)
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
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None
        self._socket = None

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
