"""Loads a widget's CSS from the ``.tcss`` file beside its module (shipped as package data)."""

from __future__ import annotations

from pathlib import Path


def css_beside(module_file: str) -> str:
    """The text of ``<module>.tcss`` next to ``module_file`` (pass ``__file__``)."""
    return Path(module_file).with_suffix(".tcss").read_text(encoding="utf-8")
