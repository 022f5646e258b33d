"""desk's widgets, one per module, each with its CSS in a ``.tcss`` file beside it.

A light face: importing one widget's module loads that widget, not the others (the assistant's
reply loads Markdown and syntax highlighting, which the first frame does not need). The names
below are imported on first use; type checkers read ``__init__.pyi``.
"""

from __future__ import annotations

from agent.faces import lazy_names

__all__, __getattr__ = lazy_names(
    __name__,
    {
        "AssistantReply": "desk.widgets.assistant_reply",
        "PromptInput": "desk.widgets.prompt_input",
        "StatusBar": "desk.widgets.status_bar",
        "Transcript": "desk.widgets.transcript",
        "UserPrompt": "desk.widgets.user_prompt",
    },
)
