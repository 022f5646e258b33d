"""The deliberate breaks of the agent's modules :mod:`breaks` runs (see :mod:`break_list`):
text made valid, the process guard, the store's claims and fencing."""

from __future__ import annotations

from break_list import Break

_VT = ("tests/gateway/test_outside_text.py",)
GUARD_TESTS = ("tests/mcp/test_guard.py", "tests/tools/test_shell_tree.py")
_CL = (
    "tests/store/test_claims.py",
    "tests/store/postgres/test_hosts.py",
    "tests/store/test_leases.py",
)

AGENT_BREAKS: tuple[Break, ...] = (
    # -- agent/valid_text.py ---------------------------------------------------------------------
    Break(
        "valid_text",
        "agent/valid_text.py",
        "if _SURROGATE.search(text) is None:\n        return",
        "if _SURROGATE.search(text) is not None:\n        return",
        _VT,
        "lone surrogates kept",
    ),
    Break(
        "valid_text",
        "agent/valid_text.py",
        '.decode("utf-16-le", "replace")',
        '.decode("utf-16-le", "surrogatepass")',
        _VT,
        "lone surrogates kept",
    ),
    Break(
        "valid_text",
        "agent/valid_text.py",
        "item[valid_text(key)] = item.pop(key)",
        "pass",
        _VT,
        "object keys keep their lone surrogates",
    ),
    Break(
        "valid_text",
        "agent/valid_text.py",
        "if _SURROGATE_OR_ESCAPE.search(text) is None:",
        "if _SURROGATE.search(text) is None:",
        _VT,
        "an escaped lone surrogate in JSON kept",
    ),
    Break(
        "valid_text",
        "agent/valid_text.py",
        "item[index] = valid_text(element)\n                elif isinstance(element, dict | list):"
        "\n                    stack.append(element)",
        "item[index] = valid_text(element)",
        _VT,
        "lists inside lists not walked",
    ),
    Break(
        "valid_text",
        "agent/valid_text.py",
        '.removeprefix("\\ufeff")',
        "",
        _VT,
        "JSON bytes with a byte-order mark refused",
    ),
    # -- agent/guard.py --------------------------------------------------------------------------
    Break(
        "guard",
        "agent/guard.py",
        "        _prctl(_PR_SET_CHILD_SUBREAPER, 1)\n        watched = _prctl(_PR_SET_PDEATHSIG,"
        " int(signal.SIGTERM))",
        "        watched = _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))",
        GUARD_TESTS,
        "the keeper is no subreaper: orphans escape",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "os.setpgid(0, 0)",
        "pass",
        GUARD_TESTS,
        "the command shares the keeper's group",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "_write(status_fd, _ending_line(end_tree(grace_s)))",
        "pass",
        GUARD_TESTS,
        "a command that kills its guard leaves its tree running",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "    if _end_requested:\n        return\n",
        "    if False:\n        return\n",
        GUARD_TESTS,
        "a second signal cuts the ending short",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "end_tree(grace_s)  # what the server left behind",
        "pass",
        GUARD_TESTS,
        "what an MCP server left behind keeps running",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "uncounted=frozenset({guard, *_only_children(guard, wrapped)})",
        "uncounted=frozenset()",
        GUARD_TESTS,
        "the guard counted among the processes a stop ended",
    ),
    Break(
        "guard",
        "agent/guard.py",
        "    _default_signals()\n    try:\n",
        "    try:\n",
        GUARD_TESTS,
        "the command starts with SIGPIPE ignored",
    ),
    # -- claims and fencing (agent/store) --------------------------------------------------------
    Break(
        "claims",
        "agent/store/postgres/claims.py",
        "if not force and mine is not None and fence > mine:",
        "if False:",
        _CL,
        "a late write of a host presumed dead is accepted",
    ),
    Break(
        "claims",
        "agent/store/postgres/claims.py",
        "owner not in gone and self._liveness.is_alive(owner):",
        "owner not in gone:",
        _CL,
        "a gone host's session is never taken over",
    ),
    Break(
        "claims",
        "agent/store/postgres/claims.py",
        "if owner is not None and not force and owner",
        "if owner is not None and owner",
        _CL,
        "recovery of live owners' turns refused",
    ),
    Break(
        "claims",
        "agent/store/postgres/claims.py",
        "self._remember(session_id, int(taken[0]))",
        "pass",
        _CL,
        "a taken-over session's later takeover is not noticed",
    ),
    Break(
        "claims",
        "agent/store/sqlite/claims.py",
        "if owner is not None and self._liveness.is_alive(owner):",
        "if False:",
        _CL,
        "a session live in another desk is taken",
    ),
    Break(
        "claims",
        "agent/store/sqlite/claims.py",
        "            fence += 1\n",
        "",
        _CL,
        "a takeover draws no larger fencing number",
    ),
    Break(
        "claims",
        "agent/store/sql/leases.py",
        "self._e.hold(t, found[0])",
        "pass",
        _CL,
        "a lease renewed in a session another host took over",
    ),
    Break(
        "claims",
        "agent/store/sql/leases.py",
        "owner != self._owner and not self._liveness.is_alive(owner):",
        "owner != self._owner:",
        _CL,
        "a live holder's lease taken over",
    ),
)
