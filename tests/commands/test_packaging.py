"""The distribution: its own name (``labkit`` on PyPI is another project), a lean base install, the
one message a figure gives when the extra that brings matplotlib is missing, and the lock that installs
from wheels on every platform x Python pair the README promises (docs/decisions.md, "Dependencies").
The install from a built wheel is run for real in tests/commands/test_bootstrap.py (slow)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest

import bootstrap
import labkit
from labkit.shared.compat import DISTRIBUTION, MissingExtra, require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: What only notebooks and pictures need: never in the base install a team adds to its dev dependencies.
NOTEBOOK_PACKAGES = {"matplotlib", "jupyterlab", "jupyter-server", "ipykernel", "nbformat", "nbclient"}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]).lower()


def test_distribution_name__one_name_for_pyproject_bootstrap_and_metadata() -> None:
    """pyproject.toml, bootstrap.py and labkit.shared.compat name the distribution alike; its metadata is
    installed under that name (not under ``labkit``), at pyproject's version; the command and the
    pytest plugin keep the name ``labkit``."""
    assert PROJECT["name"] == bootstrap.DISTRIBUTION == DISTRIBUTION == "labkit-dynamodb"
    assert version(DISTRIBUTION) == PROJECT["version"] == labkit.__version__
    with pytest.raises(PackageNotFoundError):
        distribution("labkit")  # bootstrap retired the old name from this venv
    points = {(ep.group, ep.name): ep.value for ep in distribution(DISTRIBUTION).entry_points}
    assert points[("console_scripts", "labkit")] == "labkit.commands.cli:main"
    assert points[("pytest11", "labkit")] == "labkit.pytest_plugin"


def test_base_install__no_notebook_package__the_lab_extra_has_them() -> None:
    """A team's race tests need the plugin, the race lab and the embedded endpoint: matplotlib and
    Jupyter come with the ``lab`` extra only; ``test`` (labkit's own suite, notebooks included) takes ``lab``."""
    base = {_name(r) for r in PROJECT["dependencies"]}
    extras = PROJECT["optional-dependencies"]
    assert base & NOTEBOOK_PACKAGES == set()
    assert {_name(r) for r in extras["lab"]} >= NOTEBOOK_PACKAGES
    assert f"{DISTRIBUTION}[lab]" in extras["test"]


#: Files a person reads for how to install labkit, and the messages labkit prints.
INSTALL_TEXTS = [
    "README.md",
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md"))),
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "lessons").glob("*.md"))),
    *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "labkit").rglob("*.py"))),
    "bootstrap.py",
    ".github/workflows/ci.yml",
    "environment.yml",
    "docker-compose.yml",
]
#: ``pip install labkit``, ``pip install "labkit[test]"``, ``labkit>=0.1``: the PyPI project of that name.
BARE_NAME = re.compile(r"""(?:^|[\s"'`(])labkit(?:\[[\w,]*\])?(?:[<>=!~]=?[\w.*]+)?(?=$|[\s"'`)])""")


def bare_installs(text: str) -> list[str]:
    """Every ``pip install`` line of ``text`` that names the distribution ``labkit`` itself, and every
    ``labkit[...]`` requirement in backticks (as in a dev-dependency list)."""
    found = []
    for line in text.splitlines():
        if "pip install" in line:
            rest = line.split("pip install", 1)[1].split("`", 1)[0].split(" #", 1)[0]  # the command, not prose
            if BARE_NAME.search(rest):
                found.append(line.strip())
        elif re.search(r"`labkit\[[\w,]*\]`", line):
            found.append(line.strip())
    return found


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("pip install labkit", True),
        ('python -m pip install "labkit[test]"', True),
        ("Add labkit to your dev dependencies (`labkit[test]`)", True),
        ("pip install labkit>=0.1", True),
        ("pip install -e './labkit[lab,test]'", False),  # a checkout in the folder labkit/
        ("pip install 'dist/labkit_dynamodb-0.1.0-py3-none-any.whl[test]'", False),
        ("pip install -c constraints.txt -e '.[lab,test]'", False),
        ("pip install labkit-dynamodb", False),  # the distribution's own name (docs still use a wheel or checkout)
        ("`pip install -e '.[lab,test]'`, labkit itself editable", False),  # prose after the command
    ],
)
def test_bare_installs__finds_the_pypi_name_only(line: str, bare: bool) -> None:
    """The docs check below flags the PyPI name ``labkit`` and nothing else."""
    assert bool(bare_installs(line)) is bare


@pytest.mark.parametrize("path", INSTALL_TEXTS)
def test_docs__never_install_the_name_labkit_from_pypi(path: str) -> None:
    """No doc or message tells anyone to install ``labkit`` by name: on PyPI it is someone else's package
    (0.0.3.dev11, 2015). They install a built wheel or a checkout (docs/ci.md)."""
    assert bare_installs((ROOT / path).read_text(encoding="utf-8")) == []


