"""The store as a whole: its table groups answer their interfaces, and a closed store refuses."""

from __future__ import annotations

import pytest

from agent.store import (
    Compressions,
    Leases,
    Messages,
    PromptQueue,
    Sessions,
    SessionStore,
    StoreClosed,
    Turns,
)
from tests.store.conftest import StoreFactory


def test_the_store_and_each_group_satisfy_their_interfaces(
    store_factory: StoreFactory, store: SessionStore
) -> None:
    assert isinstance(store, SessionStore)
    assert isinstance(store.sessions, Sessions)
    assert isinstance(store.transcript, Messages)
    assert isinstance(store.turns, Turns)
    assert isinstance(store.queue, PromptQueue)
    assert isinstance(store.leases, Leases)
    assert isinstance(store.compressions, Compressions)
    assert store.schema_version() == store_factory.schema_version


def test_a_closed_store(store_factory: StoreFactory) -> None:
    s = store_factory()
    s.close()
    s.close()
    with pytest.raises(StoreClosed):
        s.sessions.list_sessions()
    with pytest.raises(StoreClosed):
        s.sessions.create_session()
