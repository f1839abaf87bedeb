#!/usr/bin/env python3
"""What each install of labkit pulls: packages and megabytes, each in a fresh virtual environment.

    python tools/install_size.py                 # the base install, [lab], [test], [lab,test]
    python tools/install_size.py "" lab          # only these (an empty string is the base install)

The wheel is built once (``bootstrap.py wheel``) and installed as a team would, ``WHEEL[extras]``. Each
line: the extras, the number of distributions the install added to a new venv (labkit itself not
counted) and the MB (10^6 bytes) it added to the venv's site-packages (byte-compiled files included, as
pip leaves them), at the versions in constraints.txt. docs/install.md's table comes from this script.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["", "lab", "test", "lab,test"]


def site_packages(env: Path) -> Path:
    found = sorted(env.glob("lib/python3*/site-packages")) or sorted(env.glob("Lib/site-packages"))
    return found[0]


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def installed(python: str) -> set[str]:
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {d["name"].lower() for d in json.loads(listed.stdout)}


def measure(wheel: Path, extras: str) -> tuple[int, float]:
    """(distributions added, MB added to site-packages) by ``pip install WHEEL[extras]`` in a new venv."""
    with tempfile.TemporaryDirectory(prefix="labkit-size-") as tmp:
        env = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env)
        python = str(env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))
        before, mb_before = installed(python), size_mb(site_packages(env))
        spec = f"{wheel}[{extras}]" if extras else str(wheel)
        quiet = ["--quiet", "--disable-pip-version-check", "--no-input"]
        subprocess.run([python, "-m", "pip", "install", *quiet, "-c", str(ROOT / "constraints.txt"), spec], check=True)
        added = installed(python) - before - {"labkit", "labkit-dynamodb"}
        return len(added), size_mb(site_packages(env)) - mb_before


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="labkit-size-dist-") as dist:
        subprocess.run(
            [sys.executable, str(ROOT / "bootstrap.py"), "wheel", dist], check=True, stdout=subprocess.DEVNULL
        )
        (wheel,) = Path(dist).glob("*.whl")
        for extras in argv or DEFAULT:
            count, mb = measure(wheel, extras)
            print(f"{'[' + extras + ']' if extras else 'base':<12} {count:>4} packages {mb:>7.0f} MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
