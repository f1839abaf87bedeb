"""labkit: notebooks and a small package for two DynamoDB patterns — singleton items and
uniqueness across several attributes — with a race lab that makes the bugs happen on demand.

The pattern modules are used by name (``labkit.patterns.singleton``, ``labkit.patterns.uniqueness``); the race lab's
pictures live in ``labkit.lab.plots`` (imported on demand: matplotlib is slow to import).

``import labkit`` is cheap: it loads the error tree and the moto version check only. Every other
public name is imported on first use (PEP 562 ``__getattr__``), so ``import labkit.shared.errors`` never
loads boto3, pandas, moto or the engine, and ``labkit.connect`` / ``labkit.races`` /
``labkit.FlagStore`` still work as before.

The package's layers are its folders, each with a face (its ``__init__``) that says what it
holds and what it may import: docs/architecture.md draws them.

May import: every layer.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from .shared import compat as compat  # first: it refuses a moto outside the tested range, before anything imports moto
from .shared.errors import (
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
    from . import races
    from .endpoint import DynamoEngine, EmbeddedEndpoint
    from .lab import invariants, setup_lab
    from .patterns import singleton, uniqueness
    from .patterns.singleton import Flag, FlagRead, FlagSchema, FlagStore, UpdateResult
    from .patterns.uniqueness import UniqueRegistry
    from .races import Interleaving, all_interleavings, run_interleaving, sweep
    from .races.stress import stress
    from .shared.backend import BACKENDS, Connection, connect
    from .shared.table import delete_table, ensure_table, reset_table

__version__ = compat.VERSION

#: Public name -> the module it lives in, under labkit (a module's own name: the module itself).
_LAZY: dict[str, str] = {
    "BACKENDS": "shared.backend",
    "Connection": "shared.backend",
    "connect": "shared.backend",
    "DynamoEngine": "endpoint",
    "EmbeddedEndpoint": "endpoint",
    "setup_lab": "lab",
    "Interleaving": "races",
    "all_interleavings": "races",
    "run_interleaving": "races",
    "stress": "races",
    "sweep": "races",
    "Flag": "patterns.singleton",
    "FlagRead": "patterns.singleton",
    "FlagSchema": "patterns.singleton",
    "FlagStore": "patterns.singleton",
    "UpdateResult": "patterns.singleton",
    "delete_table": "shared.table",
    "ensure_table": "shared.table",
    "reset_table": "shared.table",
    "UniqueRegistry": "patterns.uniqueness",
    "invariants": "lab.invariants",
    "races": "races",
    "singleton": "patterns.singleton",
    "uniqueness": "patterns.uniqueness",
}


def __getattr__(name: str) -> _typing.Any:
    """Import a public name's module on first use (PEP 562), and keep the name here after."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}")
    loaded = _importlib.import_module(f"{__name__}.{module}")
    value = loaded if name == module.rpartition(".")[2] else getattr(loaded, name)
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
