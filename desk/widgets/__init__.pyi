"""Type checkers read this; at run time the face imports each name on first use."""

from __future__ import annotations

from desk.widgets.assistant_reply import AssistantReply
from desk.widgets.prompt_input import PromptInput
from desk.widgets.status_bar import StatusBar
from desk.widgets.transcript import Transcript
from desk.widgets.user_prompt import UserPrompt

__all__ = ["AssistantReply", "PromptInput", "StatusBar", "Transcript", "UserPrompt"]
