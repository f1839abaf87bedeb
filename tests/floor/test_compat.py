"""labkit refuses a moto outside the tested range at import, in one line that names the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labkit.compat import moto_problem

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("found", ["5.0.0", "5.1.0", "5.2.0", "5.2.4", "5.3.0", "6.0.0", "garbage"])
def test_moto_problem__outside_range__names_range_found_and_fix(found: str) -> None:
    """moto 5.0/5.1 (fail at import), 5.2.0 (HTTP 500 on DescribeTable) and untested majors are refused."""
    problem = moto_problem(found)
    assert problem is not None and "\n" not in problem
    assert f"labkit needs moto>=5.2.5,<5.3, found moto {found}" in problem
    assert "bootstrap.py" in problem and "constraints.txt" in problem


@pytest.mark.parametrize("found", ["5.2.5", "5.2.6", "5.2.10.post1"])
def test_moto_problem__inside_range__is_none(found: str) -> None:
    """The tested release and later patch releases of 5.2 are accepted."""
    assert moto_problem(found) is None


def test_moto_problem__not_installed__says_so() -> None:
    """No moto at all is the same one line."""
    assert "moto is not installed" in str(moto_problem(None))


def test_import__old_moto_installed__one_line_error_naming_the_fix(tmp_path: Path) -> None:
    """With moto 5.2.0's metadata first on the path (as after `pip install moto==5.2.0`), `import labkit` stops
    before importing moto, and the error's last line says what to run."""
    dist = tmp_path / "moto-5.2.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: moto\nVersion: 5.2.0\n")
    out = subprocess.run(
        [sys.executable, "-c", "import labkit"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}{':'}{ROOT}"},
    )
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("labkit.compat.IncompatibleDependency: labkit needs moto>=5.2.5,<5.3, found moto 5.2.0;")
    assert "python3 bootstrap.py lab" in last


def test_moto_requirement__is_the_one_pyproject_declares() -> None:
    """compat's range and pyproject.toml's dependency are one statement; the engine's message reuses it."""
    from labkit.compat import INSTALL_MOTO, MOTO_REQUIREMENT

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"{MOTO_REQUIREMENT}"' in pyproject
    assert INSTALL_MOTO.startswith(f"labkit needs {MOTO_REQUIREMENT}; ") and "bootstrap.py" in INSTALL_MOTO
    store_source = (ROOT / "labkit" / "endpoint" / "store" / "moto_store.py").read_text(encoding="utf-8")
    assert "INSTALL_MOTO" in store_source and ">=5.0,<6" not in store_source
