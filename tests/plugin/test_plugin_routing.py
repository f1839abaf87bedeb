"""The pytest plugin routes each labkit test's DynamoDB calls to the lab, leaves the others alone, cleans up.

The tests a team lives run in a subprocess: a team's moto test, race test and plain test (docs/ci.md's
example modules: test_docs_examples.py), copied into an EMPTY folder and run with a plain ``python -m
pytest``, every AWS_* and LABKIT_* variable removed and HOME empty, as on a clean CI runner; the
plugin loads through its installed entry point. The others run pytest in-process (pytester) with
the plugin named by ``-p``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from labkit.pytest_plugin.options import ENV_ROUTED, choose_backend, user_endpoint
from labkit.shared.backend import Connection
from tests.plugin.teams import Session, run_inner, run_pytest_in, run_team

pytest_plugins = ["pytester"]

# --------------------------------------------------------------- a team's suite: moto, races, plain tests

TEAM_SHOP = """\
# shop.py: the team's code, unchanged
import boto3

orders = boto3.resource("dynamodb", region_name="eu-west-1").Table("orders")  # at import time


def reserve_read_modify_write(order_id, quantity):
    order = orders.get_item(Key={"order_id": order_id}, ConsistentRead=True)["Item"]
    orders.put_item(Item={**order, "reserved": order["reserved"] + quantity})


def reserve(order_id, quantity):
    orders.update_item(Key={"order_id": order_id}, UpdateExpression="ADD reserved :q",
                       ExpressionAttributeValues={":q": quantity})
"""

TEAM_RACE = """\
# tests/test_order_races.py: a labkit race test of the module-level Table
import os

import boto3
import pytest

import shop
from labkit.races import explore


@pytest.fixture
def orders_table():
    boto3.client("dynamodb", region_name="eu-west-1").create_table(
        TableName="orders", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}])


@pytest.mark.parametrize("reserve", [
    pytest.param(shop.reserve_read_modify_write, marks=pytest.mark.xfail(strict=True, reason="loses one")),
    shop.reserve,
])
def test_two_reservations_at_once__both_land(labkit_conn, orders_table, reserve):
    assert shop.orders.meta.client.meta.endpoint_url == "https://dynamodb.eu-west-1.amazonaws.com"
    assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ and "AWS_ACCESS_KEY_ID" not in os.environ

    def setup():
        shop.orders.put_item(Item={"order_id": "o1", "reserved": 0})

    def both_land(res):
        reserved = shop.orders.get_item(Key={"order_id": "o1"}, ConsistentRead=True)["Item"]["reserved"]
        assert reserved == 3, f"reserved {reserved}, expected 3"

    result = explore({"A": lambda: reserve("o1", 1), "B": lambda: reserve("o1", 2)},
                     conn=labkit_conn, setup=setup, invariant=both_land)
    assert result.passed, result.summary()
"""

TEAM_MOTO = """\
# tests/test_orders_moto.py: the team's unit test with moto, as most Python teams write them
import boto3
from moto import mock_aws


@mock_aws
def test_orders_table_with_moto():
    client = boto3.client("dynamodb", region_name="eu-west-1")
    client.create_table(TableName="orders", BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}])
    client.put_item(TableName="orders", Item={"order_id": {"S": "o1"}, "reserved": {"N": "5"}})
    assert client.list_tables()["TableNames"] == ["orders"]
    assert client.get_item(TableName="orders", Key={"order_id": {"S": "o1"}})["Item"]["reserved"] == {"N": "5"}


@mock_aws
def test_an_empty_account_with_moto():
    assert boto3.client("dynamodb", region_name="eu-west-1").list_tables()["TableNames"] == []
