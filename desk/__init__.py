"""desk: a full-screen terminal app for running an AI agent, where a stop really stops.

The app (:mod:`desk.app`) speaks only the gateway contract: method calls in, events out
(:mod:`desk.bridge`). Entry point: ``desk`` / ``python -m desk`` (:mod:`desk.__main__`).

``desk run``'s SIGTERM and SIGHUP are taken here, by desk's first line (the package is
imported before the entry module): one received while desk loads is kept in
:data:`early_signals`, and the run raises it once it can say it stopped
(:func:`tui_gateway.wire.run_early.arm`). Only a signal while the interpreter starts, before
this, ends the run with nothing written (README, "desk run and signals").
"""

from __future__ import annotations

import sys

early_signals: list[int] = []
"""SIGTERM/SIGHUP received by ``desk run`` before it could act on them (signal numbers)."""


def _keep(signum: int, _frame: object) -> None:
    early_signals.append(signum)


if sys.argv[1:2] == ["run"]:  # ``desk run`` (the script, or python -m desk)
    # The builtin module: ``signal`` builds its enums first (about a millisecond).
    import _signal  # type: ignore[import-not-found]

    for _sig in (_signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(_sig) == _signal.SIG_DFL:  # nobody else took it yet
            _signal.signal(_sig, _keep)

__all__: list[str] = ["early_signals"]
