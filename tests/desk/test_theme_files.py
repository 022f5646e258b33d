"""Theme files: the shipped themes load, bad files give one-line errors, the person's win."""

from __future__ import annotations

from pathlib import Path

from desk.theme_files import (
    SHIPPED_THEMES,
    load_theme_file,
    load_themes,
    ordered_names,
    shipped_theme_dirs,
    theme_dirs,
    user_theme_dir,
)


def test_the_shipped_themes_load_from_the_checkout() -> None:
    loaded = load_themes(shipped_theme_dirs())
    assert loaded.errors == []
    assert set(SHIPPED_THEMES) <= set(loaded.themes)
    assert loaded.themes["light"].dark is False
    assert loaded.themes["high-contrast"].background == "#000000"


def test_theme_dirs_end_with_the_persons_folder(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    assert user_theme_dir(env) == tmp_path / "desk" / "themes"
    assert theme_dirs(env)[-1] == tmp_path / "desk" / "themes"


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "sunset.toml"
    path.write_text('primary = "#ff8800"\n')
    assert load_theme_file(path).name == "sunset"


def test_bad_files_give_one_line_errors_and_the_rest_still_load(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = \n')
    (tmp_path / "unknown.toml").write_text('primary = "#123456"\nsparkle = true\n')
    (tmp_path / "colour.toml").write_text('primary = "not-a-colour"\n')
    (tmp_path / "missing.toml").write_text('name = "missing"\n')
    (tmp_path / "good.toml").write_text('name = "good"\nprimary = "#123456"\n')

    loaded = load_themes([tmp_path])

    assert list(loaded.themes) == ["good"]
    assert len(loaded.errors) == 4
    assert all("\n" not in error for error in loaded.errors)
    by_file = {error.split(":", 1)[0]: error for error in loaded.errors}
    assert "not valid TOML" in by_file[str(tmp_path / "broken.toml")]
    assert "sparkle" in by_file[str(tmp_path / "unknown.toml")]
    assert "not-a-colour" in by_file[str(tmp_path / "colour.toml")]
    assert "primary" in by_file[str(tmp_path / "missing.toml")]


def test_a_later_folder_replaces_a_theme_of_the_same_name(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "my-light.toml").write_text('name = "light"\nprimary = "#aa0000"\ndark = false\n')
    loaded = load_themes([*shipped_theme_dirs(), mine, tmp_path / "absent"])
    assert loaded.themes["light"].primary == "#aa0000"
    assert loaded.origins["light"] == mine / "my-light.toml"


def test_shipped_themes_are_listed_first() -> None:
    assert ordered_names(["nord", "light", "zeta", "dark", "high-contrast"]) == [
        "dark",
        "light",
        "high-contrast",
        "nord",
        "zeta",
    ]
