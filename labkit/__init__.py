"""labkit: notebooks and a small package for two DynamoDB patterns — singleton items and
uniqueness across several attributes — with a race lab that makes the bugs happen on demand."""

from __future__ import annotations

from .backend import BACKENDS, Connection, connect
from .errors import (
    BackendUnavailable,
    ConfigurationError,
    ConflictError,
    DynamoError,
    FlagTypeError,
    IdempotencyMismatch,
    ItemTooLarge,
    LabkitError,
    RaceError,
    RetriesExhausted,
    TableError,
    TransactionCancelled,
    UnknownFlag,
    ValidationError,
    ValueTaken,
)
from .table import delete_table, ensure_table, reset_table

__version__ = "0.1.0"

__all__ = [
    "BACKENDS",
    "BackendUnavailable",
    "ConfigurationError",
    "ConflictError",
    "Connection",
    "DynamoError",
    "FlagTypeError",
    "IdempotencyMismatch",
    "ItemTooLarge",
    "LabkitError",
    "RaceError",
    "RetriesExhausted",
    "TableError",
    "TransactionCancelled",
    "UnknownFlag",
    "ValidationError",
    "ValueTaken",
    "__version__",
    "connect",
    "delete_table",
    "ensure_table",
    "reset_table",
]
