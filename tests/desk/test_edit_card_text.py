"""What an editing call's approval card names: the file an edit changes, the files a patch does."""

from __future__ import annotations

import json

from desk.tool_text import patch_files, written_path


def test_edit_file_names_its_path_and_a_patch_its_files() -> None:
    edit = json.dumps({"path": "src/app.py", "old": "a", "new": "b"})
    assert written_path("edit_file", edit) == "src/app.py"
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n"
        "*** Add File: c.py\n+z\n*** Delete File: d.py\n*** End Patch"
    )
    assert written_path("apply_patch", json.dumps({"patch": patch})) == "a.py, b.py and 2 more"
    assert patch_files("*** Begin Patch\n*** Add File: only.txt\n+x\n*** End Patch") == "only.txt"
    assert written_path("apply_patch", json.dumps({"patch": "no headers"})) is None
    assert written_path("apply_patch", "not json") is None


def test_control_characters_in_a_patch_path_are_made_safe() -> None:
    patch = "*** Begin Patch\n*** Add File: evil\x1b[2J.txt\n+x\n*** End Patch"
    shown = patch_files(patch)
    assert shown is not None and "\x1b" not in shown
