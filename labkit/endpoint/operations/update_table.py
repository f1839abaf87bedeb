"""UpdateTable: DynamoDB's billing-mode rules, against the table's current mode, checked before
moto updates the table (API reference: UpdateTable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import invalid
from ..wire.decode import Request
from . import Steps
from .create_table import check_billing

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def _check_update(params: Mapping[str, Any], current: tuple[float, float] | None) -> None:
    """UpdateTable's billing-mode rules; ``current``: the table's (RCU, WCU) if it is PROVISIONED, else None."""
    mode = params.get("BillingMode") or ("PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    throughput = params.get("ProvisionedThroughput")
    if mode == "PROVISIONED" and current is None and throughput is None:
        raise invalid(
            "One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is "
            "PROVISIONED"
        )
    check_billing(str(mode), throughput, "PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    if mode == "PROVISIONED" and current is not None and throughput is not None:
        read, write = throughput.get("ReadCapacityUnits"), throughput.get("WriteCapacityUnits")
        if (read, write) == (int(current[0]), int(current[1])):
            raise invalid(
                "The provisioned throughput for the table will not change. The requested value equals the current "
                f"value. Current ReadCapacityUnits provisioned for the table: {read}. Requested ReadCapacityUnits: "
                f"{read}. Current WriteCapacityUnits provisioned for the table: {write}. Requested "
                f"WriteCapacityUnits: {write}. Refer to the Amazon DynamoDB Developer Guide for current limits and "
                "how to request higher limits."
            )


def _answer(store: MotoStore, request: Request) -> Response | None:
    found = store.capacity(request.account, request.region, request.params["TableName"])
    if found is not None:
        _check_update(request.params, found[1])
    return None


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
