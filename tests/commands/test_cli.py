"""The labkit command: serve on loopback only, doctor, and one-line errors with non-zero exits."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from labkit.commands.cli import main
from tests.serving import Served, free_port, labkit_serve


def _listening_addresses(port: int) -> set[str]:
    """IPv4/IPv6 addresses with a socket LISTENing on ``port``, read from /proc/net (Linux)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                host, hexport = local.split(":")
                if state == "0A" and int(hexport, 16) == port:
                    if len(host) == 8:
                        found.add(socket.inet_ntoa(bytes.fromhex(host)[::-1]))
                    else:
                        found.add(host)
    return found


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """`labkit serve` running in its own process on a free port: one for the module (each start imports
    the engine, seconds of CPU); the tests that use it only read (no table is made, no rule set)."""
    with labkit_serve(env=_env()) as running:
        yield running


@pytest.fixture
def served_like_local() -> Iterator[Served]:
    """`labkit serve --profile dynamodb-local` in its own process."""
    with labkit_serve("--profile", "dynamodb-local", env=_env()) as running:
        yield running


def _post(port: int, target: str, body: bytes) -> tuple[int, dict[str, object]]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}", data=body, method="POST", headers={"X-Amz-Target": target}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310  loopback
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _client(port: int) -> Any:
    """A plain boto3 client (as the AWS CLI would use) for `labkit serve` on ``port``."""
    return boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
    )


def test_serve__start__imports_neither_the_exercises_nor_pandas_nor_motos_iam() -> None:
    """What `labkit serve` imports before it listens (Python's import log): neither the exercises (pandas, the race
    lab) nor moto's IAM (cryptography), the imports that made its first answer slow (decision 200), nor the race
    lab's fault notation or labkit's boto3 client (decision 227)."""
    with labkit_serve(env=_env(PYTHONPROFILEIMPORTTIME="1")) as running:
        imported = {line.split("|")[-1].strip() for line in running.banner if line.startswith("import time:")}
    assert {"labkit.endpoint.engine", "moto.dynamodb.models"} <= imported  # the log is there and the engine built
    assert not imported & {"pandas", "labkit.lab.exercises", "moto.iam", "cryptography"}
    assert not imported & {"labkit.races", "labkit.engine_plugins.faults.kinds", "labkit.shared.backend"}


def test_serve__real_client__lists_tables(served: Served) -> None:
    """A plain boto3 client (as the AWS CLI would) talks to `labkit serve`."""
    port = served.port
    assert _client(port).list_tables()["TableNames"] == []


