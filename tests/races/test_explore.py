"""explore(): exhaustive while cheap, DPOR, PCT sampling; replayable counterexamples; bad input."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

import pytest

from labkit.races import ExploreConfig, Interleaving, explore, run_interleaving
from labkit.races.explore import Call, conflicts, count_orders
from labkit.races.identity import KeySchemas
from labkit.races.orders import each_order
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError, ValidationError
from tests.races.counters import KEY, Counter


def counter(conn: Connection) -> Counter:
    """The audited counter (tests/races/counters.py) in the test's PK/SK table."""
    return Counter.pk_sk(conn.table_name)


# ---------------------------------------------------------------- finding and proving


def test_explore__three_by_three_lost_update__found_and_replays_exactly_20_times(tconn: Connection) -> None:
    """The 3x3 lost update is found in a few runs; its counterexample replays it, 20 times in a row."""
    c = counter(tconn)
    actors = c.actors(c.lost_update)
    invariant = c.invariant(tconn.client)

    def setup() -> None:
        c.reset(tconn.client)

    result = explore(actors, conn=tconn, setup=setup, invariant=invariant)
    assert not result.passed and not result
    assert result.calls == {"A": 3, "B": 3, "C": 3} and result.orders == 1680
    assert result.runs <= 10
    assert result.counterexample is not None and len(result.counterexample.split()) == 9
    assert result.message is not None and "updates landed" in result.message
    assert result.interleaving is not None
    for _ in range(20):
        setup()
        replay = run_interleaving(actors, result.counterexample, conn=tconn)
        assert " ".join(replay.turns) == result.counterexample
        assert list(replay.history["operation"]) == list(result.interleaving.history["operation"])
        with pytest.raises(AssertionError, match="updates landed"):
            invariant(replay)


def test_explore__version_guarded__dpor_proves_it_in_tens_of_runs(tconn: Connection) -> None:
    """DPOR covers every non-equivalent order of the fixed version in far fewer runs than 1,680."""
    c = counter(tconn)
    result = c.explore(tconn, c.version_guarded, strategy="dpor")
    assert result.passed and result.counterexample is None
    assert result.strategy == "dpor"
    assert result.guarantee == f"all non-equivalent orders explored (DPOR): {result.runs} runs"
    assert 6 <= result.runs <= 100  # every order of the three conditional updates, at least


def test_explore__auto__small_actor_sets_are_explored_exhaustively(tconn: Connection) -> None:
    """Two actors of three calls (20 orders of the dry run's counts) are cheap: every schedule runs.

    The actors really have 16: the loser of the version guard ends after two calls, so the orders
    that give it a third turn do not exist (they used to be run anyway, each a repeat of one of the 16).
    """
    c = counter(tconn)
    result = c.explore(tconn, c.version_guarded, "AB")
    assert result.passed and result.orders == 20
    assert (result.strategy, result.runs, result.guarantee) == ("exhaustive", 16, "all 16 orders explored")


def test_explore__pct__same_seed_same_counterexample(tconn: Connection) -> None:
    """PCT sampling is seeded: the same seed finds the same counterexample after the same runs."""
    c = counter(tconn)
    found = [c.explore(tconn, c.lost_update, strategy="pct", seed=7, budget=200) for _ in range(2)]
    assert not found[0].passed
    assert (found[0].counterexample, found[0].runs) == (found[1].counterexample, found[1].runs)
    assert found[0].guarantee == f"counterexample found in run {found[0].runs} (pct)" and found[0].seed == 7


def test_explore__pct_passing__guarantee_names_runs_seed_and_depth(tconn: Connection) -> None:
    """A passing sample says what it is: N sampled orders, the seed, the depth."""
    c = counter(tconn)
    result = c.explore(
        tconn,
        c.version_guarded,
        strategy="pct",
        seed=3,
        budget=12,
        config=ExploreConfig(depth=2),
    )
    assert result.passed and result.runs == 12
    assert result.guarantee == "12 sampled orders, seed 3, depth 2"


# ---------------------------------------------------------------- conflicts


def test_count_orders__three_by_three__1680() -> None:
    """9! / (3! 3! 3!) = 1,680 and 12! / (4! 4! 4!) = 34,650, as the issue says."""
    assert count_orders({"A": 3, "B": 3, "C": 3}) == 1680
    assert count_orders({"A": 4, "B": 4, "C": 4}) == 34650


# ---------------------------------------------------------------- bad input


def test_explore__exhaustive_over_budget__refused_with_the_numbers(tconn: Connection) -> None:
    """Asking for exhaustive search of 1,680 orders with a budget of 100 is refused before any run."""
    c = counter(tconn)
    with pytest.raises(
        ValidationError,
        match=r"3 actors with A: 3 \+ B: 3 \+ C: 3 calls have 1,680 orders, "
        r"more than budget=100",
    ):
        c.explore(
            tconn,
            c.lost_update,
            strategy="exhaustive",
            budget=100,
            config=ExploreConfig(calls={"A": 3, "B": 3, "C": 3}),
        )


