"""``attnscope serve``: the viewer as a local web app (uvicorn) with a text box and a JSON API.

    attnscope serve                      # http://127.0.0.1:8000/ ; API docs at /docs
    attnscope serve --port 9000 --model ./bert-base-chinese

The API has no authentication: it listens on this machine only (127.0.0.1) unless --host says
otherwise, and then warns. Requests are bounded: bodies up to 1 MB, texts up to --max-chars
characters, and a short queue for the model (503 when it is full).
"""

from __future__ import annotations

import argparse

from ..errors import InputError

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the viewer and a JSON API on 127.0.0.1",
                       description=__doc__.replace("``", ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=int, default=8000, help="port, 1..65535, or 0 for any free one (default 8000)")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--max-chars", type=int, default=2000, help="longest accepted text in characters, "
                   "1..50000 (default 2000)")
    p.add_argument("--log-level", default="warning", choices=LOG_LEVELS,
                   help="uvicorn's log level; info also logs every request (default warning)")
    p.set_defaults(func=run)


def run(args) -> int:
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be in 0..65535, got {args.port}")
    if not 1 <= args.max_chars <= 50_000:
        raise InputError(f"--max-chars must be in 1..50000, got {args.max_chars}")
    try:
        from ..server import serve
    except ImportError as e:
        raise InputError(f"attnscope serve needs fastapi, fastapi-offline and uvicorn ({e.name} is missing): "
                         "pip install 'attnscope[serve]'") from None
    serve(args.host, args.port, model_path=args.model, max_chars=args.max_chars, log_level=args.log_level,
          say=lambda line: print(line, flush=True))
    return 0
