"""Whether a chat-completion request is taken, and what it will generate if it is.

The checks run in llama.cpp's order: the body, the model, the chat template (a strict template
refuses roles that do not alternate), then the prompt's size against the context window
(``n_prompt_tokens >= n_ctx`` is refused with llama.cpp's ``exceed_context_size_error``
body). A request that passes gets its generation planned: the steps, capped by the server's and
the request's ``max_tokens`` and by what is left of the window.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .asgi import Scope, error_body, header
from .config import SERVER_WIDE_FIELDS, DemoConfig
from .replies import ReplyPlan, Step, count_prompt_tokens, last_user_text, plan_reply
from .scripted import directive_in, document, lines, paragraph
from .template import alternation_error
from .tokens import tokenizer_for

SHAPED_REPLIES: dict[str, Callable[[int], str]] = {
    "paragraph": paragraph,
    "lines": lines,
    "document": document,
}
"""The reply of each ``reply_shape`` other than ``markdown``, given a number of tokens."""


class Rejection(Exception):
    """A request refused before generation, with the HTTP response to send."""

    def __init__(
        self, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        super().__init__(str(body.get("error", {}).get("message", status)))
        self.status = status
        self.body = body
        self.headers = list(headers)


def check_api_key(scope: Scope, api_key: str | None) -> None:
    """Raise a 401 `Rejection` unless the request carries ``Authorization: Bearer <api_key>``.

    Does nothing when ``api_key`` is ``None``.
    """
    if api_key is None:
        return
    given = header(scope, b"authorization") or b""
    expected = b"Bearer " + api_key.encode()
    if not hmac.compare_digest(given, expected):
        raise Rejection(
            401,
            error_body("Incorrect API key provided.", "authentication_error", "invalid_api_key"),
        )


def llama_error(message: str, kind: str, **extra: Any) -> dict[str, Any]:
    """llama.cpp's error body: ``{"error": {"code": 400, "message", "type", ...extra}}``.

    The shape of ``format_error_response`` and ``server_task_result_error::to_json`` in
    llama.cpp's ``tools/server``.
    """
    return {"error": {"code": 400, "message": message, "type": kind, **extra}}


def context_size_rejection(prompt_tokens: int, n_ctx: int) -> Rejection:
    """The 400 llama-server sends for a prompt that does not fit its context.

    Message and fields as ``tools/server/server-context.cpp`` and ``server-task.cpp`` write
    them: ``request (N tokens) exceeds the available context size (M tokens), try increasing
    it`` with ``n_prompt_tokens`` and ``n_ctx``.
    """
    message = (
        f"request ({prompt_tokens} tokens) exceeds the available context size "
        f"({n_ctx} tokens), try increasing it"
    )
    body = llama_error(
        message, "exceed_context_size_error", n_prompt_tokens=prompt_tokens, n_ctx=n_ctx
    )
    return Rejection(400, body)


def check_template(config: DemoConfig, messages: list[dict[str, Any]]) -> None:
    """Refuse, as llama.cpp quoting the template's exception, roles a strict template rejects.

    Raises:
        Rejection: 400 ``invalid_request_error`` when ``strict_template`` is on and the roles
            break the rule of `demo_model.template`.
    """
    if not config.strict_template:
        return
    problem = alternation_error(messages)
    if problem is not None:
        raise Rejection(400, llama_error(problem, "invalid_request_error"))


def apply_overrides(config: DemoConfig, overrides: object) -> None:
    """Apply the request's ``demo`` object of knob changes to this request's snapshot.

    Raises:
        Rejection: 400 for a non-object, a server-wide knob, or an invalid value.
    """
    if not isinstance(overrides, dict):
        raise Rejection(400, error_body("'demo' must be an object of demo model knobs"))
    refused = sorted(SERVER_WIDE_FIELDS.intersection(overrides))
    if refused:
        raise Rejection(400, error_body(f"'demo' cannot override server-wide {refused}"))
    try:
        config.apply(overrides)
    except (KeyError, TypeError, ValueError) as exc:
        raise Rejection(400, error_body(f"invalid 'demo' knobs: {exc}")) from exc


def apply_directive(config: DemoConfig, messages: list[dict[str, Any]]) -> None:
    """Apply a ``[demo tps=N delay=S]`` directive of the last user message (`scripted`)."""
    changes = directive_in(last_user_text(messages)).changes
    if changes:
        config.apply(changes)


def requested_max_tokens(request: dict[str, Any]) -> int | None:
    """The request's reply cap (``max_completion_tokens``, ``max_tokens`` or ``n_predict``).

    Raises:
        Rejection: 400 for a value that is not a positive integer (``n_predict: -1`` means
            no limit, as in llama.cpp).
    """
    for name in ("max_completion_tokens", "max_tokens", "n_predict"):
        value = request.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            if name == "n_predict" and value == -1:
                continue  # llama.cpp: -1 means "no limit"
            raise Rejection(400, error_body(f"'{name}' must be a positive integer"))
        return value
    return None


@dataclass(frozen=True)
class Generation:
    """What an admitted request will generate.

    Attributes:
        steps: the tokens, in order, already capped.
        finish_reason: ``"stop"``, ``"tool_calls"`` or ``"length"`` (a cap cut the reply).
        prompt_tokens: the prompt's size by the server's count (tool definitions included).
    """

    steps: list[Step]
    finish_reason: str
    prompt_tokens: int


def prompt_size(config: DemoConfig, request: dict[str, Any], messages: list[dict[str, Any]]) -> int:
    """The prompt's size in tokens by the server's tokenizer, tool definitions included
    (when its template renders them)."""
    tools = request.get("tools") if config.template_tools else None
    offered = tools if isinstance(tools, list) and tools else None
    return count_prompt_tokens(messages, tools=offered, tokenizer=tokenizer_for(config.tokenizer))


def plan_generation(
    config: DemoConfig,
    request: dict[str, Any],
    messages: list[dict[str, Any]],
    prompt_tokens: int,
) -> Generation:
    """Refuse a prompt that does not fit, and plan the capped reply of one that does.

    Args:
        config: this request's snapshot of the knobs.
        request: the parsed body.
        messages: its ``messages``.
        prompt_tokens: from `prompt_size`.

    Raises:
        Rejection: the prompt does not fit ``n_ctx`` (llama.cpp's 400), or a bad cap.
    """
    if prompt_tokens >= config.n_ctx:
        raise context_size_rejection(prompt_tokens, config.n_ctx)
    cap = min(config.max_tokens, config.n_ctx - prompt_tokens)
    requested = None if config.ignore_max_tokens else requested_max_tokens(request)
    if requested is not None:
        cap = min(cap, requested)
    tools = request.get("tools") if request.get("tool_choice") != "none" else None
    plan = plan_reply(messages, tools=tools, reasoning=config.reasoning)
    exact = "reply with exactly:" in last_user_text(messages).lower()
    if config.reply_shape != "markdown" and plan.content and not exact:
        shape = SHAPED_REPLIES[config.reply_shape]
        plan = ReplyPlan(plan.reasoning, shape(cap + 1), plan.tool_calls)
    steps = plan.steps(tokenizer_for(config.tokenizer))
    if len(steps) > cap:
        return Generation(steps[:cap], "length", prompt_tokens)
    return Generation(steps, "tool_calls" if plan.tool_calls else "stop", prompt_tokens)