def test_explore__dpor_over_budget__refused_with_the_numbers(tconn: Connection) -> None:
    """DPOR that cannot cover every class within the budget says so instead of claiming a proof."""
    c = counter(tconn)
    with pytest.raises(ValidationError, match=r"\(1,680 orders\) need more than budget=5 DPOR runs"):
        c.explore(tconn, c.version_guarded, strategy="dpor", budget=5)


def test_explore__auto_over_dpor_share__falls_back_to_sampling_and_says_so(tconn: Connection) -> None:
    """auto gives DPOR half the budget; if that is not enough the rest is sampled, and the guarantee says so."""
    c = counter(tconn)
    result = c.explore(tconn, c.version_guarded, budget=10)
    assert result.passed and result.strategy == "pct" and result.runs == 10
    assert result.guarantee == "5 sampled orders, seed 0, depth 3 (after 5 DPOR runs that did not cover every class)"


@pytest.mark.parametrize("strategy", ["exhaustive", "dpor", "pct"])
def test_explore__non_deterministic_actor__race_error_names_actor_and_step(tconn: Connection, strategy: str) -> None:
    """An actor whose calls change from run to run under the same order is refused, naming it and the step."""
    table, c = tconn.table_name, counter(tconn)
    runs = itertools.count()
    steady = c.lost_update("A")

    def flaky(client: Any) -> None:
        sk = "C" if next(runs) % 2 == 0 else "OTHER"  # state that survives setup()
        client.get_item(TableName=table, Key={"PK": {"S": "COUNTER"}, "SK": {"S": sk}})
        client.get_item(TableName=table, Key=KEY)

    with pytest.raises(
        RaceError,
        match=r"actor 'B' is not deterministic: at step \d+ of the order '[AB ]+' it "
        r"made GetItem\(COUNTER/\w+\) where an earlier run with the same order "
        r"made GetItem\(COUNTER/\w+\)",
    ):
        explore(
            {"A": steady, "B": flaky},
            conn=tconn,
            setup=lambda: c.reset(tconn.client),
            invariant=lambda res: True,
            config=ExploreConfig(calls={"A": 3, "B": 2}),
            strategy=strategy,
            budget=50,
        )


def test_explore__actor_exceeds_max_calls__race_error_says_raise_max_calls(tconn: Connection) -> None:
    """An actor making more calls than it was given turns is stopped with advice, not left to run free."""
    table = tconn.table_name

    def chatty(client: Any) -> None:
        for _ in range(5):
            client.get_item(TableName=table, Key=KEY)

    with pytest.raises(RaceError, match="made more calls than explore gave it turns.*Raise max_calls"):
        explore(
            {"A": chatty, "B": chatty},
            conn=tconn,
            setup=lambda: Counter.pk_sk(table).reset(tconn.client),
            invariant=lambda res: True,
            config=ExploreConfig(calls={"A": 1, "B": 1}, max_calls=2),
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "bfs"}, "unknown strategy 'bfs'; choose one of: auto, exhaustive, dpor, pct"),
        ({"budget": 0}, "budget must be an int >= 1, not 0"),
        ({"config": {"depth": 0}}, "depth must be an int >= 1, not 0"),
        ({"config": {"shrink_budget": -1}}, "shrink_budget must be an int >= 0, not -1"),
        ({"config": {"timeout": 0}}, "timeout must be a positive number"),
        ({"config": "fast"}, "config is str, not an ExploreConfig"),
        ({"seed": -1}, "seed must be an int >= 0, not -1"),
        ({"invariant": "n == 3"}, "invariant is str, not a function of one Interleaving"),
        (
            {"config": {"calls": {"A": 2}}},
            r"calls must give a count for exactly the actors \['A', 'B'\]: no count for actor\(s\) \['B'\]",
        ),
        ({"actors": {"A": print}}, "explore needs at least two actors"),
        ({"actors": {"A": print, "B B": print}}, "actor name 'B B' must be a non-empty string without spaces"),
        (
            {"actors": {"A": print, "B": 3}},
            "actor 'B' is int, not a function of no arguments, or of one DynamoDB client",
        ),
    ],
)
def test_explore__bad_arguments__raise_validation_error_before_any_run(
    tconn: Connection, kwargs: dict[str, Any], message: str
) -> None:
    """Bad arguments are refused with a message that says what to pass; no actor runs."""
    ran: list[str] = []

    def actor(client: Any) -> None:
        ran.append("ran")
        client.get_item(TableName=tconn.table_name, Key=KEY)

    args: dict[str, Any] = {
        "actors": {"A": actor, "B": actor},
        "conn": tconn,
        "setup": None,
        "invariant": lambda res: True,
        **kwargs,
    }
    with pytest.raises(ValidationError, match=message):
        if isinstance(args.get("config"), dict):
            args["config"] = ExploreConfig(**args["config"])
        explore(**args)
    assert ran == []


