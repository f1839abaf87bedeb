#!/usr/bin/env python3
"""The README's commands, on any machine with Python 3.11+ and nothing else.

    python3 bootstrap.py lab          # install what is needed, open JupyterLab on the embedded endpoint
    python3 bootstrap.py test         # install what is needed, run every unit test and every notebook
    python3 bootstrap.py test --slow  # the slow checks (offline install, stability repeats, memory soak)
    python3 bootstrap.py lint         # ruff check, ruff format --check and mypy --strict (installs the dev extra)
    python3 bootstrap.py notebooks [NAME ...]   # rebuild notebooks/*.ipynb from lessons/*.md and execute them
    python3 bootstrap.py doctor       # any other command goes to `labkit` (doctor, serve, ...) in .venv
    python3 bootstrap.py lock         # refresh constraints.txt for every platform x Python pair, and check it
    python3 bootstrap.py lock --check # only check: constraints.txt installs from wheels on every pair
    python3 bootstrap.py wheel [DIR]  # build DIR/labkit_dynamodb-VERSION-py3-none-any.whl (default dist/)
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
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MIN_PYTHON = (3, 11)
CONSTRAINTS = ROOT / "constraints.txt"
#: The distribution's name (pyproject.toml's ``[project] name``): ``labkit`` on PyPI is another
#: project. The import name, the ``labkit`` command and the pytest plugin's name stay ``labkit``.
DISTRIBUTION = "labkit-dynamodb"
#: Names an older checkout installed labkit under; bootstrap removes them from a venv it re-installs.
RETIRED_DISTRIBUTIONS = ("labkit",)
EXTRAS = "lab,test"
#: What `lock` resolves: everything any of labkit's extras can install.
LOCK_EXTRAS = "lab,test,dev"
#: Where the lock must install from wheels alone (README, "Installs"; docs/decisions.md 76), in uv's
#: names: Linux x86_64 and aarch64 with glibc 2.28+, macOS on Apple silicon and Intel, Windows x86_64 ...
LOCK_PLATFORMS = (
    "x86_64-manylinux_2_28",
    "aarch64-manylinux_2_28",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
    "x86_64-pc-windows-msvc",
)
#: ... on the lowest release of every Python minor the README and docs/install.md promise (Debian 12's is 3.11.2) ...
LOCK_PYTHONS = ("3.11.0", "3.12.0", "3.13.0")
#: ... and, on macOS, from macOS 12 on (uv reads the target from MACOSX_DEPLOYMENT_TARGET; its own
#: default moves with uv's releases).
LOCK_MACOS = "12.0"
#: The README's test command, run inside the virtual environment: every unit test and every
#: notebook, except the checks marked ``slow`` (the offline wheelhouse install, a team's wheel install,
#: the lock check on every platform, repeat-N stability runs, the memory soak), which ``test --slow``
#: runs and ``.ci/run`` runs after it. Three workers on a 2-core machine: the loop leaves a core idle
#: for tens of seconds (kernels starting, lesson cells waiting out real backoffs), a third fills it
#: (decisions 135, 136).
TEST_COMMAND = ["-m", "pytest", "-n", "3", "--dist", "loadscope", "--nbval-lax", "-m", "not slow", "tests", "notebooks"]
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
    """The venv's stamp says labkit-dynamodb[extras] was installed from this pyproject.toml and constraints.txt."""
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


def _retire_old_distributions(python: Path) -> None:
    """Uninstall a distribution labkit was installed under before (it would shadow the ``labkit``
    command and register the pytest plugin twice). Runs before the install: uninstalling after it
    would delete the new ``labkit`` command, which both distributions list."""
    probe = (
        "import importlib.metadata as m, sys\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n        m.distribution(name)\n    except m.PackageNotFoundError:\n        continue\n"
        "    print(name)"
    )
    found = subprocess.run(
        [str(python), "-c", probe, *RETIRED_DISTRIBUTIONS], capture_output=True, text=True, timeout=60
    ).stdout.split()
    if found:
        say(f"removing {', '.join(found)} from the venv: labkit is now installed as {DISTRIBUTION}")
        subprocess.run([str(python), "-m", "pip", "uninstall", "--yes", *_QUIET_PIP, *found], check=True)
    for name in RETIRED_DISTRIBUTIONS:  # the old install's build metadata in the checkout, found from its root
        shutil.rmtree(ROOT / f"{name}.egg-info", ignore_errors=True)


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
    say(f"installing {DISTRIBUTION}[{extras}] and its dependencies ({source})")
    start = time.monotonic()
    try:
        _retire_old_distributions(python)
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


