#!/usr/bin/env python3
"""The README's commands, on any machine with Python 3.11+ and nothing else.

    python3 bootstrap.py lab          # install what is needed, open JupyterLab on the embedded endpoint
    python3 bootstrap.py test         # install what is needed, run every unit test and every notebook
    python3 bootstrap.py test --slow  # the slow checks (offline install, stability repeats, memory soak)
    python3 bootstrap.py lint         # ruff check, ruff format --check and mypy --strict (installs the dev extra)
    python3 bootstrap.py notebooks [NAME ...]   # rebuild notebooks/*.ipynb from lessons/*.md and execute them
    python3 bootstrap.py doctor       # any other command goes to `labkit` (doctor, serve, ...) in .venv
    python3 bootstrap.py lock         # refresh constraints.txt: labkit[lab,test,dev] in a fresh venv, frozen
    python3 bootstrap.py wheelhouse DIR   # fill DIR with wheels for an offline install
    python3 bootstrap.py lab --wheelhouse DIR   # install from DIR with the package index switched off

Every command creates (or reuses) the virtual environment ``.venv`` and installs labkit into it
with the versions in ``constraints.txt``; it re-installs only when ``pyproject.toml``,
``constraints.txt`` or the extras change (a stamp in the venv records what was installed, written
only after a successful install). A ``.venv`` that no longer works is recreated.

Environment: ``LABKIT_VENV`` (another venv folder), ``LABKIT_WHEELHOUSE`` (same as
``--wheelhouse``), ``LABKIT_SKIP_INSTALL=1`` (use ``LABKIT_VENV`` as it is: an environment you
manage yourself). Only the standard library is used here, and nothing newer than Python 3.7 runs
before the version check.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MIN_PYTHON = (3, 11)
CONSTRAINTS = ROOT / "constraints.txt"
EXTRAS = "lab,test"
#: What `lock` freezes: everything any of labkit's extras can install.
LOCK_EXTRAS = "lab,test,dev"
#: The README's test command, run inside the virtual environment: every unit test and every
#: notebook, except the checks marked ``slow`` (the offline wheelhouse install, repeat-N stability
#: runs, the memory soak), which ``test --slow`` runs and ``.ci/run`` runs after it.
TEST_COMMAND = ["-m", "pytest", "-n", "2", "--dist", "loadscope", "--nbval-lax", "-m", "not slow", "tests", "notebooks"]
#: ``python3 bootstrap.py test --slow``: only the checks marked ``slow``.
SLOW_TEST_COMMAND = ["-m", "pytest", "-n", "2", "--dist", "loadscope", "-m", "slow", "tests"]
#: The lint command: each runs inside the virtual environment; all must pass.
LINT_PATHS = ["labkit", "recipes", "tests", "benchmarks", "tools", "bootstrap.py", "conftest.py"]
LINT_COMMANDS = [
    # notebooks are checked, not formatted: they are generated from lessons/ (`bootstrap.py notebooks`)
    ["-m", "ruff", "check", *LINT_PATHS, "notebooks"],
    ["-m", "ruff", "format", "--check", *LINT_PATHS],
    ["-m", "mypy"],
]
#: Rebuilds and executes the notebooks from their sources in lessons/ (docs/notebooks.md).
NOTEBOOKS_COMMAND = ["tools/notebooks.py"]
#: The one-line way to refresh the lock; written at the top of constraints.txt.
LOCK_COMMAND = "python3 bootstrap.py lock"
STAMP = ".labkit-installed"
_QUIET_PIP = ["--quiet", "--disable-pip-version-check", "--no-input"]


class BootstrapError(Exception):
    """One line saying what went wrong and what to do."""


def say(message: str) -> None:
    print(f"bootstrap: {message}", flush=True)


def _venv_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _digest(extras: str) -> str:
    data = (ROOT / "pyproject.toml").read_bytes() + b"\0" + extras.encode()
    if CONSTRAINTS.exists():
        data += b"\0" + CONSTRAINTS.read_bytes()
    return hashlib.sha256(data).hexdigest()


def install_is_current(env_dir: Path, extras: str = EXTRAS) -> bool:
    """The venv's stamp says labkit[extras] was installed from this pyproject.toml and constraints.txt."""
    stamp = env_dir / STAMP
    return stamp.exists() and stamp.read_text() == _digest(extras)


def _venv_problem(env_dir: Path) -> str | None:
    """Why the venv cannot be used as it is (None when it can)."""
    python = _venv_python(env_dir)
    if not python.exists():
        return "it has no python"
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"its python does not run: {exc}"
    if out.returncode != 0:
        return "its python does not run: " + (out.stderr.strip().splitlines() or ["no message"])[-1]
    found = tuple(int(x) for x in out.stdout.strip().split("."))
    if found < MIN_PYTHON:
        return f"it was made with Python {out.stdout.strip()}"
    return None


