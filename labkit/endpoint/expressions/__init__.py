"""DynamoDB's expressions: parsed, checked and evaluated by the engine (moto never sees a condition,
a filter or a projection).

``syntax`` (condition, filter, key-condition and projection expressions as a tree), ``updates``
(UpdateExpression's syntax), ``reserved`` (the reserved words), ``semantics`` (operand checks
once placeholders are known), ``evaluate`` (a condition on an item; a projection), ``legacy``
(the legacy parameters, ``Expected``, ``AttributesToGet``, ..., translated into expressions).
"""
