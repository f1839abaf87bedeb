"""``torn-read``: a BatchGetItem, Query or Scan that sees some of a transaction's writes and not others.

DynamoDB's isolation table (Developer Guide, *Isolation levels for DynamoDB transactions*) lists
BatchGetItem, Query and Scan as *read-committed* against transactions: they never see a write
that did not commit, but the items one TransactWriteItems wrote may be read at different moments.
GetItem and TransactGetItems are *serializable*: never torn (the header is refused there).

The engine keeps, per committed transaction, the items it wrote with their images before
(:meth:`~labkit.endpoint.store.history.ImageHistory.transactions`, within what the image history
keeps); a torn read answers as if a chosen subset of one recent transaction's writes were not yet
applied: ``torn-read; misses=KEY, KEY`` names the subset (the items, whose latest write is that
transaction's), ``torn-read`` alone takes the first subset, smallest first and newest transaction
first, whose answer differs from the strong one. Never every write of the transaction (that is a
read before it, not a torn one), never a write that did not commit (only commits are kept).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ...shared.catalogue import WeakAnswer, WeakForm, key_name
from ..store.changes import Change
from .stale import WeakRead

if TYPE_CHECKING:
    from ..store.moto_store import Applied

#: At most this many subsets are tried by a ``torn-read`` that names none.
TRIES = 64


def torn(weak: WeakRead, form: WeakForm) -> tuple[Applied, str]:
    """The read as if part of one recent transaction's writes were not yet applied (see the module docstring)."""
    request, read, none = weak.request, weak.read, weak.none
    transactions = list(weak.history.transactions(request.account, request.region, weak.reads))
    if not transactions:
        return read(), none("no transaction kept in the history wrote what it reads")
    if form.misses:
        names = {key for key, _ in form.misses}
        for changes, made in transactions:
            chosen = [c for c in changes if key_name(c.key) in names]
            if {key_name(c.key) for c in chosen} == names:
                if len(chosen) >= made:
                    return read(), none("a torn read sees at least one of the transaction's writes")
                with weak.before(chosen):
                    return read(), form.text()
        return read(), none("no one transaction kept is the latest write of every item named")
    strong = read()
    strong_answer = weak.answer(strong)
    tries = 0
    for changes, made in transactions:
        for size in range(1, len(changes) + 1):
            if size >= made:
                break
            for subset in itertools.combinations(changes, size):
                tries += 1
                if tries > TRIES:
                    return strong, none(f"the first {TRIES} subsets tried answer as the store does now")
                with weak.before(subset):
                    found = read()
                if weak.answer(found) != strong_answer:
                    return found, _named(subset)
    return strong, none("every subset of the recent transactions' writes answers as the store does now")


def _named(subset: tuple[Change, ...]) -> str:
    """The form naming the subset found (the echo): ``torn-read; misses=KEY, KEY``."""
    return WeakForm(WeakAnswer.TORN_READ, misses=tuple((key_name(c.key), 1) for c in subset)).text()


__all__ = ["TRIES", "torn"]
