"""``attnscope generate``: continue a prompt with a decoder model, printing the text as it comes.

    attnscope generate "The capital of France is" --model smollm2-135m
    attnscope generate "What is the capital of France?" --chat --max-new-tokens 40
    attnscope generate "我喜欢人工智能，因为" --model gemma-3-270m --temperature 0.8 --seed 1 --view gen.html
    attnscope generate "translate English to German: The cat sat." --model ./t5-small

--model takes an installed model package (smollm2-135m, gemma-3-270m), a .gguf file or a Hugging
Face folder of a llama, qwen2, mistral, gemma3, gpt2 or bloom model, or of an encoder–decoder
model (T5, BART): then the prompt is the source and the output its target, which attnscope view SOURCE
--target TARGET shows. --temperature 0 (the default) is greedy decoding. --view writes the viewer
page of a decoder's prompt and generated tokens (one HTML file). --lang zh says the notes around
the generated text (on stderr) and the --view page in Chinese.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..i18n import error, text
from . import MAX_INDEX, MAX_SEED, IntRange, add_command, add_lang_option, add_overwrite_option, check_device, check_new_file


def register(sub) -> None:
    p = add_command(sub, "generate", "continue a prompt with a decoder model (streams the text)", __doc__.replace("``", ""))
    p.add_argument("prompt", help="the text to continue (with --chat: the user's message)")
    p.add_argument("--model", default="smollm2-135m",
                   help="model package name, .gguf file or Hugging Face folder (default smollm2-135m)")
    p.add_argument("--max-new-tokens", type=IntRange(1, MAX_INDEX), default=64, help="at most this many new tokens (default 64)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default); higher = more random")
    p.add_argument("--top-k", type=IntRange(1, MAX_INDEX), default=None, help="sample among the k most likely tokens")
    p.add_argument("--top-p", type=float, default=None, help="sample among the most likely tokens whose probability reaches p")
    p.add_argument("--seed", type=IntRange(0, MAX_SEED), default=None, help="random seed, for reproducible samples")
    p.add_argument("--chat", action="store_true", help="apply the model's chat template to the prompt")
    p.add_argument("--system", default=None, help="a system message (with --chat)")
    p.add_argument("--view", default=None, metavar="OUT.html", help="also write the viewer of the generation")
    p.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N or mps")
    add_lang_option(p, "language of the notes around the generated text and of the --view page (default: en)")
    add_overwrite_option(p, {"view": "--view"})


def run(args) -> int:
    from ..viewer.run import check_text

    check_text(args.prompt, "the prompt")
    if args.temperature < 0.0:  # the float options' one-line error, as IntRange's for the integer ones
        raise error(InputError, "cli.at_least", flag="--temperature", low=0.0, value=args.temperature)
    if args.top_p is not None and not 0.0 < args.top_p <= 1.0:
        raise error(InputError, "errors.top_p", value=args.top_p)
    if args.system is not None and not args.chat:  # before the model loads, in the command's words
        raise error(InputError, "errors.cli_generate_system")
    if args.temperature == 0.0 and (args.top_k is not None or args.top_p is not None):
        raise error(InputError, "errors.models_greedy_filter", name="--top-k" if args.top_k is not None else "--top-p",
                    temperature="--temperature")
    if args.temperature == 0.0 and args.seed is not None:  # greedy draws nothing at random: the seed would be dropped
        raise error(InputError, "errors.cli_generate_greedy_seed")
    device = check_device(args.device)
    view = Path(args.view) if args.view else None
    if view is not None and (view.is_dir() or not view.parent.is_dir()):
        raise error(InputError, "errors.cli_generate_view", path=view)
    if view is not None:
        check_new_file(view, args.overwrite, "--view")
    from ..models import load
    from ..models.seq2seq_model import Seq2SeqModel

    model = load(args.model, device=device)
    if not model.can_generate:
        raise error(InputError, "errors.cli_generate_not_decoder", model=args.model, family=model.family)
    seq2seq = isinstance(model, Seq2SeqModel)
    if seq2seq and (args.chat or args.system is not None or view is not None):
        flag = "--chat" if args.chat else "--system" if args.system is not None else "--view"
        raise error(InputError, "errors.cli_generate_seq2seq_flag", flag=flag, name=model.name)

    def show(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    settings: dict[str, Any] = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                    top_k=args.top_k, top_p=args.top_p, seed=args.seed, stream=show)
    if not seq2seq:  # an encoder-decoder's generate takes no chat template
        settings.update(chat=args.chat, system=args.system)
    gen = model.generate(args.prompt, **settings)
    sys.stdout.write("\n")
    sys.stdout.flush()
    if gen.partial_character:
        print(text("analysis.gen_partial", args.lang), file=sys.stderr)
    if view is not None:
        from ..viewer.generation import save_generation_html

        save_generation_html(model, gen, view, lang=args.lang)
        print(text("analysis.gen_wrote", args.lang, path=view, kb=view.stat().st_size / 1024), file=sys.stderr)
    return 0