"""

TEAM_PLAIN = '''\
# tests/test_plain.py: no DynamoDB, and a call meant for real AWS
import os

import boto3
import pytest
from botocore.exceptions import NoCredentialsError


def test_prices_add_up():
    assert sum([1, 2]) == 3
    assert not {"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION"} & set(os.environ)


def test_a_real_aws_call__left_to_aws():
    """This runner has no credentials: botocore says so; labkit neither routed the call nor lent it any."""
    with pytest.raises(NoCredentialsError):
        boto3.client("dynamodb", region_name="eu-west-1").list_tables()
'''


def mixed_team_folder(tmp_path: Path) -> Path:
    """An empty folder with a team's code (a module-level Table), its race, moto and plain tests."""
    folder = tmp_path / "shop"
    (folder / "tests").mkdir(parents=True)
    (folder / "shop.py").write_text(TEAM_SHOP)
    (folder / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    for name, text in (("test_order_races", TEAM_RACE), ("test_orders_moto", TEAM_MOTO), ("test_plain", TEAM_PLAIN)):
        (folder / "tests" / f"{name}.py").write_text(text)
    return folder


ORDERS = {
    "races first": ["tests/test_order_races.py", "tests/test_orders_moto.py", "tests/test_plain.py"],
    "moto first": ["tests/test_orders_moto.py", "tests/test_order_races.py", "tests/test_plain.py"],
    "plain first, moto last": ["tests/test_plain.py", "tests/test_order_races.py", "tests/test_orders_moto.py"],
    "two xdist workers": ["-n", "2", "tests"],
}


#: The slow checks (CI) run every order; the fast loop none (test_xdist__each_worker_routes_to_its_own_endpoint
#: and test_moto_mock_active_in_a_labkit_test__one_clear_error__only_there keep xdist and moto in it).
SLOW_ORDERS = tuple(ORDERS)


@pytest.mark.parametrize(
    "order", [pytest.param(order, marks=[pytest.mark.slow] if order in SLOW_ORDERS else []) for order in ORDERS]
)
def test_team_suite__moto_race_and_plain_tests__pass_together_in_any_order(tmp_path: Path, order: str) -> None:
    """One pytest call, no AWS variables: moto's mock_aws tests, a labkit race test of a module-level
    boto3 Table (routed per test: its lost update found, its ADD proved) and plain tests (a real-AWS
    call left to AWS) all pass, whichever runs first, and under pytest-xdist."""
    done = run_pytest_in(mixed_team_folder(tmp_path), "-q", "-rxX", *ORDERS[order])
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert re.search(r"\b5 passed, 1 xfailed\b", out), out
    assert "XFAIL tests/test_order_races.py::test_two_reservations_at_once__both_land[reserve_read_modify_write]" in out


@pytest.mark.slow
def test_team_suite__race_found_with_the_xfail_off__replayable(tmp_path: Path) -> None:
    """The same suite with --runxfail: the read-modify-write fails with the order that loses one, the rest pass."""
    done = run_pytest_in(mixed_team_folder(tmp_path), "-q", "--runxfail", "tests")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 5 passed" in done.stdout
    assert re.search(r"FAILED after \d+ run\(s\) \(exhaustive\): reserved [12], expected 3", done.stdout)
    assert re.search(r"replay: run_interleaving\(actors, '[AB] [AB] [AB] [AB]', conn=conn\)", done.stdout)


def test_xdist__each_worker_routes_to_its_own_endpoint(tmp_path: Path) -> None:
    """Under -n 2 every worker has its own embedded endpoint, and its labkit tests' calls go there."""
    folder = tmp_path / "workers"
    folder.mkdir()
    out = tmp_path / "endpoints"
    out.mkdir()
    (folder / "test_where.py").write_text(
        "import os, pathlib, boto3, pytest\n"
        "@pytest.mark.labkit\n"
        "def test_where():\n"
        "    client = boto3.client('dynamodb', region_name='eu-west-1')\n"
        "    seen = []\n"
        "    client.meta.events.register('before-send.dynamodb', lambda request, **_: seen.append(request.url))\n"
        "    client.list_tables()\n"
        f"    (pathlib.Path({str(out)!r}) / os.environ['PYTEST_XDIST_WORKER']).write_text(seen[0])\n"
    )
    done = run_pytest_in(folder, "-q", "-n", "2", "--dist", "each")
    assert done.returncode == 0, done.stdout + done.stderr
    urls = {p.name: p.read_text() for p in out.iterdir()}
    assert sorted(urls) == ["gw0", "gw1"]
    assert all(re.fullmatch(r"http://127\.0\.0\.1:\d+/", url) for url in urls.values()), urls
    assert urls["gw0"] != urls["gw1"]


# ------------------------------------------- one team session: moto in a labkit test, credentials, a foreign endpoint

MOTO_IN_A_LABKIT_TEST = """
import boto3
from moto import mock_aws


@mock_aws
def test_mocked_and_routed(labkit_conn):
    boto3.client("dynamodb", region_name="us-east-1").list_tables()


@mock_aws
def test_mocked_only():
    assert boto3.client("dynamodb", region_name="us-east-1").list_tables()["TableNames"] == []
"""

CREDENTIALS = """
import os

import boto3
import pytest


def sent(client):
    seen = []
    client.meta.events.register("before-send.dynamodb", lambda request, **_: seen.append(request))
    client.list_tables()
    return seen[0]


def test_before():
    assert "AWS_DEFAULT_REGION" not in os.environ


@pytest.mark.labkit
def test_routed():
    assert os.environ["AWS_DEFAULT_REGION"] == "us-east-1"
    anonymous = sent(boto3.client("dynamodb"))
    assert anonymous.url.startswith("http://127.0.0.1:")
    assert anonymous.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256 Credential=labkit/")
    assert b"/us-east-1/dynamodb/aws4_request" in anonymous.headers["Authorization"]
    own = sent(boto3.client("dynamodb", region_name="eu-west-1", aws_access_key_id="team-key",
                            aws_secret_access_key="team-secret"))
    assert own.url.startswith("http://127.0.0.1:")
    assert own.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256 Credential=team-key/")


def test_after():
    assert "AWS_DEFAULT_REGION" not in os.environ and "AWS_ACCESS_KEY_ID" not in os.environ
"""

FOREIGN_ENDPOINT = """
import boto3
from labkit.races import explore

foreign = boto3.client("dynamodb", endpoint_url="http://127.0.0.1:9", region_name="us-east-1")


def test_foreign(labkit_conn):
    explore({"A": lambda: foreign.list_tables(), "B": lambda: labkit_conn.client.list_tables()},
            conn=labkit_conn, setup=lambda: None, invariant=lambda res: None)
"""


@pytest.fixture(scope="module")
def team_session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """Three scenarios a team meets, as three test modules of one folder run by ONE plain pytest (each
    pytest start costs seconds of imports; the modules do not share state: each test below asserts only
    its own module's outcomes)."""
    folder = tmp_path_factory.mktemp("scenarios") / "team"
    folder.mkdir()
    for name, text in (
        ("test_moto", MOTO_IN_A_LABKIT_TEST),
        ("test_creds", CREDENTIALS),
        ("test_foreign", FOREIGN_ENDPOINT),
    ):
        (folder / f"{name}.py").write_text(text)
    return run_team(folder, "-q")


def test_moto_mock_active_in_a_labkit_test__one_clear_error__only_there(team_session: Session) -> None:
    """mock_aws in a test that uses labkit_conn fails saying why; the plain moto test beside it passes."""
    s = team_session
    assert s.of("test_moto") == {"test_mocked_and_routed": "failed", "test_mocked_only": "passed"}, s.log
    assert (
        "ConfigurationError: moto's mock_aws is active in a test that labkit routes (it uses labkit_conn): "
        "labkit sends its DynamoDB calls to http://127.0.0.1:"
    ) in s.failures["test_mocked_and_routed"]
    assert "so this ListTables would not reach moto's mock" in s.failures["test_mocked_and_routed"]


def test_labkit_test__dummy_credentials_and_region_only_when_none__signed_for_the_lab(team_session: Session) -> None:
    """On a runner with no credentials or region: a labkit test gets a default region for its duration and
    its routed calls are signed with labkit's dummy key for the lab's host; a client with keys of its own
    signs with them; the plain tests before and after see no region and no credentials."""
    s = team_session
    assert s.of("test_creds") == {"test_before": "passed", "test_routed": "passed", "test_after": "passed"}, s.log


def test_labkit_test__a_client_with_its_own_foreign_endpoint__refused_in_an_actor(team_session: Session) -> None:
    """Inside a labkit test a client given its own endpoint_url is not rerouted; the race lab refuses it."""
    s = team_session
    assert s.of("test_foreign") == {"test_foreign": "failed"}, s.log
    assert (
        "actor 'A' made a DynamoDB call (ListTables) on a client whose endpoint is http://127.0.0.1:9, not the lab's"
    ) in s.failures["test_foreign"]


# --------------------------------------------------------------- in-process runs


def test_environment_routing__variables_set_for_the_session_and_restored_when_pytest_ends(
    inner: pytest.Pytester,
) -> None:
    """--labkit-routing environment: AWS_ENDPOINT_URL_DYNAMODB (and dummies) for every test; all restored after."""
    before = {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "LABKIT_"))}
    inner.makepyfile(
        test_x="""
        import os
        def test_x():
            assert os.environ['AWS_ENDPOINT_URL_DYNAMODB'].startswith('http://127.0.0.1:')
            assert os.environ['AWS_ACCESS_KEY_ID'] == 'labkit' and os.environ['AWS_DEFAULT_REGION'] == 'us-east-1'
        """
    )
    run_inner(inner, "--labkit-routing", "environment").assert_outcomes(passed=1)
    assert {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "LABKIT_"))} == before


