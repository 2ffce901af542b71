"""Attribution beyond raw attention: which input tokens an output depends on (issue 27).

``model.attribute(text, method=…, layer=…, target=…)`` → :class:`Attribution`; the methods are
registered in :data:`METHODS` (one :func:`register_method` call each).
"""

# each module registers its methods: weights (attention, rollout, flow), occlusion (leave_one_out),
# norm_methods (norm, value_zeroing), pairs (globenc, alti, over factored's walk), gradients
# (grad_input, integrated_gradients, attn_grad)
from . import gradients, norm_methods, occlusion, pairs, weights  # noqa: F401
from .base import METHODS, Attribution, AttributionMethod, attribute, get_method, register_method

__all__ = ["METHODS", "Attribution", "AttributionMethod", "attribute", "get_method", "register_method"]
