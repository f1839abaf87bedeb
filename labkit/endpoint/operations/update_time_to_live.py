"""UpdateTimeToLive: checked as DescribeTimeToLive is (the table must exist); moto updates the TTL."""

from __future__ import annotations

from . import Steps
from .describe_time_to_live import existing_table

STEPS = Steps(answer=existing_table)

__all__ = ["STEPS"]
