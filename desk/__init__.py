"""desk: a full-screen terminal app for running an AI agent, where a stop really stops.

The app (:mod:`desk.app`) speaks only the gateway contract: method calls in, events out
(:mod:`desk.bridge`). Entry point: ``desk`` / ``python -m desk`` (:mod:`desk.__main__`).

``desk run``'s SIGINT (Ctrl+C), SIGTERM and SIGHUP are taken here, by desk's first line (the
package is imported before the entry module): one received while desk loads is kept in
:data:`early_signals`, and the run raises it once it can say it stopped
(:func:`tui_gateway.wire.run_early.arm`). Until then Python's own SIGINT handler raised a
``KeyboardInterrupt`` wherever the main thread was: in the entry module's imports, before
anything could catch it, it ended the run with a traceback and no ``turn.completed``. Only a
signal while the interpreter starts, before this, ends the run with nothing written (README,
"desk run and signals").
"""

from __future__ import annotations

import sys

early_signals: list[int] = []
"""SIGINT/SIGTERM/SIGHUP received by ``desk run`` before it could act on them (signal
numbers)."""


def _keep(signum: int, _frame: object) -> None:
    early_signals.append(signum)


if sys.argv[1:2] == ["run"]:  # ``desk run`` (the script, or python -m desk)
    # The builtin module: ``signal`` builds its enums first (about a millisecond).
    import _signal  # type: ignore[import-not-found]

    for _sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        # Nobody else took it yet (SIGINT: Python's own handler; one ignored stays ignored).
        if _signal.getsignal(_sig) in (_signal.SIG_DFL, _signal.default_int_handler):
            _signal.signal(_sig, _keep)

__all__: list[str] = ["early_signals"]
