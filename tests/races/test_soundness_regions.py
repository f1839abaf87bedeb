"""DPOR stays sound with replication steps: on two-region programs it reaches every outcome exhaustive search reaches.

The programs (``regional_programs`` in tests/races/programs.py) are two actors of one or two calls, each
call in us-east-1 or us-west-2, on two items of a global table (MREC, or MRSC a quarter of the time);
every write's deliveries are steps of the run (labkit.races.replication, decision 210), which a delivery
orders as a write of its item. For each program exhaustive search and DPOR each record the *outcome* of
every run (each region's items after the run, converged or, for ``converge=False`` programs, as the run
left them; every actor's answers); DPOR must reach every outcome exhaustive search reaches. Then DPOR is
asked to find one of them (the invariant fails on it) and its counterexample, deliveries named, must
replay to that outcome.

Hypothesis, derandomized: ``LABKIT_REGIONS_SOUNDNESS`` programs (default 6: the fast loop); the module
prints programs, outcomes and the runs of each strategy.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from labkit.embedded import start_endpoint
from labkit.races import Interleaving, explore, run_interleaving
from tests.races.programs import RegionalProgram, RegionalStep, RegionalWorld, regional_programs
from tests.races.regions import global_table

FAST = settings(
    max_examples=int(os.environ.get("LABKIT_REGIONS_SOUNDNESS", 6)),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

#: per program: (outcomes, exhaustive runs, DPOR runs, delivery steps named in exhaustive search's runs)
TALLY: list[tuple[int, int, int, int]] = []


@pytest.fixture(scope="module")
def world() -> Iterator[RegionalWorld]:
    with (
        start_endpoint() as endpoint,
        global_table(endpoint.url) as mrec,
        global_table(endpoint.url, strong=True) as mrsc,
    ):
        yield RegionalWorld({False: mrec[0], True: mrsc[0]}, {False: mrec[1], True: mrsc[1]})
    if TALLY:
        outcomes, full, dpor, steps = (sum(t[i] for t in TALLY) for i in range(4))
        print(
            f"\nregional soundness: {len(TALLY)} programs, {outcomes} outcomes, exhaustive {full:,} runs, "
            f"DPOR {dpor:,} runs, {steps} distinct delivery steps, 0 missed"
        )
        assert steps, "no delivery was ever a step: the programs tested nothing of replication"


def reached(world: RegionalWorld, program: RegionalProgram, strategy: str) -> tuple[set[Any], int, set[str]]:
    outcomes: set[Any] = set()
    turns: set[str] = set()

    def record(res: Interleaving) -> None:
        outcomes.add(world.final_state(program, res))
        turns.update(t for t in res.turns if t.startswith("["))

    result = explore(
        world.actors(program),
        conn=world.conn(program),
        setup=world.setup(program),
        invariant=record,
        strategy=strategy,
        budget=100_000,
        converge=program.converge,
    )
    assert result.passed, result.summary()
    return outcomes, result.runs, turns


def check_sound(world: RegionalWorld, program: RegionalProgram) -> None:
    every, full, deliveries = reached(world, program, "exhaustive")
    dpor, runs, _ = reached(world, program, "dpor")
    missed = every - dpor
    assert not missed, (
        f"DPOR ({runs} runs) missed {len(missed)} of {len(every)} outcomes, "
        f"e.g. {sorted(map(repr, missed))[0]}; {program}"
    )
    TALLY.append((len(every), full, runs, len(deliveries)))
    target = max(every, key=repr)

    def not_target(res: Interleaving) -> None:
        assert world.final_state(program, res) != target, "the target outcome"

    conn = world.conn(program)
    found = explore(
        world.actors(program),
        conn=conn,
        setup=world.setup(program),
        invariant=not_target,
        strategy="dpor",
        budget=100_000,
        converge=program.converge,
    )
    assert not found.passed and found.counterexample is not None, f"DPOR never reached {target}; {program}"
    world.setup(program)()
    replay = run_interleaving(world.actors(program), found.counterexample, conn=conn, converge=program.converge)
    assert world.final_state(program, replay) == target, f"{found.counterexample!r} replayed elsewhere; {program}"


#: The lost update across regions: each actor reads the item in its region and writes what it read plus one.
LOST_UPDATE = RegionalProgram(
    (0, None),
    (
        (RegionalStep("get", 0, 0), RegionalStep("put_from_read", 0, 0)),
        (RegionalStep("get", 1, 0), RegionalStep("put_from_read", 1, 0)),
    ),
)
#: A transaction's items arrive one by one, read in the other region between them, replicas left apart.
SPLIT_TRANSACTION = RegionalProgram(
    (None, 0),
    ((RegionalStep("transact", 0, 0, 2),), (RegionalStep("get", 1, 1), RegionalStep("get", 1, 0))),
    converge=False,
)


@FAST
@example(program=LOST_UPDATE)
@example(program=SPLIT_TRANSACTION)
@given(program=regional_programs())
def test_dpor__two_region_programs__reaches_every_outcome_exhaustive_search_reaches(
    world: RegionalWorld, program: RegionalProgram
) -> None:
    check_sound(world, program)
