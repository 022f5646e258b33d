"""The ``shell`` tool's sandbox: the command line run under bubblewrap (``bwrap``).

Modes (the ``sandbox`` setting):

* ``workspace-write``: the whole file system read-only, the workspace writable, a private
  ``/tmp`` (writable, gone with the call: a file written there never appears on the host);
* ``read-only``: the same with the workspace read-only too;
* ``off``: the command runs as it always did.

In both sandboxed modes the deny list's paths (:func:`agent.tools.workspace.default_denied`:
``~/.ssh``, ``~/.gnupg``, desk's own data and config...) are hidden (an empty directory, or
``/dev/null`` for a file), the network is cut (``--unshare-net``) unless ``network`` is set,
and the command gets its own PID namespace whose first process dies with bwrap
(``--unshare-pid --die-with-parent``), so a stop that ends bwrap ends everything inside. bwrap
runs under the shell tool's guard like ``/bin/sh`` did (:mod:`agent.tools.shell`), the command
under :mod:`agent.sandbox_init` inside it (so what the command leaves behind is ended and counted
as outside, not killed uncounted with the namespace): stops, the timeout and the receipts are
unchanged.

When no ``sandbox`` is set desk uses ``workspace-write`` where bwrap is installed and can make
its namespaces (:func:`bwrap_problem` tries it once), else ``off``, with one line saying why.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SandboxMode = Literal["workspace-write", "read-only", "off"]
"""How ``shell`` commands run."""

MODES: tuple[SandboxMode, ...] = ("workspace-write", "read-only", "off")
"""Every mode, the default first."""

PROBE_TIMEOUT_S = 10.0
"""Longest the one try of bwrap may take, in seconds."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How the ``shell`` tool confines its commands.

    Attributes:
        mode: ``workspace-write``, ``read-only`` or ``off``.
        network: let commands reach the network (only when sandboxed).
        hidden: paths hidden from commands (the deny list).
        bwrap: the bubblewrap executable.
    """

    mode: SandboxMode = "off"
    network: bool = False
    hidden: tuple[Path, ...] = ()
    bwrap: str = "bwrap"

    @property
    def on(self) -> bool:
        """True when commands run under bubblewrap."""
        return self.mode != "off"

    def describe(self) -> str:
        """One line for the approval card: ``sandbox: workspace-write, no network`` ("" when
        off: the card reads as it always did)."""
        if not self.on:
            return ""
        network = "network allowed" if self.network else "no network"
        return f"sandbox: {self.mode}, {network}"

    def wrap(
        self,
        argv: list[str],
        workspace: Path,
        init: Sequence[str] = (),
        init_paths: Sequence[str] = (),
    ) -> list[str]:
        """``argv`` as run under this sandbox (unchanged when it is off).

        Args:
            argv: the command (``/bin/sh -c ...``).
            workspace: the directory the command may write (``workspace-write``).
            init: the sandbox's PID 1 in place of bwrap's own, which runs ``argv`` (the shell
                tool's: :func:`agent.sandbox_init.command_line`); none by default.
            init_paths: what ``init`` needs to see, bound read-only at the same paths over the
                fresh ``/tmp`` and the hidden ones (:func:`agent.sandbox_init.needed_paths`).
        """
        if not self.on:
            return list(argv)
        root = workspace.resolve()
        out = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        out += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
        out += ["--bind" if self.mode == "workspace-write" else "--ro-bind", str(root), str(root)]
        for path in _existing(self.hidden):
            if root == path or path in root.parents:
                continue  # the workspace itself stays what the mode says
            if path.is_dir():
                out += ["--tmpfs", str(path)]
            else:
                out += ["--ro-bind", "/dev/null", str(path)]
        for needed in init_paths if init else ():
            if os.path.exists(needed):
                out += ["--ro-bind", needed, needed]
        out += ["--unshare-pid", "--die-with-parent", "--chdir", str(root)]
        if init:
            out.append("--as-pid-1")  # ``init`` reaps the namespace in place of bwrap's own
        if not self.network:
            out.append("--unshare-net")
        return [*out, "--", *init, *argv]


def _existing(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        try:
            resolved = path.resolve()
            if resolved.exists():
                found.append(resolved)
        except OSError:
            continue
    return sorted(set(found))


@functools.cache
def bwrap_problem(bwrap: str = "bwrap") -> str | None:
    """Why commands cannot run under bubblewrap here (None: they can). Tries it once per
    process: ``bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid true``."""
    found = shutil.which(bwrap)
    if found is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    probe += ["--unshare-pid", "--unshare-net", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot run here: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return f"bubblewrap cannot make its namespaces here: {said[-1] if said else 'failed'}"
    return None


def choose_mode(setting: str | None, bwrap: str = "bwrap") -> tuple[SandboxMode, str]:
    """The mode to use and one line to show at start ("" when there is nothing to say).

    Args:
        setting: the ``sandbox`` setting, or None when not set (then ``workspace-write`` where
            bubblewrap works, else ``off``).
        bwrap: the bubblewrap executable.

    Raises:
        ValueError: a setting that is not one of :data:`MODES`.
    """
    if setting is not None and setting not in MODES:
        raise ValueError(f"sandbox must be one of {', '.join(MODES)}, not {setting!r}")
    wanted: SandboxMode = setting if setting is not None else "workspace-write"
    if wanted == "off":
        return "off", ""
    problem = bwrap_problem(bwrap)
    if problem is None:
        return wanted, ""
    if setting is None:
        return "off", f"shell runs without a sandbox: {problem}"
    return "off", f"sandbox = {setting!r} is off: {problem}"
