"""apply.py: moto's internals are checked when the engine starts; a mismatch is one clear line."""

from __future__ import annotations

from typing import Any

import pytest

import labkit
from labkit.endpoint import apply as _apply_module

apply: Any = _apply_module  # the tests probe moto internals the module does not export


def test_start__moto_lacks_a_method_the_engine_calls__one_line_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(apply, "_prepared", False)
    monkeypatch.delattr(apply.DynamoHandler, "transact_get_items")
    with pytest.raises(labkit.ConfigurationError) as caught:
        apply.MotoStore()
    message = str(caught.value)
    assert "\n" not in message
    assert "DynamoHandler.transact_get_items" in message
    assert "labkit needs moto[dynamodb]>=5.2.5,<5.3;" in message and "bootstrap.py" in message


def test_start__moto_as_expected__item_registry_off_and_dynamodb_limits() -> None:
    apply.MotoStore()
    assert apply.Item.__new__ is apply._new  # not BaseModel.__new__, which registers every instance
    assert apply.LimitedSizeDict.__setitem__ is dict.__setitem__  # no 405,000-byte cap
    assert apply._moto_responses.TRANSACTION_MAX_ITEMS == 100
