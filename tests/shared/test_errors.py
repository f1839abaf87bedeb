"""labkit's error tree: the picture in errors.py's docstring is the real hierarchy."""

from __future__ import annotations

import re

import pytest

from labkit.shared import errors


def drawn_tree() -> dict[str, str]:
    """class name -> parent name, as drawn in the module docstring (errors only, not warnings)."""
    doc = (errors.__doc__ or "").split("Warnings")[0]
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^\s{4}(?P<lead>(?:│   |    )*)(?:[├└]── )?(?P<name>[A-Z][A-Za-z]+)\b", line)
        if not match or not hasattr(errors, match["name"]):
            continue
        depth = len(match["lead"]) // 4 + (1 if ("├──" in line or "└──" in line) else 0)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[match["name"]] = stack[-1][1]
        stack.append((depth, match["name"]))
    return parents


def test_docstring_tree__matches_the_classes() -> None:
    """Every drawn edge is a real base class, and every error class is drawn."""
    drawn = drawn_tree()
    real = {
        name: next(b.__name__ for b in cls.__bases__ if issubclass(b, errors.LabkitError))
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, errors.LabkitError) and cls is not errors.LabkitError
    }
    assert drawn == real


@pytest.mark.parametrize(
    ("cls", "not_a"),
    [
        (errors.ValueTaken, errors.TransactionCancelled),
        (errors.TransactionConflict, errors.TransactionCancelled),
        (errors.StaleAccount, errors.TransactionCancelled),
        (errors.OutcomeUnknown, errors.BackendUnavailable),
    ],
)
def test_tree__one_branch_each(cls: type, not_a: type) -> None:
    """ValueTaken is no transaction error; TransactionConflict/StaleAccount are conflicts only; unknown != down."""
    assert not issubclass(cls, not_a)


def test_tree__no_error_inherits_from_two_labkit_branches() -> None:
    """At most one labkit base per class (builtins like ValueError may be added for convenience)."""
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.LabkitError):
            assert len([b for b in cls.__bases__ if issubclass(b, errors.LabkitError)]) <= 1, cls


def test_value_taken__without_transaction__no_reasons_and_no_code() -> None:
    """A check_first read found the value taken: no reasons, no DynamoDB code."""
    err = errors.ValueTaken({"email": "ada@lovelace.io"})
    assert (err.reasons, err.code, err.field, err.value) == ((), "", "email", "ada@lovelace.io")
