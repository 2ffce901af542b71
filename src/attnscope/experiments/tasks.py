"""Training tasks for the "training" experiment: one that needs sharp retrieval, one on real text.

Every task produces ``(ids (B, L) long, targets (B, L) long)`` with target ``-100`` where no loss
is taken, from a ``torch.Generator`` (so that a seed fixes every batch). Each task also states

* ``baseline``: the loss of a model that learned only what needs no attention (ln V for recall,
  the unigram loss for lm); a run that stays near it has stalled;
* ``threshold``: the loss that counts as "learned" for the steps-to-threshold measure.

Tasks:

``recall`` — associative recall. A sequence holds ``n_pairs`` (key, value) pairs, each written as
one token ``key·V + value``, followed by ``n_queries`` query tokens naming a key; the target at a
query is the value stored with that key. Keys in a sequence are distinct, values uniform, so
without attention the best loss is ln V. Retrieval needs the query to pick out one position among
n_pairs: the sharp attention that the article says unscaled softmax forces too early.

``lm`` — character-level language modelling, causal, on the English text of the Python Language
Reference that ships with every CPython (``pydoc_data.topics``, the text of ``help()``). Characters
seen fewer than ``min_count`` times map to one "unknown" id. The last 10 % of the text is held out.
Reference losses come from count models on the training text, scored on the held-out text
(add-0.1 smoothing): the baseline is the unigram loss (what a model that ignores its input gets;
a run stuck near it learned nothing), the threshold is the bigram loss (what the best model that
sees only the current character gets; beating it in a few hundred steps needs attention to the
characters before).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
import torch

from ..errors import ConfigError
from ..i18n import error

IGNORE = -100
TASKS = ("recall", "lm")


@dataclass
class AssociativeRecall:
    """Key-value recall; see the module docstring. Sizes: L = n_pairs + n_queries."""

    n_keys: int = 16
    n_values: int = 16
    n_pairs: int = 8
    n_queries: int = 8
    threshold: float = 0.5  # nats: on average the right value gets probability e^-0.5 ≈ 0.6 or more

    name = "recall"
    causal = False
    position = "none"  # retrieval is by content; positions would only add a shortcut to learn

    def __post_init__(self) -> None:
        for f in ("n_keys", "n_values", "n_pairs", "n_queries"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise error(ConfigError, "errors.experiment_recall_positive", name=f, value=repr(v))
        if self.n_pairs > self.n_keys:
            raise error(ConfigError, "errors.experiment_recall_pairs", n_pairs=self.n_pairs, n_keys=self.n_keys)
        if self.n_queries > self.n_pairs:
            raise error(ConfigError, "errors.experiment_recall_queries", n_queries=self.n_queries, n_pairs=self.n_pairs)
        if self.n_values < 2:
            raise error(ConfigError, "errors.experiment_recall_values")

    @property
    def vocab_size(self) -> int:
        return self.n_keys * self.n_values + self.n_keys

    @property
    def n_outputs(self) -> int:
        return self.n_values

    @property
    def seq_len(self) -> int:
        return self.n_pairs + self.n_queries

    @property
    def baseline(self) -> float:
        return math.log(self.n_values)

    def describe(self) -> dict:
        return {"name": self.name, "n_keys": self.n_keys, "n_values": self.n_values, "n_pairs": self.n_pairs,
                "n_queries": self.n_queries, "seq_len": self.seq_len, "vocab_size": self.vocab_size,
                "baseline": self.baseline, "threshold": self.threshold, "causal": self.causal}

    def batch(self, B: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        K, V, P, Qn = self.n_keys, self.n_values, self.n_pairs, self.n_queries
        keys = torch.rand(B, K, generator=generator).argsort(dim=-1)[:, :P]  # (B, P) distinct keys
        values = torch.randint(0, V, (B, P), generator=generator)  # (B, P)
        which = torch.rand(B, P, generator=generator).argsort(dim=-1)[:, :Qn]  # (B, Qn) pairs asked
        q_keys = keys.gather(1, which)  # (B, Qn)
        ids = torch.cat([keys * V + values, K * V + q_keys], dim=1)  # (B, P + Qn)
        targets = torch.cat([torch.full((B, P), IGNORE), values.gather(1, which)], dim=1)  # (B, P + Qn)
        return ids, targets

    eval_batch = batch  # held-out sequences: fresh samples


@dataclass
class CharLM:
    """Character-level causal LM on ``pydoc_data.topics``; see the module docstring."""

    seq_len: int = 32
    min_count: int = 20

    name = "lm"
    causal = True
    position = "learned"

    def __post_init__(self) -> None:
        if isinstance(self.seq_len, bool) or not isinstance(self.seq_len, int) or self.seq_len < 2:
            raise error(ConfigError, "errors.experiment_lm_seq_len", value=repr(self.seq_len))
        c = corpus(self.min_count)
        if self.seq_len + 1 > len(c["heldout"]):
            raise error(ConfigError, "errors.experiment_lm_too_long", value=self.seq_len)
        self._c = c

    @property
    def vocab_size(self) -> int:
        return self._c["vocab_size"]

    @property
    def n_outputs(self) -> int:
        return self.vocab_size  # the next character, over the whole vocabulary

    @property
    def baseline(self) -> float:
        return self._c["unigram_loss"]

    @property
    def threshold(self) -> float:
        return self._c["bigram_loss"]

    def describe(self) -> dict:
        c = self._c
        return {"name": self.name, "corpus": c["source"], "corpus_chars": c["n_chars"], "corpus_sha256": c["sha256"],
                "train_chars": len(c["train"]), "heldout_chars": len(c["heldout"]), "vocab_size": c["vocab_size"],
                "min_count": self.min_count, "seq_len": self.seq_len, "unigram_loss": c["unigram_loss"],
                "bigram_loss": c["bigram_loss"], "trigram_loss": c["trigram_loss"],
                "baseline": self.baseline, "threshold": self.threshold, "causal": self.causal}

    def _windows(self, src: torch.Tensor, B: int, generator: torch.Generator):
        L = self.seq_len
        start = torch.randint(0, len(src) - L, (B,), generator=generator)  # (B,)
        idx = start[:, None] + torch.arange(L + 1)  # (B, L+1)
        chunk = src[idx]  # (B, L+1)
        return chunk[:, :-1], chunk[:, 1:]  # next-character targets

    def batch(self, B: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return self._windows(self._c["train"], B, generator)

    def eval_batch(self, B: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return self._windows(self._c["heldout"], B, generator)


TASK_CLASSES = {"recall": AssociativeRecall, "lm": CharLM}  # the classes of TASKS


def make_task(name: str, **options):
    """A task by name (:data:`TASKS`); options go to its dataclass (``make_task(**task_options(t))``
    rebuilds ``t``, as the worker processes do)."""
    if name not in TASK_CLASSES:
        raise error(ConfigError, "errors.experiment_unknown_task", name=repr(name), names=", ".join(TASKS))
    return TASK_CLASSES[name](**options)


def eval_set(task, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed held-out set of n sequences (fresh samples for recall, held-out text for lm)."""
    return task.eval_batch(n, torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------
# the corpus
# ----------------------------------------------------------------------------------------------

def corpus_text() -> tuple[str, str]:
    """The Python Language Reference as plain text, as ``help()`` shows it, and where it came from.

    ``pydoc_data.topics.topics`` maps help topics ("assert", "if", "TYPES", ...) to English prose
    with code samples; it is part of the standard library (about 0.5 MB).
    """
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip it
        raise error(ConfigError, "errors.experiment_lm_pydoc") from None
    return "\n".join(topics[k] for k in sorted(topics)), "pydoc_data.topics (Python Language Reference text)"


@lru_cache(maxsize=4)
def corpus(min_count: int = 20) -> dict:
    """Tokenised corpus, its 90/10 split and the n-gram reference losses (computed once per process)."""
    text, source = corpus_text()
    points = torch.from_numpy(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64))  # (N,)
    chars, counts = torch.unique(points, return_counts=True)
    kept = chars[counts >= min_count]  # code points, sorted
    lookup = torch.zeros(int(chars.max()) + 1, dtype=torch.long)  # 0 = unknown
    lookup[kept] = torch.arange(1, len(kept) + 1)
    data = lookup[points]  # (N,)
    V = len(kept) + 1
    split = int(0.9 * len(data))
    train, heldout = data[:split], data[split:]
    return {"source": source, "n_chars": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()[:16],
            "vocab_size": V, "train": train, "heldout": heldout,
            "unigram_loss": ngram_loss(train, heldout, V, 1), "bigram_loss": ngram_loss(train, heldout, V, 2),
            "trigram_loss": ngram_loss(train, heldout, V, 3)}


