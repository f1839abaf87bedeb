"""An account beside its markers, as a DataFrame."""

from __future__ import annotations

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from tests.patterns.signups import ADA


def test_account_items__shows_the_account_and_its_markers_side_by_side(tconn: Connection) -> None:
    """Three rows: the account and one present marker per value, owner = the account id."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    frame = u.account_items(tconn.client, tconn.table_name, reg.account_id)
    assert list(frame["PK"]) == [f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    assert list(frame["owner"])[1:] == [reg.account_id, reg.account_id] and frame["present"].all()


def test_account_items__missing_marker__shows_present_false(tconn: Connection) -> None:
    """A marker lost by a bad delete shows up as a row with present=False."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": "UNIQ#HANDLE#ada"}, "SK": {"S": "LOCK"}})
    frame = u.account_items(tconn.client, tconn.table_name, reg.account_id)
    assert list(frame["present"]) == [True, True, False]
