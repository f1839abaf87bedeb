"""labkit/endpoint/model.py: botocore's DynamoDB model, parsed once per process, whichever stage asks."""

from __future__ import annotations

import pytest
from botocore.loaders import JSONFileLoader

from labkit.endpoint.checks.shapes import input_shape
from labkit.endpoint.model import service_model
from labkit.endpoint.wire.decode import operations


def test_service_model__the_wire_and_the_checks__one_model_its_files_read_once() -> None:
    """The operation names the wire knows and each operation's input shape come from one model: an
    operation met for the first time reads no JSON file (each used to parse the model again)."""
    service_model("dynamodb")
    reads: list[str] = []
    original = JSONFileLoader.load_file

    def counting(self: JSONFileLoader, file_path: str) -> object:
        reads.append(file_path)
        return original(self, file_path)

    input_shape.cache_clear()
    operations.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(JSONFileLoader, "load_file", counting)  # the read from disk, below every cache
        assert {"GetItem", "TransactWriteItems"} <= operations("dynamodb")
        assert "Key" in input_shape("dynamodb", "GetItem").members
        assert "TransactItems" in input_shape("dynamodb", "TransactWriteItems").members
    assert reads == []
    assert service_model("dynamodb") is service_model("dynamodb")


@pytest.mark.parametrize("service", ["dynamodb", "dynamodbstreams"])
def test_service_model__read_without_a_session__the_model_a_botocore_session_gives(service: str) -> None:
    """The model read with botocore's loader alone is the one a botocore session gives: same API version,
    same operations, same input shapes."""
    import botocore.session

    mine = service_model(service)
    sessions = botocore.session.get_session().get_service_model(service)
    assert mine.api_version == sessions.api_version
    assert mine.operation_names == sessions.operation_names
    for name in mine.operation_names:
        ours, theirs = mine.operation_model(name).input_shape, sessions.operation_model(name).input_shape
        assert (ours and list(ours.members)) == (theirs and list(theirs.members)), name
