"""``labkit serve --data DIR`` keeps expiry state as it keeps items (issue 42, item 3): the TTL setting, the
expired items not yet deleted, and the TTL process's deletions, across restarts of a real process."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from labkit.engine_plugins.faults.control import describe_expiry, expire_items
from labkit.shared.backend import Connection
from tests.endpoint.clients import raw_client
from tests.endpoint.store.test_durable_crash import _serve
from tests.endpoint.tables import make_table

TABLE = "ttl-kept"
TTL = "expires"
# A stopped server (SIGTERM) exits in well under a second; 60 s only guards against a hung process.
STOP_TIMEOUT_SECONDS = 60


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=STOP_TIMEOUT_SECONDS)


def _put(client: Any, pk: str, expires: float | None) -> None:
    ttl = {TTL: {"N": str(int(expires))}} if expires is not None else {}
    client.put_item(TableName=TABLE, Item={"PK": {"S": pk}, **ttl})


def _keys(client: Any) -> list[str]:
    return sorted(item["PK"]["S"] for item in client.scan(TableName=TABLE, ConsistentRead=True)["Items"])


def test_serve_data__restarted__ttl_setting_expired_items_and_deletions_kept(tmp_path: Path) -> None:
    """Developer guide: expired items "may be deleted by the system at any time, typically within a few days of
    their expiration"; until then they are read like any other. A restart changes neither: the TTL setting is
    still on, an expired item not yet deleted is still served and still expired, a deleted one stays deleted."""
    process, url = _serve(tmp_path)
    try:
        client = raw_client(url)
        conn = Connection("embedded", url, "us-east-1")
        make_table(client, range_key=False, name=TABLE, stream=True)
        client.update_time_to_live(TableName=TABLE, TimeToLiveSpecification={"AttributeName": TTL, "Enabled": True})
        epoch = float(describe_expiry(conn)["Epoch"])
        _put(client, "deleted", epoch - 7200)
        assert expire_items(conn, TABLE)["Deleted"] == {TABLE: 1}
        _put(client, "expired", epoch - 3600)  # after the TTL process ran: expired, not yet deleted
        _put(client, "live", epoch + 10 * 86400)
        _put(client, "forever", None)
    finally:
        _stop(process)

    process, url = _serve(tmp_path)
    try:
        client = raw_client(url)
        conn = Connection("embedded", url, "us-east-1")
        ttl = client.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
        assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": TTL}
        assert _keys(client) == ["expired", "forever", "live"]
        assert describe_expiry(conn, TABLE)["Expired"] == {TABLE: 1}
        assert expire_items(conn)["Deleted"] == {TABLE: 1}
        assert _keys(client) == ["forever", "live"]
    finally:
        _stop(process)
