"""The ``labkit`` command: ``serve``, ``lab`` and ``doctor``.

Every error is one line saying what is wrong and what to do, and a non-zero exit.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

from ..shared import constants as C
from ..shared.backend_choice import ENV_BACKEND, ENV_EMBEDDED_URL, ENV_ENDPOINT_URL, parse_backend, resolve_backend
from ..shared.compat import DISTRIBUTION
from ..shared.errors import LabkitError

EXIT_ERROR = 2


def aws_cli_line(url: str) -> str:
    """An AWS CLI command for a lab endpoint that works with no AWS configuration: labkit's dummy key
    (the one ``labkit.connect()`` signs with) and region on the command line, nothing read from ~/.aws."""
    return (
        f"AWS_ACCESS_KEY_ID={C.LOCAL_ACCESS_KEY} AWS_SECRET_ACCESS_KEY={C.LOCAL_SECRET_KEY} "
        f"aws dynamodb list-tables --endpoint-url {url} --region {C.LOCAL_REGION}"
    )


def _interrupt(*_: object) -> None:
    """SIGTERM stops ``labkit serve`` as Ctrl-C does."""
    raise KeyboardInterrupt


def _serve(args: argparse.Namespace) -> int:
    from ..embedded import LABKIT, regions_line, start_endpoint

    rules = None
    if args.faults:  # checked before anything listens
        if args.profile != LABKIT:
            raise LabkitError(f"--faults needs --profile {LABKIT}: the {args.profile!r} profile has no fault injector")
        from ..engine_plugins.faults import load_rules

        rules = load_rules(args.faults)
        print(f"labkit: injecting faults from {args.faults} ({len(rules.rules)} rule(s), seed {rules.seed})")
    data = _data_dir(args)
    endpoint = start_endpoint(args.port, profile=args.profile, faults=rules, data=data)
    print(f"labkit: embedded DynamoDB endpoint listening on {endpoint.url} (127.0.0.1 only, profile {args.profile})")
    print(f"  tables kept in {data} across restarts" if data else "  tables in memory only (--data DIR keeps them)")
    print(regions_line(endpoint.engine))
    print(f"  try it: {aws_cli_line(endpoint.url)}")
    print(f"  notebooks/kernels: export {ENV_EMBEDDED_URL}={endpoint.url}")
    print("  Ctrl-C to stop", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        endpoint.wait()  # until Ctrl-C or SIGTERM interrupts it, or the endpoint's thread ends by itself
        print("labkit: error: the endpoint stopped unexpectedly", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        pass
    finally:
        endpoint.stop()
    return 0


#: The data directory when --data is not given (``labkit serve``, ``labkit lab``); unset: memory only.
ENV_DATA = "LABKIT_DATA"


def _data_dir(args: argparse.Namespace) -> str | None:
    """--data DIR, else $LABKIT_DATA, else None (the tables live in memory)."""
    return args.data or os.environ.get(ENV_DATA) or None


def _notebook_dir(explicit: str | None) -> Path:
    if explicit:
        path = Path(explicit)
    else:
        path = Path.cwd() / "notebooks"
        if not path.is_dir():  # running from inside notebooks/ or from a checkout's subfolder
            path = Path(__file__).resolve().parents[2] / "notebooks"
    if not path.is_dir():
        raise LabkitError(
            f"no notebooks folder at {path}; run `labkit lab` from the labkit checkout, or pass --notebooks PATH"
        )
    return path


def _lab(args: argparse.Namespace) -> int:
    from .launcher import require_jupyterlab, run_lab

    notebooks = _notebook_dir(args.notebooks)
    require_jupyterlab()  # before starting anything
    env = dict(os.environ)
    endpoint = None
    if resolve_backend(environ=env).backend == "embedded":  # the kernels' connect() would pick embedded
        from ..embedded import start_endpoint

        data = _data_dir(args)
        endpoint = start_endpoint(args.port, data=data)
        env[ENV_EMBEDDED_URL] = endpoint.url
        kept = f"; tables kept in {data}" if data else ""
        shared = f"labkit: embedded DynamoDB endpoint on {endpoint.url}; the notebooks' kernels share it"
        print(shared + kept, flush=True)
    try:
        status = run_lab(
            notebooks,
            args.jupyter_args,
            env=env,
            endpoint_url=endpoint.url if endpoint else None,
            open_browser=not args.no_browser,
        )
    finally:
        if endpoint is not None:
            endpoint.stop()
    print("labkit: JupyterLab, its kernels" + (" and the endpoint" if endpoint else "") + " stopped", flush=True)
    return status


def _doctor(args: argparse.Namespace) -> int:
    from ..lab import versions
    from ..shared._errors_map import map_errors
    from ..shared.backend import connect  # boto3's client side: doctor's alone (serve answers, it calls nothing)
    from ..shared.catalogue import Op
    from .launcher import running_lab

    lab = None
    if not args.backend and not any(os.environ.get(v) for v in (ENV_BACKEND, ENV_ENDPOINT_URL, ENV_EMBEDDED_URL)):
        lab = running_lab()
        if lab is not None and lab.endpoint_url:
            os.environ[ENV_EMBEDDED_URL] = lab.endpoint_url  # report on the endpoint the lab's kernels use
        else:
            lab = None  # a lab on another backend: its settings are in its own environment, not here
    if args.backend:
        parse_backend(args.backend, "--backend")  # a typo is named as the option the user typed
    conn = connect(args.backend)
    if lab is not None:
        print(f"lab       running (pid {lab.pid}): {lab.url.split('?')[0]}")
    print(f"backend   {conn.backend}")
    print(f"endpoint  {conn.endpoint_url or f'AWS DynamoDB ({conn.region})'}")
    print("versions  " + " ".join(f"{k}={v}" for k, v in versions().items()))
    client = conn.new_client()
    timings = []
    for _ in range(3):  # the first call pays for connection set-up; report the best
        start = time.perf_counter()
        with map_errors(Op.LIST_TABLES):
            tables = client.list_tables(Limit=C.MAX_LIST_TABLES_PAGE)["TableNames"]
        timings.append((time.perf_counter() - start) * 1000)
    mine = [t for t in tables if t.startswith(C.TABLE_PREFIX)]
    print(f"round trip ListTables in {min(timings):.1f} ms; labkit tables: {', '.join(mine) or 'none yet'}")
    print("ok")
    return 0


def _exercises(args: argparse.Namespace) -> int:
    from ..lab.exercises.cli import run  # the exercises import pandas and the race lab: only for this command

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    from ..embedded import DYNAMODB_LOCAL, LABKIT, PROFILES

    parser = argparse.ArgumentParser(prog="labkit", description="DynamoDB pattern labs.")
    parser.add_argument("--version", action="version", version=f"labkit {version(DISTRIBUTION)}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="run the embedded DynamoDB endpoint on 127.0.0.1",
        description="Run the embedded DynamoDB endpoint on 127.0.0.1 until Ctrl-C.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="profiles:\n" + "\n".join(f"  {name:<15} {what}" for name, what in PROFILES.items()),
    )
    serve.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    serve.add_argument(
        "--profile",
        choices=list(PROFILES),
        default=LABKIT,
        help=f"what the engine runs besides DynamoDB (default {LABKIT}; {DYNAMODB_LOCAL}: behave like DynamoDB Local)",
    )
    serve.add_argument(
        "--faults",
        metavar="FILE",
        help="inject DynamoDB errors by rule (JSON; see labkit.engine_plugins.faults; labkit profile only)",
    )
    data_help = (
        "keep every table in DIR across restarts (each write fsync-ed before it is answered; made if missing); "
        f"default ${ENV_DATA}, else memory only"
    )
    serve.add_argument("--data", metavar="DIR", help=data_help)
    serve.set_defaults(func=_serve)

    lab = sub.add_parser("lab", help="open JupyterLab on notebooks/ with the embedded endpoint running")
    lab.add_argument("--port", type=int, default=0, help="endpoint port (default: any free port)")
    lab.add_argument("--notebooks", help="notebooks folder (default: ./notebooks)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    lab.add_argument("--data", metavar="DIR", help=data_help)
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="passed on to `jupyter lab`")
    lab.set_defaults(func=_lab)

    doctor = sub.add_parser("doctor", help="show backend, endpoint, versions and a round trip")
    doctor.add_argument("--backend", help="embedded, local or aws (default: $LABKIT_BACKEND or embedded)")
    doctor.set_defaults(func=_doctor)

    exercises = sub.add_parser("exercises", help="check every exercise's reference solution on this machine")
    exercises.add_argument("--backend", help="embedded, local or aws (default: $LABKIT_BACKEND or embedded)")
    exercises.set_defaults(func=_exercises)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if args.command != "lab":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.jupyter_args = [*unknown, *args.jupyter_args]  # e.g. `labkit lab --allow-root`
    if getattr(args, "port", 0) and not 0 < args.port < 65536:
        print(f"labkit: error: port {args.port} is out of range; choose 1-65535", file=sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.func(args))
    except LabkitError as exc:
        print(f"labkit: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
