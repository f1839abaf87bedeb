"""Changing the settings item's shape: write V2 from V1 (one migrator wins), then retire V1."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...shared._errors_map import map_errors
from ...shared.capacity import item_size
from ...shared.catalogue import Op
from ...shared.codec import from_wire, to_wire
from ...shared.constants import FLAGS_SK_V1, FLAGS_SK_V2
from ...shared.errors import ConflictError, NotFound, TransactionCancelled, ValidationError
from .guards import check_size
from .results import MigrationResult
from .schema import RESERVED_NAMES, VERSION_ATTR, FlagSchema, version_of
from .store import FlagStore


def migrate(
    store: FlagStore,
    transform: Callable[[dict[str, Any]], Mapping[str, Any]],
    *,
    target_sk: str = FLAGS_SK_V2,
    target_schema: FlagSchema | None = None,
) -> MigrationResult:
    """Write the item at ``target_sk`` from the one at ``store.sk`` through ``transform``.

    ``transform`` gets the source attributes as plain Python values (without PK, SK and
    version) and returns the new ones. The write is a PutItem guarded by
    ``attribute_not_exists(PK)``: of two migrators exactly one writes; the other gets
    ``won=False`` and overwrites nothing. The source item stays until :func:`retire`.
    """
    if target_sk == store.sk:
        raise ValidationError(f"target_sk {target_sk!r} is the source key; choose a new one (e.g. FLAGS#V2)")
    current = store.read_item()
    if current is None:
        raise NotFound(f"nothing to migrate: no item at PK={store.pk} SK={store.sk}; create it with set_flags() first")
    source = from_wire(current)
    source_version = version_of(source) or 0
    body = {k: v for k, v in source.items() if k not in RESERVED_NAMES}
    new_attrs = dict(transform(dict(body)))
    bad = sorted(set(new_attrs) & RESERVED_NAMES)
    if bad:
        raise ValidationError(f"transform may not set {', '.join(bad)}; migrate() writes those itself")
    declared = {k: v for k, v in new_attrs.items() if target_schema and k in target_schema.names}
    if target_schema is not None and declared:
        target_schema.validate(declared)
    item = {
        "PK": store.pk,
        "SK": target_sk,
        **new_attrs,
        VERSION_ATTR: 1,
        "migrated_from": store.sk,
        "migrated_from_version": source_version,
    }
    wire = to_wire(item)
    check_size(0, item_size(wire))
    try:
        with map_errors(Op.PUT_ITEM, store.table_name):
            store.client.put_item(TableName=store.table_name, Item=wire, ConditionExpression="attribute_not_exists(PK)")
    except ConflictError as exc:
        if exc.code != "ConditionalCheckFailedException":
            raise
        return MigrationResult(
            False,
            target_sk,
            f"{target_sk} already exists (another migrator wrote it first); nothing was overwritten",
        )
    return MigrationResult(True, target_sk, f"wrote {target_sk} from {store.sk} v{source_version}", item)


def retire(store: FlagStore, *, old_sk: str = FLAGS_SK_V1, new_sk: str = FLAGS_SK_V2) -> None:
    """Delete ``old_sk`` only if ``new_sk`` exists: one transaction with a ConditionCheck.

    If the new item records the old version it was migrated from, the delete is also
    conditioned on the old item still having that version, so a change made to the old item
    after the migration is not silently thrown away. Safe to retry: if ``old_sk`` is already
    gone while ``new_sk`` exists (a retry after a lost answer), there is nothing left to do.
    """
    if old_sk == new_sk:
        raise ValidationError("old_sk and new_sk are the same key; nothing to retire")
    new_key = {"PK": {"S": store.pk}, "SK": {"S": new_sk}}
    old_key = {"PK": {"S": store.pk}, "SK": {"S": old_sk}}
    new_item = store.read_item(new_sk)
    if new_item is not None and store.read_item(old_sk) is None:
        store.cache.invalidate()
        return
    delete: dict[str, Any] = {
        "TableName": store.table_name,
        "Key": old_key,
        "ConditionExpression": "attribute_exists(PK)",
    }
    if new_item is not None and "migrated_from_version" in new_item:
        delete["ConditionExpression"] = "attribute_exists(PK) AND #ver = :from"
        delete["ExpressionAttributeNames"] = {"#ver": VERSION_ATTR}
        delete["ExpressionAttributeValues"] = {":from": new_item["migrated_from_version"]}
    actions: list[Any] = [
        {
            "ConditionCheck": {
                "TableName": store.table_name,
                "Key": new_key,
                "ConditionExpression": "attribute_exists(PK)",
            }
        },
        {"Delete": delete},
    ]
    try:
        with map_errors(Op.TRANSACT_WRITE_ITEMS, store.table_name):
            store.client.transact_write_items(TransactItems=actions)
    except TransactionCancelled as exc:
        codes = exc.reason_codes
        if codes and codes[0] == "ConditionalCheckFailed":
            why = f"{new_sk} does not exist: migrate first; {old_sk} was kept"
        elif len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
            why = (
                f"{old_sk} is gone or changed since it was migrated; nothing was deleted. "
                "Migrate again (to a new key) or check who still writes the old item"
            )
        else:
            why = f"the transaction was cancelled ({', '.join(codes) or 'no reasons given'})"
        raise TransactionCancelled(f"retire {old_sk}: {why}", exc.reasons) from exc.__cause__
    store.cache.invalidate()


def lost_changes(store: FlagStore, expected: Mapping[str, object]) -> list[str]:
    """The flags whose stored value is not the ``expected`` one (strongly consistent read)."""
    stored = stored_item(store) or {}
    flags, _ = store.schema.decode(stored)
    return [name for name, value in expected.items() if flags.get(name) != value]


def stored_item(store: FlagStore, sk: str | None = None) -> dict[str, Any] | None:
    """The raw stored item at ``sk`` (default: the store's key) as Python values (numbers as Decimal)."""
    item = store.read_item(sk)
    return from_wire(item) if item is not None else None


__all__ = ["lost_changes", "migrate", "retire", "stored_item"]
