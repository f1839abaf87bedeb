"""What a pattern costs in money, priced from the capacity the endpoint reports.

Modules: ``prices`` (prices, units, a metering client), ``compare`` (measured comparisons and
their picture).

Units come from DynamoDB's ``ConsumedCapacity`` (the embedded endpoint reports it by the
documented rules in :mod:`labkit.shared.capacity`); prices are parameters (:class:`Prices`).

Default prices — us-east-1 (US East, N. Virginia), Standard table class, as published on
https://aws.amazon.com/dynamodb/pricing/on-demand/ and .../provisioned/ after the on-demand
price cut of 1 November 2024; dated 2024-11-01:

* on-demand: $0.125 per million read request units (RRU), $0.625 per million write request units (WRU);
* provisioned: $0.00013 per RCU-hour, $0.00065 per WCU-hour.

labkit could not read AWS's price list from where it was written (no internet); the on-demand
figures were confirmed against a third-party summary of that page (airbyte.com, July 2025), the
provisioned ones are AWS's long-standing us-east-1 prices. Pass your own :class:`Prices` for
another region, table class or date. Storage, backups, streams and free tier are not priced.

Failed conditional writes: DynamoDB bills the write units of a write whose condition fails, but
returns no ``ConsumedCapacity`` with the error. :func:`meter` charges such a write by the
documented rule on the item's size when the error carries it
(``ReturnValuesOnConditionCheckFailure="ALL_OLD"``), else the 1-unit minimum.
"""

from __future__ import annotations

from .compare import (
    cached_vs_uncached,
    fill,
    get_vs_scan,
    plot_costs,
    put_vs_transaction,
    version_guard_contention,
)
from .prices import (
    DEFAULT_PRICES,
    HOURS_PER_MONTH,
    PRICES_AS_OF,
    PRICES_SOURCE,
    Prices,
    Tally,
    meter,
    on_demand_cost,
    provisioned_cost,
    units_of,
)

__all__ = [
    "DEFAULT_PRICES",
    "HOURS_PER_MONTH",
    "PRICES_AS_OF",
    "PRICES_SOURCE",
    "Prices",
    "Tally",
    "cached_vs_uncached",
    "fill",
    "get_vs_scan",
    "meter",
    "on_demand_cost",
    "plot_costs",
    "provisioned_cost",
    "put_vs_transaction",
    "units_of",
    "version_guard_contention",
]
