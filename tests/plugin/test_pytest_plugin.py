"""The pytest plugin: --labkit-backend, the labkit_conn fixture, the labkit_backends marker.

Each test runs pytest inside pytest (pytester) on a small test file that uses only the plugin's
public surface, the way a team's own repository would. Plugin autoloading is off in the inner
run and the plugin is named with ``-p``, so these tests do not depend on labkit being installed
with its entry point (``test_pyproject__registers_the_pytest11_entry_point`` checks that).
"""

from __future__ import annotations

import re
import socket
import tomllib
from pathlib import Path

import pytest

import labkit
from labkit.shared.backend import Connection
from tests.helpers import TEAM_POINTS
from tests.plugin.teams import run_inner

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

# A team's own code and its race test: loyalty points added by three checkout services at once.
TEAM_TESTS = (
    TEAM_POINTS
    + """

def check(conn, add_points):
    def setup():
        conn.client.put_item(TableName=conn.table_name, Item={**KEY, "balance": {"N": "0"}})

    def actor(points):
        return lambda client: add_points(client, conn.table_name, points)

    def invariant(res):
        item = conn.client.get_item(TableName=conn.table_name, Key=KEY, ConsistentRead=True)["Item"]
        assert item["balance"]["N"] == "111", f"balance is {item['balance']['N']}, not 111"

    result = explore({"A": actor(1), "B": actor(10), "C": actor(100)},
                     conn=conn, setup=setup, invariant=invariant)
    assert result.passed, result.summary()
    return result


def test_points__read_modify_write(labkit_conn):
    check(labkit_conn, add_points_read_modify_write)


def test_points__atomic_add(labkit_conn):
    result = check(labkit_conn, add_points_atomic)
    print("GUARANTEE", result.guarantee)
"""
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on return: nothing listens there


def test_plugin__team_race_test__finds_the_lost_update_and_passes_the_atomic_add(inner: pytest.Pytester) -> None:
    """With only labkit_conn, a team's test fails its read-modify-write (with a replayable order) and passes ADD."""
    inner.makepyfile(test_points=TEAM_TESTS)
    result = run_inner(inner, "-s", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_points__read_modify_write FAILED*",
            "*FAILED after * run(s) (*): balance is *, not 111*",
            "*replay: run_interleaving(actors, '* * * * * *', conn=conn)*",
        ]
    )
    assert re.search(
        r"GUARANTEE all (\d+ orders explored|non-equivalent orders explored \(DPOR\): \d+ runs)", result.stdout.str()
    )


def test_plugin__labkit_conn__fresh_empty_table_per_test_deleted_after(
    inner: pytest.Pytester, conn: Connection
) -> None:
    """Every test gets its own empty labkit-t-<hex> table, and it is gone after the test."""
    inner.makepyfile(
        test_tables="""
        import pathlib

        def _record(labkit_conn):
            scan = labkit_conn.client.scan(TableName=labkit_conn.table_name, ConsistentRead=True)
            with pathlib.Path("tables.txt").open("a") as f:
                f.write(f"{labkit_conn.table_name} {scan['Count']}\\n")
            labkit_conn.client.put_item(TableName=labkit_conn.table_name,
                                        Item={"PK": {"S": "X"}, "SK": {"S": "Y"}})

        def test_one(labkit_conn):
            _record(labkit_conn)

        def test_two(labkit_conn):
            _record(labkit_conn)
    """
    )
    run_inner(inner).assert_outcomes(passed=2)
    rows = [line.split() for line in (inner.path / "tables.txt").read_text().splitlines()]
    names = [name for name, _ in rows]
    assert all(re.fullmatch(r"labkit-t-[0-9a-f]{10}", name) for name in names)
    assert len(set(names)) == 2 and [count for _, count in rows] == ["0", "0"]
    assert not any(labkit.shared.table.table_exists(conn, name) for name in names)