def trace_class(res: Interleaving, schemas: KeySchemas) -> tuple[tuple[tuple[str, str, str], ...], ...]:
    """A canonical name for a run's equivalence class (Foata normal form over conflicting calls)."""
    calls = [Call.of(record, schemas) for _, record, _ in res.steps]
    before = {j: {i for i in range(j) if conflicts(calls[i], calls[j])} for j in range(len(calls))}
    left, layers = set(range(len(calls))), []
    while left:
        layer = {j for j in left if not before[j] & left}
        layers.append(tuple(sorted((calls[j].actor, calls[j].operation, calls[j].key) for j in layer)))
        left -= layer
    return tuple(layers)


@pytest.mark.slow
def test_explore__dpor__covers_every_class_exhaustive_search_finds(tconn: Connection) -> None:
    """On 90 orders, DPOR's runs cover exactly the equivalence classes of all 90, in far fewer runs."""
    table, c = tconn.table_name, counter(tconn)

    def rmw(client: Any) -> None:
        n, v = c.read(client)
        client.put_item(TableName=table, Item={**KEY, "n": {"N": str(n + 1)}, "v": {"N": str(v)}})

    def auditor(client: Any) -> None:
        c.audit(client, "C", 0)
        c.read(client)

    actors = {"A": rmw, "B": rmw, "C": auditor}
    schemas = KeySchemas(tconn)
    seen: dict[str, list[Any]] = {"exhaustive": [], "dpor": []}
    for strategy, classes in seen.items():

        def record(res: Any, classes: list[Any] = classes) -> None:
            classes.append(trace_class(res, schemas))

        result = explore(
            actors,
            conn=tconn,
            setup=lambda: c.reset(tconn.client),
            strategy=strategy,
            budget=100,
            invariant=record,
        )
        assert result.passed and result.orders == 90
    assert len(seen["exhaustive"]) == 90
    assert set(seen["dpor"]) == set(seen["exhaustive"])
    # a run may repeat a class (an order is fixed before the run, so DPOR cannot dodge a sleeping actor)
    assert len(set(seen["dpor"])) <= len(seen["dpor"]) < 90 / 4


def _races_imports(module: str) -> set[str]:
    """The labkit.races modules ``module`` imports, directly or through other labkit.races modules."""
    races = Path(__file__).resolve().parents[2] / "labkit" / "races"
    seen: set[str] = set()
    todo = [module]
    while todo:
        tree = ast.parse((races / f"{todo.pop()}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # TYPE_CHECKING imports count: a cycle for the reader all the same
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                name = node.module.split(".")[0]
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
    return seen


def test_runner_and_strategies__neither_imports_the_other() -> None:
    """The runner runs orders, the strategies choose them; only explore.py knows both."""
    assert "strategies" not in _races_imports("runner")
    assert "runner" not in _races_imports("strategies")
    assert "explore" not in _races_imports("runner") | _races_imports("strategies")
    assert {"runner", "strategies"} <= _races_imports("explore")


def test_count_orders__matches_every_order_enumerated() -> None:
    """The multinomial count and the enumeration agree (one source for both: labkit.races.orders)."""
    for calls in ({"A": 2, "B": 2}, {"A": 3, "B": 1, "C": 2}, {"A": 1}):
        orders = list(each_order(calls))
        assert len(orders) == count_orders(calls) == len(set(orders))
        assert orders == sorted(orders)
        assert all(sorted(o) == sorted(n for n, k in calls.items() for _ in range(k)) for o in orders)


def test_explore__auto_portfolio__exhaustive_outgrown__dpor_then_pct_and_the_guarantee_says_so(
    tconn: Connection,
) -> None:
    """Retries give more schedules than the dry run's 6 orders: auto's exhaustive stage gives way, honestly."""
    from tests.races.increments import put_counter, safe_increment

    actors = {name: safe_increment(tconn.table_name) for name in "AB"}
    result = explore(actors, conn=tconn, setup=lambda: put_counter(tconn), invariant=lambda res: True, budget=8)
    assert result.passed and result.orders == 6 and result.runs == 8
    assert result.strategy == "pct"
    assert result.guarantee == (
        "2 sampled orders, seed 0, depth 3 (after 6 exhaustive and DPOR runs that did not cover every class)"
    )
    with pytest.raises(ValidationError, match=r"budget=1 was used up before pct could run: .* raise budget"):
        explore(actors, conn=tconn, setup=lambda: put_counter(tconn), invariant=lambda res: True, budget=1)
