"""The store: where a table's items live and are read.

``moto_store`` (:class:`~.moto_store.MotoStore`, moto's DynamoDB behind plain-data methods; the
only module of labkit that imports moto), ``atomic`` (moto's backend made atomic: transactions,
failed updates, the engine's filter on what moto read), ``rewrite`` (what moto is given, and the
projections on what it answers), ``idempotency`` (ClientRequestToken memory), ``arns`` (a table
named by its ARN). What the engine keeps about items beyond moto — an index per partition, a
durable log of writes — belongs here, beside ``moto_store``, behind the same plain-data methods.
"""
