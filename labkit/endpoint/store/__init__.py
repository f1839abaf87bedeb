"""The store: where a table's items live and are read.

``moto_store`` (:class:`~.moto_store.MotoStore`, moto's DynamoDB behind plain-data methods, in
backends the store owns), ``moto_adapter`` (the one door to moto: the only module of labkit that
imports it; every internal the engine touches, listed and checked), ``changes`` (a ``Commit``: what
one write changed, the one record every write produces), ``partitions`` and ``reads`` (each table's
keys sorted per partition and in scan order: a Query reads its range, a Scan its page),
``durable`` and ``restore`` (``--data DIR``: the append-only log, and the tables made again at
start), ``atomic`` (moto's backend made atomic: transactions, failed updates, the engine's filter
on what moto read), ``rewrite`` (what moto is given, and the projections on what it answers),
``idempotency`` (ClientRequestToken memory), ``arns`` (a table named by its ARN).
"""
