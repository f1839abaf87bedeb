"""The patterns the lessons teach: plain boto3 code a team could copy, each with its failure modes.

Holds ``singleton/`` (one item under a constant key: feature flags, ``FlagStore``), ``uniqueness/``
(one marker item per unique value, in one transaction: ``UniqueRegistry``) and ``counter`` (a
sharded counter). A pattern never imports the race lab or another pattern: the race lab tries a
pattern from outside, as it would any team's code.

May import: shared, engine_plugins.

Importing this package imports none of its modules (the package ``labkit`` also names the first two
lazily, by their own names: ``singleton``, ``uniqueness``).
"""
