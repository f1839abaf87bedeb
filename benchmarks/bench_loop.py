"""The README's test command, timed beside references measured in the same run.

The loop's seconds alone say little: this kind of machine runs 2-3x faster or slower from one day to
the next. Two references, both measured now:

* ``--against REV``: the same command in a fresh checkout of an earlier commit (its own venv,
  installed first, not timed), run right before this checkout's: the ratio is the change's effect.
* the no-work floor of bench_endpoint.py (a boto3 GetItem against a server that answers with a canned
  response), before and after, and the loop scaled to a floor of 0.79 ms, the floor on the day the
  README's 150 s target was set. A rough proxy: the floor is one thread's round trip, the loop keeps
  two cores busy.

* ``--against REV --paired``: both checkouts' commands at the same time, each one's CPU seconds (user +
  system, its processes and everything they started and reaped) and their ratio. Back-to-back runs of
  one commit differed by 10% here (2026-12-03: 167 s, then 150 s); run side by side, both loops meet
  the same machine, so the CPU ratio is the change's effect (their wall times, both on shared cores,
  are printed too and say nothing about the idle loop).

* ``--loaded``: the same command idle, then beside four busy-loop processes per core (``sh -c 'while :;
  do :; done'``, started here and killed by PID however the run ends): issue 42's loaded machine, both
  times side by side with their ratio.

    python benchmarks/bench_loop.py                      # python3 bootstrap.py test, in this checkout
    python benchmarks/bench_loop.py --against 826e9e7    # and first in a checkout of that commit
    python benchmarks/bench_loop.py --against 826e9e7 --paired   # both at once: CPU seconds and their ratio
    python benchmarks/bench_loop.py --loaded             # idle, then beside 4 busy loops per core
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_endpoint import _Canned, latencies
from common import ROOT

from labkit.embedded import start_endpoint

#: The no-work floor (median ms) measured on the day the README's test-time target was set.
REFERENCE_FLOOR_MS = 0.79
CALLS = 1000
#: Busy loops per core for --loaded: about load 9 on 2 cores, the machine of issue 42.
BUSY_PER_CORE = 4
BUSY_LOOP = ["sh", "-c", "while :; do :; done"]


def cores() -> int:
    """The cores this process may run on (``taskset`` narrows them), else the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[list[int]]:
    """``count`` busy-loop processes for the duration; each is killed by its PID and reaped, whatever happens."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(subprocess.Popen(BUSY_LOOP, stdin=subprocess.DEVNULL))
        yield [proc.pid for proc in procs]
    finally:
        for proc in procs:
            os.kill(proc.pid, 9)  # SIGKILL by PID: only the processes started here
        for proc in procs:
            proc.wait()


def floor_ms() -> float:
    """Median ms of a GetItem answered by the canned-response server (no DynamoDB work at all)."""
    with start_endpoint(engine=_Canned()) as canned:  # type: ignore[arg-type]
        return 1000 * statistics.median(latencies(canned.url, "bench", CALLS))


def _command(checkout: Path, slow: bool) -> list[str]:
    return [sys.executable, str(checkout / "bootstrap.py"), "test", *(["--slow"] if slow else []), "-q"]


def loop_seconds(checkout: Path, slow: bool, env: dict[str, str] | None = None) -> tuple[float, str]:
    """pytest's own figure for ``bootstrap.py test`` in ``checkout`` (its summary line), and that line."""
    out = subprocess.run(_command(checkout, slow), cwd=checkout, capture_output=True, text=True, env=env)
    line = next((x for x in reversed(out.stdout.splitlines()) if re.search(r" in [\d.]+s", x)), "")
    found = re.search(r" in ([\d.]+)s", line)
    if out.returncode != 0 or found is None:
        sys.exit(f"bench_loop: the test command failed (exit {out.returncode}): {line or out.stderr[-2000:]}")
    return float(found.group(1)), line.strip("= ")


