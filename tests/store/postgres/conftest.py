"""Fixtures of the PostgreSQL store's own tests: see ``tests/conftest.py`` (``pg_cluster``,
``schema``, ``open_host``, ``proxy``), shared with the gateway's tests of several hosts."""

from __future__ import annotations

from tests.pg_cluster import OpenHost

__all__ = ["OpenHost"]