def test_environment_routing__a_subprocess_inherits_the_endpoint(inner: pytest.Pytester) -> None:
    """What the environment mode is for: a program a test starts reaches the lab too."""
    inner.makeini("[pytest]\nlabkit_routing = environment\n")
    inner.makepyfile(
        test_child="""
        import subprocess, sys
        CHILD = "import boto3; print(boto3.client('dynamodb').list_tables()['TableNames'])"

        def test_child():
            import boto3
            boto3.client("dynamodb").create_table(TableName="child-sees-me", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}])
            out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
            assert "child-sees-me" in out.stdout
        """
    )
    run_inner(inner).assert_outcomes(passed=1)


TABLES = """
import boto3, pytest

client = boto3.client("dynamodb", region_name="eu-west-1")
SCHEMA = dict(BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
              AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}])
%(at_import)s

def names():
    return set(client.list_tables()["TableNames"])

@pytest.fixture(scope="module")
def shared():
    client.create_table(TableName="module-wide", **SCHEMA)
    yield
    client.delete_table(TableName="module-wide")  # torn down after test_three, a plain test: still routed

@pytest.fixture
def mine():
    client.create_table(TableName="per-test-fixture", **SCHEMA)

@pytest.mark.labkit
def test_one(shared, mine):
    client.create_table(TableName="in-body", **SCHEMA)
    assert {%(kept)s"module-wide", "per-test-fixture", "in-body"} <= names()

@pytest.mark.labkit
def test_two(shared):
    assert {%(kept)s"module-wide"} <= names()
    assert not {"per-test-fixture", "in-body"} & names()
    client.create_table(TableName="in-body", **SCHEMA)  # free again: no ResourceInUseException

def test_three():
    pass
"""


