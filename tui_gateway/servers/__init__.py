"""Servers the gateway talks to: the model server and the MCP servers.

- :mod:`~tui_gateway.servers.model_server`: the model server the gateway talks to: where it is,
  whether it answers, what it lists.
- :mod:`~tui_gateway.servers.mcp_servers`: the gateway's MCP servers: started with the gateway,
  offered to every turn, ended at shutdown.

Nothing is imported here: importing one module of the package loads what that module needs.
"""
