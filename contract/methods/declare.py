"""How a contract method is declared: once, with the short call into the gateway beside it.

A :class:`Method` is everything the rest is made from: :class:`tui_gateway.wire.dispatch.
Dispatcher` serves every declared method by decoding its params and calling :attr:`Method.call`
(a loop, no adapter per method), :class:`tui_gateway.wire.client.RemoteGateway` sends it by
name and decodes its result type, and ``docs/protocol.md`` and ``docs/protocol.schema.json`` are
generated from the declarations (:mod:`tui_gateway.wire.contract_docs`). See
``docs/adding_a_method.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from contract.ports import DeskGateway

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Method(Generic[P, R]):
    """One JSON-RPC method of the contract.

    Attributes:
        name: the wire name.
        params: the params dataclass (decoded strictly from the request).
        result: the result dataclass (what the response's ``result`` holds).
        summary: what it does, in a sentence or two (the reference's text).
        call: the call into a gateway (the port, :class:`contract.ports.DeskGateway`) with the
            decoded params, returning the result; None for a method the transport serves
            itself (``session.events.since``: its replay ring).
        blocking: it may wait (bounded) on workers or the store; a stdio gateway runs it off its
            reader thread, so a stop sent meanwhile is never delayed behind it.
    """

    name: str
    params: type[P]
    result: type[R]
    summary: str
    call: Callable[[DeskGateway, P], R] | None
    blocking: bool = False


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification the gateway sends (never answered).

    Attributes:
        name: the wire name (the message's ``method``).
        params: the params dataclass.
        summary: when it is sent, and what it says.
    """

    name: str
    params: type[Any]
    summary: str
