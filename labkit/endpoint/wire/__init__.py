"""The wire: HTTP in, DynamoDB JSON out.

``server`` (a bare ASGI app under uvicorn, on 127.0.0.1 only: :class:`~.server.EmbeddedEndpoint`),
``decode`` (headers and body -> a :class:`~.decode.Request`, or DynamoDB's refusal) and
``encode`` (a payload or an error in DynamoDB's JSON shape). The server is handed an engine; it
imports none of it.
"""
