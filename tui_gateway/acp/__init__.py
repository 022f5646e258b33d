"""``desk acp``: desk as an agent of the Agent Client Protocol (Zed, JetBrains, toad).

A frontend of the gateway like the desk and the wire: the official SDK (``agent-client-protocol``,
imported as ``acp``) speaks the protocol on stdin/stdout, and every method is a call of the
in-process gateway. :mod:`~.main` is the command, :mod:`~.agent` the protocol's methods,
:mod:`~.updates` the translation of events into ``session/update``s, :mod:`~.pump` the ordered
outbox. Only this package imports the SDK (tests/test_layers.py).
"""
