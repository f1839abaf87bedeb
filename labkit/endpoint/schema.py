"""A table's key schema and secondary indexes as plain data (read from moto by ``apply``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IndexSchema:
    """One secondary index: its key attributes (hash, then range) and what it projects."""

    name: str
    keys: tuple[tuple[str, str], ...]  # (attribute name, "S" | "N" | "B")
    local: bool
    projection: str = "ALL"  # "ALL", "KEYS_ONLY" or "INCLUDE"
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSchema:
    """A table's primary key (hash, then range) and its indexes."""

    name: str
    keys: tuple[tuple[str, str], ...]
    indexes: tuple[IndexSchema, ...] = ()

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.keys)

    @property
    def hash_key(self) -> str:
        return self.keys[0][0]

    def index(self, name: str) -> IndexSchema | None:
        return next((i for i in self.indexes if i.name == name), None)


__all__ = ["IndexSchema", "TableSchema"]
