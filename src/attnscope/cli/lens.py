"""``attnscope lens``: what each layer already predicts (the logit lens), and who wrote the logit
(direct logit attribution).

    attnscope lens --text "The capital of France is" --model smollm2-135m
    attnscope lens --text "When Mary and John went to the store, John gave a drink to" \\
                   --dla --target " Mary" --versus " John" -o dla.png -o dla.json
    attnscope lens --train-tuned smollm2-tuned.safetensors --texts 400 --steps 300 -o held-out.json
    attnscope lens --text "The capital of France is" --tuned smollm2-tuned.safetensors -o both.png

Reads the residual stream after the embedding and after every attention block and MLP through the
model's own final norm and unembedding, and prints, at one position (default the last), each
point's top tokens, the target's probability and rank, and the KL divergence from the final
distribution. --dla splits the final logit of the target (or the difference target − versus) into
the embedding, each head, each MLP and the biases: the parts sum to the model's logit. -o writes a
figure (.png, .svg, .pdf) or the numbers (.json); --lang zh prints and draws in Chinese.

--train-tuned FILE trains a tuned lens (one affine map per point, Belrose et al. 2023) on the
built-in corpus builtin:python-docs (a seeded split: --held-out texts kept aside, --texts trained
on, each cut to --length tokens; --steps steps of --batch texts at a peak --lr), writes it with its
settings to FILE (.safetensors), then prints KL(final || lens) per point on the held-out texts for
the logit lens and the tuned lens (-o: the per-text numbers as .json, a figure as .png). --tuned FILE
reads --text through that lens too and prints both lenses side by side; a file made for another
model is refused.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..i18n import error, text
from . import MAX_INDEX, IntRange, add_command, add_lang_option, add_overwrite_option, check_output_file, figure_dpi, lens_tuned
from .lens_tuned import cells, header, tops_width, write_outputs
from .plot import MAX_DPI, MIN_DPI


def register(sub) -> None:
    p = add_command(sub, "lens", "the logit lens, the tuned lens and direct logit attribution of a language model",
                    __doc__)
    p.add_argument("--text", default=None, help="the prompt (needed unless --train-tuned)")
    p.add_argument("--model", default="smollm2-135m", metavar="NAME_OR_PATH",
                   help="a causal language model: smollm2-135m, gemma-3-270m, a folder or a .gguf file "
                        "(default: %(default)s)")
    # --position and --top default to None so that one given with --train-tuned is seen (lens_tuned.check: -1, 3)
    p.add_argument("--position", type=IntRange(-MAX_INDEX, MAX_INDEX), default=None, metavar="I",
                   help="the position read, negative from the end (default: the last, -1)")
    p.add_argument("--target", default=None, metavar="TOKEN",
                   help="the token followed, a text that is one token such as ' Paris' (default: the model's "
                        "final top prediction)")
    p.add_argument("--versus", default=None, metavar="TOKEN",
                   help="with --dla: attribute the difference logit(target) − logit(versus)")
    p.add_argument("--top", type=IntRange(1, 50), default=None, metavar="K",
                   help="top tokens shown per point, and with --dla the largest parts ×4 (default: 3)")
    p.add_argument("--dla", action="store_true", help="direct logit attribution instead of the lens")
    p.add_argument("--dpi", type=IntRange(MIN_DPI, MAX_DPI), default=None,  # None: a given one is seen (figure_dpi)
                   help="resolution of a .png, 10..2400 (default: 150)")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="write the figure (.png, .svg, .pdf) or the numbers (.json); repeatable")
    lens_tuned.add_options(p)
    add_lang_option(p, "language of the printed lines and the figure (default: en)")
    add_overwrite_option(p, {"output": "-o", "train_tuned": "--train-tuned"})


def run(args) -> int:
    outs = [check_output_file(Path(p), args.overwrite, "errors.lens_suffix", "errors.lens_no_folder")
            for p in args.output]
    if args.versus is not None and not args.dla:
        raise error(InputError, "errors.lens_versus")
    args.dpi = figure_dpi(args, outs)
    lens_tuned.check(args)
    if args.text is not None:  # '   ' too, as generate's and patch's prompts: a whitespace-only text is no prompt
        from ..viewer.run import check_text
        check_text(args.text)
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    from ..lens import direct_logit_attribution, logit_lens
    from ..lens.figures import dla_figure, lens_figure
    from ..models import load

    model = load(args.model)
    lang = args.lang
    if args.train_tuned is not None:
        return lens_tuned.train(args, model, outs)
    if args.tuned is not None:
        return lens_tuned.show(args, model, outs)
    if args.dla:
        target = args.target if args.versus is None else (args.target, args.versus)
        if args.versus is not None and args.target is None:
            raise error(InputError, "errors.lens_versus_target")
        d = direct_logit_attribution(model, args.text, target=target, position=args.position)
        print(dla_head(model, args.text, d, lang))
        shown = d.parts.abs().argsort(descending=True)[:4 * args.top].tolist()  # all of them when fewer
        print(text("lens.dla_top", lang, n=len(shown)))
        for i in shown:
            print(f"  {d.names[i]:>16}  {float(d.parts[i]):+.4f}")
        result, figure = d.to_dict(), (lambda: dla_figure(d, model.config.n_layers, model.config.n_heads, lang))
    else:
        r = logit_lens(model, args.text, target=args.target, k=args.top)
        L = len(r.tokens)
        if not -L <= args.position < L:
            raise error(InputError, "errors.lens_position", position=args.position, n=L, last=L - 1)
        i = args.position % L
        print(text("lens.head", lang, model=model.name, position=i, token=repr(r.tokens[i]),
                   target=repr(r.decode(int(r.target_ids[i])))))
        w = tops_width([r], i)
        print(header(lang, w))
        for p, point in enumerate(r.points):
            print(f"{point.name:<26} {cells(r, p, i, w)}")
        print(settled_line(r, i, lang))
        result, figure = r.to_dict(), (lambda: lens_figure(r, lang))
    write_outputs(outs, result, figure, args.dpi, lang)
    return 0


def settled_line(r, i: int, lang: str) -> str:
    """Where the target became the top token at position ``i`` and stayed there (the first time it
    was top too, when it fell out again), or that it is not top even at the end."""
    settled, first = r.settled_point(i), r.first_point(i)
    if settled is None:
        return text("lens.not_top", lang, rank=int(r.target_rank[-1, i]))
    if settled is r.points[-1]:
        return text("lens.never", lang)
    if first is not settled:
        return text("lens.first_lost", lang, point=settled.name, first=first.name)
    return text("lens.first", lang, point=settled.name)


def dla_head(model, words: str, d, lang: str) -> str:
    """The DLA's first line: the parts' sum and the model's logit (difference) they sum to, which is
    the logit before a final soft-cap (Gemma's ``final_logit_softcapping``): then the capped one too."""
    fmt = dict(target=d.words, position=d.position, sum=f"{float(d.parts.sum()):.4f}", logit=f"{d.logit:.4f}")
    if model.config.final_logit_softcap is None:
        return text("lens.dla_head", lang, **fmt)
    import torch
    with torch.no_grad():
        out = model.logits(model.encode([words]))[0, d.position]  # (V,): the model's own, capped
    capped = out[d.target[0]] - out[d.target[1]] if isinstance(d.target, tuple) else out[d.target]
    return text("lens.dla_head_capped", lang, capped=f"{float(capped):.4f}", **fmt)
