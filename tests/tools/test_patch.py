"""The patch format of apply_patch: codex's grammar read, leniencies kept, errors that name the
line, and applying hunks (round-trips with hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.tools.patch import (
    AddFile,
    DeleteFile,
    FileOp,
    Hunk,
    PatchError,
    UpdateFile,
    apply_hunks,
    parse_patch,
    render_patch,
)

CODEX_EXAMPLE = """*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch
"""


def test_the_codex_example_reads_as_three_sections() -> None:
    assert parse_patch(CODEX_EXAMPLE) == (
        AddFile("hello.txt", "Hello world\n"),
        UpdateFile(
            "src/app.py",
            (Hunk("def greet():", ('print("Hi")',), ('print("Hello, world!")',)),),
            "src/main.py",
        ),
        DeleteFile("obsolete.txt"),
    )


def test_leniencies_models_need_are_kept() -> None:
    heredoc = "<<'EOF'\n" + CODEX_EXAMPLE + "EOF\n"
    assert parse_patch(heredoc) == parse_patch(CODEX_EXAMPLE)
    padded = " *** Begin Patch \n*** Update File: a.py\n import x\n+import y\n *** End Patch "
    (op,) = parse_patch(padded)  # no @@ before the first hunk, spaces around markers
    assert op == UpdateFile("a.py", (Hunk(None, ("import x",), ("import x", "import y")),))
    blank = "*** Begin Patch\n*** Update File: a\n@@\n x\n\n-y\n*** End Patch"
    (op,) = parse_patch(blank)  # a blank line inside a hunk is an empty context line
    assert isinstance(op, UpdateFile) and op.hunks[0].old == ("x", "", "y")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello", "the first line must be '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "the last line must be '*** End Patch'"),
        ("*** Begin Patch\n*** End Patch", "it changes no file"),
        ("*** Begin Patch\n*** Frobnicate: a\n*** End Patch", "line 2: '*** Frobnicate: a'"),
        ("*** Begin Patch\n*** Update File: a\n*** End Patch", "the update of 'a' has no hunk"),
        ("*** Begin Patch\n*** Add File: \n*** End Patch", "line 2: the header names no path"),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n x\n@@\nbad\n*** End Patch",
            "line 6: 'bad' is not a hunk line",
        ),
    ],
)
def test_a_bad_patch_is_refused_naming_what_and_where(text: str, message: str) -> None:
    with pytest.raises(PatchError, match=message.replace("(", r"\(").replace("*", r"\*")):
        parse_patch(text)


def test_hunks_apply_in_order_after_their_context_line() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    hunks = (Hunk("def b():", ("    return 1",), ("    return 2",)),)
    assert apply_hunks("m.py", text, hunks) == "def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_white_space_at_line_ends_is_forgiven_and_crlf_is_kept() -> None:
    text = "one  \r\ntwo\r\n"
    assert apply_hunks("f", text, (Hunk(None, ("one", "two"), ("one", "2")),)) == "one\r\n2\r\n"


def test_end_of_file_pins_the_hunk_to_the_last_lines() -> None:
    text = "x\ny\nx\n"
    hunks = (Hunk(None, ("x",), ("z",), end_of_file=True),)
    assert apply_hunks("f", text, hunks) == "x\ny\nz\n"


def test_a_hunk_that_does_not_fit_changes_nothing_and_says_what_is_missing() -> None:
    hunks = (Hunk(None, ("a",), ("A",)), Hunk(None, ("nope",), ("x",)))
    with pytest.raises(PatchError, match="not in it:\nnope"):
        apply_hunks("f.txt", "a\nb\n", hunks)
    with pytest.raises(PatchError, match="no line 'class Missing'"):
        apply_hunks("f.txt", "a\n", (Hunk("class Missing", ("a",), ("b",)),))


# -- round-trips -------------------------------------------------------------------------------

_line = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\x85"),
    max_size=12,
)
_path = st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}\.txt", fullmatch=True)


@st.composite
def _hunks(draw: st.DrawFn) -> Hunk:
    old = tuple(draw(st.lists(_line, min_size=1, max_size=4)))
    new = tuple(draw(st.lists(_line, max_size=4)))
    context = draw(st.none() | _line.filter(lambda s: s.strip() != "" and s == s.strip()))
    return Hunk(context, old, new, draw(st.booleans()))


_ops: st.SearchStrategy[FileOp] = st.one_of(
    st.builds(
        AddFile,
        _path,
        st.lists(_line, min_size=1, max_size=5).map(lambda ls: "".join(x + "\n" for x in ls)),
    ),
    st.builds(DeleteFile, _path),
    st.builds(
        UpdateFile, _path, st.lists(_hunks(), min_size=1, max_size=3).map(tuple), st.none() | _path
    ),
)


@settings(deadline=None, max_examples=60)
@given(st.lists(_ops, min_size=1, max_size=4))
def test_a_rendered_patch_reads_back_as_the_same_sections(ops: list[FileOp]) -> None:
    parsed = parse_patch(render_patch(ops))
    assert [type(op) for op in parsed] == [type(op) for op in ops]
    for got, want in zip(parsed, ops, strict=True):
        if isinstance(want, UpdateFile):
            assert isinstance(got, UpdateFile)
            assert (got.path, got.move_to) == (want.path, want.move_to)
            # Lines are what the hunk replaces and what it writes; a blank context line reads
            # back blank.
            assert [(h.context, h.end_of_file) for h in got.hunks] == [
                (h.context, h.end_of_file) for h in want.hunks
            ]
            assert [(h.old, h.new) for h in got.hunks] == [(h.old, h.new) for h in want.hunks]
        else:
            assert got == want


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=30, unique=True),
    st.data(),
)
def test_a_patch_made_from_a_change_makes_that_change(
    numbers: list[int], data: st.DataObject
) -> None:
    lines = [f"line {n}" for n in numbers]  # distinct lines: one place fits each hunk
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    new = data.draw(st.lists(st.from_regex(r"new [a-z]{0,5}", fullmatch=True), max_size=4))
    before = lines[max(0, start - 3) : start]
    after = lines[end : end + 3]
    hunk = Hunk(None, (*before, *lines[start:end], *after), (*before, *new, *after))
    patch = render_patch([UpdateFile("f.txt", (hunk,))])
    (op,) = parse_patch(patch)
    assert isinstance(op, UpdateFile)
    text = "".join(line + "\n" for line in lines)
    expected = [*lines[:start], *new, *lines[end:]]
    assert apply_hunks("f.txt", text, op.hunks) == "".join(line + "\n" for line in expected)
