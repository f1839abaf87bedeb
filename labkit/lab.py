"""The first cell of every notebook: connect, give the lesson a fresh table, say where it runs.

Notebook authors: read docs/notebooks.md first (nbval conventions, asserting lessons, the race lab API).
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

from . import constants as C
from .backend import Connection, connect
from .table import ensure_table, reset_table


def versions() -> dict[str, str]:
    """Versions of Python and the packages a lesson depends on."""
    out = {"python": platform.python_version()}
    for pkg in ("labkit", "boto3", "botocore", "moto", "pandas", "matplotlib"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def setup_lab(lesson: str, *, backend: str | None = None, quiet: bool = False) -> Connection:
    """Connect, and give ``lesson`` its own empty table ``labkit-<lesson>``.

    Each notebook gets its own table, so notebooks can run side by side against
    DynamoDB Local or AWS without stepping on each other. Safe to re-run.
    """
    conn = connect(backend, table_name=f"{C.TABLE_PREFIX}{lesson}")
    ensure_table(conn)
    reset_table(conn)
    if not quiet:
        print(conn.describe())
        print(" ".join(f"{k}={v}" for k, v in versions().items()))
    return conn


__all__ = ["setup_lab", "versions"]
