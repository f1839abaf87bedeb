"""UniqueRegistry: the uniqueness pattern as one object, shaped like FlagStore."""

from __future__ import annotations

import pytest

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError

ADA = "ada@lovelace.io"


def test_registry__actor_shape__same_as_flag_store(tconn: Connection) -> None:
    """UniqueRegistry.connect / with_client / register / change_email / delete, like FlagStore."""
    registry = u.UniqueRegistry.connect(tconn)
    other = registry.with_client(tconn.new_client())
    reg = other.register(email=ADA, username="ada")
    assert other.change_email(reg.account_id, "ada@babbage.io", token="t-1") is True
    assert registry.get(reg.account_id)["email"] == "ada@babbage.io"  # type: ignore[index]
    assert registry.delete(reg.account_id)["id"] == reg.account_id
    assert registry.audit().ok and registry.get(reg.account_id) is None


def test_registry__bad_fields__refused_at_construction(tconn: Connection) -> None:
    """A field map that cannot work is refused when the registry is made, not at the first call."""
    with pytest.raises(ValidationError, match="share namespace"):
        u.UniqueRegistry(tconn.client, tconn.table_name, fields={"email": "EMAIL", "alias": "EMAIL"})
