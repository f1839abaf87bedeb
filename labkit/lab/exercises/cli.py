"""``labkit exercises``: does every exercise's reference solution pass its check on this machine?

What a workshop facilitator asks the room to run before the first exercise: a table of
exercises, PASSED or FAILED, and how long each check took; exit code 0 when all pass.
:mod:`labkit.commands.cli` registers the subcommand and imports this module only when it runs (the exercises
import pandas and the race lab, which ``labkit serve`` does not need).
"""

from __future__ import annotations

import argparse
import sys

from ... import connect
from ...shared.backend_choice import parse_backend
from . import check, names
from .solutions import REFERENCE

EXIT_FAILED = 1


def run(args: argparse.Namespace) -> int:
    """Check each reference solution; print one row per exercise; 0 if all pass, else 1."""
    backend = getattr(args, "backend", None)
    if backend:
        parse_backend(backend, "--backend")  # a typo is named as the option the user typed
    conn = connect(backend)
    print(f"labkit exercises: checking the reference solutions on backend {conn.backend}")
    print(f"{'exercise':<16} {'result':<8} {'seconds':>7}  checked")
    failed = []
    for name in names():
        verdict = check(name, REFERENCE[name], conn=conn)
        result = "PASSED" if verdict.passed else "FAILED"
        print(f"{name:<16} {result:<8} {verdict.seconds:>7.1f}  {verdict.tried}", flush=True)
        if not verdict.passed:
            failed.append(name)
            for finding in verdict.findings:
                print(f"    {finding}")
    if failed:
        print(
            f"{len(failed)} of {len(names())} exercises FAILED on this machine ({', '.join(failed)}): "
            "run `labkit doctor` and report both outputs",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"all {len(names())} exercises pass: this machine is ready for the workshop")
    return 0


__all__ = ["run"]