def ngram_loss(train: torch.Tensor, heldout: torch.Tensor, V: int, n: int, alpha: float = 0.1) -> float:
    """Held-out cross-entropy (nats/char) of an n-gram model with add-alpha counts from ``train``."""
    def codes(x: torch.Tensor, m: int) -> torch.Tensor:  # the m-gram ending at each position ≥ m−1
        c = torch.zeros(len(x) - m + 1, dtype=torch.long)
        for j in range(m):
            c = c * V + x[j:len(x) - m + 1 + j]
        return c

    if n == 1:
        counts = torch.bincount(train, minlength=V).double()
        p = (counts[heldout] + alpha) / (counts.sum() + alpha * V)
        return float(-p.log().mean())
    full_tr, ctx_tr = codes(train, n), codes(train[:-1], n - 1)
    full_te, ctx_te = codes(heldout, n), codes(heldout[:-1], n - 1)
    # Counts looked up by sorted search (V^n can be too large for a dense table).
    def count(table: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        u, c = torch.unique(table, return_counts=True)
        i = torch.searchsorted(u, query).clamp(max=len(u) - 1)
        return torch.where(u[i] == query, c[i], torch.zeros_like(c[i])).double()

    p = (count(full_tr, full_te) + alpha) / (count(ctx_tr, ctx_te) + alpha * V)
    return float(-p.log().mean())


def task_options(task) -> dict:
    """The constructor options of a task, to send to a worker process."""
    if isinstance(task, (AssociativeRecall, CharLM)):
        return {"name": task.name, **asdict(task)}  # the dataclass fields are the options
    raise error(ConfigError, "errors.experiment_not_task", task=repr(task))

