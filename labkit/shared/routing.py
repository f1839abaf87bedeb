"""Send-time routing: while a route is on, DynamoDB calls bound for AWS go to the lab's endpoint instead.

On the floor, beside :mod:`labkit.shared.intercept` (whose class-level wrapper it hooks into, as an
:class:`~labkit.shared.intercept.Observer`). The pytest plugin turns a route on for the duration of each
test that uses labkit (:func:`push` / :func:`pop`) and off for every other test, so moto's
``mock_aws`` and real AWS keep working beside it in one session.

How a call is routed. The first DynamoDB call a client makes while a route is on attaches three
handlers to that client's own event emitter (once; they read the route at call time, so a client
created at import time, before any route, is routed in every labkit test and left alone in the
others):

``before-call``
    botocore has resolved the endpoint (its endpoint rules, the client's region, FIPS, an account
    endpoint) into the request's URL. If that URL's host is one of AWS's (a DNS suffix of a
    partition in botocore's ``partitions.json``: ``amazonaws.com``, ``api.aws``, ...) the scheme,
    host and port are replaced with the lab's, before the request is signed: it is signed for the
    host it goes to. A client given its own endpoint (``endpoint_url=``, or
    ``AWS_ENDPOINT_URL_DYNAMODB``) is left alone: the race lab refuses it inside an actor when it
    is not the lab's (:func:`route_for` tells the race lab where a routed client's calls go).
``choose-signer`` and ``request-created`` (last)
    Only for a routed call whose client found no credentials (no keys, profile or role anywhere):
    botocore would fail with ``NoCredentialsError`` at signing, so the call is marked unsigned for
    botocore's signer and signed afterwards with labkit's dummy credentials (``labkit``/``labkit``,
    the account labkit's own clients use) for the client's region. A client with credentials
    signs with its own. Nothing is put in ``os.environ`` here.

A DynamoDB call while moto's ``mock_aws`` is active and a route is on is refused
(:class:`~labkit.shared.errors.ConfigurationError`, nothing sent): it would reach the lab, not moto.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import botocore
from botocore.auth import SigV4Auth
from botocore.credentials import Credentials
from botocore.loaders import create_loader

from . import constants as C
from . import intercept
from .errors import ConfigurationError

_SERVICE = "dynamodb"
#: Request-context keys: the lab URL a call was routed to; True when labkit signs it (no credentials).
ROUTED = "labkit_routed"
DUMMY_SIGNED = "labkit_dummy_signed"


@dataclass(frozen=True)
class Route:
    """Where routed calls go, and why (said in errors: "this test uses labkit_conn")."""

    url: str
    why: str = "a labkit route is on"

    @property
    def key(self) -> str | None:
        return intercept.endpoint_key(self.url)


_stack: list[Route] = []
_lock = threading.Lock()
#: clients whose events carry the routing handlers
_attached: weakref.WeakSet[Any] = weakref.WeakSet()
#: botocore's ``unique_id`` check is not atomic: two threads meeting a new client at once take turns
_attach_lock = threading.Lock()


def active_route() -> Route | None:
    """The route on now (the innermost pushed), or None."""
    return _stack[-1] if _stack else None


def push(route: Route) -> None:
    """Turn ``route`` on (until the matching :func:`pop`); hooks into the interception point once."""
    intercept.add_observer(_observer)
    intercept.add_reroute(route_for)
    with _lock:
        _stack.append(route)


def pop(route: Route) -> None:
    """Turn ``route`` off again (the last push of it); the route under it, if any, is on again."""
    with _lock:
        for i in range(len(_stack) - 1, -1, -1):
            if _stack[i] is route:
                del _stack[i]
                return


@functools.cache
def aws_dns_suffixes() -> tuple[str, ...]:
    """Every DNS suffix an AWS endpoint can have (each partition's, dual-stack included), from botocore's data."""
    partitions = create_loader().load_data("partitions").get("partitions", [])
    suffixes = {
        str(value).lower()
        for partition in partitions
        for key, value in partition.get("outputs", {}).items()
        if key in ("dnsSuffix", "dualStackDnsSuffix") and value
    }
    return tuple(sorted(suffixes))


def is_aws_endpoint(url: str | None) -> bool:
    """True when ``url``'s host is AWS's (``dynamodb.eu-west-1.amazonaws.com``, ``...api.aws``)."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    return any(host.endswith("." + suffix) for suffix in aws_dns_suffixes())


def route_for(client: Any) -> str | None:
    """Where a client's calls go while the current route is on (endpoint_key form); None: its own endpoint."""
    route = active_route()
    if route is None or not is_aws_endpoint(client.meta.endpoint_url):
        return None
    return route.key


def moto_mocking() -> bool:
    """True while moto's ``mock_aws`` is active (its botocore stubber is enabled)."""
    models = sys.modules.get("moto.core.models")
    return bool(getattr(getattr(models, "botocore_stubber", None), "enabled", False))


def _rewrite(url: str, lab: str) -> str:
    """``https://dynamodb.eu-west-1.amazonaws.com/`` -> ``http://127.0.0.1:PORT/``: the lab's scheme, host, port."""
    to, parts = urlsplit(lab), urlsplit(url)
    return urlunsplit((to.scheme, to.netloc, parts.path or "/", parts.query, parts.fragment))


def _on_before_call(params: dict[str, Any], context: dict[str, Any], request_signer: Any, **_: Any) -> None:
    route = active_route()
    url = params.get("url")
    if route is None or not isinstance(url, str) or not is_aws_endpoint(url):
        return
    params["url"] = _rewrite(url, route.url)
    context[ROUTED] = route.url
    if getattr(request_signer, "_credentials", None) is None:  # botocore would raise NoCredentialsError
        context[DUMMY_SIGNED] = True


def _on_choose_signer(context: dict[str, Any], **_: Any) -> Any:
    return botocore.UNSIGNED if context.get(DUMMY_SIGNED) else None


def _on_request_created(request: Any, **_: Any) -> None:
    context = getattr(request, "context", None) or {}
    if not context.get(DUMMY_SIGNED):
        return
    region = (context.get("signing") or {}).get("region") or context.get("client_region") or C.LOCAL_REGION
    credentials = Credentials(C.LOCAL_ACCESS_KEY, C.LOCAL_SECRET_KEY)
    SigV4Auth(credentials, _SERVICE, region).add_auth(request)


def _attach(client: Any) -> None:
    events = client.meta.events
    events.register(f"before-call.{_SERVICE}", _on_before_call, unique_id="labkit-route-before-call")
    events.register(f"choose-signer.{_SERVICE}", _on_choose_signer, unique_id="labkit-route-choose-signer")
    events.register_last(f"request-created.{_SERVICE}", _on_request_created, unique_id="labkit-route-sign")
    _attached.add(client)


class _Router:
    """The interception point's observer: attaches the handlers, refuses a call moto would have mocked."""

    def before(self, client: Any, operation: str) -> None:
        route = active_route()
        if route is None:
            return
        if moto_mocking():
            raise ConfigurationError(
                f"moto's mock_aws is active in a test that labkit routes ({route.why}): labkit sends its "
                f"DynamoDB calls to {route.url}, so this {operation} would not reach moto's mock. Use one "
                "of them per test: drop mock_aws from this test, or keep labkit out of it (no labkit_conn, "
                "no @pytest.mark.labkit, and no --labkit-backend or labkit_backend ini setting, which make "
                "every test a labkit test)"
            )
        if client not in _attached:
            with _attach_lock:
                if client not in _attached:
                    _attach(client)

    def after(self, client: Any, operation: str, params: Any, result: Any) -> None:
        return None


_observer = _Router()


__all__ = [
    "DUMMY_SIGNED",
    "ROUTED",
    "Route",
    "active_route",
    "aws_dns_suffixes",
    "is_aws_endpoint",
    "moto_mocking",
    "pop",
    "push",
    "route_for",
]
