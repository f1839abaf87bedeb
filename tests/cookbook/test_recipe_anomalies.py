"""No false alarms (issue 39): every recipe the cookbook races, explored with no invariant, names no anomaly.

Each exploration is the cookbook test's own (its actors, setup, clients and the faults it is explored
with: :data:`~tests.cookbook.exploration.FAULTS`), with its invariant left out, so the history alone decides:
a run that showed a lost update, a check-then-write duplicate, a write applied twice, dropped batch items
or a page taken as the whole would fail it. The recipes' broken variants that apply a write twice are
named without their invariants too.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from labkit.races import Exploration, explore
from labkit.shared.backend import Connection
from recipes.flags import FlagReader
from recipes.guarded_update import update
from recipes.migration import migrate, retire
from recipes.outbox import deliver
from recipes.sharded_counter import add, add_once
from recipes.table import ensure_table
from tests.cookbook import (
    test_recipe_flags,
    test_recipe_guarded_update,
    test_recipe_migration,
    test_recipe_outbox,
    test_recipe_sharded_counter,
    test_recipe_table_and_client,
    test_recipe_uniqueness,
)

#: What each cookbook exploration is given: (conn, tconn, sdk) -> its result, and the module whose explore it calls.
Race = tuple[ModuleType, Callable[[Connection, Connection, Any], Exploration]]

SC = test_recipe_sharded_counter
RECIPES: dict[str, Race] = {
    "flags: the reader while an admin writes": (
        test_recipe_flags,
        lambda conn, tconn, sdk: test_recipe_flags.admin_and_reader(tconn, FlagReader),
    ),
    "guarded_update: two admins raise a limit": (
        test_recipe_guarded_update,
        lambda conn, tconn, sdk: test_recipe_guarded_update.two_admins(tconn, sdk, update),
    ),
    "migration: two migrators": (
        test_recipe_migration,
        lambda conn, tconn, sdk: test_recipe_migration.two_migrators(tconn, sdk, migrate),
    ),
    "migration: retire while v1 is written": (
        test_recipe_migration,
        lambda conn, tconn, sdk: test_recipe_migration.retire_while_v1_written(tconn, sdk, retire),
    ),
    "outbox: a delivery and a restart": (
        test_recipe_outbox,
        lambda conn, tconn, sdk: test_recipe_outbox.first_process_and_a_restart(tconn, sdk, deliver),
    ),
    "sharded_counter: add_once, botocore's retries": (
        SC,
        lambda conn, tconn, sdk: SC.two_writers(
            tconn, lambda c, token: add_once(c, tconn.table_name, SC.NAME, SC.SHARDS, token=token), own_client=sdk
        ),
    ),
    "sharded_counter: add_once, its own retries": (
        SC,
        lambda conn, tconn, sdk: SC.two_writers(
            tconn, lambda c, token: add_once(c, tconn.table_name, SC.NAME, SC.SHARDS, token=token)
        ),
    ),
    "table: two deploys create the table": (
        test_recipe_table_and_client,
        lambda conn, tconn, sdk: test_recipe_table_and_client.two_deploys(conn, ensure_table),
    ),
    "client: two sign-ups, a lost answer resent": (
        test_recipe_table_and_client,
        lambda conn, tconn, sdk: test_recipe_table_and_client.sign_ups_with(tconn, sdk),
    ),
    "uniqueness: two sign-ups, one email": (
        test_recipe_uniqueness,
        lambda conn, tconn, sdk: test_recipe_uniqueness.two_sign_ups(tconn, sdk, test_recipe_uniqueness.sign_up),
    ),
}


#: What a race's own stand-in code (not the recipe) really does, accepted by name. The retire race's late
#: V1 writer (``SET ..., version = version + :one`` on a service's client) is applied twice when its answer
#: is lost and botocore resends it: its version counts two for one change. The recipe (``retire``) is not
#: involved; the invariant there asks only that B's change is not deleted.
ALLOWED: dict[str, list[str]] = {"migration: retire while v1 is written": ["applied-twice"]}


def without_invariant(allow: list[str] | None = None) -> Callable[..., Exploration]:
    """The cookbook's explore call, its invariant left out (the anomalies decide), with ``allow``."""

    def call(actors: Any, **options: Any) -> Exploration:
        options.pop("invariant", None)
        return explore(actors, allow=allow, **options)

    return call


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_recipe__explored_with_its_faults_and_no_invariant__no_anomaly(
    recipe: str, conn: Connection, tconn: Connection, sdk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipe's own exploration (every order, each fault at each call point), no invariant: nothing named."""
    module, race = RECIPES[recipe]
    monkeypatch.setattr(module, "explore", without_invariant(ALLOWED.get(recipe)))
    result = race(conn, tconn, sdk)
    assert result.passed and result.anomalies == (), result.summary()
    assert result.runs > 1


def test_retire_race__the_late_writers_computed_set__applied_twice_when_not_allowed(
    tconn: Connection, sdk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one anomaly :data:`ALLOWED` accepts is real: without allow, the late writer's resent SET is named."""
    monkeypatch.setattr(test_recipe_migration, "explore", without_invariant())
    result = test_recipe_migration.retire_while_v1_written(tconn, sdk, retire)
    assert not result.passed and (result.message or "").startswith("applied twice: B1 UpdateItem"), result.summary()


def test_add__botocore_resends_the_lost_add__applied_twice_named_without_an_invariant(
    tconn: Connection, sdk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approximate ADD on a service's client: the lost answer's resend is named "applied twice"."""
    monkeypatch.setattr(SC, "explore", without_invariant())
    result = SC.two_writers(tconn, lambda c, token: add(c, tconn.table_name, SC.NAME, 1), own_client=sdk)
    assert not result.passed and (result.message or "").startswith("applied twice: "), result.summary()
    assert "lose-response" in result.faults[0] and "botocore's resend" in (result.message or "")
