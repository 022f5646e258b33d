"""Imported at the start of every Python process the tests start (the ``child_site`` fixture
puts this folder first on their ``PYTHONPATH``): trio is hidden from them.

trio is no dependency of desk's; the test extras bring it (selenium, for the browser test,
requires it). httpcore imports trio whenever it is installed, so without this every desk, wire,
ACP and MCP process a test starts imported it: 0.06-0.1 s of CPU each, a few hundred times a
run. Hidden, those processes run as in a desk install, where trio is not there.
"""

import sys

sys.modules.setdefault("trio", None)  # type: ignore[assignment]  # `import trio`: ImportError
