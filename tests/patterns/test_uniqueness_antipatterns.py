"""The uniqueness anti-patterns (check-then-write, the article's transaction) do what the lesson says."""

from __future__ import annotations

import pytest

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    StaleAccount,
)
from tests.patterns.signups import ADA, keys, two_signups


@pytest.mark.aws_verified
@pytest.mark.parametrize("read", ["index", "scan"])
def test_register_check_then_write__all_orders__duplicates_in_four_of_six(tconn: Connection, read: str) -> None:
    """Read-then-write: every order where both reads precede both writes gives two accounts."""
    table = two_signups(
        tconn,
        lambda c, name: u.register_check_then_write(c, tconn.table_name, email=ADA, username=name, read=read),  # type: ignore[arg-type]
    )
    duplicated = set(table.loc[table["accounts"] > 1, "order"])
    assert duplicated == {"A B A B", "A B B A", "B A A B", "B A B A"}
    assert len(table) == 6 and (table["accounts"] >= 1).all()


@pytest.mark.aws_verified
def test_seed_transaction__sent_as_written__writes_its_three_items(tconn: Connection) -> None:
    """The article's JSON (table name substituted) works; sending it again is cancelled."""
    u.send_seed_transaction(tconn.client, tconn.table_name)
    assert keys(tconn) == ["ACCT#a1f9c3", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    with pytest.raises(StaleAccount) as info:
        u.send_seed_transaction(tconn.client, tconn.table_name)
    assert info.value.reason_codes == ("ConditionalCheckFailed",) * 3


def test_seed_transaction__table_name__is_substituted_everywhere() -> None:
    """Every action targets the given table; the rest is the article's request unchanged."""
    request = u.seed_transaction("labkit-x")
    assert [next(iter(a.values()))["TableName"] for a in request["TransactItems"]] == ["labkit-x"] * 3
    assert request["TransactItems"][1]["Put"]["Item"]["PK"] == {"S": f"UNIQ#EMAIL#{ADA}"}
