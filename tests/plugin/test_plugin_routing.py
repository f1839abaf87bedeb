"""The pytest plugin points every DynamoDB client of the session at the lab, and cleans up after tests.

The first test is the one a team lives: docs/ci.md's example test modules copied into an EMPTY
folder and run with a plain ``python -m pytest``, every AWS_* and LABKIT_* variable removed and
HOME empty, as on a clean CI runner; the plugin loads through its installed entry point. The
others run pytest in-process (pytester) with the plugin named by ``-p``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.backend import Connection
from labkit.pytest_plugin import ENV_ROUTED, choose_backend, user_endpoint

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
SCRUBBED = ("AWS_", "LABKIT_", "PYTEST_", "BOTO_")


def doc_block(first_line: str) -> str:
    """The ```python block of docs/ci.md whose first line is ``first_line``."""
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S):
        if block.startswith(first_line + "\n"):
            return str(block)
    raise AssertionError(f"docs/ci.md has no python block starting with {first_line!r}")


def clean_runner_env(home: Path) -> dict[str, str]:
    """The environment of a clean CI runner: no AWS, labkit or pytest variables, an empty HOME, and
    ``CI=true`` as every hosted runner sets it (pytest then prints untruncated explanations)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env["HOME"] = str(home)
    env["CI"] = "true"
    return env


def run_pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = folder.parent / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=folder,
        env=clean_runner_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


def failure_sections(out: str) -> dict[str, str]:
    """pytest's report of each failed test, by test id (the ``____ test_id ____`` headers).

    Counted per test, not per printed line: with ``CI`` set (as on every CI runner) pytest stops
    truncating assertion explanations and prints a failure's message a second time.
    """
    parts = re.split(r"^_+ (\S+) _+$", out.split("= short test summary info =")[0], flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def team_folder(tmp_path: Path) -> Path:
    """An empty folder holding only docs/ci.md's three example test modules."""
    folder = tmp_path / "team"
    (folder / "tests").mkdir(parents=True)
    for name in ("test_cart_races.py", "test_wallet_races.py", "test_sign_up_retries.py"):
        (folder / "tests" / name).write_text(doc_block(f"# tests/{name}"))
    return folder


def test_empty_folder_no_aws_variables__resource_and_pynamodb_races_found_and_fixes_pass(tmp_path: Path) -> None:
    """docs/ci.md's cart (module-level boto3 resource), wallet (PynamoDB, no host) and sign-up (faults)
    tests, their xfail marks off: the read-modify-write and new-token versions fail with a replayable
    order (and fault), the ADD, versioned and pinned-token versions pass."""
    found = run_pytest_in(team_folder(tmp_path), "-q", "--runxfail")
    out = found.stdout
    assert found.returncode == 1, out + found.stderr
    assert "3 failed, 3 passed" in out
    assert re.search(r"FAILED after \d+ run\(s\) \(exhaustive\): the cart holds [12] items, expected 3", out)
    assert re.search(r"FAILED after \d+ run\(s\) \(exhaustive\): balance (10|20), expected 30", out)
    failures = failure_sections(out)
    assert sorted(failures) == [
        "test_sign_ups_with_lost_answers__everyone_is_created[False]",
        "test_two_deposits_at_once__both_land[Wallet-deposit]",
        "test_two_tabs_add_to_one_cart__both_adds_land[add_to_cart_read_modify_write]",
    ]
    for name, section in failures.items():
        if not name.startswith("test_sign_ups"):
            assert re.search(r"replay: run_interleaving\(actors, '[AB] [AB] [AB] [AB]', conn=conn\)", section), section
    assert re.search(
        r"FAILED after 3 run\(s\) \(exhaustive\) in 'A A B' with A1: lose-response: sign-ups answered "
        r"\[\('A', 'email taken'\), \('B', 'created'\)\]",
        out,
    )
    assert re.search(r"replay: run_interleaving\(actors, 'A A B', conn=conn, faults=\['A1: lose-response'\]\)", out)


@pytest.mark.slow
def test_empty_folder__docs_examples_as_written__pass_with_the_races_as_xfail(tmp_path: Path) -> None:
    """Copied as they stand in docs/ci.md (xfail marks on the broken versions), the examples pass."""
    as_written = run_pytest_in(team_folder(tmp_path), "-q", "-rx")
    assert as_written.returncode == 0, as_written.stdout + as_written.stderr
    assert "3 passed, 3 xfailed" in as_written.stdout


def test_run_that_never_touches_dynamodb__builds_no_engine(tmp_path: Path) -> None:
    """Routing binds a port and sets the variables; moto is imported only when DynamoDB is used."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "test_plain.py").write_text(
        "import os, sys, threading\n"
        "def test_plain():\n"
        "    assert os.environ['AWS_ENDPOINT_URL_DYNAMODB'].startswith('http://127.0.0.1:')\n"
        "    assert os.environ['AWS_ACCESS_KEY_ID'] == 'labkit' and os.environ['AWS_DEFAULT_REGION'] == 'us-east-1'\n"
        "    assert 'moto' not in sys.modules and 'uvicorn' not in sys.modules\n"
        "    assert 'labkit-endpoint' not in [t.name for t in threading.enumerate()]\n"
    )
    result = run_pytest_in(folder, "-q")
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------- in-process runs


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for var in ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_TEST_BACKEND", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "labkit.pytest_plugin", "-p", "no:cacheprovider", *args)


def test_routing__variables_restored_when_pytest_ends(inner: pytest.Pytester) -> None:
    """After the run, every variable the plugin set is back to what it was."""
    before = {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "LABKIT_"))}
    inner.makepyfile(test_x="import os\ndef test_x():\n    assert os.environ['AWS_ENDPOINT_URL_DYNAMODB']\n")
    run(inner).assert_outcomes(passed=1)
    assert {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "LABKIT_"))} == before


def test_routing__tables_made_in_a_test_dropped__module_fixture_and_import_time_tables_kept(
    inner: pytest.Pytester,
) -> None:
    """A table a test (or its function fixture) creates is gone after it; module-scoped and import-time ones stay."""
    inner.makepyfile(
        test_tables="""
        import boto3, pytest

        client = boto3.client("dynamodb", region_name="eu-west-1")
        SCHEMA = dict(BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                      AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}])
        client.create_table(TableName="at-import", **SCHEMA)

        def names():
            return set(client.list_tables()["TableNames"])

        @pytest.fixture(scope="module")
        def shared():
            client.create_table(TableName="module-wide", **SCHEMA)

        @pytest.fixture
        def mine():
            client.create_table(TableName="per-test-fixture", **SCHEMA)

        def test_one(shared, mine):
            client.create_table(TableName="in-body", **SCHEMA)
            assert {"at-import", "module-wide", "per-test-fixture", "in-body"} <= names()

        def test_two(shared):
            assert {"at-import", "module-wide"} <= names()
            assert not {"per-test-fixture", "in-body"} & names()
            client.create_table(TableName="in-body", **SCHEMA)  # free again: no ResourceInUseException
    """
    )
    run(inner).assert_outcomes(passed=2)


def test_routing__aws_backend__changes_nothing(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """--labkit-backend aws leaves the environment and the clients alone."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv(ENV_ROUTED, raising=False)
    inner.makepyfile(test_x="import os\ndef test_x():\n    assert 'AWS_ENDPOINT_URL_DYNAMODB' not in os.environ\n")
    run(inner, "--labkit-backend", "aws").assert_outcomes(passed=1)


def test_routing__backend_url__every_client_goes_there(inner: pytest.Pytester, conn: Connection) -> None:
    """--labkit-backend http://...: clients created without an endpoint (a module-level resource) go to it."""
    inner.makepyfile(
        test_url=f"""
        import os, boto3
        table = boto3.resource("dynamodb").Table("t")

        def test_url(labkit_conn):
            assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "{conn.endpoint_url}"
            assert table.meta.client.meta.endpoint_url == "{conn.endpoint_url}"
            assert labkit_conn.endpoint_url == "{conn.endpoint_url}"
        """
    )
    run(inner, "--labkit-backend", str(conn.endpoint_url)).assert_outcomes(passed=1)


def test_routing__endpoint_already_configured__followed_not_overridden(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, conn: Connection
) -> None:
    """A team that already sets AWS_ENDPOINT_URL_DYNAMODB (its DynamoDB Local) keeps it; labkit_conn goes there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", f"{conn.endpoint_url}/")
    monkeypatch.delenv(ENV_ROUTED, raising=False)
    inner.makepyfile(
        test_x=f"""
        import os
        def test_x(labkit_conn, labkit_backend):
            assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "{conn.endpoint_url}/"
            assert labkit_backend == "{conn.endpoint_url}" and labkit_conn.endpoint_url == "{conn.endpoint_url}"
        """
    )
    run(inner).assert_outcomes(passed=1)


def test_choose_backend__option_then_labkit_backend_then_the_users_endpoint_then_embedded() -> None:
    """The order the backend is chosen in; an endpoint labkit itself set (a parent process) is not the user's."""
    assert choose_backend("local", {"LABKIT_BACKEND": "aws"}) == "local"
    assert choose_backend(None, {"LABKIT_BACKEND": "aws", "AWS_ENDPOINT_URL": "http://x:1"}) == "aws"
    assert choose_backend(None, {"AWS_ENDPOINT_URL": "http://x:1/"}) == "http://x:1"
    inherited = {"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:5", ENV_ROUTED: "http://127.0.0.1:5"}
    assert user_endpoint(inherited) is None and choose_backend(None, inherited) == "embedded"
    with pytest.raises(pytest.UsageError, match="LABKIT_BACKEND: unknown labkit backend 'nope'"):
        choose_backend(None, {"LABKIT_BACKEND": "nope"})


def test_routing__none__no_routing_and_labkit_conn_refused(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--labkit-backend none: labkit stays out; asking for labkit_conn says why it cannot be had."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv(ENV_ROUTED, raising=False)
    inner.makepyfile(
        test_x="""
        import os
        def test_free():
            assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ
        def test_conn(labkit_conn):
            pass
        """
    )
    result = run(inner, "--labkit-backend", "none")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*labkit_conn needs a backend, and this run has --labkit-backend none*"])


def test_routing__moto_mock_active__a_dynamodb_call_fails_saying_so(inner: pytest.Pytester) -> None:
    """A session mixing moto's mock_aws with labkit's routing gets an error, not a silent switch of backend."""
    inner.makepyfile(
        test_moto="""
        import boto3
        from moto import mock_aws

        @mock_aws
        def test_mocked():
            boto3.client("dynamodb", region_name="us-east-1").list_tables()
        """
    )
    result = run(inner)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*moto's mock_aws is active, but labkit's pytest plugin points every DynamoDB*"])
