"""labkit: notebooks and a small package for two DynamoDB patterns — singleton items and
uniqueness across several attributes — with a race lab that makes the bugs happen on demand.

The pattern modules are used by name (``labkit.singleton``, ``labkit.uniqueness``); the race lab's
pictures live in ``labkit.plots`` (imported on demand: matplotlib is slow to import).
"""

from __future__ import annotations

from . import compat, invariants, races, singleton, uniqueness  # noqa: F401 (compat first: it checks moto)
from .backend import BACKENDS, Connection, connect
from .endpoint import DynamoEngine, EmbeddedEndpoint
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
from .lab import setup_lab
from .races import Interleaving, all_interleavings, run_interleaving, stress, sweep
from .singleton import Flag, FlagRead, FlagSchema, FlagStore, UpdateResult
from .table import delete_table, ensure_table, reset_table
from .uniqueness import UniqueRegistry

__version__ = "0.1.0"

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
