"""Time to first answer: ``labkit serve``, the pytest plugin's endpoint, moto's server and dynalite, in one run.

    python benchmarks/bench_start.py [--repeat 7] [--dynalite DIR] [--against REV]

Each repetition starts every server as a new process on a free port of 127.0.0.1 and sends it a
SigV4-signed ``ListTables`` as soon as the port takes a connection (a connection attempt every
2 ms until then); the time from starting the process to the first 200 answer is its time to first
answer. The servers take turns going first, so that a busy machine slows them alike. Also
measured: the CPU time the server's process (all its threads) had used when it answered, read from
/proc (``schedstat``, in nanoseconds; user + system clock ticks where the kernel keeps no schedstat):
on a machine shared with other work it is the steadier number.

* ``labkit serve``     ``python -m labkit serve --port P`` (labkit profile, memory only)
* ``plugin endpoint``  what the pytest plugin does for a session on the embedded backend
  (:func:`labkit.pytest_plugin.environment.backend_url`): a port reserved, the engine built at the
  first connection. Its process prints the URL once reserved; "from reserve" is the time from
  then to the answer (the plugin's process has imported pytest and started its session by then).
* ``moto_server``      moto's standalone server, the one in this venv (skipped if absent)
* ``--against REV``    also ``labkit serve`` and the plugin's endpoint of commit REV (``git archive`` into a
  temporary folder, run with this venv), in the same rounds: what a change gained, on the same machine
* ``dynalite``         the Node.js DynamoDB emulator: ``dynalite`` on PATH, ``--dynalite DIR``
  (a folder with node_modules/dynalite), else ``npm install dynalite`` into a temporary folder
  (skipped, with the reason, when npm or the network is not there)

Before the measured rounds each server is started once (the file cache, Python's bytecode
files; PYTHONDONTWRITEBYTECODE is dropped, as a user's shell has it). Nothing here asserts on time:
it prints medians, the load average, and the ratios of the servers' medians to each other.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ROOT = Path(__file__).resolve().parents[1]
SCRUBBED = ("AWS_", "LABKIT_", "PYTEST_", "BOTO_", "PYTHONDONTWRITEBYTECODE")
BODY = b"{}"
POLL_SECONDS = 0.002
GIVE_UP_SECONDS = 120.0
PLUGIN_CHILD = (
    "import sys\n"
    "from labkit.pytest_plugin.environment import backend_url\n"
    "print(backend_url('embedded'), flush=True)\n"
    "sys.stdin.read()  # serve until the benchmark closes stdin\n"
)


@dataclass
class Server:
    """One contender: how to start it on a port, and its measurements."""

    name: str
    command: Callable[[int], list[str]]
    cwd: Path | None = None
    prints_url: bool = False
    pythonpath: Path | None = None  # labkit's tree for this server (None: this checkout)
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    from_reserve: list[float] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def signed_headers(port: int) -> dict[str, str]:
    """A ListTables request's headers, signed as boto3 signs them (dynalite refuses an unsigned one)."""
    request = AWSRequest(
        method="POST",
        url=f"http://127.0.0.1:{port}/",
        data=BODY,
        headers={"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"},
    )
    SigV4Auth(Credentials("bench", "bench"), "dynamodb", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def cpu_seconds(pid: int) -> float:
    """CPU time a running process has used: its threads' /proc/PID/task/TID/schedstat (nanoseconds), else
    user + system clock ticks (/proc/PID/stat, fields 14 and 15: 10 ms steps)."""
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        nanoseconds = sum(int((task / "schedstat").read_text().split()[0]) for task in tasks)
    except (OSError, ValueError, IndexError):
        nanoseconds = 0
    if nanoseconds:
        return nanoseconds / 1e9
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_answer(port: int, process: subprocess.Popen[str]) -> None:
    """Return once ``port`` answers a ListTables with 200 (no connection yet: try again in 2 ms)."""
    deadline = time.monotonic() + GIVE_UP_SECONDS
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}) before answering")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=GIVE_UP_SECONDS)
            conn.request("POST", "/", body=BODY, headers=signed_headers(port))
            response = conn.getresponse()
            payload = response.read()
            conn.close()
        except ConnectionError:  # refused (not listening yet), or reset by a server still starting
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing answered on port {port} in {GIVE_UP_SECONDS:.0f} s") from None
            time.sleep(POLL_SECONDS)
            continue
        if response.status != 200 or "TableNames" not in json.loads(payload):
            raise SystemExit(f"port {port} answered {response.status}: {payload[:300]!r}")
        return