def test_plugin__marker__runs_once_per_backend_and_skips_an_unreachable_one(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """labkit_backends("embedded", "local") runs on both; DynamoDB Local not running -> skipped with the reason."""
    monkeypatch.setenv("LABKIT_LOCAL_URL", f"http://127.0.0.1:{closed_port()}")
    inner.makepyfile(
        test_both="""
        import pytest

        @pytest.mark.labkit_backends("embedded", "local")
        def test_both(labkit_conn, labkit_backend):
            assert labkit_conn.backend == labkit_backend
    """
    )
    result = run_inner(inner, "-v", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*test_both?embedded? PASSED*",
            "*test_both?local? SKIPPED*",
            "SKIPPED*labkit backend 'local' unavailable: local endpoint is not reachable at http://127.0.0.1:*",
        ]
    )


def test_plugin__chosen_backend_unreachable__errors_instead_of_skipping(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--labkit-backend local with no DynamoDB Local running is an error, not a silent skip."""
    monkeypatch.setenv("LABKIT_LOCAL_URL", f"http://127.0.0.1:{closed_port()}")
    inner.makepyfile(test_local="def test_x(labkit_conn):\n    pass\n")
    result = run_inner(inner, "--labkit-backend", "local")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*BackendUnavailable: local endpoint is not reachable at*docker compose up -d dynamodb*"]
    )


def test_plugin__backend_url__connects_to_that_endpoint(inner: pytest.Pytester, conn: Connection) -> None:
    """--labkit-backend http://... points labkit_conn at that endpoint (here: the embedded one)."""
    inner.makepyfile(
        test_url=f'''
        def test_url(labkit_conn):
            assert labkit_conn.backend == "endpoint"
            assert labkit_conn.endpoint_url == "{conn.endpoint_url}"
    '''
    )
    run_inner(inner, "--labkit-backend", f"{conn.endpoint_url}/").assert_outcomes(passed=1)


@pytest.mark.parametrize("value", ["nope", "ftp://x", "http://"])
def test_plugin__unknown_backend__usage_error_at_startup(inner: pytest.Pytester, value: str) -> None:
    """An unknown --labkit-backend stops pytest before collecting, saying what to pass."""
    inner.makepyfile(test_x="def test_x():\n    pass\n")
    result = run_inner(inner, "--labkit-backend", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--labkit-backend: unknown labkit backend {value!r}; choose one of: embedded, local, aws, none, "
            "or an http(s):// URL*",
        ]
    )


def test_plugin__marker_naming_unknown_backend__usage_error(inner: pytest.Pytester) -> None:
    """A typo in the marker is a usage error naming the test, not a test that silently never runs."""
    inner.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.labkit_backends("embeded")
        def test_typo(labkit_conn):
            pass
    """
    )
    result = run_inner(inner)
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*test_typo.py::test_typo: @pytest.mark.labkit_backends: unknown labkit backend 'embeded'*"]
    )


def test_plugin__fixtures_and_marker__are_documented(inner: pytest.Pytester) -> None:
    """`pytest --fixtures` shows the fixtures' docstrings; `pytest --markers` shows the marker."""
    fixtures = run_inner(inner, "--fixtures")
    fixtures.stdout.fnmatch_lines(["labkit_conn*", "*fresh, empty lab table*"])
    fixtures.stdout.fnmatch_lines(["labkit_backend*", "*--labkit-backend*"])
    run_inner(inner, "--markers").stdout.fnmatch_lines(["@pytest.mark.labkit_backends(*backends): run the test once*"])


def test_pyproject__registers_the_pytest11_entry_point() -> None:
    """Installing labkit is enough: pytest finds the plugin through the pytest11 entry point."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"labkit": "labkit.pytest_plugin"}


def test_plugin__marker_with_aws_and_no_region__skipped_with_the_configuration_error(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `aws` entry in the marker on a machine without AWS settings is skipped, saying what is missing."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(inner.path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(inner.path / "no-aws-credentials"))
    inner.makepyfile(
        test_aws="""
        import pytest

        @pytest.mark.labkit_backends("embedded", "aws")
        def test_both(labkit_conn):
            pass
        """
    )
    result = run_inner(inner, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*labkit backend 'aws' unavailable: backend 'aws' needs a region*"])
