"""First run, as a newcomer does it: the README's lab command, then what the browser would do.

Nothing is faked. ``python3 bootstrap.py lab --no-browser`` runs in its own process group with
this test run's virtual environment as ``LABKIT_VENV`` (bootstrap finds it installed and does not
reinstall; in a venv that bootstrap did not make, such as a developer's shared one, the test sets
``LABKIT_SKIP_INSTALL=1`` instead). The test then talks to JupyterLab as the browser does — the
REST API with the printed token, a kernel over its websocket — and the kernel round-trips a
PutItem and a GetItem through the lab's shared endpoint. Ctrl-C (SIGINT to the process group)
must then stop everything: no process left, no port left listening.

Jupyter's own folders (runtime, data, config, settings) point into a temporary folder, so the
test neither reads nor writes the user's Jupyter state.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

import bootstrap

ROOT = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"^\s+(http://127\.0\.0\.1:(\d+)/\S*\?token=(\w+))\s*$")
READY_TIMEOUT = 240.0  # a cold start on a busy 2-core machine; normally 5-15 s
# Ctrl-C to exit: JupyterLab shuts its kernels down first, normally in 1-3 s; these guard against a hang only.
STOP_TIMEOUT = 120.0
GONE_TIMEOUT = 120.0
# One HTTP answer, or one kernel's whole exchange (start, import boto3, two calls): seconds when idle, under a
# minute at load 10; past these the server or kernel is hung, which is what they guard against.
HTTP_TIMEOUT = 120.0
KERNEL_TIMEOUT = 300.0

KERNEL_CODE = """
import json, os, labkit
conn = labkit.connect(table_name="labkit-firstrun")
labkit.ensure_table(conn)
key = {"PK": {"S": "FIRSTRUN"}, "SK": {"S": "ITEM"}}
conn.client.put_item(TableName=conn.table_name, Item={**key, "n": {"N": "42"}})
item = conn.client.get_item(TableName=conn.table_name, Key=key, ConsistentRead=True)["Item"]
print(json.dumps({"embedded_url": os.environ.get("LABKIT_EMBEDDED_URL"), "backend": conn.backend,
                  "endpoint": conn.endpoint_url, "n": item["n"]["N"], "pid": os.getpid()}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    """A socket LISTENs on ``port`` (any address), read from /proc/net (Linux)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(table):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    local, state = line.split()[1], line.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
    return False


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pids: set[int], timeout: float) -> None:
    """Block until every process in ``pids`` has exited: a pidfd (Linux 5.3+) becomes readable at its exit, so this
    wakes at the events, not by polling; ``timeout`` is the last guard (the assertions that follow name the rest).
    A process's listening sockets close when it exits, so its ports are checked after this, once."""
    waiting = select.poll()
    fds: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue  # already gone (and reaped)
            fds[fd] = pid
            waiting.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while fds and (left := deadline - time.monotonic()) > 0:
            for fd, _ in waiting.poll(left * 1000):
                waiting.unregister(fd)
                os.close(fd)
                del fds[fd]
    finally:
        for fd in fds:
            os.close(fd)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABKIT_", "JUPYTER"))}
    env.update(
        LABKIT_VENV=sys.prefix,
        LABKIT_RUNTIME_DIR=str(tmp / "labkit"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
    )
    if not bootstrap.install_is_current(Path(sys.prefix)):
        env["LABKIT_SKIP_INSTALL"] = "1"  # not a venv bootstrap made: use it as it is
    env.update(extra)
    return env


@dataclass
class Lab:
    proc: subprocess.Popen[str]
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)
    url: str = ""
    port: int = 0
    token: str = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def output(self) -> str:
        return "".join(self.lines)

    def get(self, path: str) -> Any:
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
            return json.loads(response.read())


def _start(command: list[str], env: dict[str, str]) -> Lab:
    """Start ``command`` in its own process group; wait (bounded) for the URL and the closing line."""
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lab = Lab(proc, env)
    found = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lab.lines.append(line)
            match = URL_LINE.match(line)
            if match and not lab.url:
                lab.url, lab.port, lab.token = match.group(1), int(match.group(2)), match.group(3)
            if lab.url and line.startswith("labkit: start with"):  # the last line the command prints
                found.set()
        found.set()  # the process ended

    threading.Thread(target=read, daemon=True).start()
    found.wait(READY_TIMEOUT)  # set at the closing line or at the process's end; the timeout guards a hang only
    return lab


def _stop(lab: Lab) -> None:
    """Ctrl-C, as in a terminal: SIGINT to the process group; bounded waits; SIGKILL only as a last resort."""
    if lab.proc.poll() is None:
        os.killpg(lab.proc.pid, signal.SIGINT)
        try:
            lab.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(lab.proc.pid, signal.SIGKILL)
            lab.proc.wait(STOP_TIMEOUT)  # SIGKILL cannot be refused: this returns at once


@pytest.fixture
def lab_runner(tmp_path: Path) -> Iterator[list[Lab]]:
    """Labs started by a test; whatever happens, every process they started is gone afterwards."""
    labs: list[Lab] = []
    yield labs
    for lab in labs:
        below = _descendants(lab.proc.pid)
        _stop(lab)
        for pid in below:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


async def _execute(lab: Lab, kernel_id: str, code: str, timeout: float = KERNEL_TIMEOUT) -> str:
    """Run ``code`` in a kernel over the server's websocket, as the browser does; return its stdout."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    request = HTTPRequest(
        f"ws://127.0.0.1:{lab.port}/api/kernels/{kernel_id}/channels", headers={"Authorization": f"token {lab.token}"}
    )
    async with asyncio.timeout(timeout):  # one bound on the whole exchange, against a hung kernel only
        return await _execute_request(await websocket_connect(request), code)


async def _execute_request(ws: Any, code: str) -> str:
    """Send an execute_request on ``ws``; read messages (each read blocks until one comes) until the kernel is idle."""
    msg_id = uuid.uuid4().hex
    ws.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": "test",
                    "session": uuid.uuid4().hex,
                    "date": "",
                    "version": "5.3",
                },
                "parent_header": {},
                "metadata": {},
                "channel": "shell",
                "buffers": [],
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
            }
        )
    )
    out: list[str] = []
    try:
        while True:
            raw = await ws.read_message()
            assert raw is not None, "the kernel's websocket closed"
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream":
                out.append(msg["content"]["text"])
            elif kind == "error":
                raise AssertionError("\n".join(msg["content"]["traceback"]))
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                return "".join(out)
    finally:
        ws.close()


def _kernel_round_trip(lab: Lab) -> dict[str, Any]:
    kernel = lab.post("api/kernels", {"name": "python3"})
    out = asyncio.run(_execute(lab, kernel["id"], KERNEL_CODE))
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _assert_all_stopped(lab: Lab, processes: set[int], ports: list[int]) -> None:
    """After Ctrl-C: the command exited, no process it started runs, no port it opened listens."""
    _stop(lab)
    _wait_gone(processes, GONE_TIMEOUT)
    assert [pid for pid in processes if _running(pid)] == []
    assert [port for port in ports if _listening(port)] == []
    runtime = Path(lab.env["JUPYTER_RUNTIME_DIR"])  # a clean shutdown removes the server's and kernels' files
    assert sorted(p.name for p in runtime.glob("*.json")) == []


def test_lab__readme_command__serves_notebooks_and_a_kernel_round_trips_through_the_shared_endpoint(
    tmp_path: Path, lab_runner: list[Lab]
) -> None:
    """`python3 bootstrap.py lab`: the printed URL answers, both lessons are listed and trusted, a kernel
    round-trips through the lab's endpoint, doctor reports that endpoint, and Ctrl-C leaves nothing behind."""
    env = _env(tmp_path)
    lab = _start([sys.executable, "bootstrap.py", "lab", "--no-browser"], env)
    lab_runner.append(lab)
    assert lab.url, f"no URL line within {READY_TIMEOUT:.0f} s:\n{lab.output()}"
    assert lab.url.startswith(f"{lab.base}lab/tree/01_singleton_items.ipynb?token=")
    text = lab.output()
    assert "start with 01_singleton_items.ipynb" in text
    if os.geteuid() == 0:
        assert text.count("added --allow-root") == 1

    assert "started" in lab.get("api/status")
    names = [item["name"] for item in lab.get("api/contents")["content"]]
    assert {"01_singleton_items.ipynb", "02_uniqueness.ipynb"} <= set(names)
    notebook = lab.get("api/contents/01_singleton_items.ipynb")["content"]
    code_cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code_cells and all(c["metadata"].get("trusted") is True for c in code_cells)
    news = lab.get("lab/api/settings/@jupyterlab/apputils-extension:notification")["schema"]["properties"]
    assert news["fetchNews"]["default"] == "false"  # no "Jupyter news" question on the first screen

    record = json.loads((tmp_path / "labkit" / "lab.json").read_text())
    endpoint = record["endpoint_url"]
    assert record["url"] == lab.url and endpoint.startswith("http://127.0.0.1:")

    seen = _kernel_round_trip(lab)
    assert seen["embedded_url"] == endpoint and seen["endpoint"] == endpoint
    assert seen["backend"] == "embedded" and seen["n"] == "42"
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    key = {"PK": {"S": "FIRSTRUN"}, "SK": {"S": "ITEM"}}
    assert client.get_item(TableName="labkit-firstrun", Key=key)["Item"]["n"] == {"N": "42"}

    doctor = subprocess.run(
        [sys.executable, "bootstrap.py", "doctor"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert doctor.returncode == 0, doctor.stderr
    assert f"endpoint  {endpoint}\n" in doctor.stdout
    assert f"lab       running (pid {record['pid']})" in doctor.stdout

    processes = _descendants(lab.proc.pid) | {lab.proc.pid}
    assert seen["pid"] in processes  # the kernel is the lab's child, so stopping the lab must stop it
    _assert_all_stopped(lab, processes, [lab.port, int(endpoint.rsplit(":", 1)[1])])
    assert lab.proc.returncode == 0
    assert not (tmp_path / "labkit" / "lab.json").exists()


def _compose_lab() -> tuple[list[str], dict[str, str]]:
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["lab"]
    command = service["command"]
    return (shlex.split(command) if isinstance(command, str) else list(command)), dict(service["environment"])


@pytest.mark.slow
def test_lab__compose_command_outside_docker__kernel_uses_the_local_backend(
    tmp_path: Path, lab_runner: list[Lab]
) -> None:
    """The compose `lab` service's command, run as is except the address (127.0.0.1: this is not a container)
    and the port (a free one); `labkit serve` stands in for DynamoDB Local at LABKIT_LOCAL_URL."""
    command, compose_env = _compose_lab()
    assert command[:3] == ["python3", "bootstrap.py", "lab"]
    assert "--ip=0.0.0.0" in command and "--ServerApp.port=8888" in command
    port = _free_port()
    swap = {"--ip=0.0.0.0": "--ip=127.0.0.1", "--ServerApp.port=8888": f"--ServerApp.port={port}"}
    command = [sys.executable, *(swap.get(arg, arg) for arg in command[1:])]

    serve_port = _free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "labkit", "serve", "--port", str(serve_port)],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None and "listening on" in serve.stdout.readline()
        local_url = f"http://127.0.0.1:{serve_port}"
        assert compose_env.pop("LABKIT_LOCAL_URL") == "http://dynamodb:8000"
        assert compose_env.pop("LABKIT_VENV")  # the container's venv; here, this test run's
        assert compose_env.pop("LABKIT_RUNTIME_DIR")  # a container folder; here, the test's
        env = _env(tmp_path, **compose_env, LABKIT_LOCAL_URL=local_url)
        lab = _start(command, env)
        lab_runner.append(lab)
        assert lab.url, f"no URL line within {READY_TIMEOUT:.0f} s:\n{lab.output()}"
        assert lab.port == port
        assert "embedded DynamoDB endpoint" not in lab.output()  # the local backend needs none

        seen = _kernel_round_trip(lab)
        assert seen["backend"] == "local" and seen["endpoint"] == local_url and seen["n"] == "42"
        assert seen["embedded_url"] is None
        processes = _descendants(lab.proc.pid) | {lab.proc.pid}
        _assert_all_stopped(lab, processes, [lab.port])
    finally:
        serve.terminate()
        serve.wait(30)


@pytest.mark.parametrize(
    "name",
    sorted(
        str(p.relative_to(ROOT / "notebooks"))
        for p in (ROOT / "notebooks").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    ),
)
def test_notebook__kernelspec_is_the_installed_kernel__opens_without_an_unsaved_mark(name: str) -> None:
    """JupyterLab writes the running kernel's spec into the notebook when it opens it; a committed spec that
    differs (display name "Python 3" vs ipykernel's "Python 3 (ipykernel)") shows the unsaved-changes dot."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    committed = json.loads((ROOT / "notebooks" / name).read_text())["metadata"]["kernelspec"]
    assert committed == {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