def _no_aws_config(home: Path) -> dict[str, str]:
    """A machine with no AWS configuration: no AWS_* variable, an empty HOME (no ~/.aws), and no
    instance-metadata lookup (this machine sends nothing off loopback)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LABKIT_", "BOTO_"))}
    return {**env, "HOME": str(home), "AWS_EC2_METADATA_DISABLED": "true"}


def test_serve__banner_command__lists_tables_on_a_machine_with_no_aws_configuration(
    served: Served, tmp_path: Path
) -> None:
    """The banner's `aws dynamodb list-tables` line sets the key and region it needs: run as printed (by a
    shell; by boto3 with the same settings when the AWS CLI is not installed), it lists the tables."""
    [line] = [text.split("try it: ", 1)[1] for text in served.banner if "try it: " in text]
    assert line == (
        "AWS_ACCESS_KEY_ID=labkit AWS_SECRET_ACCESS_KEY=labkit "
        f"aws dynamodb list-tables --endpoint-url {served.url} --region us-east-1"
    )
    env = _no_aws_config(tmp_path)
    *assignments, _aws, _service, _op, _flag, url, _region_flag, region = line.split()
    settings = dict(assignment.split("=", 1) for assignment in assignments)
    as_boto3 = (
        "import boto3, json, sys\n"
        f"c = boto3.client('dynamodb', endpoint_url={url!r}, region_name={region!r})\n"
        "print(json.dumps(c.list_tables()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", as_boto3], env={**env, **settings}, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, json.loads(done.stdout or "{}").get("TableNames")) == (0, []), done.stderr
    if shutil.which("aws", path=env.get("PATH")) is None:
        return  # no AWS CLI here: boto3, the library it is built on, made the same call
    done = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, json.loads(done.stdout or "{}").get("TableNames")) == (0, []), done.stderr


def test_serve__banner__lists_the_regions(served: Served, served_like_local: Served) -> None:
    """`labkit serve` says every region is served (a client's region_name picks one) and what it holds; the
    dynamodb-local profile says it has no global tables."""
    [line] = [text for text in served.banner if "regions: " in text]
    assert "every region a client names" in line and "global tables: 0, deliveries pending: 0" in line
    [local] = [text for text in served_like_local.banner if "regions: " in text]
    assert local.endswith("no global tables (as DynamoDB Local)")


def test_serve__default_profile__answers_labkit_controls(served: Served) -> None:
    """`labkit serve` is the labkit profile: Labkit.GetFaults answers with the (empty) rules."""
    port = served.port
    status, body = _post(port, "Labkit.GetFaults", b"{}")
    assert (status, body["rules"], body["Held"]) == (200, [], [])


def test_serve__profile_dynamodb_local__labkit_control_is_an_unknown_operation(
    served_like_local: Served,
) -> None:
    """`--profile dynamodb-local` behaves like DynamoDB Local: no Labkit.* operation, tables work."""
    port = served_like_local.port
    status, body = _post(port, "Labkit.SetFaults", b'{"rules": []}')
    assert (status, body["__type"]) == (400, "com.amazon.coral.service#UnknownOperationException")
    assert _client(port).list_tables()["TableNames"] == []


def test_serve__faults_with_profile_dynamodb_local__exit_2_before_listening(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fault rules need the labkit profile: refused in one line, nothing starts."""
    rules = tmp_path / "faults.json"
    rules.write_text('{"rules": []}')
    port = free_port()
    assert main(["serve", "--port", str(port), "--profile", "dynamodb-local", "--faults", str(rules)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit: error: --faults needs --profile labkit") and err.count("\n") == 1
    assert _listening_addresses(port) == set()


def test_serve__help__names_both_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--profile {labkit,dynamodb-local}" in out and "like DynamoDB Local" in out


def test_serve__listens_on_loopback_only(served: Served) -> None:
    """The listening socket is bound to 127.0.0.1, not 0.0.0.0 or another address."""
    port = served.port
    assert _listening_addresses(port) == {"127.0.0.1"}


def test_serve__port_in_use__one_line_error_and_exit_2(served: Served) -> None:
    """A second serve on the same port says the port is taken and what to do."""
    port = served.port
    out = subprocess.run(
        [sys.executable, "-m", "labkit", "serve", "--port", str(port)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert f"port {port} on 127.0.0.1 is already in use" in out.stderr
    assert "--port" in out.stderr


def test_doctor__embedded__prints_backend_endpoint_versions_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    """doctor reports backend, endpoint, versions and a round trip in a few lines."""
    assert main(["doctor", "--backend", "embedded"]) == 0
    out = capsys.readouterr().out
    assert "backend   embedded" in out
    assert "endpoint  http://127.0.0.1:" in out
    assert "boto3=" in out and "moto=" in out
    assert "round trip ListTables in" in out
    assert len(out.strip().splitlines()) <= 6


def test_doctor__unknown_backend__exit_2_with_choices(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown backend is one error line on stderr and exit status 2."""
    assert main(["doctor", "--backend", "postgres"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit: error: --backend: unknown labkit backend 'postgres'; choose one of: embedded,")
    assert err.count("\n") == 1


def test_doctor__local_not_running__exit_2_with_docker_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor against a DynamoDB Local that is not running says how to start it."""
    monkeypatch.setenv("LABKIT_LOCAL_URL", f"http://127.0.0.1:{free_port()}")
    assert main(["doctor", "--backend", "local"]) == 2
    assert "docker compose up -d dynamodb" in capsys.readouterr().err


def test_serve__port_out_of_range__exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A port outside 1-65535 is refused before anything starts."""
    assert main(["serve", "--port", "70000"]) == 2
    assert "out of range" in capsys.readouterr().err


def test_lab__as_root__adds_allow_root_and_says_so_in_one_line() -> None:
    """Root (containers, CI boxes) needs no extra flag: labkit adds --allow-root once and says so."""
    from labkit.commands.launcher import jupyter_command

    command, notes = jupyter_command(Path("/nb"), [], python="py", euid=0)
    assert command[:3] == ["py", "-m", "jupyterlab"] and command.count("--allow-root") == 1
    assert len(notes) == 1 and "--allow-root" in notes[0]
    command, notes = jupyter_command(Path("/nb"), ["--allow-root"], python="py", euid=0)
    assert command.count("--allow-root") == 1 and notes == []
    command, notes = jupyter_command(Path("/nb"), [], python="py", euid=1000)
    assert "--allow-root" not in command and notes == []


def test_lab__command__loopback_notebooks_and_settings_from_this_python() -> None:
    """JupyterLab runs from this interpreter (nothing on PATH), on 127.0.0.1, on notebooks/, with labkit's settings."""
    from labkit.commands.launcher import SETTINGS_DIR, jupyter_command

    command, _ = jupyter_command(Path("/nb"), ["--", "--ServerApp.token=abc"], euid=1000)
    assert command[:3] == [sys.executable, "-m", "jupyterlab"]
    assert "--ServerApp.ip=127.0.0.1" in command and "--ServerApp.root_dir=/nb" in command
    assert f"--LabApp.app_settings_dir={SETTINGS_DIR}" in command
    assert "--ServerApp.token=abc" in command and "--" not in command
    overrides = json.loads((SETTINGS_DIR / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_lab__explicit_ip__replaces_the_loopback_default() -> None:
    """The compose service's `--ip=0.0.0.0` is passed once; jupyter refuses two ip options."""
    from labkit.commands.launcher import jupyter_command

    command, _ = jupyter_command(Path("/nb"), ["--ip=0.0.0.0", "--allow-root"], euid=0)
    ips = [arg for arg in command if arg.split("=")[0] in ("--ip", "--ServerApp.ip")]
    assert ips == ["--ip=0.0.0.0"]


def test_lab__unknown_options__are_passed_on_to_jupyter() -> None:
    """`labkit lab --allow-root --ServerApp.port=9999` keeps labkit's own options and hands the rest on."""
    from labkit.commands.cli import build_parser

    args, unknown = build_parser().parse_known_args(["lab", "--no-browser", "--ServerApp.port=9999"])
    assert args.no_browser is True and unknown == ["--ServerApp.port=9999"]


def test_serve__unknown_option__is_a_usage_error() -> None:
    """Only `lab` passes unknown options on; `serve --allow-root` is refused with exit 2."""
    with pytest.raises(SystemExit) as info:
        main(["serve", "--allow-root"])
    assert info.value.code == 2


def test_doctor__stale_lab_record__is_ignored_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lab.json left by a lab that died (its pid is gone) is not reported, and is cleaned up."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = tmp_path / "lab.json"
    record.write_text(
        json.dumps(
            {
                "pid": int(dead.stdout),
                "url": "http://127.0.0.1:1/lab?token=x",
                "endpoint_url": "http://127.0.0.1:1",
                "notebooks": "nb",
            }
        )
    )
    monkeypatch.setenv("LABKIT_RUNTIME_DIR", str(tmp_path))
    for var in ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "lab " not in out and "endpoint  http://127.0.0.1:1\n" not in out
    assert not record.exists()


def test_serve__endpoint_stops_by_itself__exit_2_saying_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """serve blocks on the endpoint's end (an event, not a poll): an endpoint whose thread ends without Ctrl-C
    or SIGTERM makes serve exit 2 with one line saying so."""
    import signal

    import labkit.embedded

    real = labkit.embedded.start_endpoint

    def ends_at_once(*args: Any, **kwargs: Any) -> Any:
        endpoint = real(*args, **kwargs)
        endpoint._server.should_exit = True  # uvicorn leaves its loop: the serving thread ends by itself
        return endpoint

    monkeypatch.setattr(labkit.embedded, "start_endpoint", ends_at_once)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert main(["serve", "--port", str(free_port())]) == 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert "the endpoint stopped unexpectedly" in capsys.readouterr().err