def test_routing__tables_made_in_a_labkit_test_dropped__module_fixture_tables_kept_and_torn_down_routed(
    inner: pytest.Pytester,
) -> None:
    """A table a labkit test (or its function fixture) creates is gone after it; a module-scoped one stays,
    and its teardown, run after the plain test_three, still reaches the lab."""
    inner.makepyfile(test_tables=TABLES % {"at_import": "", "kept": ""})
    run_inner(inner).assert_outcomes(passed=3)


def test_routing__every_test_with_the_option__import_time_calls_routed_and_their_tables_kept(
    inner: pytest.Pytester,
) -> None:
    """--labkit-backend embedded routes from startup: a table created at import time is made on the lab, kept."""
    at_import = 'client.create_table(TableName="at-import", **SCHEMA)'
    inner.makepyfile(test_tables=TABLES % {"at_import": at_import, "kept": '"at-import", '})
    run_inner(inner, "--labkit-backend", "embedded").assert_outcomes(passed=3)


def test_routing__aws_backend__routes_nothing_and_drops_nothing(inner: pytest.Pytester) -> None:
    """--labkit-backend aws leaves the environment and every client alone, and drops no table."""
    inner.makepyfile(
        test_x="""
        import os
        import labkit.shared.routing
        from labkit import pytest_plugin

        def test_x(request):
            assert 'AWS_ENDPOINT_URL_DYNAMODB' not in os.environ and 'AWS_DEFAULT_REGION' not in os.environ
            assert labkit.shared.routing.active_route() is None
            state = request.config.stash[pytest_plugin.STATE]
            assert state.backend == "aws" and state.every_test and state.tracker is None
        """
    )
    run_inner(inner, "--labkit-backend", "aws").assert_outcomes(passed=1)


