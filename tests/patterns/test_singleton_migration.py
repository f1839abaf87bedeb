"""Changing the settings item's shape: migrate V1 to V2, retire V1."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.patterns.singleton import (
    Flag,
    FlagSchema,
    FlagStore,
    migrate,
    retire,
    stored_item,
)
from labkit.races import all_interleavings
from labkit.shared.backend import Connection
from labkit.shared.constants import FLAGS_SK_V1, FLAGS_SK_V2, SETTINGS_PK
from labkit.shared.errors import (
    FlagTypeError,
    NotFound,
    TransactionCancelled,
    ValidationError,
)
from tests.patterns.flags import SAFE, to_v2


def test_migrate__v1_to_v2__transform_output_written_v1_kept(store: FlagStore) -> None:
    """V2 holds the transform's output, version 1 and where it came from; V1 is untouched."""
    store.create(signup_enabled=True)
    res = migrate(store, to_v2)
    v2 = stored_item(store, FLAGS_SK_V2)
    assert res.won and v2 is not None
    assert v2["features"] == {"signup_enabled": True, "ai_search_enabled": False}
    assert (v2["version"], v2["migrated_from"], v2["migrated_from_version"]) == (1, FLAGS_SK_V1, 1)
    assert stored_item(store, FLAGS_SK_V1)["signup_enabled"] is True  # type: ignore[index]


def test_migrate__readers_switch_by_configuration(tconn: Connection, store: FlagStore) -> None:
    """A reader configured with sk=FLAGS#V2 and the V2 schema reads the new item."""
    store.create(maintenance_mode=False)
    migrate(store, to_v2)
    v2_schema = FlagSchema((Flag("maintenance_mode", bool, True), Flag("dark_launch", bool, False)))
    reader = FlagStore(tconn.client, tconn.table_name, sk=FLAGS_SK_V2, schema=v2_schema)
    res = reader.read()
    assert (res.source, res["maintenance_mode"], res.version) == ("item", False, 1)
    assert any("features" in n for n in res.notes)


@pytest.mark.aws_verified
def test_migrate__two_migrators_all_orders__exactly_one_wins(tconn: Connection, store: FlagStore) -> None:
    """Two migrators race on every order: one writes V2, the other is told, V2 written once."""

    def tagged(tag: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda attrs: {**to_v2(attrs), "migrated_by": tag}

    actors = {t: (lambda client, t=t: migrate(store.with_client(client), tagged(t))) for t in ("A", "B")}

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key={"PK": {"S": SETTINGS_PK}, "SK": {"S": FLAGS_SK_V2}})
        if stored_item(store) is None:
            store.create(signup_enabled=True)

    def outcome(res: Any) -> dict[str, Any]:
        h = res.history
        puts_ok = h[(h["operation"] == "PutItem") & (h["outcome"] == "ok")]
        v2 = stored_item(store, FLAGS_SK_V2) or {}
        winners = [n for n, r in res.results.items() if r.won]
        return {
            "winners": winners,
            "puts_ok": len(puts_ok),
            "by": v2.get("migrated_by"),
            "intact": {k: v for k, v in v2.items() if k in to_v2(SAFE)} == to_v2({**SAFE, "signup_enabled": True}),
            "loser_told": all("already exists" in r.reason for r in res.results.values() if not r.won),
        }

    df = all_interleavings(actors, conn=tconn, setup=setup, outcome=outcome)
    assert len(df) == 6
    assert list(df["winners"].map(len)) == [1] * 6
    assert list(df["puts_ok"]) == [1] * 6
    assert list(df["by"]) == [w[0] for w in df["winners"]]
    assert bool(df["intact"].all()) and bool(df["loser_told"].all())


def test_migrate__no_source_item__not_found(store: FlagStore) -> None:
    """Nothing to migrate: NotFound, no V2 written."""
    with pytest.raises(NotFound, match="set_flags"):
        migrate(store, to_v2)
    assert stored_item(store, FLAGS_SK_V2) is None


def test_migrate__transform_sets_reserved_attribute__refused(store: FlagStore) -> None:
    """The transform may not write PK, SK or version; nothing is written."""
    store.create()
    with pytest.raises(ValidationError, match="version"):
        migrate(store, lambda attrs: {**attrs, "version": 5})
    assert stored_item(store, FLAGS_SK_V2) is None


def test_migrate__output_fails_target_schema__refused(store: FlagStore) -> None:
    """A target schema checks the transform's output before the write."""
    store.create()
    v2_schema = FlagSchema((Flag("maintenance_mode", bool, True),))
    with pytest.raises(FlagTypeError):
        migrate(store, lambda attrs: {"maintenance_mode": "on"}, target_schema=v2_schema)
    assert stored_item(store, FLAGS_SK_V2) is None


def test_retire__v2_exists__deletes_v1(store: FlagStore) -> None:
    """With V2 in place, retire() deletes V1 and keeps V2."""
    store.create()
    migrate(store, to_v2)
    retire(store)
    assert stored_item(store, FLAGS_SK_V1) is None
    assert stored_item(store, FLAGS_SK_V2) is not None


def test_retire__no_v2__cancelled_and_v1_kept(store: FlagStore) -> None:
    """Without V2 the ConditionCheck fails: TransactionCancelled with reasons, V1 kept."""
    store.create()
    with pytest.raises(TransactionCancelled, match="migrate first") as info:
        retire(store)
    assert info.value.reason_codes[0] == "ConditionalCheckFailed"
    assert isinstance(info.value.__cause__, ClientError)
    assert stored_item(store, FLAGS_SK_V1) is not None


def test_retire__v1_changed_after_migration__cancelled_and_v1_kept(store: FlagStore) -> None:
    """A change to V1 after the migration would be lost: retire refuses, V1 kept."""
    store.create()
    migrate(store, to_v2)
    store.set_flags(signup_enabled=True)
    with pytest.raises(TransactionCancelled, match="changed since it was migrated") as info:
        retire(store)
    assert info.value.reason_codes == ("None", "ConditionalCheckFailed")
    assert stored_item(store, FLAGS_SK_V1)["signup_enabled"] is True  # type: ignore[index]
