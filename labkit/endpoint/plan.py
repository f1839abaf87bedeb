"""What a validated request touches: the :class:`Plan` every stage after validation reads.

Validation (:mod:`labkit.endpoint.checks` and the operation's own module) fills it: the keys the
request reads and writes, as plain data (for hooks, metering and ClientRequestToken memory), and
the expressions it parsed (for the engine's own conditions, filters and projections).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .expressions.syntax import Parsed


@dataclass(frozen=True)
class Target:
    """One item a request writes (or checks, in a transaction)."""

    table: str
    key: dict[str, Any]
    pk: str
    transactional: bool = False
    check_only: bool = False


@dataclass
class Plan:
    """What a validated request touches."""

    reads: list[tuple[str, str]] = field(default_factory=list)  # (table, partition key)
    writes: list[Target] = field(default_factory=list)
    gets: list[tuple[str, dict[str, Any], bool, bool]] = field(default_factory=list)  # table, key, strong, in a tx
    #: Parsed expressions per parameter scope (the request, a transaction action, a BatchGetItem
    #: table), keyed by the scope dict's id: the dicts live as long as the request.
    parsed: dict[int, dict[str, Parsed]] = field(default_factory=dict)

    def parsed_of(self, scope: Mapping[str, Any]) -> dict[str, Parsed]:
        """The expressions parsed for one parameter scope (empty if it has none)."""
        return self.parsed.get(id(scope), {})


#: A Plan's :meth:`~Plan.parsed_of`: the expressions of one parameter scope.
ParsedOf = Callable[[Mapping[str, Any]], Mapping[str, "Parsed"]]

__all__ = ["ParsedOf", "Plan", "Target"]
