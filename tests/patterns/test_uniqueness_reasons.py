"""Cancellation reasons are named after the field or item they point at."""

from __future__ import annotations

from botocore.exceptions import ClientError

from labkit.patterns import uniqueness as u
from labkit.shared.errors import (
    ConflictError,
    DynamoError,
    TransactionCancelled,
    ValueTaken,
)
from tests.patterns.signups import cancelled, slots


def test_translate_error__transaction_conflict__is_a_retryable_conflict_error() -> None:
    """TransactionConflict in any slot -> ConflictError (retryable) with reasons in order."""
    err = u.translate_error(cancelled("None", "TransactionConflict", "None"), slots(), "registering")
    assert isinstance(err, ConflictError) and not isinstance(err, TransactionCancelled)
    assert not isinstance(err, ValueTaken)
    assert err.reason_codes == ("None", "TransactionConflict", "None")


def test_translate_error__validation_reason__is_transaction_cancelled_not_value_taken() -> None:
    """A ValidationError reason is neither a taken value nor a conflict."""
    err = u.translate_error(cancelled("ValidationError", "None", "None"), slots(), "registering")
    assert type(err) is TransactionCancelled and "invalid" in str(err)


def test_translate_error__reasons_only_in_message__are_parsed_in_order() -> None:
    """Without a CancellationReasons field, the bracketed list in the message is used."""
    exc = cancelled("None", "None", "ConditionalCheckFailed")
    del exc.response["CancellationReasons"]
    err = u.translate_error(exc, slots(), "registering")
    assert isinstance(err, ValueTaken) and err.fields == {"username": "ada"}


def test_translate_error__other_code__is_dynamo_error_with_code() -> None:
    """Any other DynamoDB error keeps its code."""
    exc = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "TransactWriteItems")
    err = u.translate_error(exc, [], "registering")
    assert isinstance(err, DynamoError) and err.code == "ThrottlingException"
