"""``attnscope serve``: the viewer as a local web app (uvicorn) with a text box and a JSON API.

    attnscope serve                      # http://127.0.0.1:8000/ ; API docs at /docs
    attnscope serve --port 9000 --model ./bert-base-chinese

The API has no authentication: it listens on this machine only (127.0.0.1) unless --host says
otherwise, and then warns. Requests are bounded: texts up to --max-chars characters (and the
model's context length in tokens), bodies to what such a text needs and to 10 seconds to arrive
(408 after), and a short queue for the model (503 when it is full; /healthz always answers).
Texts whose q, k, v pass 16 MB (over 145 tokens of SmolLM2; all-MiniLM-L6-v2's 512 always fit; see
--ship-up-to) are held by the server (within --held-mb) and the page reads their weights one layer
and head at a time.
"""

from __future__ import annotations

from ..errors import InputError
from ..i18n import error
from . import MAX_INDEX, IntRange, add_command, add_lang_option

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def register(sub) -> None:
    p = add_command(sub, "serve", "serve the viewer and a JSON API on 127.0.0.1", __doc__.replace("``", ""))
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 opens it to the network)")
    p.add_argument("--port", type=IntRange(0, 65535), default=8000, help="port, 1..65535, or 0 for any free one (default 8000)")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--max-chars", type=IntRange(1, 1_000_000), default=None, help="longest accepted text in characters, "
                   "1..1000000 (default 8 × the model's context length: 4096 for a 512-token model)")
    p.add_argument("--held-mb", type=IntRange(1, 1 << 20), default=2048, help="memory for the q, k, v of long texts the server "
                   "holds, in MB; the least recent text goes first (default 2048)")
    p.add_argument("--ship-up-to", type=IntRange(0, MAX_INDEX), default=None,
                   help="texts of at most this many tokens travel whole in "
                   "the page (q, k, v; it computes everything itself); longer ones are held by the server and read "
                   "one layer and head at a time (default: texts whose q, k, v fit in 16 MB, e.g. 512 tokens of "
                   "all-MiniLM-L6-v2, 145 of SmolLM2-135M; 0 holds every text)")
    add_lang_option(p, "language of the page's tabs, toolbar and notes (the page has a switch) and of the API's "
                       "error messages (default en)")
    p.add_argument("--log-level", default="warning", choices=LOG_LEVELS,
                   help="uvicorn's log level; info also logs every request (default warning)")


def run(args) -> int:
    try:
        from ..server import serve
    except ImportError as e:
        raise error(InputError, "errors.cli_serve_missing", name=e.name) from None
    serve(args.host, args.port, model_path=args.model, max_chars=args.max_chars, held_bytes=args.held_mb << 20,
          ship_up_to=args.ship_up_to,
          log_level=args.log_level, lang=args.lang,
          say=lambda line: print(line, flush=True))
    return 0