def paired(checkouts: dict[str, tuple[Path, dict[str, str] | None]], slow: bool) -> dict[str, tuple[float, float]]:
    """Each checkout's test command, all started at once: {name: (CPU seconds, wall seconds)}.

    The CPU is what ``wait4`` reports for the command: its own and that of every process it reaped
    (bootstrap's pytest, the xdist workers, the notebooks' kernels), user and system."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="labkit-bench-paired-") as tmp:
        logs = {name: open(Path(tmp) / f"{index}.log", "w+b") for index, name in enumerate(checkouts)}  # noqa: SIM115
        try:
            pids = {
                subprocess.Popen(
                    _command(checkout, slow), cwd=checkout, env=env, stdout=logs[name], stderr=subprocess.STDOUT
                ).pid: name
                for name, (checkout, env) in checkouts.items()
            }
            result: dict[str, tuple[float, float]] = {}
            while pids:
                pid, status, usage = os.wait4(-1, 0)
                name = pids.pop(pid, None)
                if name is None:
                    continue
                if os.waitstatus_to_exitcode(status) != 0:
                    logs[name].seek(0)
                    tail = logs[name].read().decode(errors="replace")[-2000:]
                    sys.exit(f"bench_loop: the test command in {name} failed: {tail}")
                result[name] = (usage.ru_utime + usage.ru_stime, time.monotonic() - started)
        finally:
            for log in logs.values():
                log.close()
    return result


def loaded(slow: bool) -> None:
    """The command idle, then beside BUSY_PER_CORE busy loops per core; both times and their ratio, one run."""
    idle, idle_summary = loop_seconds(ROOT, slow)
    count = BUSY_PER_CORE * cores()
    with busy_loops(count):
        busy, busy_summary = loop_seconds(ROOT, slow)
        load = os.getloadavg()[0]
    print(f"idle: {idle_summary}")
    print(f"beside {count} busy loops ({BUSY_PER_CORE} per core, load {load:.1f} at the end): {busy_summary}")
    print(f"idle {idle:.0f} s | loaded {busy:.0f} s | loaded / idle: {busy / idle:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", action="store_true", help="time `bootstrap.py test --slow` instead")
    parser.add_argument("--against", metavar="REV", help="first time the command in a checkout of REV")
    parser.add_argument(
        "--paired",
        action="store_true",
        help="with --against: run both commands at the same time and compare their CPU seconds",
    )
    parser.add_argument(
        "--loaded",
        action="store_true",
        help=f"time the command idle, then beside {BUSY_PER_CORE} busy-loop processes per core; print both",
    )
    args = parser.parse_args()
    if args.loaded and args.against:
        parser.error("--loaded and --against are two separate runs; give one")
    if args.paired and not args.against:
        parser.error("--paired compares with --against REV; give both")
    if args.loaded:
        loaded(args.slow)
        return
    with tempfile.TemporaryDirectory(prefix="labkit-bench-loop-") as tmp:
        reference = None
        if args.against:
            old = Path(tmp) / "checkout"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(old)], check=True)
            subprocess.run(["git", "-C", str(old), "checkout", "-q", args.against], check=True)
            env = {**os.environ, "LABKIT_VENV": str(old / ".venv")}
            bootstrap = [sys.executable, str(old / "bootstrap.py"), "doctor"]
            subprocess.run(bootstrap, cwd=old, env=env, check=True, capture_output=True)  # the install, untimed
        if args.paired:
            cpu = paired({args.against: (old, env), "here": (ROOT, None)}, args.slow)
            for name, (seconds, wall) in cpu.items():
                where = "here" if name == "here" else f"at {name}"
                print(f"test command {where}: {seconds:.0f} s of CPU, {wall:.0f} s wall")
            print(f"CPU here / {args.against}: {cpu['here'][0] / cpu[args.against][0]:.2f}x (both run at once)")
            return
        before = floor_ms()
        if args.against:
            reference = loop_seconds(old, args.slow, env)
        seconds, summary = loop_seconds(ROOT, args.slow)
        after = floor_ms()
    floor = (before + after) / 2
    if reference is not None:
        print(f"test command at {args.against}: {reference[1]}")
        print(f"test command here: {summary}")
        print(f"here / {args.against}: {seconds / reference[0]:.2f}x")
    else:
        print(f"test command: {summary}")
    print(f"no-work floor (canned GetItem, median of {CALLS}): {before:.2f} ms before, {after:.2f} ms after")
    print(f"loop / floor: {seconds / floor:.0f} s per ms of floor")
    print(f"loop at the reference floor of {REFERENCE_FLOOR_MS} ms: {seconds * REFERENCE_FLOOR_MS / floor:.0f} s")


if __name__ == "__main__":
    main()
