"""What labkit's pytest plugin costs a session that never uses it: 50 trivial tests, with and without it.

    python benchmarks/bench_plugin.py [--tests 50] [--repeat 7] [--autoload]

Each repetition runs ``python -m pytest -q -p no:cacheprovider`` twice in a fresh process, in an
empty folder holding ``--tests`` trivial tests and no AWS variables: once with the plugin and once
without, alternating which goes first so that a busy machine slows both alike. It prints the
median wall and CPU time of each, their difference (what the unused plugin costs one session) and
their ratio; on a busy machine the CPU time is the steadier of the two. Nothing here asserts on
time; tests/plugin/test_plugin_inert.py checks what the plugin imports instead.

By default only labkit's plugin is compared (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, with and
without ``-p labkit.pytest_plugin``): the other plugins of a dev venv cost the same both ways
and only add noise (nbval alone imports jsonschema's format checkers, seconds here).
``--autoload`` compares the session as installed (every entry-point plugin) with ``-p no:labkit``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRUBBED = ("AWS_", "LABKIT_", "PYTEST_", "BOTO_")


def team_folder(root: Path, tests: int) -> Path:
    """An empty folder with ``tests`` trivial tests in one file."""
    folder = root / "team"
    folder.mkdir()
    body = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n" for i in range(tests))
    (folder / "test_plain.py").write_text(body)
    return folder


def session_seconds(folder: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one pytest session in a new process, interpreter start included.

    CPU time is what the session itself spends; wall time also holds the waits of a busy machine.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--autoload", action="store_true", help="every installed plugin, against -p no:labkit")
    args = parser.parse_args()
    plugin: tuple[str, ...]
    no_plugin: tuple[str, ...]
    if args.autoload:
        plugin, no_plugin = (), ("-p", "no:labkit")
    else:
        plugin, no_plugin = ("-p", "labkit.pytest_plugin"), ()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = team_folder(root, args.tests)
        (root / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
        env.update(HOME=str(root / "home"), CI="true")
        if not args.autoload:
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        session_seconds(folder, env, *plugin)  # warm the file cache (bytecode, entry points)
        loaded: list[tuple[float, float]] = []
        off: list[tuple[float, float]] = []
        for i in range(args.repeat):
            if i % 2:
                off.append(session_seconds(folder, env, *no_plugin))
                loaded.append(session_seconds(folder, env, *plugin))
            else:
                loaded.append(session_seconds(folder, env, *plugin))
                off.append(session_seconds(folder, env, *no_plugin))
    mode = "every installed plugin" if args.autoload else "labkit's plugin alone (autoload off)"
    print(f"{args.tests} trivial tests, {mode}, median of {args.repeat} sessions each (a new process per session)")
    print(f"  {'':22}  {'wall':>8}  {'cpu':>8}")
    rows = (
        ("plugin loaded, unused", loaded, shlex.join(plugin) or "as installed"),
        ("without the plugin", off, shlex.join(no_plugin) or "autoload off"),
    )
    medians = {}
    for name, runs, how in rows:
        wall, cpu = (statistics.median(r[i] for r in runs) * 1000 for i in (0, 1))
        medians[name] = (wall, cpu)
        print(f"  {name:22}  {wall:6.0f}ms  {cpu:6.0f}ms  ({how})")
    (wall_on, cpu_on), (wall_off, cpu_off) = medians.values()
    print(
        f"  {'unused plugin costs':22}  {wall_on - wall_off:6.0f}ms  {cpu_on - cpu_off:6.0f}ms  per session "
        f"(ratio {wall_on / wall_off:.2f} wall, {cpu_on / cpu_off:.2f} cpu)"
    )


if __name__ == "__main__":
    main()
