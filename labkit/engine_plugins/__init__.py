"""The engine's plug-ins: what the composition root hands the engine, through the hook contract only.

Holds ``throughput`` (a hot key's partition throttles: :class:`~labkit.engine_plugins.throughput.PartitionThrottle`)
and ``faults/`` (DynamoDB's failures on purpose: the client side the race lab and notebooks use, and
the endpoint side, the ``FaultInjector`` hook). They talk to the engine through
:mod:`labkit.shared.engine_hooks` and never import it; the engine never imports them.

May import: shared.

Importing this package imports none of its modules.
"""
