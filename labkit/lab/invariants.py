"""Invariant checks, under the name the notebooks import: a thin re-export.

Race-history checks live with the race lab (:mod:`labkit.races.history`), uniqueness table
checks with the uniqueness lesson (:mod:`labkit.patterns.uniqueness.checks`), and the scan helpers on
the shared floor (:mod:`labkit.shared.table`). This module only gathers them under one name.
"""

from __future__ import annotations

from ..patterns.uniqueness.checks import (
    DEFAULT_NAMESPACES,
    FINDING_COLUMNS,
    Finding,
    check_uniqueness,
    findings_frame,
    missing_markers,
    orphan_markers,
    several_owners,
)
from ..races.history import lost_updates, overwrites
from ..shared.table import scan_items, scan_rows

__all__ = [
    "DEFAULT_NAMESPACES",
    "FINDING_COLUMNS",
    "Finding",
    "check_uniqueness",
    "findings_frame",
    "lost_updates",
    "missing_markers",
    "orphan_markers",
    "overwrites",
    "scan_items",
    "scan_rows",
    "several_owners",
]
