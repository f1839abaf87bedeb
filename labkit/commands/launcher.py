"""`labkit lab`: JupyterLab on the lesson notebooks, with one embedded endpoint shared by every kernel.

JupyterLab runs from the interpreter labkit runs in (``python -m jupyterlab``), so nothing has to
be on PATH. It runs in its own session: Ctrl-C (or SIGTERM, or a closed terminal) reaches
``labkit lab`` alone, which asks JupyterLab to stop (it shuts its kernels down), then stops the
endpoint. While it runs, ``.labkit/lab.json`` in the checkout says where the lab and its endpoint
are, so ``labkit doctor`` reports on the lab that is open.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from ..shared.errors import BackendUnavailable, ConfigurationError

#: The lesson a newcomer opens first.
FIRST_NOTEBOOK = "01_singleton_items.ipynb"
#: Settings JupyterLab starts with (no "Jupyter news" pop-up); see jupyter_settings/overrides.json.
SETTINGS_DIR = Path(__file__).resolve().parent / "jupyter_settings"
#: Where a running lab is recorded (default: ``.labkit`` in the checkout).
ENV_RUNTIME_DIR = "LABKIT_RUNTIME_DIR"
READY_TIMEOUT = 180.0
STOP_TIMEOUT = 30.0
_IP_OPTIONS = ("--ip", "--ServerApp.ip")
_LOG_OPTIONS = ("--log-level", "--ServerApp.log_level", "--LabApp.log_level", "--debug")


@dataclass(frozen=True)
class LabRecord:
    """What ``.labkit/lab.json`` says about a running lab."""

    pid: int
    url: str
    endpoint_url: str | None
    notebooks: str


def checkout_root() -> Path:
    """The folder holding ``notebooks/``: the current one, else the checkout labkit is installed from."""
    here = Path.cwd()
    return here if (here / "notebooks").is_dir() else Path(__file__).resolve().parents[2]


def record_path() -> Path:
    return Path(os.environ.get(ENV_RUNTIME_DIR) or checkout_root() / ".labkit") / "lab.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_lab() -> LabRecord | None:
    """The lab recorded in ``.labkit/lab.json`` if its process is alive; a stale record is removed."""
    path = record_path()
    try:
        record = LabRecord(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if _alive(record.pid):
        return record
    with contextlib.suppress(OSError):
        path.unlink()
    return None


@contextlib.contextmanager
def recorded(record: LabRecord) -> Iterator[None]:
    """Write the lab's record for as long as the block runs; remove it after, unless another lab replaced it."""
    path = record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(record), indent=2) + "\n")
        tmp.replace(path)
    except OSError as exc:  # a read-only checkout must not stop the lab
        print(f"labkit: note: could not write {path} ({exc}); `labkit doctor` will not see this lab", flush=True)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == record.pid:
                path.unlink()


def require_jupyterlab() -> None:
    if importlib.util.find_spec("jupyterlab") is None:
        raise ConfigurationError(
            f"JupyterLab is not installed for {sys.executable}; run `python3 bootstrap.py lab` "
            "from the labkit checkout (it installs it into .venv), or `pip install -e '.[lab]'`"
        )


def trust_notebooks(folder: Path) -> int:
    """Sign the lesson notebooks in Jupyter's trust database, as `jupyter trust` does; return how many were new.

    They are part of the checkout the learner runs anyway; signed, they open without the
    "not trusted" mark and their committed figures show as they were produced.
    """
    from nbformat import NO_CONVERT, read
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary()  # type: ignore[no-untyped-call]
    signed = 0
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        with path.open(encoding="utf-8") as f:
            nb = read(f, NO_CONVERT)  # type: ignore[no-untyped-call]
        if not notary.check_signature(nb):  # type: ignore[no-untyped-call]
            notary.sign(nb)  # type: ignore[no-untyped-call]
            signed += 1
    return signed


def jupyter_command(
    notebooks: Path, extra: Sequence[str], *, python: str | None = None, euid: int | None = None
) -> tuple[list[str], list[str]]:
    """The command that starts JupyterLab, and the notes (one line each) on what labkit added on its own."""
    extra = [arg for arg in extra if arg != "--"]
    names = {arg.split("=")[0] for arg in extra}
    command = [
        python or sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={notebooks}",
        "--ServerApp.open_browser=False",
        f"--LabApp.app_settings_dir={SETTINGS_DIR}",
    ]
    if not names & set(_IP_OPTIONS):  # loopback unless the caller chose an address (docker compose does)
        command.append("--ServerApp.ip=127.0.0.1")
    if not names & set(_LOG_OPTIONS):  # JupyterLab's start-up chatter hides the one line that matters
        command += ["--ServerApp.log_level=WARN", "--LabApp.log_level=WARN"]
    notes = []
    uid = euid if euid is not None else (os.geteuid() if hasattr(os, "geteuid") else -1)
    if uid == 0 and not names & {"--allow-root", "--ServerApp.allow_root"}:
        command.append("--allow-root")
        notes.append("running as root (a container or CI box?): added --allow-root for JupyterLab")
    return [*command, *extra], notes


