"""The attention kernels, the bottom layer of attnscope (they import nothing above them).

==========================  ===================================================================
module                      what
==========================  ===================================================================
``steps``                   :func:`~.steps.attend`, the one definition every torch path runs
``backend``                 :func:`~.backend.choose_backend`, the pure policy, and its facts
``qk``                      q, k as a scoring prepares them, and the factor (defined once)
``dense``                   softmax, log-softmax, the explicit steps, the lean weights
``fused``                   SDPA and the CPU flash kernel (with log-sum-exp) on prepared inputs
``blockwise``               the online-softmax kernel: tiles, kernel, thread pool, preparation
``ring``                    ring attention: protocol, ring, local launcher
``validate``                argument checks shared by all
``finite``                  opt-in NaN/±inf checks that name the step
``memory``                  whether the L×S matrices fit
==========================  ===================================================================
"""

from .backend import BACKENDS, Facts, choose_backend
from .finite import checking_finite
from .steps import STEPS, attend

__all__ = ["BACKENDS", "Facts", "choose_backend", "checking_finite", "STEPS", "attend"]