def _installed_here(python: Path) -> bool:
    """labkit imports in the venv, from this checkout (a venv copied from another checkout does not)."""
    probe = "import importlib.util as u; s = u.find_spec('labkit'); print(s.origin if s else '')"
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=60)
    origin = out.stdout.strip()
    return out.returncode == 0 and bool(origin) and Path(origin).resolve().is_relative_to(ROOT)


def _create(env_dir: Path) -> None:
    import venv

    say(f"creating virtual environment {env_dir}")
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(env_dir, ignore_errors=True)
        raise BootstrapError(
            f"could not create {env_dir} ({exc}); on Debian/Ubuntu install the venv module "
            f"(`sudo apt install python3-venv`), then run the command again"
        ) from None


def pip_install_args(extras: str, wheelhouse: str | None) -> list[str]:
    """pip's arguments that install labkit with ``extras`` at the locked versions."""
    args = ["install", *_QUIET_PIP]
    if CONSTRAINTS.exists():
        args += ["-c", str(CONSTRAINTS)]
    if wheelhouse:
        args += ["--no-index", "--find-links", str(Path(wheelhouse).resolve())]
    return [*args, "-e", f"{ROOT}[{extras}]"]


def ensure_env(env_dir: Path, extras: str = EXTRAS, wheelhouse: str | None = None) -> Path:
    """A working venv with labkit[extras] installed from this checkout at the locked versions."""
    python = _venv_python(env_dir)
    if os.environ.get("LABKIT_SKIP_INSTALL") == "1":
        if not python.exists():
            raise BootstrapError(f"LABKIT_SKIP_INSTALL=1 but {env_dir} has no python; unset it to install")
        return python
    created = False
    if env_dir.exists():
        problem = _venv_problem(env_dir)
        if problem is not None:
            if not (env_dir / "pyvenv.cfg").exists():
                raise BootstrapError(
                    f"{env_dir} is not a virtual environment ({problem}); point LABKIT_VENV at another folder"
                )
            say(f"{env_dir} is unusable ({problem}); recreating it")
            shutil.rmtree(env_dir)
    if not env_dir.exists():
        _create(env_dir)
        created = True
    stamp = env_dir / STAMP
    if install_is_current(env_dir, extras) and _installed_here(python):
        return python
    stamp.unlink(missing_ok=True)
    if wheelhouse and not Path(wheelhouse).is_dir():
        raise BootstrapError(
            f"wheelhouse {wheelhouse} is not a folder; fill it with `python3 bootstrap.py "
            f"wheelhouse {wheelhouse}` on a machine with network"
        )
    source = f"from {wheelhouse}, no network" if wheelhouse else "first run takes a few minutes"
    say(f"installing labkit[{extras}] and its dependencies ({source})")
    start = time.monotonic()
    try:
        subprocess.run([str(python), "-m", "pip", *pip_install_args(extras, wheelhouse)], check=True)
    except (subprocess.CalledProcessError, KeyboardInterrupt) as exc:
        if created:  # nothing half-installed stays behind: the next run starts clean
            shutil.rmtree(env_dir, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            raise
        hint = (
            "is every wheel in the wheelhouse? refill it on a machine with network"
            if wheelhouse
            else "check the network, or use --wheelhouse DIR"
        )
        raise BootstrapError(
            f"installing failed (pip's message is above); {hint}, then run the command again"
        ) from None
    stamp.write_text(_digest(extras))
    say(f"installed in {time.monotonic() - start:.0f} s")
    return python


def lock() -> int:
    """Write constraints.txt: labkit[lab,test,dev] installed into a fresh venv, then frozen."""
    with tempfile.TemporaryDirectory(prefix="labkit-lock-") as tmp:
        env_dir = Path(tmp) / "venv"
        _create(env_dir)
        python = str(_venv_python(env_dir))
        say(f"resolving labkit[{LOCK_EXTRAS}] with the newest versions pyproject.toml allows")
        subprocess.run([python, "-m", "pip", "install", *_QUIET_PIP, f"{ROOT}[{LOCK_EXTRAS}]"], check=True)
        frozen = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    pins = sorted(
        (line for line in frozen.stdout.splitlines() if line and not line.startswith(("#", "-e", "labkit"))),
        key=str.lower,
    )
    header = [
        "# The versions labkit's tests passed on. bootstrap.py installs with `pip install -c constraints.txt`.",
        f"# Generated by `{LOCK_COMMAND}`: labkit[{LOCK_EXTRAS}] installed into a fresh venv, then `pip freeze`",
        f"# (Python {sys.version_info[0]}.{sys.version_info[1]} on {sys.platform}). Do not edit by hand: "
        "change pyproject.toml, re-run it, run the tests.",
    ]
    CONSTRAINTS.write_text("\n".join([*header, *pins]) + "\n")
    say(f"wrote {len(pins)} pins to {CONSTRAINTS.name}")
    return 0


def wheelhouse(target: str) -> int:
    """Fill ``target`` with wheels for labkit[lab,test] at the locked versions, and setuptools to build labkit."""
    python = ensure_env(_env_dir())
    folder = Path(target).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    say(f"filling {folder} with wheels for labkit[{EXTRAS}] at the locked versions")
    args = ["wheel", *_QUIET_PIP, "--wheel-dir", str(folder)]
    if CONSTRAINTS.exists():
        args += ["-c", str(CONSTRAINTS)]
    subprocess.run([str(python), "-m", "pip", *args, f"{ROOT}[{EXTRAS}]", _build_requirement()], check=True)
    for own in folder.glob("labkit-*.whl"):  # labkit itself is installed from the checkout
        own.unlink()
    say(
        f"{len(list(folder.glob('*.whl')))} wheels in {folder}; on each laptop: "
        f"python3 bootstrap.py lab --wheelhouse {target}"
    )
    return 0


def _build_requirement() -> str:
    """setuptools as pyproject.toml's [build-system] asks for it (needed to install labkit offline)."""
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.strip().startswith("requires") and "setuptools" in line:
            return line.split('"')[1]
    return "setuptools"


def _env_dir() -> Path:
    return Path(os.environ.get("LABKIT_VENV") or ROOT / ".venv")


def _take_option(args: list[str], name: str) -> tuple[str | None, list[str]]:
    """Remove ``--name VALUE`` / ``--name=VALUE`` from args (before a ``--``)."""
    rest: list[str] = []
    value = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == name:
            if i + 1 == len(args):
                raise BootstrapError(f"{name} needs a folder")
            value, i = args[i + 1], i + 2
            continue
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def _run(python: Path, args: list[str]) -> int:
    """Run the venv's python from the checkout; on POSIX it replaces this process (signals go straight to it)."""
    os.chdir(ROOT)
    command = [str(python), *args]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(command[0], command)
    return subprocess.call(command)


def lint(python: Path) -> int:
    """Every lint command, each run even if an earlier one failed; non-zero if any failed."""
    os.chdir(ROOT)
    failed = [" ".join(c[1:3]) for c in LINT_COMMANDS if subprocess.call([str(python), *c]) != 0]
    if failed:
        print(f"bootstrap: lint failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    say("lint passed: ruff check, ruff format --check, mypy --strict")
    return 0


USAGE = (
    "usage: python3 bootstrap.py lab|test|lint|doctor|serve|lock|notebooks|wheelhouse DIR [args...] (see the README)"
)


def main(argv: list[str]) -> int:
    if sys.version_info < MIN_PYTHON:
        print(
            f"bootstrap: labkit needs Python {'.'.join(map(str, MIN_PYTHON))}+, this is "
            f"{sys.version.split()[0]}; run it with a newer python3 (e.g. python3.11 bootstrap.py ...)",
            file=sys.stderr,
        )
        return 2
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, file=sys.stderr)
        return 2 if not argv else 0
    command = argv[0]
    try:
        house, rest = _take_option(argv[1:], "--wheelhouse")
        house = house or os.environ.get("LABKIT_WHEELHOUSE") or None
        if command == "lock":
            return lock()
        if command == "wheelhouse":
            if len(rest) != 1:
                raise BootstrapError("wheelhouse needs one folder: python3 bootstrap.py wheelhouse DIR")
            return wheelhouse(rest[0])
        python = ensure_env(_env_dir(), LOCK_EXTRAS if command == "lint" else EXTRAS, house)
    except BootstrapError as exc:
        print(f"bootstrap: error: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(
            f"bootstrap: error: {' '.join(map(str, exc.cmd[:4]))} ... failed (exit {exc.returncode}); "
            "its message is above",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("bootstrap: interrupted; no install stamp was written, so the next run installs again", file=sys.stderr)
        return 130
    if command == "test":
        if "--slow" in rest:
            rest.remove("--slow")
            return _run(python, [*SLOW_TEST_COMMAND, *rest])
        return _run(python, [*TEST_COMMAND, *rest])
    if command == "lint":
        return lint(python)
    if command == "notebooks":
        return _run(python, [*NOTEBOOKS_COMMAND, *rest])
    return _run(python, ["-m", "labkit", command, *rest])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
