"""The demo model's ASGI app: llama.cpp-like endpoints plus ``/demo/*`` test controls.

Endpoints (``[key]``: needs the bearer key when ``api_key`` is set):

- ``GET /health`` (also ``/v1/health``): ``{"status": "ok"}``
- ``GET /v1/models`` (also ``/models``) [key]: an OpenAI model list with the one model and
  llama.cpp's ``meta`` (``n_ctx_train``, ``n_ctx``, ``n_vocab``, ...)
- ``GET /slots`` [key]: ``[{"id", "id_task", "n_ctx", "is_processing"}]`` like llama.cpp
- ``GET /props`` [key]: ``default_generation_settings.n_ctx``, ``total_slots``, ... (no
  top-level ``n_ctx``: llama.cpp has none)
- ``POST /tokenize`` [key]: ``{"content": TEXT, "add_special": false, "with_pieces": false}``
  -> ``{"tokens": [id, ...]}`` (with pieces: ``[{"id", "piece"}, ...]``), by the configured
  tokenizer, as llama.cpp answers; special tokens of the template count one each unless
  ``"parse_special": false``
- ``POST /apply-template`` [key]: ``{"messages": [...], "tools": [...]}`` -> ``{"prompt": TEXT}``,
  the request rendered by the demo model's template (`demo_model.prompt_text`): its
  ``/tokenize`` count is the ``usage.prompt_tokens`` of the same chat request; a strict template
  refuses what the chat endpoint refuses
- ``POST /v1/chat/completions`` (also ``/chat/completions``) [key]: see `chat`
- ``GET /demo/requests[?since=ID]``: ``{"requests": [record, ...]}`` (records with id > ID)
- ``GET /demo/config``: the knobs; ``POST /demo/config``: a JSON object of knob changes,
  applied all or nothing (400 on a bad one), answers the new knobs
- ``POST /demo/reset``: forget the records; with body ``{"config": true}`` also restore the
  knobs the app started with
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from .admission import Rejection, check_api_key, check_template
from .asgi import Receive, Scope, Send, error_body, read_body, send_json
from .chat import INTENTIONAL_DROP, ChatCompletions
from .config import DemoConfig
from .prompt_text import render_prompt, tokenize_prompt
from .records import RecordBook
from .slots import SlotPool
from .tokens import token_id, tokenizer_for

_logger = logging.getLogger(__name__)


class _IntentionalDropFilter(logging.Filter):
    """Hides uvicorn's complaint about an unfinished response when the app dropped it on
    purpose (the ``drop``/``early_close`` faults); every other message passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            INTENTIONAL_DROP.get()
            and record.getMessage().startswith("ASGI callable returned without completing")
        )


_filter_lock = threading.Lock()
_filter_installed = False


def _install_log_filter() -> None:
    global _filter_installed
    with _filter_lock:
        if not _filter_installed:
            logging.getLogger("uvicorn.error").addFilter(_IntentionalDropFilter())
            _filter_installed = True


