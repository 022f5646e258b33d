"""Run a function in a forked child with fewer rights: another user, or a file-size limit.

Permission errors cannot be produced as root (root bypasses file modes), so those cases run in
a forked child that drops to ``nobody`` first. A write that fails half-way is produced for real
with ``RLIMIT_FSIZE``: the kernel refuses bytes past the limit with ``EFBIG``. Both settings
stay inside the child; the test process is unchanged.
"""

from __future__ import annotations

# A child that drops to nobody may not read this Python's own files: what a tool run imports on
# first use (asyncio's default executor) is imported here, before any fork.
import concurrent.futures.thread  # noqa: F401
import os
import pickle
import resource
import signal
from collections.abc import Callable
from typing import Any

NOBODY = 65534


def in_child(
    fn: Callable[[], Any], *, drop_root: bool = False, max_file_bytes: int | None = None
) -> Any:
    """Call ``fn`` in a forked child and return its (picklable) result.

    Args:
        fn: the work; its return value must pickle.
        drop_root: when the test runs as root, become ``nobody`` before calling ``fn``.
        max_file_bytes: set ``RLIMIT_FSIZE`` to this many bytes (SIGXFSZ ignored, so writes
            past it fail with ``EFBIG``).

    Raises:
        AssertionError: with the child's exception text when ``fn`` raised.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 0
        try:
            os.close(read_end)
            if max_file_bytes is not None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
            if drop_root and os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:  # report everything to the parent
            payload = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
            status = 1
        finally:
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    assert kind == "ok", value
    return value