def test_routing__backend_url__a_module_level_resource_without_region_goes_there(
    inner: pytest.Pytester, conn: Connection
) -> None:
    """--labkit-backend http://...: a resource created at import time with no region and no endpoint reaches it."""
    inner.makepyfile(
        test_url=f"""
        import boto3
        table = boto3.resource("dynamodb").Table("t-url")

        def test_url(labkit_conn):
            assert table.meta.client.meta.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"
            table.meta.client.create_table(TableName="t-url", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{{"AttributeName": "k", "KeyType": "HASH"}}],
                AttributeDefinitions=[{{"AttributeName": "k", "AttributeType": "S"}}])
            assert "t-url" in labkit_conn.client.list_tables()["TableNames"]
            assert labkit_conn.endpoint_url == "{conn.endpoint_url}"
        """
    )
    run_inner(inner, "--labkit-backend", str(conn.endpoint_url)).assert_outcomes(passed=1)


def test_routing__endpoint_already_configured__followed_not_overridden(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, conn: Connection
) -> None:
    """A team that already sets AWS_ENDPOINT_URL_DYNAMODB (its DynamoDB Local) keeps it; labkit_conn goes there."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", f"{conn.endpoint_url}/")
    inner.makepyfile(
        test_x=f"""
        import os
        def test_x(labkit_conn, labkit_backend):
            assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == "{conn.endpoint_url}/"
            assert labkit_backend == "{conn.endpoint_url}" and labkit_conn.endpoint_url == "{conn.endpoint_url}"
        """
    )
    run_inner(inner).assert_outcomes(passed=1)


def test_choose_backend__option_then_ini_then_labkit_backend_then_the_users_endpoint_then_embedded() -> None:
    """The order the backend is chosen in; an endpoint labkit itself set (a parent process) is not the user's."""
    assert choose_backend("local", {"LABKIT_BACKEND": "aws"}, "aws") == "local"
    assert choose_backend(None, {"LABKIT_BACKEND": "aws"}, "local") == "local"
    assert choose_backend(None, {"LABKIT_BACKEND": "aws", "AWS_ENDPOINT_URL": "http://x:1"}) == "aws"
    assert choose_backend(None, {"AWS_ENDPOINT_URL": "http://x:1/"}) == "http://x:1"
    inherited = {"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:5", ENV_ROUTED: "http://127.0.0.1:5"}
    assert user_endpoint(inherited) is None and choose_backend(None, inherited) == "embedded"
    with pytest.raises(pytest.UsageError, match="LABKIT_BACKEND: unknown labkit backend 'nope'"):
        choose_backend(None, {"LABKIT_BACKEND": "nope"})
    with pytest.raises(pytest.UsageError, match=r"labkit_backend \(ini option\): unknown labkit backend 'nope'"):
        choose_backend(None, {}, "nope")


def test_routing__none__nothing_routed__labkit_conn_and_the_marker_refused_naming_both(
    inner: pytest.Pytester,
) -> None:
    """--labkit-backend none: labkit stays out; a test asking for labkit_conn or the marker says why it cannot."""
    inner.makepyfile(
        test_x="""
        import os, pytest
        def test_free():
            assert "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ
        def test_conn(labkit_conn):
            pass
        @pytest.mark.labkit
        def test_marked():
            pass
        """
    )
    result = run_inner(inner, "--labkit-backend", "none")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*labkit_conn needs a backend, and this run has --labkit-backend none (labkit off)*",
            "*@pytest.mark.labkit needs a backend, and this run has --labkit-backend none (labkit off)*",
        ]
    )


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("labkit_backend = embeded", "labkit_backend (ini option): unknown labkit backend 'embeded'"),
        ("labkit_routing = session", "labkit_routing (ini option): unknown mode 'session'"),
    ],
)
def test_ini__unknown_value__usage_error_at_startup(inner: pytest.Pytester, ini: str, message: str) -> None:
    """A typo in the ini options stops pytest before it collects, naming the option."""
    inner.makeini(f"[pytest]\n{ini}\n")
    inner.makepyfile(test_x="def test_x():\n    pass\n")
    result = run_inner(inner)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_ini__labkit_backend__every_test_a_labkit_test(inner: pytest.Pytester) -> None:
    """labkit_backend in the ini file does what --labkit-backend does: every test is routed."""
    inner.makeini("[pytest]\nlabkit_backend = embedded\n")
    inner.makepyfile(
        test_x="""
        import labkit.shared.routing
        def test_x():
            route = labkit.shared.routing.active_route()
            assert route is not None and route.url.startswith("http://127.0.0.1:")
            assert route.why == "labkit_backend = embedded (ini option) makes every test a labkit test"
        """
    )
    run_inner(inner).assert_outcomes(passed=1)
