"""The tuned lens: one affine map per residual point, learnt so that the read-out matches the end.

The logit lens reads a point ``h_p`` as the last layer would, ``W_U · norm_f(h_p)``; early points
live in a different basis and read badly. Belrose et al. (2023) put a learnt affine map in front,
``lens_p(h) = W_U · norm_f(A_p h + b_p)``, started at the identity (``A_p = I``, ``b_p = 0``: the
logit lens) and trained to minimise ``KL(P_final ‖ P_lens_p)`` over a corpus
(:func:`attnscope.lens.tuned_train.train_tuned_lens`). This module holds the maps
(:class:`TunedLens`), reads texts through them (:func:`tuned_lens`, the same
:class:`~attnscope.lens.logit_lens.LensResult` as the logit lens) and saves/loads them as
safetensors with their training settings in the file's metadata.

The points are the logit lens's (:func:`~attnscope.lens.stream.points`): ``embed`` and, per layer,
``attn_resid`` and ``out``. The last point's map is the identity and is not trained: the final
distribution read through itself has KL 0 and no gradient.

A file names the model it was made for by a *fingerprint* (:func:`model_fingerprint`): a hash of
every weight's name, shape and up to 1,024 evenly spaced values as float32. Loading a file for a
model with another fingerprint, or with other points or width, is refused in one sentence.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch
import torch.nn.functional as F

from .. import __version__
from ..errors import InputError
from ..i18n import error
from .logit_lens import LensResult, logit_lens
from .stream import check_language_model, points

Tensor = torch.Tensor

FORMAT = "attnscope-tuned-lens"
FORMAT_VERSION = "1"
#: How many values of each weight the fingerprint reads (evenly spaced).
SAMPLE = 1024


@dataclass
class TunedLens:
    """One affine map per point: ``weight`` (P, d, d) and ``bias`` (P, d), float32, applied as
    ``h @ weight[p]ᵀ + bias[p]``. ``points`` (P,) the point names, in forward order; ``settings``
    what the file's metadata holds (model name and fingerprint, corpus, split, steps, lr, seed,
    attnscope version, …)."""

    points: list[str]
    weight: Tensor
    bias: Tensor
    settings: dict = field(default_factory=dict)

    def apply(self, p: int, h: Tensor) -> Tensor:
        """Point ``p``'s map on ``h`` (…, d) → (…, d), in ``h``'s dtype and device."""
        return F.linear(h, self.weight[p].to(h), self.bias[p].to(h))  # (…, d)

    def save(self, path: Union[str, Path]) -> Path:
        """Write the maps and their settings to one safetensors file (InputError if it cannot be written)."""
        from safetensors.torch import save_file
        path = Path(path)
        meta = {"format": FORMAT, "version": FORMAT_VERSION, "points": json.dumps(self.points),
                "settings": json.dumps(self.settings, ensure_ascii=False)}
        try:
            save_file({"weight": self.weight.detach().float().cpu().contiguous(),
                       "bias": self.bias.detach().float().cpu().contiguous()}, str(path), metadata=meta)
        except OSError as e:
            raise error(InputError, "errors.tuned_cannot_write", path=repr(str(path)), why=e.strerror or e) from None
        return path


def model_fingerprint(model) -> str:
    """16 hex digits naming ``model``'s weights: SHA-256 over every state-dict entry's name, shape and
    up to :data:`SAMPLE` evenly spaced values cast to float32 (a float64 copy of a float32 model has
    the same fingerprint; a model with other weights almost surely not)."""
    digest = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        flat = t.detach().reshape(-1)  # (n,)
        step = max(1, flat.numel() // SAMPLE)
        sample = flat[::step][:SAMPLE].to("cpu", torch.float32).contiguous()  # (≤ SAMPLE,)
        digest.update(f"{name}{tuple(t.shape)}".encode())
        digest.update(sample.numpy().tobytes())
    return digest.hexdigest()[:16]


def identity_lens(model, settings: Optional[dict] = None) -> TunedLens:
    """Every map the identity (``A = I``, ``b = 0``): reads exactly as the logit lens; where training starts."""
    check_language_model(model, "the tuned lens")
    pts = [p.name for p in points(model)]
    d = model.config.d_model
    weight = torch.eye(d, device=model.device).repeat(len(pts), 1, 1)  # (P, d, d)
    bias = torch.zeros(len(pts), d, device=model.device)  # (P, d)
    base = {"model": model.name, "fingerprint": model_fingerprint(model), "attnscope": __version__}
    return TunedLens(pts, weight, bias, {**base, **(settings or {})})


def load_tuned_lens(path: Union[str, Path], model=None) -> TunedLens:
    """Read a file written by :meth:`TunedLens.save`; with ``model``, check it was made for it
    (same points, width and fingerprint). Every refusal is one InputError sentence."""
    from safetensors import safe_open
    path = Path(path)
    if not path.is_file():
        raise error(InputError, "errors.tuned_missing", path=repr(str(path)))
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors raises its own error types
        raise error(InputError, "errors.tuned_unreadable", path=repr(str(path)), kind=type(e).__name__,
                    why=str(e).splitlines()[0] if str(e) else "") from None
    if meta.get("format") != FORMAT or "weight" not in tensors or "bias" not in tensors:
        raise error(InputError, "errors.tuned_not_lens", path=repr(str(path)), found=repr(meta.get("format")))
    try:
        names, settings = json.loads(meta["points"]), json.loads(meta["settings"])
    except (KeyError, json.JSONDecodeError):
        raise error(InputError, "errors.tuned_not_lens", path=repr(str(path)), found=repr(meta.get("format"))) from None
    weight, bias = tensors["weight"].float(), tensors["bias"].float()
    P = len(names)
    if weight.dim() != 3 or weight.shape[0] != P or weight.shape[1] != weight.shape[2] \
            or tuple(bias.shape) != (P, weight.shape[-1]):
        raise error(InputError, "errors.tuned_shape", path=repr(str(path)), weight=tuple(weight.shape),
                    bias=tuple(bias.shape), points=P)
    lens = TunedLens(list(names), weight, bias, settings)
    if model is not None:
        check_made_for(lens, model, path)
    return lens


def check_made_for(lens: TunedLens, model, path: Union[str, Path] = "the tuned lens") -> None:
    """InputError unless ``lens`` has ``model``'s points and width and was trained on its weights."""
    check_language_model(model, "the tuned lens")
    want = [p.name for p in points(model)]
    made_for = lens.settings.get("model", "?")
    if lens.points != want or lens.weight.shape[-1] != model.config.d_model:
        raise error(InputError, "errors.tuned_other_shape", path=repr(str(path)), points=len(lens.points),
                    d=lens.weight.shape[-1], model=model.name, want_points=len(want), want_d=model.config.d_model,
                    made_for=made_for)
    ours = model_fingerprint(model)
    if lens.settings.get("fingerprint") != ours:
        raise error(InputError, "errors.tuned_other_model", path=repr(str(path)), made_for=made_for,
                    theirs=lens.settings.get("fingerprint"), model=model.name, ours=ours)


def tuned_lens(model, text: str, lens: TunedLens, *, target: Union[None, int, str] = None, k: int = 5,
               keep_logits: bool = False) -> LensResult:
    """Read ``text`` through the tuned lens: as :func:`~attnscope.lens.logit_lens` with each point's
    map applied first; ``kl`` is still KL(P_final ‖ P_point) against the model's own final distribution."""
    check_made_for(lens, model)
    return logit_lens(model, text, target=target, k=k, keep_logits=keep_logits, maps=lens.apply)
