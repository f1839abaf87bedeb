"""The plugin is inert until used: a session whose tests never ask for labkit imports nothing heavy.

Each check runs a whole pytest session in a fresh interpreter, from an empty folder, with the plugin
loaded through its installed entry point and no AWS variables (a clean CI runner), and then reads
that interpreter's ``sys.modules``. What a session costs in time is measured, not asserted:
``python benchmarks/bench_plugin.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin.teams import DEV_ONLY_PLUGINS_OFF, clean_runner_env

#: What an unused plugin must not import: the SDK, the data stack, moto, and labkit's engine and race lab.
HEAVY = (
    "boto3",
    "botocore",
    "pandas",
    "numpy",
    "matplotlib",
    "moto",
    "uvicorn",
    "labkit.shared.backend",
    "labkit.embedded",
    "labkit.endpoint",
    "labkit.shared.intercept",
    "labkit.races",
    "labkit.shared.routing",
)

SESSION = """
import json, sys, threading
import pytest

seen = {}

class Look:
    def pytest_unconfigure(self, config):
        seen["plugin"] = config.pluginmanager.hasplugin("labkit")

code = pytest.main([*sys.argv[1:], "-q", "-p", "no:cacheprovider"], plugins=[Look()])
heavy = sorted(m for m in sys.modules if m in HEAVY)
threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("labkit"))
print("RESULT " + json.dumps({"code": int(code), "heavy": heavy, "threads": threads, **seen}))
"""


def session(folder: Path, *args: str) -> dict[str, object]:
    """Run one pytest session in ``folder`` in a new interpreter; what it loaded."""
    home = folder.parent / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{SESSION}", *DEV_ONLY_PLUGINS_OFF, *args],
        cwd=folder,
        env=clean_runner_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout + done.stderr
    found: dict[str, object] = json.loads(lines[-1].removeprefix("RESULT "))
    return found


def trivial_tests(tmp_path: Path, count: int = 50, extra: str = "") -> Path:
    folder = tmp_path / "team"
    folder.mkdir()
    body = "".join(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n" for i in range(count))
    (folder / "test_plain.py").write_text(body + extra)
    return folder


UNTOUCHED = (
    "import os\n\n\ndef test_environment_untouched():\n"
    "    assert not [k for k in os.environ if k.startswith(('AWS_ENDPOINT', 'AWS_ACCESS', 'AWS_DEFAULT'))]\n"
)


def test_unused_plugin__50_tests__loaded_but_imports_nothing_heavy_and_changes_nothing(tmp_path: Path) -> None:
    """The plugin is loaded (entry point) and the 51 tests pass; none of HEAVY is imported, no endpoint
    is reserved, no environment variable is set."""
    found = session(trivial_tests(tmp_path, extra=UNTOUCHED))
    assert found == {"code": 0, "heavy": [], "threads": [], "plugin": True}


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        pytest.param((), "import pytest\n\n\n@pytest.mark.labkit\ndef test_lab():\n    pass\n", id="marker"),
        pytest.param(
            (),
            "def test_lab(labkit_conn):\n    assert labkit_conn.table_name\n",
            id="labkit_conn",
            marks=pytest.mark.slow,
        ),
        pytest.param(("--labkit-backend", "embedded"), "", id="option", marks=pytest.mark.slow),
    ],
)
def test_used_plugin__loads_the_routing_floor(tmp_path: Path, args: tuple[str, ...], extra: str) -> None:
    """The contrast: once a test asks for labkit, the routing floor (botocore) is loaded — the check above can fail."""
    found = session(trivial_tests(tmp_path, 3, extra), *args)
    assert found["code"] == 0 and found["plugin"] is True, found
    heavy = found["heavy"]
    assert isinstance(heavy, list) and {"botocore", "labkit.shared.routing", "labkit.shared.intercept"} <= set(heavy), (
        heavy
    )
