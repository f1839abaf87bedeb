"""The shared floor: what every layer of labkit stands on, and nothing of any layer above it.

Holds labkit's one error tree (``errors``; botocore's errors become it in ``_errors_map``), DynamoDB's
rules and numbers (``constants``, ``capacity``, ``numbers``, ``validation``, ``partition_keys``), the
item codec (``codec``), the operation catalogue (``catalogue/``: one record per operation), the
engine's hook contract (``engine_hooks``), botocore's client call wrapped once (``intercept/``) and
send-time routing (``routing``), and the client side of the lab: which backend (``backend_choice``),
``connect()`` (``backend``), the lab's table (``table``), the versions labkit relies on (``compat``).

May import: nothing. One exception, inside a function: ``backend.connect("embedded")`` imports the
composition root, :mod:`labkit.embedded` (docs/decisions.md, "One composition root").

Importing this package imports none of its modules.
"""
