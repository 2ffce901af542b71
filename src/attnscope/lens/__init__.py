"""What the residual stream already predicts, and who wrote it (issue 28): the logit lens
(:func:`logit_lens`), the tuned lens (:func:`tuned_lens`, trained by :func:`train_tuned_lens`) and
direct logit attribution (:func:`direct_logit_attribution`)."""

from .dla import LogitAttribution, direct_logit_attribution
from .logit_lens import LensResult, logit_lens
from .stream import Point, points
from .tuned import TunedLens, identity_lens, load_tuned_lens, model_fingerprint, tuned_lens
from .tuned_train import held_out_kl, train_tuned_lens

__all__ = ["logit_lens", "LensResult", "direct_logit_attribution", "LogitAttribution", "Point", "points",
           "TunedLens", "tuned_lens", "identity_lens", "load_tuned_lens", "model_fingerprint", "train_tuned_lens",
           "held_out_kl"]
