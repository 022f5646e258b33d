"""The model's names for MCP tools: ``mcp__<server>__<tool>``, always fit for OpenAI, unique."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from agent.mcp.names import MAX_NAME, exposed_names

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_plain_names_are_kept() -> None:
    assert exposed_names("time", ["get_current_time", "convert-time"]) == {
        "get_current_time": "mcp__time__get_current_time",
        "convert-time": "mcp__time__convert-time",
    }


def test_other_characters_become_underscores_and_clashes_get_a_hash() -> None:
    names = exposed_names("docs", ["search.files", "search/files", "añadir"])
    assert names["search.files"] == "mcp__docs__search_files"
    assert names["search/files"].startswith("mcp__docs__search_files_")  # the same once cleaned
    assert names["search/files"] != names["search.files"]
    assert names["añadir"] == "mcp__docs__a_adir"


def test_a_long_name_is_cut_to_64_with_a_hash() -> None:
    (name,) = exposed_names("server", ["x" * 100]).values()
    assert len(name) == MAX_NAME and OPENAI_NAME.fullmatch(name)
    assert exposed_names("server", ["x" * 100]) == exposed_names("server", ["x" * 100])


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,40}", fullmatch=True),
    st.lists(st.text(min_size=1, max_size=80), max_size=12),
)
def test_every_name_fits_openai_and_no_two_tools_share_one(server: str, tools: list[str]) -> None:
    names = exposed_names(server, tools)
    assert set(names) == set(tools)
    assert all(OPENAI_NAME.fullmatch(name) for name in names.values())
    assert len(set(names.values())) == len(names)
    assert all(name.startswith("mcp__") for name in names.values())
