"""UniqueRegistry: the uniqueness pattern as one object, shaped like the singleton's FlagStore.

``UniqueRegistry(client, table, fields=...)`` holds what every operation needs, so a race
actor is written the same way in both lessons::

    registry = UniqueRegistry.connect(conn)
    actor = lambda client: registry.with_client(client).register(email=ADA, username="ada")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .audit import AuditReport, RepairReport, audit, repair
from .keys import DEFAULT_FIELDS, Fields, check_fields
from .lifecycle import change_value, delete_account, get_account
from .registry import Registration, register, submit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ...shared.backend import Connection


@dataclass(frozen=True)
class UniqueRegistry:
    """Accounts whose ``fields`` (field -> marker namespace) are unique, in one table.

    A field is an attribute (``"email"``) or a composite (``("tenant", "email")``: the pair is
    unique, one marker keyed by both values).

    Every write is safe to retry: pass the same ``token`` (and for ``register`` the same
    ``account_id``, or :meth:`submit` the same :class:`Registration`) after a lost answer.
    """

    client: DynamoDBClient
    table: str
    fields: Fields = field(default_factory=lambda: dict(DEFAULT_FIELDS))

    def __post_init__(self) -> None:
        check_fields(self.fields)

    @classmethod
    def connect(cls, conn: Connection, **options: Any) -> UniqueRegistry:
        """A registry on ``conn``'s shared client and lab table."""
        return cls(conn.client, conn.table_name, **options)

    def with_client(self, client: DynamoDBClient) -> UniqueRegistry:
        """The same registry (table, fields) using another client — e.g. a race actor's."""
        return replace(self, client=client)

    def register(
        self,
        values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        /,
        *,
        attributes: Mapping[str, Any] | None = None,
        account_id: str | None = None,
        token: str | None = None,
        check_first: bool = False,
        **named: str,
    ) -> Registration:
        """See :func:`labkit.patterns.uniqueness.register` (safe to retry with the same id and token)."""
        return register(
            self.client,
            self.table,
            values,
            fields=self.fields,
            attributes=attributes,
            account_id=account_id,
            token=token,
            check_first=check_first,
            **named,
        )

    def submit(self, registration: Registration, *, check_first: bool = False) -> Registration:
        """Send (or resend) a prepared registration; see :func:`labkit.patterns.uniqueness.submit`."""
        return submit(self.client, self.table, registration, check_first=check_first)

    def get(self, account_id: str) -> dict[str, Any] | None:
        """The account, or None."""
        return get_account(self.client, self.table, account_id)

    def change(self, account_id: str, field_name: str, new_value: str, *, token: str | None = None) -> bool:
        """Move an account to a new unique value; see :func:`labkit.patterns.uniqueness.change_value`."""
        return change_value(self.client, self.table, account_id, field_name, new_value, fields=self.fields, token=token)

    def change_email(self, account_id: str, new_email: str, *, token: str | None = None) -> bool:
        """Change the email (safe to retry with the same token)."""
        return self.change(account_id, "email", new_email, token=token)

    def change_username(self, account_id: str, new_username: str, *, token: str | None = None) -> bool:
        """Change the username (safe to retry with the same token)."""
        return self.change(account_id, "username", new_username, token=token)

    def delete(self, account_id: str, *, token: str | None = None) -> dict[str, Any]:
        """Delete the account and its markers (safe to retry with the same token)."""
        return delete_account(self.client, self.table, account_id, fields=self.fields, token=token)

    def audit(self) -> AuditReport:
        """Orphan, missing and shared markers in the table."""
        return audit(self.client, self.table, fields=self.fields)

    def repair(self, report: AuditReport | None = None) -> RepairReport:
        """Fix what an audit found, each fix guarded."""
        return repair(self.client, self.table, report, fields=self.fields)


__all__ = ["UniqueRegistry"]
