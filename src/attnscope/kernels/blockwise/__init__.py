"""The blockwise (online-softmax) kernel: tiles, the kernel and its backward, the tile thread pool,
argument preparation, and the entry points."""

from .api import attention_lse, attention_weights, blockwise_attention, lse_of, repeat_kv, run, run_flash, weights_of
from .prepare import block_sizes, compute_dtype
from .tiles import DEFAULT_BLOCK, LOG2E, Tiles

__all__ = ["attention_lse", "attention_weights", "blockwise_attention", "lse_of", "repeat_kv", "run", "run_flash",
           "weights_of", "block_sizes", "compute_dtype", "DEFAULT_BLOCK", "LOG2E", "Tiles"]
