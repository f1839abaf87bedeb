#!/usr/bin/env python3
"""The two commands in the README, on any machine with Python 3.11+ and nothing else.

    python3 bootstrap.py lab     # install what is needed, open JupyterLab on the embedded endpoint
    python3 bootstrap.py test    # install what is needed, run every unit test and every notebook

Both create (or reuse) a virtual environment in ``.venv`` and install labkit
into it with the extras they need. Only the standard library is used here.
Extra arguments after ``test`` go to pytest; after ``lab``, to ``labkit lab``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MIN_PYTHON = (3, 11)
#: The README's test command, run inside the virtual environment.
TEST_COMMAND = ["-m", "pytest", "-n", "2", "--dist", "loadscope", "--nbval-lax", "tests", "notebooks"]


def _venv_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_env(env_dir: Path, extras: str) -> Path:
    """Create the venv if missing; (re)install labkit when pyproject.toml or the extras changed."""
    python = _venv_python(env_dir)
    if not python.exists():
        print(f"bootstrap: creating virtual environment {env_dir}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    stamp = env_dir / ".labkit-installed"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    if not stamp.exists() or stamp.read_text() != digest:
        print(f"bootstrap: installing labkit[{extras}] and its dependencies (first run takes a few minutes)",
              flush=True)
        subprocess.check_call([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
        subprocess.check_call([str(python), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[{extras}]"])
        stamp.write_text(digest)
    return python


def main(argv: list[str]) -> int:
    if sys.version_info < MIN_PYTHON:
        print(f"bootstrap: labkit needs Python {'.'.join(map(str, MIN_PYTHON))}+, this is "
              f"{sys.version.split()[0]}; run it with a newer python3", file=sys.stderr)
        return 2
    if not argv or argv[0] not in ("lab", "test"):
        print("usage: python3 bootstrap.py lab|test [args...]", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    env_dir = Path(os.environ.get("LABKIT_VENV", ROOT / ".venv"))
    python = ensure_env(env_dir, "lab,test")
    os.chdir(ROOT)
    if command == "lab":
        return subprocess.call([str(python), "-m", "labkit", "lab", *rest])
    return subprocess.call([str(python), *TEST_COMMAND, *rest])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
