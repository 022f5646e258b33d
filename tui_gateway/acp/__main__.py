"""``python -m tui_gateway.acp ...``: ``desk acp`` without desk."""

from __future__ import annotations

import sys

from tui_gateway.acp.main import main_acp

if __name__ == "__main__":
    sys.exit(main_acp(sys.argv[1:]))
