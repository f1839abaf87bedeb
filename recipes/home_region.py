"""A global table's guarded writes, each sent to one home Region: the single-Region guarantees kept.

On a global table in its default mode (multi-Region eventual consistency, MREC) DynamoDB's developer
guide says: "Conditional writes evaluate the condition expression against the version of the item in
the Region", and "If the same item is modified in multiple Regions simultaneously, DynamoDB will resolve
the conflict by using the modification with the latest internal timestamp on a per-item basis"
("last writer wins"). So a version guard (``guarded_update.py``) or a marker's
``attribute_not_exists(PK)`` (``uniqueness.py``) holds only among writers of one Region: two admins in
two Regions both pass their guard, two sign-ups in two Regions both claim the email, and replication
keeps one write of each item, silently.

The fix here: every write of such an item, and the read it is computed from, goes to one *home* Region's
client, wherever the caller runs (one Region's latency for those writes; reads that need no guard stay
local). Choose the home once per item family (the settings item, the unique-value markers) and never
move it while writes may be in flight. The other fix is a global table with multi-Region *strong*
consistency (MRSC): a conflicting write from another Region fails with
``ReplicatedWriteConflictException`` (retry it like a refused condition), within MRSC's limits (three
Regions of one Region set, or two and a witness).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The home Region of the guarded items (the settings item, the markers): every write of them goes there.
HOME_REGION = "us-east-1"


def home_client(clients: Mapping[str, Any], home: str = HOME_REGION) -> Any:
    """The client of the home Region among one client per Region (``{"us-east-1": ..., "eu-west-1": ...}``).

    Send the item's guarded writes, and the reads they are computed from, with it:
    ``update(home_client(clients), table, key, change, op_id=...)`` (``guarded_update.py``),
    ``home_client(clients).transact_write_items(**register_request(...))`` (``uniqueness.py``).
    """
    if home not in clients:
        raise KeyError(f"no client for the home Region {home!r}; the clients are for {sorted(clients)}")
    return clients[home]
