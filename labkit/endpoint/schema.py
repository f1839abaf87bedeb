"""A table's key schema and secondary indexes as plain data (read from moto's table by the store)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


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


def schema_of(table: Any) -> TableSchema:
    """A moto table's keys and indexes as plain data (``table`` is moto's object; no moto import)."""
    types = {a["AttributeName"]: a["AttributeType"] for a in table.attr}

    def keys(schema: list[dict[str, str]]) -> tuple[tuple[str, str], ...]:
        ordered = sorted(schema, key=lambda k: k["KeyType"] != "HASH")
        return tuple((k["AttributeName"], types.get(k["AttributeName"], "S")) for k in ordered)

    indexes = tuple(
        IndexSchema(
            index.name,
            keys(index.schema),
            local,
            (index.projection or {}).get("ProjectionType", "ALL"),
            tuple((index.projection or {}).get("NonKeyAttributes", [])),
        )
        for local, group in ((False, table.global_indexes or []), (True, table.indexes or []))
        for index in group
    )
    return TableSchema(table.name, keys(table.schema), indexes)


#: A table's schema by name, None if it does not exist (the store's view, for one account and region).
SchemaOf = Callable[[str], TableSchema | None]

__all__ = ["IndexSchema", "SchemaOf", "TableSchema", "schema_of"]
