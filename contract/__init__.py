"""The gateway contract: what a frontend needs to talk to a gateway, and nothing else.

A frontend (the desk, the stdio and HTTP wire, ACP, the browser) imports this package only; it
imports nothing of :mod:`tui_gateway` and loads no engine. Its modules, one job each:

- :mod:`contract.results`: what the methods return;
- :mod:`contract.errors`: what a gateway refuses, with its code.
"""
