"""The one mapping point: every botocore error becomes the right labkit error, cause kept."""

from __future__ import annotations

import inspect

import pytest
from botocore import exceptions as bce

from labkit.shared import errors
from labkit.shared._errors_map import from_botocore_error, from_client_error, map_errors


def client_error(code: str, message: str = "m", **extra: object) -> bce.ClientError:
    return bce.ClientError({"Error": {"Code": code, "Message": message}, **extra}, "PutItem")  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("ResourceNotFoundException", errors.TableError),
        ("ConditionalCheckFailedException", errors.ConflictError),
        ("TransactionConflictException", errors.ConflictError),
        ("TransactionInProgressException", errors.ConflictError),
        ("IdempotentParameterMismatchException", errors.IdempotencyMismatch),
        ("ProvisionedThroughputExceededException", errors.Throttled),
        ("ThrottlingException", errors.Throttled),
        ("InternalServerError", errors.DynamoError),
    ],
)
def test_from_client_error__code__maps_to_class(code: str, expected: type[errors.LabkitError]) -> None:
    """Each DynamoDB error code has its class; anything else is a DynamoError with the code."""
    err = from_client_error(client_error(code), "PutItem", "labkit-t")
    assert type(err) is expected
    if isinstance(err, errors.DynamoError):
        assert err.code == code


def test_from_client_error__cancelled_with_transaction_conflict__transaction_conflict_with_reasons() -> None:
    """A TransactionConflict reason: TransactionConflict (a ConflictError), reasons in request order."""
    exc = client_error(
        "TransactionCanceledException", CancellationReasons=[{"Code": "None"}, {"Code": "TransactionConflict"}]
    )
    err = from_client_error(exc, "TransactWriteItems")
    assert isinstance(err, errors.TransactionConflict) and err.reason_codes == ("None", "TransactionConflict")


def test_from_client_error__item_size_refused__item_too_large() -> None:
    """DynamoDB's (or the endpoint's) item-size ValidationException is labkit's ItemTooLarge."""
    exc = client_error("ValidationException", "Item size has exceeded the maximum allowed size")
    assert isinstance(from_client_error(exc, "PutItem"), errors.ItemTooLarge)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (bce.EndpointConnectionError(endpoint_url="http://127.0.0.1:9"), errors.BackendUnavailable),
        (bce.ConnectTimeoutError(endpoint_url="http://127.0.0.1:9"), errors.BackendUnavailable),
        (bce.ConnectionClosedError(endpoint_url="http://127.0.0.1:9"), errors.ConnectionClosedError),
        (bce.ReadTimeoutError(endpoint_url="http://127.0.0.1:9"), errors.ReadTimeoutError),
        (bce.NoCredentialsError(), errors.ConfigurationError),
        (bce.NoRegionError(), errors.ConfigurationError),
        (bce.ParamValidationError(report="bad"), errors.ValidationError),
    ],
)
def test_from_botocore_error__transport_failure__never_sent_or_outcome_unknown(
    exc: bce.BotoCoreError, expected: type[errors.LabkitError]
) -> None:
    """Never sent: BackendUnavailable ("nothing was written"); sent without answer: OutcomeUnknown ("MAY")."""
    err = from_botocore_error(exc, "PutItem", "labkit-t")
    assert type(err) is expected
    if isinstance(err, errors.OutcomeUnknown):
        assert "MAY have been applied" in str(err)


def test_from_botocore_error__every_botocore_error__is_a_labkit_error() -> None:
    """Complete: each BotoCoreError subclass botocore defines maps into the tree (none leaks)."""
    for cls in vars(bce).values():
        if inspect.isclass(cls) and issubclass(cls, bce.BotoCoreError):
            exc = cls.__new__(cls)
            Exception.__init__(exc, "x")
            assert isinstance(from_botocore_error(exc, "PutItem"), errors.LabkitError), cls


def test_map_errors__labkit_error_inside__passes_through_untouched() -> None:
    """labkit's own errors are not re-wrapped; botocore's are, with the original as __cause__."""
    own = errors.NotFound("x")
    with pytest.raises(errors.NotFound) as info, map_errors("GetItem"):
        raise own
    assert info.value is own
    original = client_error("ResourceNotFoundException")
    with pytest.raises(errors.TableError) as caught, map_errors("GetItem", "labkit-t"):
        raise original
    assert caught.value.__cause__ is original
