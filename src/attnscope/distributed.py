"""Ring attention: exact attention over a sequence split across processes — the public face of
:mod:`attnscope.kernels.ring` (protocol, ring, launcher), kept at the first release's path."""

from .kernels.ring import DEFAULT_TIMEOUT, RingTimeout, gather, merge_partials, ring_attention, run_local, shard

__all__ = ["DEFAULT_TIMEOUT", "RingTimeout", "gather", "merge_partials", "ring_attention", "run_local", "shard"]
