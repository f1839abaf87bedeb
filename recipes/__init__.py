"""A cookbook: plain boto3 for the patterns the lessons teach, ready to copy into a service.

Each module is one pattern, imports nothing from labkit, and is proven by labkit's race lab in
``tests/recipes/`` (every interleaving of two callers, with a lost answer and a transaction
conflict at each call, and a broken variant that the exploration catches). The lessons show the
same code (a test keeps each shown cell identical to its module here).

===================  ================================================================
``client``           a DynamoDB client: standard retries, timeouts (lesson 04 §1)
``table``            the table definition with its index, created idempotently
``flags``            the settings item: a fail-closed, cached reader (lesson 01 §4-5, Optional D)
``guarded_update``   a version-guarded update with bounded, jittered retries that
                     survives a lost answer (lesson 01 §7, Optional G)
``migration``        the V1 -> V2 migration and its retiring transaction (lesson 01 Optional C)
``sharded_counter``  a sharded counter: approximate ADD, exact-once ADD, the sum (lesson 03 §3-4)
``uniqueness``       sign-up, change email, delete: marker items in one transaction (lesson 02)
``cancellation``     CancellationReasons mapped to fields (lesson 02 §6, Optional G)
``conflicts``        detecting and retrying a TransactionConflict (lesson 04 §1, §4)
``outbox``           requests that survive a restart: enqueue, find, deliver, forget (lesson 04 §3)
===================  ================================================================
"""
