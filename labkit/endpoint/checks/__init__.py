"""What DynamoDB checks before anything is written.

``shapes`` (the request against botocore's model: types, lengths, enums, in DynamoDB's words),
``items`` (a key and an item against the table's schema), ``request`` (:func:`~.request.validate`:
the shapes, then the operation's own check from :mod:`labkit.endpoint.operations`; and the checks
several operations share). Attribute values are checked by :mod:`labkit.endpoint.values`.
"""
