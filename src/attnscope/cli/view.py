"""``attnscope view``: write the interactive viewer for a text as one self-contained HTML file.

    attnscope view "The bank of the river." -o attention.html
    attnscope view "The bank of the river." --compare "Money in the bank." --token bank -o bank.html
    attnscope view "translate English to German: The cat sat." --target "Die Katze sass." --model ./t5-small
    attnscope view "The capital of France is" --model smollm2-135m -o lens.html   # with the lens view

A language model's page (SmolLM2, Gemma, Llama, …) has a lens view too: what the residual stream
predicts after each layer's attention and MLP, at every position (texts of up to 64 tokens).

Open the file in any browser, offline: everything (script, styles, data, CJK glyphs) is inside.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..i18n import error, text
from . import IntRange, add_command, add_lang_option, add_overwrite_option, check_new_file


def register(sub) -> None:
    from ..viewer.data import MAX_DECIMALS

    p = add_command(sub, "view", "write an interactive attention viewer (one HTML file)", __doc__.replace("``", ""))
    p.add_argument("text", help="the text to look at")
    p.add_argument("--compare", default=None, help="a second text, for the context view")
    p.add_argument("--token", default=None, help="the token the two texts share (default: the first shared one)")
    p.add_argument("--target", default=None, help="encoder–decoder models (T5, BART): the decoder's text; TEXT is "
                   "then the source (encoder, decoder and cross-attention views)")
    p.add_argument("--model", default=None, help="a local Hugging Face model folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--decimals", type=IntRange(0, MAX_DECIMALS), default=4,
                   help=f"decimals the page starts with, 0..{MAX_DECIMALS} (default 4; the page can change it)")
    p.add_argument("--no-attribution", action="store_true",
                   help="leave out the matrices of the page's attribution switch (norm, rollout, ALTI, value zeroing; "
                   "computed for texts of up to 64 tokens)")
    p.add_argument("--no-lens", action="store_true",
                   help="leave out the lens view of a language model (the logit lens of every layer and position; "
                   "computed for texts of up to 64 tokens)")
    add_lang_option(p, "language of the page's tabs, toolbar and notes (default en; the page has a switch)")
    p.add_argument("-o", "--output", default="attention.html", help="output file (default attention.html)")
    add_overwrite_option(p)


def run(args) -> int:
    from ..viewer.run import check_text, view_data

    for value, what in ((args.text, "text"), (args.compare, "--compare"), (args.token, "--token"),
                        (args.target, "--target")):
        if value is not None:
            check_text(value, what)
    out = Path(args.output)
    if out.is_dir():
        raise error(InputError, "errors.output_folder", path=out, example=out / "attention.html")
    if not out.parent.is_dir():
        raise error(InputError, "errors.cli_patch_no_folder", path=out, folder=out.parent)
    check_new_file(out, args.overwrite)
    from ..models import load
    from ..viewer.html import render, write_page

    model = load(args.model)
    refuse_unread(args, model)
    from ..viewer.seq2seq_page import cli_page
    page = cli_page(model, args.text, args.target, compare=args.compare, decimals=args.decimals,
                    lang=args.lang)  # None: not seq2seq
    if page is None:
        page = render(view_data(model, args.text, compare=args.compare, token=args.token, decimals=args.decimals,
                                attribution=not args.no_attribution, lens=not args.no_lens), lang=args.lang)
    write_page(out, page)
    print(text("analysis.gen_wrote", args.lang, path=out, kb=len(page.encode("utf-8")) / 1024))
    return 0


def refuse_unread(args, model) -> None:
    """InputError naming an option the page of ``model`` would drop: --token, --no-attribution and
    --no-lens on an encoder–decoder's page (it has no context view, attribution switch or lens), and
    --no-lens where the lens does not read the model (an encoder)."""
    from ..config import is_seq2seq
    from ..viewer.lens_view import reads_lens

    if is_seq2seq(model) and args.target is not None:  # without --target the page's own error comes first
        given = [flag for flag, on in (("--token", args.token is not None), ("--no-attribution", args.no_attribution),
                                       ("--no-lens", args.no_lens)) if on]
        if given:
            raise error(InputError, "errors.cli_view_seq2seq_option", flag=given[0], name=model.name)
    elif args.no_lens and not is_seq2seq(model) and not reads_lens(model):
        raise error(InputError, "errors.cli_view_no_lens", name=model.name)
