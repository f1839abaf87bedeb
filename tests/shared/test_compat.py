"""labkit refuses a moto outside the tested range at import, in one line that names the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from labkit.shared.compat import moto_problem
from tests.helpers import load_tool

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


def import_beside_moto(tmp_path: Path, version: str, module: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``import module`` in a fresh Python with moto ``version``'s metadata first on the path (as after
    `pip install moto==version`), and only PATH, PYTHONPATH and ``env`` set."""
    dist = tmp_path / f"moto-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: moto\nVersion: {version}\n")
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}", **env},
    )


def test_import__old_moto_installed__one_line_error_naming_the_fix(tmp_path: Path) -> None:
    """With moto 5.2.0's metadata first on the path (as after `pip install moto==5.2.0`), `import labkit` stops
    before importing moto, and the error's last line says what to run."""
    out = import_beside_moto(tmp_path, "5.2.0", "labkit")
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "labkit.shared.compat.IncompatibleDependency: labkit needs moto>=5.2.5,<5.3, found moto 5.2.0;"
    )
    assert "python3 bootstrap.py lab" in last


def test_import__moto_outside_the_range_with_labkit_untested_moto__a_warning_not_an_error(tmp_path: Path) -> None:
    """LABKIT_UNTESTED_MOTO=1 (what tools/moto_range.py --newest sets) lets labkit import beside a moto it was
    not tested with, saying so, so the engine's tests can show what such a release breaks."""
    out = import_beside_moto(tmp_path, "5.3.0", "labkit.shared.compat", LABKIT_UNTESTED_MOTO="1")
    assert out.returncode == 0, out.stderr
    assert "labkit needs moto>=5.2.5,<5.3, found moto 5.3.0" in out.stderr
    assert "(allowed by LABKIT_UNTESTED_MOTO=1: untested)" in out.stderr


def test_moto_requirement__is_the_one_pyproject_declares() -> None:
    """compat's range and pyproject.toml's dependency are one statement; the engine's message reuses it."""
    from labkit.shared.compat import INSTALL_MOTO, MOTO_REQUIREMENT

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"{MOTO_REQUIREMENT}"' in pyproject
    assert INSTALL_MOTO.startswith(f"labkit needs {MOTO_REQUIREMENT}; ") and "bootstrap.py" in INSTALL_MOTO
    store_source = (ROOT / "labkit" / "endpoint" / "store" / "moto_adapter.py").read_text(encoding="utf-8")
    assert "INSTALL_MOTO" in store_source and ">=5.0,<6" not in store_source


def test_moto_range_tool__lowest_and_highest__from_pip_index_output() -> None:
    """tools/moto_range.py reads `pip index versions moto` and picks the range's ends: final releases only,
    the lower bound included, the upper excluded (what .ci/run tests tests/endpoint against)."""
    tool = load_tool("moto_range")
    output = "moto (5.3.1)\nAvailable versions: 5.3.1, 5.3.0, 5.2.7, 5.2.6rc1, 5.2.6, 5.2.5, 5.2.4, 5.1.22\n"
    versions = tool.parse_index(output)
    assert versions[:3] == ["5.3.1", "5.3.0", "5.2.7"]
    assert tool.in_range(versions, ((5, 2, 5), (5, 3))) == ["5.2.5", "5.2.6", "5.2.7"]
    assert tool.in_range(versions) == tool.in_range(versions, tool.MOTO_RANGE)
    with pytest.raises(SystemExit):
        tool.parse_index("ERROR: No matching distribution found for moto")


def test_moto_range_tool__tested_here__runs_only_the_ends_this_venv_has_not_tested(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--tested-here (.ci/run) leaves out the moto installed beside this Python, which the README's test
    command has just tested, and runs the other end; with neither flag nor match every end runs."""
    tool = load_tool("moto_range")
    ran: list[str] = []

    def run(version: str) -> bool:
        ran.append(version)
        return True

    monkeypatch.setattr(tool, "run", run)
    monkeypatch.setattr(tool, "installed_moto", lambda: "5.2.5")
    assert tool.main(["--run", "--versions", "5.2.5,5.2.9", "--tested-here"]) == 0
    assert ran == ["5.2.9"]
    assert "moto 5.2.5 is this environment's" in capsys.readouterr().out
    ran.clear()
    assert tool.main(["--run", "--versions", "5.2.5,5.2.9"]) == 0
    assert ran == ["5.2.5", "5.2.9"]
