"""Command line: ``python -m demo_model --port 8080 --tps 30 --slots 1 ...``.

Prints one line, the OpenAI base URL (e.g. ``http://127.0.0.1:8080/v1``), on stdout, then
serves until SIGINT or SIGTERM, on which it shuts down gracefully and exits with status 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .config import REPLY_SHAPES, DemoConfig
from .server import DemoModelServer
from .tokens import TOKENIZERS


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (one option per `DemoConfig` knob, plus host and port)."""
    parser = argparse.ArgumentParser(
        prog="python -m demo_model",
        description="desk's demo model: an OpenAI-compatible server that behaves like "
        "llama.cpp's llama-server and streams deterministic text.",
    )
    default = DemoConfig()
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="TCP port, 0 for any (8080)")
    parser.add_argument(
        "--tps",
        type=float,
        default=default.tokens_per_second,
        help="tokens per second, 0 for as fast as possible (%(default)s)",
    )
    parser.add_argument(
        "--prompt-delay",
        type=float,
        default=default.prompt_delay_s,
        help="prompt processing time in seconds before any byte is sent (%(default)s)",
    )
    parser.add_argument("--slots", type=int, default=default.slots, help="parallel slots (1)")
    parser.add_argument(
        "--max-tokens", type=int, default=default.max_tokens, help="reply cap in tokens (400)"
    )
    parser.add_argument("--n-ctx", type=int, default=default.n_ctx, help="context size (8192)")
    parser.add_argument(
        "--n-ctx-train",
        type=int,
        default=default.n_ctx_train,
        help="training context reported by /v1/models (%(default)s)",
    )
    parser.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        default=default.tokenizer,
        help="how prompts are counted and replies cut into tokens (%(default)s)",
    )
    parser.add_argument(
        "--strict-template",
        action="store_true",
        help="answer 400 when roles do not alternate or a tool call lacks its result",
    )
    parser.add_argument(
        "--reply-shape",
        choices=REPLY_SHAPES,
        default=default.reply_shape,
        help="markdown replies, one endless paragraph (one line), endless soft-broken lines, or "
        "an endless Markdown document (%(default)s)",
    )
    parser.add_argument(
        "--flush-each-token",
        action="store_true",
        help="write and flush one SSE event per token, as llama-server does",
    )
    parser.add_argument("--model", default=default.model, help="model id (demo)")
    parser.add_argument(
        "--strict-model", action="store_true", help="answer 404 for any other model name"
    )
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument(
        "--fault",
        default=None,
        help="http:<status>, context, malformed, early_close, drop, no_finish or stall",
    )
    parser.add_argument(
        "--fault-after-tokens",
        type=int,
        default=default.fault_after_tokens,
        help="tokens sent before a stream fault acts (3)",
    )
    parser.add_argument(
        "--fault-times", type=int, default=None, help="requests the fault applies to (all)"
    )
    parser.add_argument(
        "--reasoning", action="store_true", help="stream reasoning_content before the reply"
    )
    parser.add_argument(
        "--usage-on-finish-chunk",
        action="store_true",
        help="put usage on the finish chunk instead of a final choices: [] chunk",
    )
    parser.add_argument("--log-level", default="warning", help="uvicorn log level (warning)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo model server until SIGINT/SIGTERM.

    Returns:
        The exit status: 0 after a signal, 2 for bad arguments (argparse exits itself).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = DemoConfig(
            tokens_per_second=args.tps,
            prompt_delay_s=args.prompt_delay,
            slots=args.slots,
            max_tokens=args.max_tokens,
            n_ctx=args.n_ctx,
            n_ctx_train=args.n_ctx_train,
            tokenizer=args.tokenizer,
            strict_template=args.strict_template,
            reply_shape=args.reply_shape,
            flush_each_token=args.flush_each_token,
            model=args.model,
            strict_model=args.strict_model,
            api_key=args.api_key,
            fault=args.fault,
            fault_after_tokens=args.fault_after_tokens,
            fault_times=args.fault_times,
            reasoning=args.reasoning,
            usage_on_finish_chunk=args.usage_on_finish_chunk,
        )
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = DemoModelServer(config, host=args.host, port=args.port, log_level=args.log_level)
    try:
        server.start()
    except OSError as exc:
        print(f"demo model: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(server.base_url, flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
