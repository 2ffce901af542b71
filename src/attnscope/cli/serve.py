"""``attnscope serve``: the viewer as a local web app (uvicorn) with a text box and a JSON API.

    attnscope serve                      # http://127.0.0.1:8000/ ; API docs at /docs
    attnscope serve --port 9000 --model ./bert-base-chinese
"""

from __future__ import annotations

import argparse

from ..errors import InputError


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the viewer and a JSON API on 127.0.0.1",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--max-chars", type=int, default=2000, help="longest accepted text in characters (default 2000)")
    p.set_defaults(func=run)


def run(args) -> int:
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be in 0..65535, got {args.port}")
    if args.max_chars <= 0:
        raise InputError(f"--max-chars must be positive, got {args.max_chars}")
    try:
        from ..server import serve
    except ImportError as e:
        raise InputError(f"attnscope serve needs fastapi and uvicorn ({e.name} is missing): "
                         "pip install 'attnscope[serve]'") from None
    print(f"attnscope: loading the model, then serving http://{args.host}:{args.port}/ (API docs at /docs)",
          flush=True)
    serve(args.host, args.port, model_path=args.model, max_chars=args.max_chars)
    return 0
