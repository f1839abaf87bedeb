"""recipes/audit.py: the orphan-marker repair, proven by the race lab beside a live sign-up.

A Scan is read-committed against transactions (DynamoDB's isolation table): beside a sign-up it may
return the new markers and not yet the new account (``torn-read``). The naive repair trusts it and
deletes a live user's marker; the checked repair re-reads each finding with TransactGetItems first.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from labkit.patterns import uniqueness as uniq
from labkit.races import Interleaving, explore
from labkit.shared.backend import Connection
from labkit.shared.table import reset_table
from recipes.audit import checked_repair, naive_repair, scan_findings
from recipes.uniqueness import register_request

EMAIL = "ada@lovelace.io"


def live_markers_kept(conn: Connection) -> Callable[[Interleaving], None]:
    def invariant(res: Interleaving) -> None:
        assert not res.errors, res.errors
        items = uniq.table_items(conn.client, conn.table_name)
        markers = int(items["PK"].str.startswith("UNIQ#").sum())
        assert markers == 2, f"a live account lost its marker: {markers} of 2 markers left after the repair"

    return invariant


def sign_up_beside_repair(conn: Connection, client: Any, repair: Callable[[Any, str], int]) -> Any:
    """A signs up (one transaction: account and two markers) while B audits and repairs; torn reads explored."""
    table = conn.table_name

    def sign_up() -> str:
        client.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
        return "created"

    return explore(
        {"A": sign_up, "B": lambda: repair(client, table)},
        conn=conn,
        setup=lambda: reset_table(conn),
        invariant=live_markers_kept(conn),
        faults=["torn-read"],
    )


def test_naive_repair__scan_torn_beside_a_sign_up__deletes_a_live_marker__found(tconn: Connection, sdk: Any) -> None:
    """Broken: the Scan sees the markers without the account (torn) and the repair deletes a live marker."""
    result = sign_up_beside_repair(tconn, sdk, naive_repair)
    assert not result.passed, result.summary()
    assert result.faults == ("B1: torn-read (misses A1[0])",), result.summary()
    assert "a live account lost its marker" in (result.message or "")


def test_checked_repair__same_interleavings__passes(tconn: Connection, sdk: Any) -> None:
    """The fix: each finding re-read with TransactGetItems (serializable) before any Delete; every torn view tried."""
    result = sign_up_beside_repair(tconn, sdk, checked_repair)
    assert result.passed, result.summary()
    assert "torn-read" in result.guarantee


def test_checked_repair__a_real_orphan__deleted(tconn: Connection, sdk: Any) -> None:
    """An account deleted without its markers: both markers found, confirmed and deleted."""
    table = tconn.table_name
    reset_table(tconn)
    sdk.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
    sdk.delete_item(TableName=table, Key={"PK": {"S": "ACCT#a1"}, "SK": {"S": "PROFILE"}})
    assert len(scan_findings(sdk, table)) == 2
    assert checked_repair(sdk, table) == 2
    assert uniq.table_items(sdk, table).empty
