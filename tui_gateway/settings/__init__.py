"""Settings: the config file, the flags and the environment, resolved once for every entry point.

- :mod:`~tui_gateway.settings.resolution`: one resolution of desk's settings, shared by every entry
  point.
- :mod:`~tui_gateway.settings.settings_flags`: the shared settings flags on an :mod:`argparse`
  parser, and loading settings from them.
- :mod:`~tui_gateway.settings.config_file`: the person's config file,
  ``$XDG_CONFIG_HOME/desk/config.toml``: reading it, and editing it.
- :mod:`~tui_gateway.settings.mcp_settings`: ``[mcp_servers.NAME]`` tables of the config file,
  checked into :class:`McpServerSettings`.
- :mod:`~tui_gateway.settings.schedule_settings`: ``[schedules.NAME]`` tables of the config file,
  checked into :class:`ScheduleSettings`.
- :mod:`~tui_gateway.settings.named_tables`: tables of named tables (``[mcp_servers.NAME]``,
  ``[schedules.NAME]``), checked one way.

Nothing is imported here: importing one module of the package loads what that module needs.
"""
