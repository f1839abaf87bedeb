"""The versions labkit's endpoint relies on, checked at import before anything imports moto; the
distribution's name; and the one message for a package that only one of labkit's extras installs.

The embedded endpoint calls moto's internals (listed in ``labkit/endpoint/store/moto_adapter.py``):
moto 5.0 and 5.1 fail at import (``cannot import name 'ServiceException'``), 5.2.0 answers every
DescribeTable with HTTP 500.
The range here is the one pyproject.toml declares; ``constraints.txt`` pins the exact version the
tests passed on. Reading the installed version is cheap (package metadata, no import of moto).
"""

from __future__ import annotations

import importlib
import os
import re
import warnings
from importlib.metadata import PackageNotFoundError, version

#: The distribution's name (pyproject.toml): ``labkit`` on PyPI is another project. The import name,
#: the ``labkit`` command and the pytest plugin stay ``labkit``; package metadata is read under this name.
DISTRIBUTION = "labkit-dynamodb"
#: labkit's version (pyproject.toml says the same; a test compares them). Here, on the floor, so that
#: modules that write it (replay files) need not import the ``labkit`` package itself.
VERSION = "0.1.0"

#: moto versions labkit works with: lowest included, highest excluded (as in pyproject.toml).
MOTO_RANGE = ((5, 2, 5), (5, 3))
FIX = "run `python3 bootstrap.py lab` from the labkit checkout, or `pip install -c constraints.txt -e '.[lab,test]'`"


class IncompatibleDependency(ImportError):
    """An installed package outside the version range labkit is tested with."""


def _release(text: str) -> tuple[int, ...]:
    """The numeric release of a version string: '5.2.5' -> (5, 2, 5), '5.3.0.dev1' -> (5, 3, 0)."""
    match = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _range_text() -> str:
    low, high = (".".join(map(str, bound)) for bound in MOTO_RANGE)
    return f">={low},<{high}"


#: The moto requirement, as pyproject.toml writes it.
MOTO_REQUIREMENT = f"moto[dynamodb]{_range_text()}"
#: What to do about a moto labkit cannot use: said by this module and by the engine
#: (``labkit/endpoint/store/moto_store.py``) when moto's internals are not what it needs.
INSTALL_MOTO = f"labkit needs {MOTO_REQUIREMENT}; {FIX}"


def moto_problem(found: str | None) -> str | None:
    """Why moto ``found`` (None: not installed) will not do, in one line; None when it will."""
    wanted = f"moto{_range_text()}"
    if found is None:
        return f"labkit needs {wanted}, and moto is not installed; {FIX}"
    release = _release(found)
    low, high = MOTO_RANGE
    if not release or not low <= release < high:
        return f"labkit needs {wanted}, found moto {found}; {FIX}"
    return None


#: Set to 1 to import labkit with a moto outside the range (a warning instead of the error): how
#: ``tools/moto_range.py --newest`` learns whether the next moto release breaks the engine.
ENV_UNTESTED_MOTO = "LABKIT_UNTESTED_MOTO"


def check_moto() -> None:
    """Raise :class:`IncompatibleDependency` (one line naming the fix) if the installed moto is outside the range."""
    try:
        found: str | None = version("moto")
    except PackageNotFoundError:
        found = None
    problem = moto_problem(found)
    if problem and found is not None and os.environ.get(ENV_UNTESTED_MOTO) == "1":
        warnings.warn(f"{problem} (allowed by {ENV_UNTESTED_MOTO}=1: untested)", stacklevel=2)
    elif problem:
        raise IncompatibleDependency(problem)


class MissingExtra(ImportError):
    """A package that only one of labkit's extras installs is missing; the message names the extra."""


def require(package: str, extra: str, what: str) -> None:
    """Import ``package``, or raise :class:`MissingExtra`: one line saying that ``what`` needs it and which
    extra of labkit installs it (the base install, what a team's race tests need, has no matplotlib)."""
    try:
        importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name != package:
            raise  # the package is there; one of its own dependencies is not
        raise MissingExtra(
            f"{what} needs {package}, which is not installed: it comes with labkit's `{extra}` extra. Install "
            f"labkit with it (in the labkit checkout: `python3 bootstrap.py lab`, or `pip install -e '.[{extra}]'`; "
            f"from the wheel: `pip install 'labkit_dynamodb-...-py3-none-any.whl[{extra}]'`), "
            f"or `pip install {package}`",
            name=package,
        ) from None


check_moto()  # on import: labkit/__init__.py imports this module before anything imports moto

__all__ = [
    "DISTRIBUTION",
    "ENV_UNTESTED_MOTO",
    "INSTALL_MOTO",
    "MOTO_RANGE",
    "MOTO_REQUIREMENT",
    "IncompatibleDependency",
    "MissingExtra",
    "VERSION",
    "check_moto",
    "moto_problem",
    "require",
]