# --- matplotlib missing: one line naming the extra ---------------------------------------------
class _NoMatplotlib(importlib.abc.MetaPathFinder):
    """Import matplotlib as if it were not installed (as in a team's venv without the lab extra)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "matplotlib" or fullname.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib" or m == "labkit.lab.plots"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoMatplotlib(), *sys.meta_path])


def _says_install_the_lab_extra(exc: pytest.ExceptionInfo[MissingExtra], what: str) -> None:
    message = str(exc.value)
    assert "\n" not in message and isinstance(exc.value, ImportError) and exc.value.name == "matplotlib"
    assert message.startswith(f"{what} needs matplotlib, which is not installed: it comes with labkit's `lab` extra")
    assert "python3 bootstrap.py lab" in message and "whl[lab]" in message


@pytest.mark.usefixtures("no_matplotlib")
def test_no_matplotlib__import_labkit_plots__names_the_lab_extra() -> None:
    """``import labkit.lab.plots`` without matplotlib: MissingExtra (an ImportError), one line."""
    with pytest.raises(MissingExtra) as exc:
        import labkit.lab.plots  # noqa: F401
    _says_install_the_lab_extra(exc, "labkit.lab.plots")


@pytest.mark.usefixtures("no_matplotlib")
def test_no_matplotlib__storm_cost_and_exercise_figures__name_the_lab_extra() -> None:
    """The figures outside labkit.lab.plots: the storm picture, the cost comparison, an exercise's timeline."""
    from labkit.lab.costs.compare import plot_costs
    from labkit.lab.exercises.verdict import Finding
    from labkit.lab.storms import plot_storm

    with pytest.raises(MissingExtra) as storm:
        plot_storm({}, 1.0)
    _says_install_the_lab_extra(storm, "labkit.lab.storms.plot_storm")
    with pytest.raises(MissingExtra) as costs:
        plot_costs(pd.DataFrame(), pd.DataFrame())
    _says_install_the_lab_extra(costs, "labkit.lab.costs.plot_costs")
    finding = Finding("read-modify-write", "lost", "A B A B", interleaving=cast(Any, object()))
    with pytest.raises(MissingExtra) as timeline:
        finding.figure()
    _says_install_the_lab_extra(timeline, "the exercise's timeline (Finding.figure)")


def test_require__a_dependency_of_the_package_missing__its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package that is installed but lacks one of its own dependencies is not reported as missing."""
    (tmp_path / "halfthere").mkdir()
    (tmp_path / "halfthere" / "__init__.py").write_text("import labkit_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as exc:
        require("halfthere", "lab", "a figure")
    assert not isinstance(exc.value, MissingExtra) and exc.value.name == "labkit_no_such_dependency"
    require("json", "lab", "a figure")  # present: nothing raised


# --- with PyPI's index (slow: it asks the registry) ---------------------------------------------
def _pip_index_versions(name: str) -> subprocess.CompletedProcess[str]:
    """``pip index versions --pre NAME`` against pip's default index, every ambient pip setting off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    command = [sys.executable, "-m", "pip", "index", "versions", "--pre", "--disable-pip-version-check", name]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_distribution_name__free_on_pypi_while_labkit_is_taken() -> None:
    """PyPI has no distribution of labkit's name (should someone publish one, this fails: the docs
    install a wheel or a checkout, never the name); the index answered, for it knows ``labkit``."""
    taken = _pip_index_versions("labkit")
    assert taken.returncode == 0 and taken.stdout.startswith("labkit ("), taken.stderr[-2000:]
    free = _pip_index_versions(DISTRIBUTION)
    assert free.returncode != 0 and f"No matching distribution found for {DISTRIBUTION}" in free.stderr


def _pairs(platforms: Sequence[str], pythons: Sequence[str]) -> list[str]:
    return sorted(f"{platform}, Python {python}" for platform in platforms for python in pythons)


@pytest.mark.slow
def test_lock__every_platform_and_python__installs_from_wheels(tmp_path: Path) -> None:
    """`python3 bootstrap.py lock --check`: labkit[lab,test,dev] at the locked versions resolves from wheels
    alone, every package pinned, on each of the 15 pairs. The same check on the lock as it was before
    (cryptography 50.0.2: no Intel-macOS wheel; soupsieve 4.1.3: Python 3.11.5+) names the 7 pairs it breaks."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "bootstrap.py"), "lock", "--check"],
        capture_output=True,
        text=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")},
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    checked = re.findall(r"^bootstrap: lock check: (.+?): \d+ packages, all from wheels$", run.stdout, re.M)
    assert sorted(checked) == _pairs(bootstrap.LOCK_PLATFORMS, bootstrap.LOCK_PYTHONS) and len(checked) == 15
    assert "lock check passed: 15 of 15 platform x Python pairs" in run.stdout

    uv = [str(bootstrap._tool_python(tmp_path / "uv", "uv")), "-m", "uv"]
    before = tmp_path / "constraints.txt"
    text = bootstrap.CONSTRAINTS.read_text()
    text = re.sub(r"^cryptography==\S+", "cryptography==50.0.2", text, flags=re.M)
    before.write_text(re.sub(r"^soupsieve==\S+", "soupsieve==4.1.3", text, flags=re.M))
    broken = sorted(problem.split(": ", 1)[0] for problem in bootstrap.lock_problems(uv, before))
    mac_intel = _pairs(["x86_64-apple-darwin"], bootstrap.LOCK_PYTHONS)
    oldest_311 = _pairs(bootstrap.LOCK_PLATFORMS, ["3.11.0"])
    assert broken == sorted(set(mac_intel) | set(oldest_311)) and len(broken) == 7
