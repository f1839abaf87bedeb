"""DynamoDB's weak answers, on request: ``X-Labkit-Weak-Answer: stale-read | torn-read | ...``.

DynamoDB may answer an eventually consistent read with an item as it was before a recent write,
a multi-item read beside a transaction with some of its writes and not others, a batch with part
of it left in ``UnprocessedItems`` / ``UnprocessedKeys``, a Query or Scan with a page that ends
early. The engine gives these answers only when a request asks for one with
:data:`~labkit.shared.catalogue.WEAK_ANSWER_HEADER` (the race lab does, per call; an endpoint fault rule
does, by rule), and only where DynamoDB can give them
(:func:`~labkit.shared.catalogue.weak_answer_misuse`: anywhere else is a 400, nothing applied):

``stale-read``
    the read runs on a view of the store as of before the latest commit to what it reads (the
    item it names, each BatchGetItem key of an eventually consistent table, the partition a
    Query reads on its table or index, the table a Scan reads); when that view answers as the
    store does, as of before the two latest, and so on (at most
    :data:`~labkit.endpoint.store.history.STEPS` commits, within what
    :class:`~labkit.endpoint.store.history.ImageHistory` keeps). ``behind=N``, ``misses=KEY``,
    ``index-misses=KEY`` name one view exactly (:class:`~labkit.shared.catalogue.WeakForm`, :mod:`.stale`);
``torn-read``
    a BatchGetItem, Query or Scan answers as if part of one recent TransactWriteItems' writes
    were not yet applied (:mod:`.torn`); ``misses=KEY`` names which;
``unprocessed-items``
    the request's last item (its last table's last request or key) is neither applied nor read
    and comes back in ``UnprocessedItems`` / ``UnprocessedKeys`` as it was sent;
``short-page``
    the page evaluates only its first item (``Limit=1``, counted before the FilterExpression)
    and ends with a ``LastEvaluatedKey``.

The answer carries the header back: the kind (or the view named, or for torn-read the subset
found) when it differs from the strong answer, else ``none; <why>``. One engine stage
(:class:`~.stage.WeakStage`), planned once per request: :mod:`.stage` (the kinds around the
store's apply), :mod:`.stale` (views as of before), :mod:`.torn` (part of a transaction),
:mod:`.partial` (unprocessed items, short pages). The engine (:mod:`..engine`) calls the stage.
"""

from __future__ import annotations

from .stage import HEADER, Planned, WeakStage, none

__all__ = ["HEADER", "Planned", "WeakStage", "none"]
