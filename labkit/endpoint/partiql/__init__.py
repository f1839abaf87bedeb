"""PartiQL: statements parsed (``syntax``), translated into the DynamoDB requests they stand for
(``translate``) and run through the engine (``run``). The three PartiQL operations' modules in
:mod:`labkit.endpoint.operations` shape their answers.
"""
