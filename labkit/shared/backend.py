"""Choosing where the lab's DynamoDB lives: one entry point, :func:`connect`.

Backends (``LABKIT_BACKEND`` or ``connect(backend=...)``):

``embedded``  (default) labkit's own endpoint on 127.0.0.1, started in this process
              (:func:`labkit.embedded.shared_endpoint`) —
              or the one ``labkit lab`` / ``labkit serve`` started, via ``LABKIT_EMBEDDED_URL``.
``local``     DynamoDB Local at http://localhost:8000 (``docker compose up -d dynamodb``).
``aws``       real DynamoDB through the normal credential chain and region. Opt-in only.

``LABKIT_ENDPOINT_URL`` points labkit at any other DynamoDB-compatible endpoint. Which one is
chosen (arguments first, then ``LABKIT_ENDPOINT_URL``, then ``LABKIT_BACKEND``) is decided by
:func:`labkit.shared.backend_choice.resolve_backend`, the resolver the pytest plugin uses too.
No backend ever falls back silently to another.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.loaders import Loader, create_loader

from . import constants as C
from ._errors_map import map_errors
from .backend_choice import (
    BACKENDS,
    ENDPOINT,
    ENV_BACKEND,
    ENV_EMBEDDED_URL,
    ENV_ENDPOINT_URL,
    ENV_LOCAL_URL,
    NONE,
    resolve_backend,
)
from .catalogue import Op
from .errors import BackendUnavailable, ConfigurationError, DynamoError, LabkitError, TableError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ENV_TABLE = "LABKIT_TABLE"


def _client_config(connect_timeout: float) -> Config:
    return Config(
        connect_timeout=connect_timeout,
        read_timeout=30,
        retries={"mode": "standard", "total_max_attempts": C.SDK_ATTEMPTS},
        max_pool_connections=64,
    )


#: botocore's data loader (service models, endpoint rules, partitions: JSON files read from disk and
#: kept), shared by every session labkit makes. A botocore session creates a loader of its own and
#: reads those files again on its first client: about 100 ms of CPU, measured on this machine, against
#: 11 ms with the shared loader (and 3 ms for a second client of one session). Every Connection has a
#: session of its own (boto3 sessions are not thread-safe), so without it each labkit test, each
#: ``labkit_conn`` and each region of a table cleanup paid for the files again.
_LOADER: Loader = create_loader()
_LOADER_LOCK = threading.Lock()


def new_session(region_name: str | None = None) -> boto3.session.Session:
    """A boto3 session of its own (credentials, region, config resolved as boto3 does) on labkit's shared
    botocore data loader. AWS_DATA_PATH is read once, when labkit is imported."""
    core = botocore.session.Session()
    core.register_component("data_loader", _LOADER)
    with _LOADER_LOCK:
        session = boto3.session.Session(botocore_session=core, region_name=region_name)
        paths = _LOADER.search_paths  # boto3 appends its own data folder for each session: kept once
        paths[:] = list(dict.fromkeys(paths))
    return session


#: Every client labkit creates is created under this lock: boto3 sessions are not thread-safe, and
#: local connections share one session (below).
_CLIENT_LOCK = threading.Lock()
_LOCAL_SESSION: boto3.session.Session | None = None


def local_session() -> boto3.session.Session:
    """The one session behind every connection to a local endpoint (embedded, DynamoDB Local, an
    endpoint URL). Its clients get labkit's local keys, the region and the config explicitly, so the
    session resolves nothing for them; a session of their own cost each connection 7 ms of CPU more
    than a client (decision 233). Connections to AWS keep a session each: its credential chain."""
    global _LOCAL_SESSION
    with _CLIENT_LOCK:
        if _LOCAL_SESSION is None:
            _LOCAL_SESSION = new_session()
        return _LOCAL_SESSION


@dataclass
class Connection:
    """Where the lab talks to, and clients for it.

    ``client`` is shared; call :meth:`new_client` for one per thread, as boto3 advises.
    """

    backend: str
    endpoint_url: str | None
    region: str
    table_name: str = C.DEFAULT_TABLE_NAME
    _session: boto3.session.Session | None = field(default=None, repr=False)
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._session is None:
            self._session = local_session() if self.is_local else new_session()

    @property
    def is_local(self) -> bool:
        """True for backends that run on this machine (nothing is billed)."""
        return self.backend != "aws"

    def new_client(self, **config: Any) -> DynamoDBClient:
        """A fresh DynamoDB client (clients are thread-safe, but one per actor keeps hooks apart)."""
        kwargs: dict[str, Any] = {"region_name": self.region}
        if self.endpoint_url is not None:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.backend != "aws":
            kwargs["aws_access_key_id"] = C.LOCAL_ACCESS_KEY
            kwargs["aws_secret_access_key"] = C.LOCAL_SECRET_KEY
        cfg = _client_config(connect_timeout=2 if self.is_local else 10)
        if self.backend == "aws":  # real DynamoDB, whatever AWS_ENDPOINT_URL_DYNAMODB says (the pytest plugin's)
            cfg = cfg.merge(Config(ignore_configured_endpoint_urls=True))  # type: ignore[call-arg]  # stubs lag
        if config:
            cfg = cfg.merge(Config(**config))
        with _CLIENT_LOCK:  # boto3 sessions are not thread-safe; creating clients is serialised
            assert self._session is not None  # __post_init__
            return self._session.client("dynamodb", config=cfg, **kwargs)

    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            self._client = self.new_client()
        return self._client  # type: ignore[no-any-return]

    def describe(self) -> str:
        where = self.endpoint_url or f"DynamoDB in {self.region}"
        return f"backend={self.backend} endpoint={where} table={self.table_name}"


def _probe(conn: Connection, how_to_fix: str) -> None:
    """One cheap call, so an unreachable endpoint fails here with a clear message."""
    try:
        with map_errors(Op.LIST_TABLES):
            conn.new_client(retries={"mode": "standard", "max_attempts": 1}).list_tables(Limit=1)
    except (DynamoError, TableError):
        return  # it answered; an auth error here is still an answer
    except (LabkitError, OSError) as exc:
        raise BackendUnavailable(
            f"{conn.backend} endpoint is not reachable at {conn.endpoint_url} — {how_to_fix}"
        ) from (exc.__cause__ or exc)


def connect(
    backend: str | None = None,
    *,
    endpoint_url: str | None = None,
    table_name: str | None = None,
    region: str | None = None,
    probe: bool = True,
) -> Connection:
    """Connect to the chosen backend. Arguments win over environment variables.

    Raises :class:`ConfigurationError` for an unknown backend or missing AWS
    settings, :class:`BackendUnavailable` for an endpoint that does not answer.
    """
    table = table_name or os.environ.get(ENV_TABLE) or C.DEFAULT_TABLE_NAME
    if not table.startswith(C.TABLE_PREFIX):
        raise ConfigurationError(
            f"table name {table!r} must start with {C.TABLE_PREFIX!r}: labkit only touches tables it created"
        )
    choice = resolve_backend(backend, endpoint_url=endpoint_url)
    if choice.backend == ENDPOINT:
        assert choice.url is not None
        conn = Connection(ENDPOINT, choice.url, region or C.LOCAL_REGION, table)
        if probe:
            _probe(conn, f"check the URL ({choice.source}), or leave it out to use the embedded endpoint")
        return conn
    if choice.backend == "embedded":
        if choice.url:
            conn = Connection("embedded", choice.url, C.LOCAL_REGION, table)
            if probe:
                _probe(
                    conn,
                    f"the `labkit lab`/`labkit serve` that set {ENV_EMBEDDED_URL} has stopped; "
                    f"restart it, or unset {ENV_EMBEDDED_URL} to start one in this process",
                )
            return conn
        # The floor's one upward edge, and a lazy one: the composition root builds the engine
        # (it imports the engine and its plug-ins, none of which imports this module).
        from ..embedded import shared_endpoint

        return Connection("embedded", shared_endpoint().url, C.LOCAL_REGION, table)
    if choice.backend == "local":
        assert choice.url is not None
        conn = Connection("local", choice.url, region or C.LOCAL_REGION, table)
        if probe:
            _probe(
                conn,
                f"start it with `docker compose up -d dynamodb`, or use the embedded backend (unset {ENV_BACKEND})",
            )
        return conn
    if choice.backend == "aws":
        return _connect_aws(table, region)
    raise ConfigurationError(
        f"{choice.source} turns labkit off ({NONE}); choose one of: {', '.join(BACKENDS)}, or an endpoint URL"
    )


def _connect_aws(table: str, region: str | None) -> Connection:
    region = region or os.environ.get("AWS_REGION") or None
    session = new_session(region)
    if not session.region_name:
        raise ConfigurationError(
            "backend 'aws' needs a region: set AWS_REGION (or AWS_DEFAULT_REGION), "
            "or pass connect('aws', region='eu-central-1')"
        )
    try:
        with map_errors("loading AWS credentials"):
            creds = session.get_credentials()
    except LabkitError as exc:
        raise ConfigurationError(
            f"backend 'aws': could not load AWS credentials ({type(exc.__cause__).__name__}); "
            "configure them with `aws configure` or AWS_PROFILE"
        ) from None
    if creds is None:
        raise ConfigurationError(
            "backend 'aws' found no AWS credentials; configure them with `aws configure`, "
            "AWS_PROFILE or the AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY variables"
        )
    return Connection("aws", None, session.region_name, table, _session=session)


__all__ = [
    "BACKENDS",
    "ENV_BACKEND",
    "ENV_EMBEDDED_URL",
    "ENV_ENDPOINT_URL",
    "ENV_LOCAL_URL",
    "ENV_TABLE",
    "Connection",
    "connect",
    "local_session",
    "new_session",
]
