"""What the residual stream already predicts, and who wrote it (issue 28): the logit lens
(:func:`logit_lens`) and direct logit attribution (:func:`direct_logit_attribution`)."""

from .dla import LogitAttribution, direct_logit_attribution
from .logit_lens import LensResult, logit_lens
from .stream import Point, points

__all__ = ["logit_lens", "LensResult", "direct_logit_attribution", "LogitAttribution", "Point", "points"]
