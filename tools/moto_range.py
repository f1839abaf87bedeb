"""The declared moto range, tested at both ends: the engine's tests against the lowest and the highest
moto release the range allows (and, on request, the newest release of all).

    python tools/moto_range.py                  # which releases the range allows (from PyPI's index, now)
    python tools/moto_range.py --run            # tests/endpoint against the lowest and the highest of them
    python tools/moto_range.py --run --newest   # ... against the newest moto release, in range or not
    python tools/moto_range.py --run --versions 5.1.22
    python tools/moto_range.py --run --tested-here   # ... leaving out this venv's moto (.ci/run: just tested)

The releases come from ``pip index versions moto`` at run time, so a new 5.2.x is tested the day it
is out; the range is ``labkit.shared.compat.MOTO_RANGE`` (pyproject.toml says the same). Each version is
installed into a throwaway virtual environment of its own (kept under
``~/.cache/labkit/moto-venvs/``, keyed by the version and by pyproject.toml and constraints.txt, so
a second run installs nothing), with labkit's other dependencies from constraints.txt and this
checkout installed editable; tests/endpoint runs there. The exit status is non-zero if any
version's tests fail; the last lines say which. ``.ci/run`` runs ``--run --tested-here`` (the
README's test command has just run tests/endpoint on the pinned moto, so an end equal to it is not
installed and run twice); the workflow's ``moto-newest`` job runs ``--run --newest`` and may fail
without failing the build.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("LABKIT_MOTO_VENVS", Path.home() / ".cache" / "labkit" / "moto-venvs"))
TESTS = ["tests/endpoint"]


def _declared_range() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``MOTO_RANGE`` as labkit/shared/compat.py writes it (read, not imported: importing checks the installed moto)."""
    tree = ast.parse((ROOT / "labkit" / "shared" / "compat.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "MOTO_RANGE" for t in targets) and node.value is not None:
                found: tuple[tuple[int, ...], tuple[int, ...]] = ast.literal_eval(node.value)
                return found
    raise SystemExit("moto_range: labkit/shared/compat.py defines no MOTO_RANGE")


MOTO_RANGE = _declared_range()


def release(text: str) -> tuple[int, ...]:
    """'5.2.5' -> (5, 2, 5); a pre-release or anything else -> () (never chosen)."""
    return tuple(int(p) for p in text.split(".")) if re.fullmatch(r"\d+(\.\d+)*", text) else ()


def parse_index(output: str) -> list[str]:
    """The versions ``pip index versions moto`` lists, newest first."""
    for line in output.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    raise SystemExit(f"moto_range: pip index versions printed no 'Available versions:' line:\n{output}")


def in_range(versions: list[str], bounds: tuple[tuple[int, ...], tuple[int, ...]] = MOTO_RANGE) -> list[str]:
    """The final releases of ``versions`` inside ``bounds`` (lowest included, highest excluded), oldest first."""
    low, high = bounds
    chosen = [v for v in versions if release(v) and low <= release(v) < high]
    return sorted(chosen, key=release)


def available() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "moto"], capture_output=True, text=True, check=True
    )
    return parse_index(out.stdout)


def _constraints_without_moto(target: Path) -> Path:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    kept = [line for line in lines if not re.match(r"moto(\[|==|\s|$)", line)]
    target.write_text("\n".join(kept) + "\n")
    return target


def venv_for(version: str) -> Path:
    """A virtual environment with moto ``version`` and labkit's other pinned dependencies (made once)."""
    digest = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes() + (ROOT / "constraints.txt").read_bytes()
    ).hexdigest()[:12]
    env = CACHE / f"moto-{version}-{digest}"
    python = env / "bin" / "python"
    if not (env / ".complete").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
        constraints = _constraints_without_moto(env / "constraints-without-moto.txt")
        pip = [str(python), "-m", "pip", "install", "-q"]
        # labkit and its pinned dependencies first (the moto its range allows), then moto ``version`` over it
        # with what that release needs (moto's own dependencies may differ from the pins): pip only warns that
        # labkit declares another range, which is what --newest and --versions want to learn about.
        subprocess.run([*pip, "-c", str(constraints), "-e", f"{ROOT}[test]"], check=True)
        subprocess.run([*pip, f"moto[server,dynamodb]=={version}"], check=True)
        (env / ".complete").write_text(version)
    else:  # the cached environment: point its editable labkit at this checkout
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
    return python


def run(version: str) -> bool:
    began = time.monotonic()
    try:
        python = venv_for(version)
    except subprocess.CalledProcessError as exc:
        print(f"moto_range: moto {version}: could not be installed ({exc}); see pip's message above", flush=True)
        return False
    found = subprocess.run([str(python), "-c", "import moto; print(moto.__version__)"], capture_output=True, text=True)
    print(f"moto_range: moto {found.stdout.strip()} in {python.parent.parent}", flush=True)
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadscope"]
    env = dict(os.environ)
    if not MOTO_RANGE[0] <= release(version) < MOTO_RANGE[1]:
        env["LABKIT_UNTESTED_MOTO"] = "1"  # let labkit import it, to learn what breaks
    status = subprocess.run([*command, "-m", "not slow", *TESTS], cwd=ROOT, env=env).returncode
    print(
        f"moto_range: moto {version}: tests/endpoint {'passed' if status == 0 else 'FAILED'} "
        f"({time.monotonic() - began:.0f} s)",
        flush=True,
    )
    return status == 0


def installed_moto() -> str | None:
    """The moto version installed beside this interpreter (package metadata; moto is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("moto")
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run tests/endpoint against the chosen versions")
    parser.add_argument("--newest", action="store_true", help="the newest moto release (in the range or not)")
    parser.add_argument("--versions", help="these versions instead (comma-separated)")
    parser.add_argument(
        "--tested-here",
        action="store_true",
        help="skip the version installed beside this Python: the test command just ran tests/endpoint on it",
    )
    args = parser.parse_args(argv)
    if args.versions:
        chosen = [v.strip() for v in args.versions.split(",") if v.strip()]
    else:
        versions = available()
        if args.newest:
            chosen = [max((v for v in versions if release(v)), key=release)]
        else:
            allowed = in_range(versions)
            if not allowed:
                print(f"moto_range: no moto release in {MOTO_RANGE} on the index", file=sys.stderr)
                return 1
            chosen = sorted({allowed[0], allowed[-1]}, key=release)
            print(f"moto_range: the range allows {', '.join(allowed)}; lowest {allowed[0]}, highest {allowed[-1]}")
    if not args.run:
        print("\n".join(chosen))
        return 0
    if args.tested_here:
        here = installed_moto()
        if here in chosen:
            print(f"moto_range: moto {here} is this environment's; the test command already ran tests/endpoint on it")
            chosen = [v for v in chosen if v != here]
    results = {version: run(version) for version in chosen}
    for version, ok in results.items():
        print(f"moto_range: moto {version}: {'ok' if ok else 'FAILED'}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
