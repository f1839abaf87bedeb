"""recipes/migration.py: one V2 under every order and fault; retire never throws a late V1 change away."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.races import explore
from labkit.shared.backend import Connection
from recipes.migration import V1, V2, migrate, retire
from tests.cookbook.exploration import FAULTS, Runs

FLAGS_V1 = {"signup_enabled": {"BOOL": True}, "ai_search_enabled": {"BOOL": False}, "maintenance_mode": {"BOOL": False}}


def to_features(v1: dict[str, Any]) -> dict[str, Any]:
    features = {"signup": v1["signup_enabled"], "ai_search": v1["ai_search_enabled"]}
    return {"features": {"M": features}, "maintenance_mode": v1["maintenance_mode"]}


def to_flat(v1: dict[str, Any]) -> dict[str, Any]:
    return {"signup": v1["signup_enabled"], "maintenance_mode": v1["maintenance_mode"]}


def stored(conn: Connection, key: dict[str, Any]) -> dict[str, Any] | None:
    item: dict[str, Any] | None = conn.client.get_item(TableName=conn.table_name, Key=key, ConsistentRead=True).get(
        "Item"
    )
    return item


def v1_only(conn: Connection) -> None:
    conn.client.delete_item(TableName=conn.table_name, Key=V2)
    conn.client.put_item(TableName=conn.table_name, Item={**V1, "version": {"N": "3"}, **FLAGS_V1})


def two_migrators(conn: Connection, sdk: Any, migrator: Callable[..., bool]) -> Any:
    """A and B migrate at once with different transforms: exactly one says True, and V2 is its shape."""
    table = conn.table_name
    transforms = {"A": to_features, "B": to_flat}

    def one_v2_and_its_author_knows(res: Any) -> None:
        assert not res.errors, res.errors
        winners = [name for name, won in res.results.items() if won]
        assert len(winners) == 1, f"migrators that say V2 is theirs: {winners or 'none'}"
        v2 = stored(conn, V2) or {}
        assert {k: v for k, v in v2.items() if k not in V2} == transforms[winners[0]](FLAGS_V1) | {
            "version": {"N": "1"},
            "migrated_from_version": {"N": "3"},
        }

    actors = {name: (lambda t=t: migrator(sdk, table, t)) for name, t in transforms.items()}
    return explore(actors, conn=conn, setup=lambda: v1_only(conn), invariant=one_v2_and_its_author_knows, faults=FAULTS)


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_migrate__two_migrators_every_order_and_fault__one_v2_and_only_its_author_says_so(
    tconn: Connection, sdk: Any
) -> None:
    """Even when botocore resends a lost Put and meets its own V2, the migrator knows it won."""
    result = two_migrators(tconn, sdk, migrate)
    assert result.passed, result.summary()


def test_migrate__refusal_read_as_lost__after_a_lost_answer_nobody_won(tconn: Connection, sdk: Any) -> None:
    """Broken: treating every refusal as "another migrator won" — the resend of our own lost Put is refused."""

    def refusal_means_lost(client: Any, table: str, transform: Any) -> bool:
        v1 = client.get_item(TableName=table, Key=V1, ConsistentRead=True)["Item"]
        item = V2 | transform(v1) | {"version": {"N": "1"}, "migrated_from_version": v1["version"]}
        try:
            client.put_item(TableName=table, Item=item, ConditionExpression="attribute_not_exists(PK)")
            return True
        except ClientError:
            return False

    result = two_migrators(tconn, sdk, refusal_means_lost)
    assert not result.passed and "lose-response" in result.faults[0] and "none" in (result.message or ""), (
        result.summary()
    )


def retire_while_v1_written(conn: Connection, sdk: Any, retirer: Callable[..., None]) -> Any:
    """A retires V1 while B (a process still on V1) changes it: B's change is never silently thrown away."""
    table, runs = conn.table_name, Runs()

    def setup() -> None:
        runs.next()
        v1_only(conn)
        migrate(conn.client, table, to_features)

    def late_write() -> str:
        try:
            sdk.update_item(
                TableName=table,
                Key=V1,
                UpdateExpression="SET signup_enabled = :no, version = version + :one",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":no": {"BOOL": False}, ":one": {"N": "1"}},
            )
            return "written"
        except ClientError as exc:
            return exc.response["Error"]["Code"]

    def no_change_lost(res: Any) -> None:
        v1 = stored(conn, V1)
        if res.results.get("B") == "written":
            assert v1 is not None and v1["signup_enabled"] == {"BOOL": False}, "B's change to V1 was deleted"
        assert stored(conn, V2) is not None

    def retirer_actor() -> str:
        try:
            retirer(sdk, table, token=runs.token("A"))
            return "retired"
        except ClientError as exc:
            return exc.response["Error"]["Code"]

    return explore(
        {"A": retirer_actor, "B": late_write}, conn=conn, setup=setup, invariant=no_change_lost, faults=FAULTS
    )


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_retire__a_late_v1_write_every_order_and_fault__never_lost(tconn: Connection, sdk: Any) -> None:
    """The Delete is guarded by V2's migrated_from_version: after B's write, retire is cancelled."""
    result = retire_while_v1_written(tconn, sdk, retire)
    assert result.passed, result.summary()


def test_retire__without_the_version_guard__the_late_write_is_deleted(tconn: Connection, sdk: Any) -> None:
    """Broken: a retire that only checks V2 exists deletes V1 with B's change in it."""

    def unguarded(client: Any, table: str, *, token: str) -> None:
        client.transact_write_items(
            TransactItems=[
                {"ConditionCheck": {"TableName": table, "Key": V2, "ConditionExpression": "attribute_exists(PK)"}},
                {"Delete": {"TableName": table, "Key": V1}},
            ],
            ClientRequestToken=token,
        )

    result = retire_while_v1_written(tconn, sdk, unguarded)
    assert not result.passed and "deleted" in (result.message or ""), result.summary()


def test_retire__before_any_migration__lookup_error_and_v1_kept(tconn: Connection) -> None:
    """No V2 yet: a LookupError that says to migrate first, and V1 stays."""
    v1_only(tconn)
    with pytest.raises(LookupError, match="migrate first"):
        retire(tconn.client, tconn.table_name, token="t-before-migration")
    assert stored(tconn, V1) is not None