def _normalise(name: str) -> str:
    """A distribution name as PyPI compares it (PEP 503): ``Jinja2`` and ``jinja2`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(text: str) -> dict[str, str]:
    """Normalised name -> version of every ``name==version`` line of a requirements text."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        requirement = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[_normalise(name)] = version.strip()
    return pins


def _tool_python(env_dir: Path, *packages: str) -> Path:
    """A throwaway venv with ``packages`` installed at the locked versions (uv, for the lock)."""
    _create(env_dir)
    python = _venv_python(env_dir)
    if packages:
        locked = ["-c", str(CONSTRAINTS)] if CONSTRAINTS.exists() else []
        subprocess.run([str(python), "-m", "pip", "install", *_QUIET_PIP, *locked, *packages], check=True)
    return python


def _uv_compile(uv: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``uv pip compile`` of labkit's extras (LOCK_EXTRAS), from wheels only; uv reads PyPI's index."""
    extras = [f"--extra={extra}" for extra in LOCK_EXTRAS.split(",")]
    command = [*uv, "pip", "compile", "pyproject.toml", *extras, "--only-binary", ":all:", "--no-header", "--quiet"]
    env = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": LOCK_MACOS}
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)


def _uv_compile_cached(uv: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``_uv_compile`` from uv's cache of PyPI's index (``--offline``: a second, not five), online only
    when the cache lacks something (a fresh cache: the caller has just resolved online)."""
    out = _uv_compile(uv, *args, "--offline")
    if out.returncode != 0 and re.search(r"offline|connectivity|cache", out.stderr, re.I):
        out = _uv_compile(uv, *args)
    return out


def _uv_reason(stderr: str) -> str:
    """uv's explanation of a failed resolution, on one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return " ".join(lines)[:600] or "uv failed without a message"


def _matrix(uv: list[str], constraints: Path) -> list[tuple[str, str, subprocess.CompletedProcess[str]]]:
    """Resolve labkit's extras against ``constraints`` for every pair of LOCK_PLATFORMS x LOCK_PYTHONS.

    One resolution for all platforms at once refreshes uv's cache of PyPI's index first; each pair then
    resolves from that cache."""
    _uv_compile(uv, "--universal", "--python-version", LOCK_PYTHONS[0], "-c", str(constraints), "--no-annotate")
    results = []
    for platform in LOCK_PLATFORMS:
        for python in LOCK_PYTHONS:
            args = ["--python-platform", platform, "--python-version", python, "-c", str(constraints), "--no-annotate"]
            results.append((platform, python, _uv_compile_cached(uv, *args)))
    return results


def lock_problems(uv: list[str], constraints: Path) -> list[str]:
    """What keeps ``constraints`` from installing labkit[LOCK_EXTRAS] from wheels on some pair: a pair
    that does not resolve, or one that needs a package the lock does not pin. Empty when none does."""
    locked = _pins(constraints.read_text())
    problems = []
    for platform, python, out in _matrix(uv, constraints):
        where = f"{platform}, Python {python}"
        if out.returncode != 0:
            problems.append(f"{where}: {_uv_reason(out.stderr)}")
        elif loose := sorted(f"{n}=={v}" for n, v in _pins(out.stdout).items() if locked.get(n) != v):
            problems.append(f"{where}: {', '.join(loose)} not pinned so in {constraints.name}")
        else:
            say(f"lock check: {where}: {len(_pins(out.stdout))} packages, all from wheels")
    return problems


def _wheel_caps(uv: list[str], failed: list[tuple[str, str, str]], caps: Path) -> dict[str, tuple[str, str]]:
    """For each pair that found no wheel of a locked version: the newest version of that package that
    has one there (uv's own choice for that pair alone) -> a cap for the next round."""
    found: dict[str, tuple[str, str]] = {}
    for platform, python, stderr in failed:
        names = {_normalise(n) for n in re.findall(r"Wheels are required for `([^`]+)`", stderr)}
        if not names:
            continue
        alone = _uv_compile_cached(uv, "--python-platform", platform, "--python-version", python, "-c", str(caps))
        for name in names:
            version = _pins(alone.stdout).get(name)
            if alone.returncode == 0 and version:
                found[name] = (version, f"{platform}, Python {python}")
    return found


def lock(check_only: bool = False) -> int:
    """Write constraints.txt: labkit[lab,test,dev] resolved once for every platform and Python, newest
    versions, one version per package wherever one serves every pair; then the matrix check. A package
    whose newest release lacks a wheel on some pair is capped at the newest one that has it there."""
    with tempfile.TemporaryDirectory(prefix="labkit-lock-") as tmp:
        uv = [str(_tool_python(Path(tmp) / "uv", "uv")), "-m", "uv"]
        if check_only:
            problems = lock_problems(uv, CONSTRAINTS)
        else:
            caps: dict[str, tuple[str, str]] = {}
            candidate, caps_file = Path(tmp) / CONSTRAINTS.name, Path(tmp) / "caps.txt"
            while True:
                caps_file.write_text("".join(f"{name}<={version}\n" for name, (version, _) in caps.items()))
                say(f"resolving {DISTRIBUTION}[{LOCK_EXTRAS}] for every platform and Python {LOCK_PYTHONS[0]}+")
                out = _uv_compile(uv, "--universal", "--fork-strategy", "fewest", "--python-version", LOCK_PYTHONS[0],
                                  "-c", str(caps_file), "--annotation-style", "line")  # fmt: skip
                if out.returncode != 0:
                    raise BootstrapError(f"the lock does not resolve: {_uv_reason(out.stderr)}")
                candidate.write_text(out.stdout)
                failed = [(p, v, o.stderr) for p, v, o in _matrix(uv, candidate) if o.returncode != 0]
                more = {n: c for n, c in _wheel_caps(uv, failed, caps_file).items() if n not in caps}
                if not failed or not more:
                    break
                say("no wheel on some pair; capping " + ", ".join(f"{n}<={v} ({w})" for n, (v, w) in more.items()))
                caps.update(more)
            problems = lock_problems(uv, candidate)
            if not problems:  # a lock that fails the check is never written
                _write_lock(out.stdout.replace(f"-c {caps_file}", "capped above"), caps)
    pairs = len(LOCK_PLATFORMS) * len(LOCK_PYTHONS)
    if problems:
        for problem in problems:
            print(f"bootstrap: lock check failed: {problem}", file=sys.stderr)
        print(
            f"bootstrap: {len(problems)} of {pairs} platform x Python pairs cannot install {CONSTRAINTS.name} from "
            "wheels; change pyproject.toml's ranges (or the pairs in bootstrap.py and docs/install.md), then "
            f"`{LOCK_COMMAND}`",
            file=sys.stderr,
        )
        return 1
    say(f"lock check passed: {pairs} of {pairs} platform x Python pairs install {CONSTRAINTS.name} from wheels")
    return 0


def _write_lock(body: str, caps: dict[str, tuple[str, str]]) -> None:
    header = [
        "# The versions labkit's tests passed on. bootstrap.py installs with `pip install -c constraints.txt`.",
        f"# Generated by `{LOCK_COMMAND}`: {DISTRIBUTION}[{LOCK_EXTRAS}] resolved by uv for every platform",
        f"# and Python {LOCK_PYTHONS[0]}+ at once (--universal --fork-strategy fewest: one version per package",
        "# where one serves all), from wheels only, then checked on each pair (`python3 bootstrap.py lock --check`):",
        f"# {', '.join(LOCK_PLATFORMS)} (macOS {LOCK_MACOS}+)",
        f"# x Python {', '.join(LOCK_PYTHONS)}. A marker below is the dependency's own (a package only some",
        "# platforms install). Do not edit by hand: change pyproject.toml, re-run it, run the tests.",
    ]
    header += [f"# Capped: {n}<={v}, the newest with a wheel for {w}." for n, (v, w) in sorted(caps.items())]
    CONSTRAINTS.write_text("\n".join(header) + "\n" + body)
    say(f"wrote {len(_pins(body))} pins to {CONSTRAINTS.name}")


def wheel(target: str | None, house: str | None) -> int:
    """Build ``labkit_dynamodb-VERSION-py3-none-any.whl`` into ``target`` (default dist/) from a clean copy
    of the package (an earlier build's leftovers never end up in it), in a throwaway venv."""
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    folder = Path(target or ROOT / "dist").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="labkit-wheel-") as tmp:
        source = Path(tmp) / "source"
        shutil.copytree(ROOT / "labkit", source / "labkit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source / name)
        python = _tool_python(Path(tmp) / "venv")
        args = ["wheel", *_QUIET_PIP, "--no-deps", "--wheel-dir", str(folder)]
        if house:
            args += ["--no-index", "--find-links", str(Path(house).resolve())]
        say(f"building the {DISTRIBUTION} wheel" + (f" (build requirements from {house}, no network)" if house else ""))
        subprocess.run([str(python), "-m", "pip", *args, str(source)], check=True)
    built = folder / f"{_normalise(DISTRIBUTION).replace('-', '_')}-{version}-py3-none-any.whl"
    if not built.exists():
        raise BootstrapError(f"pip built no {built.name} in {folder}; its message is above")
    say(f"built {built}; install it with `pip install -c constraints.txt '{built}'` (docs/ci.md)")
    return 0


def wheelhouse(target: str) -> int:
    """Fill ``target`` with wheels for labkit[lab,test] at the locked versions, and setuptools to build labkit."""
    python = ensure_env(_env_dir())
    folder = Path(target).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    say(f"filling {folder} with wheels for {DISTRIBUTION}[{EXTRAS}] at the locked versions")
    args = ["wheel", *_QUIET_PIP, "--wheel-dir", str(folder)]
    if CONSTRAINTS.exists():
        args += ["-c", str(CONSTRAINTS)]
    subprocess.run([str(python), "-m", "pip", *args, f"{ROOT}[{EXTRAS}]", _build_requirement()], check=True)
    for own in folder.glob(f"{_normalise(DISTRIBUTION).replace('-', '_')}-*.whl"):  # installed from the checkout
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


def _run(python: Path, args: list[str], env: Mapping[str, str] = os.environ) -> int:
    """Run the venv's python from the checkout; on POSIX it replaces this process (signals go straight to it)."""
    os.chdir(ROOT)
    command = [str(python), *args]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(command[0], command, env)
    return subprocess.call(command, env=env)


#: pytest options whose value is the next argument (``-k EXPR``): that argument is not a path.
VALUE_OPTIONS = frozenset(
    {"-k", "-m", "-n", "-p", "-o", "-c", "-W", "-r", "--dist", "--numprocesses", "--maxfail", "--deselect"}
    | {"--ignore", "--ignore-glob", "--rootdir", "--junitxml", "--junit-xml", "--basetemp", "--durations"}
    | {"--tb", "--confcutdir", "--log-level", "--labkit-backend", "--labkit-routing", "--labkit-artifacts"}
)


def _split_paths(args: list[str]) -> tuple[list[str], list[str]]:
    """pytest's arguments as (options with their values, paths): a path is an argument that is neither an
    option nor the value of one."""
    options: list[str] = []
    paths: list[str] = []
    takes_value = False
    for arg in args:
        if takes_value or arg.startswith("-"):
            options.append(arg)
            takes_value = not takes_value and arg in VALUE_OPTIONS
        else:
            paths.append(arg)
    return options, paths


def loop_command(base: list[str], extra: list[str]) -> list[str]:
    """``base`` (:data:`TEST_COMMAND`, :data:`SLOW_TEST_COMMAND`) with the user's arguments: paths given
    replace its own (``tests notebooks``), so ``test tests/endpoint/store -x`` runs that folder only;
    every option is kept, the user's after the loop's (pytest takes the last of one repeated)."""
    options, paths = _split_paths(base)
    mine, my_paths = _split_paths(extra)
    return [*options, *mine, *(my_paths or paths)]


def loop_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The test loop's environment: ``environ`` with Python's bytecode caches on.

    A machine that sets PYTHONDONTWRITEBYTECODE (many container images do) makes every process of the
    loop (each worker, ten kernels, each server and team pytest it starts) compile labkit from source
    again, and pytest rewrite every test module again: 13 s of the loop (decision 135). The caches go
    where Python puts them by default, ``__pycache__`` folders that git ignores."""
    return {name: value for name, value in environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


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
    "usage: python3 bootstrap.py lab|test|lint|doctor|serve|lock [--check]|notebooks|wheel [DIR]|wheelhouse DIR "
    "[args...] (see the README)"
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
            if rest not in ([], ["--check"]):
                raise BootstrapError(
                    f"lock takes only --check, not {' '.join(rest)}: python3 bootstrap.py lock [--check]"
                )
            return lock(check_only=rest == ["--check"])
        if command == "wheel":
            if len(rest) > 1:
                raise BootstrapError("wheel takes at most one folder: python3 bootstrap.py wheel [DIR]")
            return wheel(rest[0] if rest else None, house)
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
        env = loop_environment(os.environ)
        if "--slow" in rest:
            rest.remove("--slow")
            return _run(python, loop_command(SLOW_TEST_COMMAND, rest), env)
        return _run(python, loop_command(TEST_COMMAND, rest), env)
    if command == "lint":
        return lint(python)
    if command == "notebooks":
        return _run(python, [*NOTEBOOKS_COMMAND, *rest])
    return _run(python, ["-m", "labkit", command, *rest])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
