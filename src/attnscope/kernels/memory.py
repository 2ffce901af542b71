"""How much memory the explicit (L×S) path may take, and whether it fits now."""

from __future__ import annotations

import math
from typing import Optional

import torch

#: Bytes the explicit path may use for its L×S matrices before an inference call switches to the
#: blockwise weights. None: what the device has available now.
DENSE_MEMORY_LIMIT: Optional[int] = None

#: Scores per head (L·S) from which a scoring the fused kernel cannot take runs blockwise.
BLOCKWISE_MIN_SCORES = 1 << 20


def matrix_bytes(lead, L: int, S: int, element_size: int) -> int:
    """Bytes of one ``(*lead, L, S)`` matrix."""
    return math.prod(int(n) for n in lead) * L * S * element_size


def dense_fits(nbytes: int, device: torch.device) -> bool:
    """Would ``nbytes`` more fit in the device's free memory (or under DENSE_MEMORY_LIMIT)?"""
    if DENSE_MEMORY_LIMIT is not None:
        return nbytes <= DENSE_MEMORY_LIMIT
    if nbytes < 1 << 26:  # below 64 MiB nobody needs to ask
        return True
    try:
        if device.type == "cuda":
            return nbytes <= torch.cuda.mem_get_info(device)[0]
        if device.type == "cpu":
            with open("/proc/meminfo") as f:
                info = dict(line.split(":", 1) for line in f)
            return nbytes <= int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError, RuntimeError):
        pass
    return True  # cannot tell: the explicit path, as before
