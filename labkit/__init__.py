"""labkit: notebooks and a small package for two DynamoDB patterns — singleton items and
uniqueness across several attributes — with a race lab that makes the bugs happen on demand.

The pattern modules are used by name (``labkit.singleton``, ``labkit.uniqueness``); the race lab's
pictures live in ``labkit.plots`` (imported on demand: matplotlib is slow to import).

``import labkit`` is cheap: it loads the error tree and the moto version check only. Every other
public name is imported on first use (PEP 562 ``__getattr__``), so ``import labkit.errors`` never
loads boto3, pandas, moto or the engine, and ``labkit.connect`` / ``labkit.races`` /
``labkit.FlagStore`` still work as before.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from . import compat as compat  # first: it refuses a moto outside the tested range, before anything imports moto
from .errors import (
    BackendUnavailable,
    ConfigurationError,
    ConflictError,
    DynamoError,
    FlagTypeError,
    IdempotencyMismatch,
    ItemSizeWarning,
    ItemTooLarge,
    LabkitError,
    LabkitWarning,
    NotFound,
    OutcomeUnknown,
    RaceError,
    RetriesExhausted,
    TableError,
    TransactionCancelled,
    TransactionConflict,
    UnknownFlag,
    ValidationError,
    ValueTaken,
)

if _typing.TYPE_CHECKING:  # what the lazy names below are, for type checkers (not imported at run time)
    from . import invariants, races, singleton, uniqueness
    from .backend import BACKENDS, Connection, connect
    from .endpoint import DynamoEngine, EmbeddedEndpoint
    from .lab import setup_lab
    from .races import Interleaving, all_interleavings, run_interleaving, sweep
    from .races.stress import stress
    from .singleton import Flag, FlagRead, FlagSchema, FlagStore, UpdateResult
    from .table import delete_table, ensure_table, reset_table
    from .uniqueness import UniqueRegistry

__version__ = compat.VERSION

#: Public name -> the module it lives in (a module name alone: the module itself).
_LAZY: dict[str, str] = {
    "BACKENDS": "backend",
    "Connection": "backend",
    "connect": "backend",
    "DynamoEngine": "endpoint",
    "EmbeddedEndpoint": "endpoint",
    "setup_lab": "lab",
    "Interleaving": "races",
    "all_interleavings": "races",
    "run_interleaving": "races",
    "stress": "races",
    "sweep": "races",
    "Flag": "singleton",
    "FlagRead": "singleton",
    "FlagSchema": "singleton",
    "FlagStore": "singleton",
    "UpdateResult": "singleton",
    "delete_table": "table",
    "ensure_table": "table",
    "reset_table": "table",
    "UniqueRegistry": "uniqueness",
    "invariants": "invariants",
    "races": "races",
    "singleton": "singleton",
    "uniqueness": "uniqueness",
}


def __getattr__(name: str) -> _typing.Any:
    """Import a public name's module on first use (PEP 562), and keep the name here after."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}")
    loaded = _importlib.import_module(f"{__name__}.{module}")
    value = loaded if name == module else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BACKENDS",
    "BackendUnavailable",
    "ConfigurationError",
    "ConflictError",
    "Connection",
    "DynamoEngine",
    "DynamoError",
    "EmbeddedEndpoint",
    "Flag",
    "FlagRead",
    "FlagSchema",
    "FlagStore",
    "FlagTypeError",
    "IdempotencyMismatch",
    "Interleaving",
    "ItemSizeWarning",
    "ItemTooLarge",
    "LabkitError",
    "LabkitWarning",
    "NotFound",
    "OutcomeUnknown",
    "RaceError",
    "RetriesExhausted",
    "TableError",
    "TransactionCancelled",
    "TransactionConflict",
    "UniqueRegistry",
    "UnknownFlag",
    "UpdateResult",
    "ValidationError",
    "ValueTaken",
    "__version__",
    "all_interleavings",
    "connect",
    "delete_table",
    "ensure_table",
    "invariants",
    "races",
    "reset_table",
    "run_interleaving",
    "setup_lab",
    "singleton",
    "stress",
    "sweep",
    "uniqueness",
]
