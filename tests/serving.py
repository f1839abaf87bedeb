"""`labkit serve` run for real, as a user runs it: its own process, a free port on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running `labkit serve`: its process, port, URL and the banner it printed."""

    proc: subprocess.Popen[str]
    port: int
    banner: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def labkit_serve(*options: str, env: Mapping[str, str] | None = None) -> Iterator[Served]:
    """`python -m labkit serve --port <free> OPTIONS`, with no LABKIT_* variable inherited (or ``env``);
    yields once the banner is printed (the socket is listening then), stops it after."""
    port = free_port()
    environ = dict(env) if env is not None else {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "labkit", "serve", "--port", str(port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environ,
    )
    assert proc.stdout is not None
    banner: list[str] = []
    try:  # blocking reads: the banner is the readiness signal, and a serve that dies ends the read with ''
        while not banner or "Ctrl-C to stop" not in banner[-1]:  # the banner's last line
            line = proc.stdout.readline()
            assert line, f"labkit serve exited before its banner ended: {''.join(banner)}"
            banner.append(line.rstrip("\n"))
        # what it writes later (uvicorn's warnings) is read away, so a full pipe never blocks the server
        threading.Thread(target=proc.stdout.read, name="labkit-serve-drain", daemon=True).start()
        yield Served(proc, port, banner)
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # SIGTERM ends serve at once (an event, decision 155); 60 s guards a hang only
