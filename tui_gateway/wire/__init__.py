"""The gateway on the wire: its contract, JSON-RPC over stdio, HTTP with SSE, and a headless run.

- :mod:`contract`: every method, notification, event and error code, as typed
  dataclasses and tables (the one source of the docs);
- :mod:`tui_gateway.wire.contract_docs`: ``docs/protocol.md`` generated from the contract, and
  (with :mod:`tui_gateway.wire.contract_schema`) ``docs/protocol.schema.json``;
- :mod:`tui_gateway.wire.stdio`: ``desk gateway --stdio``;
- :mod:`tui_gateway.wire.client`: :class:`~tui_gateway.wire.client.RemoteGateway`, the gateway's
  methods served by a child process (its events through
  :mod:`tui_gateway.wire.remote_events`);
- :mod:`tui_gateway.wire.http_api`, :mod:`tui_gateway.wire.openai_facade` (both over
  :mod:`tui_gateway.wire.runs`) and :mod:`tui_gateway.wire.http_server`: ``desk serve``;
- :mod:`tui_gateway.wire.headless`: ``desk run``;
- :mod:`tui_gateway.wire.cli`: the entry points desk wires as subcommands.

Nothing is imported here, so ``python -m tui_gateway.wire.contract_docs`` runs without a warning.
"""
