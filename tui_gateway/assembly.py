"""A gateway put together from :class:`~tui_gateway.settings.resolution.Settings`: the one place
that opens the session store.

``desk``, ``desk run``, ``desk serve`` and ``desk gateway`` build their gateway here, so the
store, the context window and the workspace are taken from the settings the same way for all
of them. A store that cannot be opened raises :class:`StoreUnavailable` (one line); the wire
commands exit with it, the desk goes on with sessions in memory (``persist=False``) and shows
the reason.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from agent.context.tool_schemas import ToolSchemas
from agent.provider.client import ProviderConfig
from agent.store import SessionStore, StoreError, open_store
from agent.store.paths import store_path
from agent.tools.sandbox import choose_mode
from tui_gateway.engine_setup import GatewayConfig
from tui_gateway.gateway import Gateway
from tui_gateway.settings.config_file import CONFIG_NAME, SettingsError
from tui_gateway.settings.resolution import Settings


class StoreUnavailable(SettingsError):
    """The session database the settings name cannot be opened.

    Attributes:
        message: ``cannot open the database: <reason>`` (one line).
        reason: why, one line (locked, read-only, not a database, a directory...).
        location: the ``db`` setting.
    """

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"cannot open the database: {reason}")
        self.reason = reason
        self.location = location


def open_settings_store(settings: Settings) -> SessionStore | None:
    """Open the store ``settings.db`` names (None: sessions in memory only).

    Raises:
        StoreUnavailable: it cannot be opened.
    """
    if settings.db is None:
        return None
    try:
        return open_store(settings.db)
    except StoreError as exc:
        raise StoreUnavailable(settings.db, " ".join(exc.message.split())) from None


def gateway_config(
    settings: Settings,
    provider: ProviderConfig,
    *,
    max_sessions: int = 8,
    tools: bool = True,
    approvals: bool = True,
    denied: tuple[Path, ...] = (),
) -> GatewayConfig:
    """The gateway's configuration: ``provider``, plus the window and workspace of ``settings``.

    Args:
        settings: the resolved settings.
        provider: the model server (the entry point resolves it: probing, the demo...).
        max_sessions: live sessions kept (see :class:`GatewayConfig`).
        tools: offer the model the built-in tools (the ``tools`` setting ``"off"`` offers
            none whatever this says).
        approvals: ask before ``shell`` and ``write_file`` calls.
        denied: files the file tools refuse besides the default deny list, e.g.
            ``desk serve``'s token file; the session database ``settings.db`` names is added
            here (see :mod:`agent.tools.workspace`).
    """
    try:
        mode, note = choose_mode(_setting(settings, "sandbox"))
    except ValueError as exc:
        raise SettingsError(f"{CONFIG_NAME}: {exc}") from None
    database: tuple[Path, ...] = ()
    if settings.db is not None:
        with contextlib.suppress(StoreError):  # a server's URL: no file here to guard
            database = (store_path(settings.db),)
    return GatewayConfig(
        provider=provider,
        tools=tools and settings.tools != "off",
        tool_schemas=ToolSchemas.AUTO if settings.tools == "off" else ToolSchemas(settings.tools),
        approvals=approvals,
        cwd=settings.workspace,
        denied_paths=denied + database,
        max_sessions=max_sessions,
        context_window=settings.context_window,
        delegate_depth=settings.delegate_depth,
        delegate_width=settings.delegate_width,
        mcp_servers=tuple(settings.mcp_servers.values()),
        sandbox=mode,
        sandbox_network=settings.other_keys.get("sandbox_network") is True,
        sandbox_note=note,
        server_nice=settings.server_nice,
    )


def _setting(settings: Settings, key: str) -> str | None:
    """A config-file key read as text (None when not set)."""
    value = settings.other_keys.get(key)
    return None if value is None else str(value)


def build_gateway(
    settings: Settings,
    provider: ProviderConfig,
    *,
    persist: bool = True,
    max_sessions: int = 8,
    tools: bool = True,
    approvals: bool = True,
    denied: tuple[Path, ...] = (),
) -> Gateway:
    """A gateway over ``provider`` with the store, window and workspace of ``settings``.

    Args:
        settings: the resolved settings.
        provider: the model server.
        persist: open the store ``settings.db`` names; False keeps sessions in memory only
            whatever it says (the desk's way on after :class:`StoreUnavailable`).
        max_sessions: live sessions kept.
        tools: offer the model the built-in tools.
        approvals: ask before ``shell`` and ``write_file`` calls.
        denied: files the file tools refuse besides the default deny list and the database.

    Returns:
        the gateway; it owns the store and closes it at shutdown.

    Raises:
        StoreUnavailable: ``persist`` and the store cannot be opened.
    """
    store = open_settings_store(settings) if persist else None
    config = gateway_config(
        settings,
        provider,
        max_sessions=max_sessions,
        tools=tools,
        approvals=approvals,
        denied=denied,
    )
    return Gateway(config, store=store)