class DemoModelApp:
    """ASGI app of the demo model server.

    Args:
        config: the knobs (kept by reference and changed in place by `configure`); a fresh
            `DemoConfig` when ``None``.
        records: where requests are recorded; a fresh `RecordBook` when ``None``.
    """

    def __init__(self, config: DemoConfig | None = None, records: RecordBook | None = None) -> None:
        self.config = config if config is not None else DemoConfig()
        self.records = records if records is not None else RecordBook()
        self._initial = self.config.copy()
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool = SlotPool(lambda: self.config.slots)
        self._stopping = asyncio.Event()
        self._created = int(time.time())
        self._chat = ChatCompletions(
            snapshot=self.snapshot_config,
            consume_fault=self._consume_fault,
            records=self.records,
            pool=self._pool,
            stopping=self._stopping,
        )
        _install_log_filter()

    # -- thread-safe control ----------------------------------------------------------------

    def snapshot_config(self) -> DemoConfig:
        """Return a consistent copy of the knobs (any thread)."""
        with self._lock:
            return self.config.copy()

    def configure(self, changes: Mapping[str, object]) -> DemoConfig:
        """Change knobs all or nothing, from any thread, and wake requests waiting for a slot.

        Args:
            changes: knob name -> value, see `DemoConfig`.

        Returns:
            A copy of the knobs after the change.

        Raises:
            KeyError: an unknown knob.
            TypeError: a value of the wrong type.
            ValueError: a value out of range.
        """
        with self._lock:
            self.config.apply(changes)
            result = self.config.copy()
        self._wake_slots()
        return result

    def reset(self, *, config: bool = False) -> None:
        """Forget all records; with ``config=True`` also restore the starting knobs."""
        self.records.clear()
        if config:
            self.configure(self._initial.to_dict())

    def attach_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Tell the app which event loop serves it (for cross-thread wake-ups)."""
        self._loop = loop

    def begin_shutdown(self) -> None:
        """End every running request at once (call on the serving loop's thread).

        A request that has sent nothing gets a 503; a stream is ended without ``[DONE]``.
        """
        self._stopping.set()

    def _wake_slots(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._pool.wake()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._pool.wake)

    def _consume_fault(self) -> str | None:
        with self._lock:
            fault = self.config.fault
            if fault is not None and self.config.fault_times is not None:
                self.config.fault_times -= 1
                if self.config.fault_times <= 0:
                    self.config.fault = None
                    self.config.fault_times = None
            return fault

    # -- ASGI -------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        method, path = scope["method"], scope["path"]
        if path in ("/v1/chat/completions", "/chat/completions"):
            if method != "POST":
                await _method_not_allowed(send)
                return
            await self._chat(scope, receive, send)
            return
        routes = {
            ("GET", "/health"): self._health,
            ("GET", "/v1/health"): self._health,
            ("GET", "/v1/models"): self._models,
            ("GET", "/models"): self._models,
            ("GET", "/slots"): self._slots,
            ("GET", "/props"): self._props,
            ("POST", "/tokenize"): self._tokenize,
            ("POST", "/apply-template"): self._apply_template,
            ("GET", "/demo/requests"): self._demo_requests,
            ("GET", "/demo/config"): self._demo_config,
            ("POST", "/demo/config"): self._demo_config,
            ("POST", "/demo/reset"): self._demo_reset,
        }
        handler = routes.get((method, path))
        if handler is None:
            if any(known == path for _, known in routes):
                await _method_not_allowed(send)
            else:
                await send_json(send, 404, error_body(f"no route for {path}", code="not_found"))
            return
        body = await read_body(receive)
        if body is None:
            return
        try:
            status, value = handler(scope, body)
        except Rejection as rejection:
            await send_json(send, rejection.status, rejection.body, rejection.headers)
            return
        await send_json(send, status, value)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- endpoints: each returns (status, JSON value) -------------------------------------

    def _health(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        return 200, {"status": "ok"}

    def _models(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        config = self.snapshot_config()
        check_api_key(scope, config.api_key)
        model = {
            "id": config.model,
            "object": "model",
            "created": self._created,
            "owned_by": "desk-demo",
            "meta": {
                "vocab_type": 2,
                "n_vocab": 32000,
                "n_ctx": config.n_ctx,
                "n_ctx_train": config.n_ctx_train,
                "n_embd": 64,
                "n_params": 1_000_000,
                "size": 4_000_000,
            },
        }
        return 200, {"object": "list", "data": [model]}

    def _slots(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        config = self.snapshot_config()
        check_api_key(scope, config.api_key)
        return 200, [
            {"id": slot, "id_task": -1, "n_ctx": config.n_ctx, "is_processing": busy}
            for slot, busy in self._pool.snapshot()
        ]

    def _props(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        config = self.snapshot_config()
        check_api_key(scope, config.api_key)
        return 200, {
            "default_generation_settings": {
                "n_ctx": config.n_ctx,
                "params": {"n_predict": config.max_tokens},
            },
            "total_slots": config.slots,
            "model_path": config.model,
            "chat_template": "",
            "build_info": "desk demo model",
        }

    def _tokenize(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        config = self.snapshot_config()
        check_api_key(scope, config.api_key)
        request = _json_object(body)
        content = request.get("content", "")
        if not isinstance(content, str):
            return 400, error_body("'content' must be a string")
        parse_special = request.get("parse_special") is not False
        pieces = tokenize_prompt(
            content, tokenizer_for(config.tokenizer), parse_special=parse_special
        )
        ids = [token_id(piece) for piece in pieces]
        if request.get("add_special") is True:
            pieces, ids = ["<s>", *pieces], [1, *ids]
        if request.get("with_pieces") is True:
            pairs = zip(ids, pieces, strict=True)
            return 200, {"tokens": [{"id": i, "piece": piece} for i, piece in pairs]}
        return 200, {"tokens": ids}

    def _apply_template(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        config = self.snapshot_config()
        check_api_key(scope, config.api_key)
        request = _json_object(body)
        messages = request.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return 400, error_body("'messages' must be an array of objects")
        tools = request.get("tools")
        if tools is not None and not isinstance(tools, list):
            return 400, error_body("'tools' must be an array")
        check_template(config, messages)
        rendered = tools if config.template_tools else None
        return 200, {"prompt": render_prompt(messages, rendered or None)}

    def _demo_requests(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        try:
            since = int(query.get("since", ["0"])[0])
        except ValueError:
            return 400, error_body("'since' must be an integer")
        records = [r.to_dict() for r in self.records.list() if r.id > since]
        return 200, {"requests": records}

    def _demo_config(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        if scope["method"] == "GET":
            return 200, self.snapshot_config().to_dict()
        changes = _json_object(body)
        try:
            config = self.configure(changes)
        except (KeyError, TypeError, ValueError) as exc:
            return 400, error_body(f"invalid demo model knobs: {exc}")
        _logger.info("demo model knobs changed: %s", changes)
        return 200, config.to_dict()

    def _demo_reset(self, scope: Scope, body: bytes) -> tuple[int, Any]:
        options = _json_object(body) if body.strip() else {}
        self.reset(config=options.get("config") is True)
        return 200, {"status": "ok"}


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError as exc:
        raise Rejection(400, error_body(f"request body is not valid JSON: {exc}")) from exc
    if not isinstance(value, dict):
        raise Rejection(400, error_body("request body must be a JSON object"))
    return value


async def _method_not_allowed(send: Send) -> None:
    await send_json(send, 405, error_body("method not allowed", code="method_not_allowed"))