@contextmanager
def started(server: Server, env: dict[str, str]) -> Iterator[tuple[int, subprocess.Popen[str], float]]:
    """The server's process, its port and when it was started (time.monotonic); stopped after."""
    port = free_port()
    if server.pythonpath is not None:
        env = {**env, "PYTHONPATH": str(server.pythonpath)}
    start = time.monotonic()
    process = subprocess.Popen(
        server.command(port),
        cwd=server.cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if server.prints_url else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield port, process, start
    finally:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def measure(server: Server, env: dict[str, str], record: bool = True) -> None:
    with started(server, env) as (port, process, start):
        reserved = start
        if server.prints_url:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            reserved = time.monotonic()
            port = int(url.rsplit(":", 1)[1])
        first_answer(port, process)
        wall = time.monotonic() - start
        cpu = cpu_seconds(process.pid)
        if record:
            server.walls.append(wall)
            server.cpus.append(cpu)
            server.from_reserve.append(time.monotonic() - reserved)


def dynalite_command(explicit: str | None, scratch: Path) -> tuple[Callable[[int], list[str]] | None, str]:
    """How to start dynalite, or None and why not."""
    node = shutil.which("node")
    installed = shutil.which("dynalite")
    if installed:
        return (lambda port: [installed, "--port", str(port)]), installed
    if node is None:
        return None, "node is not on PATH"
    folder = Path(explicit) if explicit else scratch
    cli = folder / "node_modules" / "dynalite" / "cli.js"
    if not cli.exists() and not explicit:
        npm = shutil.which("npm")
        if npm is None:
            return None, "npm is not on PATH"
        print(f"installing dynalite with npm into {folder} ...", flush=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", "dynalite"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            return None, f"npm install dynalite failed: {(done.stderr or done.stdout).strip()[-300:]}"
    if not cli.exists():
        return None, f"no dynalite at {cli}"
    version = json.loads((cli.parent / "package.json").read_text())["version"]
    return (lambda port: [node, str(cli), "--port", str(port)]), f"dynalite {version} on node ({node})"


def servers(args: argparse.Namespace, scratch: Path) -> list[Server]:
    found = [
        Server("labkit serve", lambda port: [sys.executable, "-m", "labkit", "serve", "--port", str(port)]),
        Server("plugin endpoint", lambda port: [sys.executable, "-c", PLUGIN_CHILD], prints_url=True),
    ]
    if args.against:
        old = scratch / "against"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        for server in list(found):
            name = f"{server.name.replace('labkit ', '').replace(' endpoint', '')} @{args.against[:7]}"
            found.append(replace(server, name=name, cwd=old, pythonpath=old, walls=[], cpus=[], from_reserve=[]))
    moto = Path(sys.executable).parent / "moto_server"
    if moto.exists():
        found.append(Server("moto_server", lambda port: [str(moto), "-H", "127.0.0.1", "-p", str(port)]))
    else:
        print(f"skipped moto_server: not installed in this venv ({moto})")
    command, how = dynalite_command(args.dynalite, scratch)
    if command is None:
        print(f"skipped dynalite: {how}")
    else:
        print(f"dynalite: {how}")
        found.append(Server("dynalite", command, cwd=scratch))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dynalite", metavar="DIR", help="a folder with node_modules/dynalite (default: npm install)")
    parser.add_argument("--against", metavar="REV", help="also labkit serve and the plugin's endpoint of commit REV")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        contenders = servers(args, scratch)
        load_before = os.getloadavg()
        for server in contenders:
            measure(server, env, record=False)  # warm: file cache, bytecode files
        for i in range(args.repeat):
            turn = i % len(contenders)
            for server in contenders[turn:] + contenders[:turn]:
                measure(server, env)
        load_after = os.getloadavg()
    cores = os.cpu_count()
    print(
        f"time to first answer (a signed ListTables), median of {args.repeat} starts each; {cores} cores, "
        f"load average {load_before[0]:.2f} before and {load_after[0]:.2f} after"
    )
    print(f"  {'':16}  {'wall':>7}  {'min':>7}  {'cpu':>7}")
    for server in contenders:
        wall, low, cpu = statistics.median(server.walls), min(server.walls), statistics.median(server.cpus)
        extra = f"  ({statistics.median(server.from_reserve) * 1000:.0f} ms from reserve)" if server.prints_url else ""
        print(f"  {server.name:16}  {wall * 1000:5.0f}ms  {low * 1000:5.0f}ms  {cpu * 1000:5.0f}ms{extra}")
    print("ratios of the medians, row / column (wall, cpu):")
    print("  " + " " * 16 + "".join(f"  {s.name:>16}" for s in contenders))
    for row in contenders:
        cells = []
        for col in contenders:
            wall = statistics.median(row.walls) / statistics.median(col.walls)
            cpu = statistics.median(row.cpus) / max(statistics.median(col.cpus), 1e-9)
            cells.append(f"  {f'{wall:.2f}, {cpu:.2f}':>16}")
        print(f"  {row.name:16}" + "".join(cells))


if __name__ == "__main__":
    main()