def _server_info(pid: int, env: dict[str, str]) -> dict[str, object] | None:
    """What JupyterLab wrote about itself once listening (port, token, base URL); None until then."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(env.get("JUPYTER_RUNTIME_DIR") or jupyter_runtime_dir())
    try:
        info: dict[str, object] = json.loads((folder / f"jpserver-{pid}.json").read_text())
    except (OSError, ValueError):
        return None
    return info


def _answers(url: str, token: str) -> bool:
    request = urllib.request.Request(f"{url}api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def _wait_ready(
    proc: subprocess.Popen[bytes], env: dict[str, str], stop: threading.Event, timeout: float
) -> tuple[str, str] | None:
    """(base URL, token) once JupyterLab answers /api/status; None if it exited or we were asked to stop."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and not stop.is_set():
        info = _server_info(proc.pid, env)
        if info is not None:
            port, token, base = int(str(info["port"])), str(info.get("token", "")), str(info.get("base_url", "/"))
            url = f"http://127.0.0.1:{port}{base}"
            if _answers(url, token):
                return url, token
        stop.wait(0.2)
    if proc.poll() is None and not stop.is_set():
        raise BackendUnavailable(f"JupyterLab did not answer within {timeout:.0f} s; its messages are above")
    return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # JupyterLab shuts its kernels down, then exits
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _display_url(base: str, token: str, notebooks: Path) -> str:
    path = f"lab/tree/{FIRST_NOTEBOOK}" if (notebooks / FIRST_NOTEBOOK).exists() else "lab"
    return f"{base}{path}?token={token}"


def run_lab(
    notebooks: Path, extra: Sequence[str], *, env: dict[str, str], endpoint_url: str | None, open_browser: bool
) -> int:
    """Start JupyterLab, print where to go, and wait until it or we are stopped. Returns its exit status."""
    require_jupyterlab()
    command, notes = jupyter_command(notebooks, extra)
    for note in notes:
        print(f"labkit: {note}", flush=True)
    try:
        trust_notebooks(notebooks)
    except Exception as exc:  # trust is a nicety; a read-only data dir must not stop the lab
        print(f"labkit: note: could not mark the notebooks trusted ({exc})", flush=True)
    env = dict(env)
    env.setdefault("JUPYTER_TOKEN", secrets.token_hex(24))
    stop, wake = threading.Event(), threading.Event()  # stop: a signal came; wake: a signal came or JupyterLab exited

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        wake.set()

    handled = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, on_signal) for s in handled}
    proc = subprocess.Popen(command, env=env, start_new_session=True)

    def on_exit() -> None:
        proc.wait()
        wake.set()

    threading.Thread(target=on_exit, name="labkit-lab-exit", daemon=True).start()
    try:
        ready = _wait_ready(proc, env, stop, READY_TIMEOUT)
        if ready is None:
            if proc.poll() is not None:
                raise BackendUnavailable(
                    f"JupyterLab stopped before it was ready (exit status {proc.returncode}); its messages are above"
                )
            return 0
        base, token = ready
        url = _display_url(base, token, notebooks)
        lessons = sorted(p.name for p in notebooks.glob("[0-9]*.ipynb"))
        with recorded(LabRecord(os.getpid(), url, endpoint_url, str(notebooks))):
            print(f"\nlabkit: JupyterLab is ready. Open this URL in your browser:\n\n    {url}\n", flush=True)
            print(
                f"labkit: start with {FIRST_NOTEBOOK}"
                + (f" (lessons: {', '.join(lessons)})" if lessons else "")
                + ". Ctrl-C stops the lab and its kernels.",
                flush=True,
            )
            if open_browser:
                import webbrowser

                webbrowser.open(url)
            wake.wait()
        return 0 if stop.is_set() else int(proc.returncode or 0)
    finally:
        _stop(proc)
        for s, handler in previous.items():
            signal.signal(s, handler)
