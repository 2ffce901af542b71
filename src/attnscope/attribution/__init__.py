"""Attribution beyond raw attention: which input tokens an output depends on (issue 27).

``model.attribute(text, method=…, layer=…, target=…)`` → :class:`Attribution`; the methods are
registered in :data:`METHODS` (one :func:`register_method` call each).
"""

from . import gradients  # noqa: F401  (registers grad_input, integrated_gradients, attn_grad)
from .base import METHODS, Attribution, AttributionMethod, attribute, get_method, register_method

__all__ = ["METHODS", "Attribution", "AttributionMethod", "attribute", "get_method", "register_method"]
