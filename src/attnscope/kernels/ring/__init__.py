"""Ring attention over a sequence split across processes: the protocol (metadata exchange,
time-outs), the ring itself, and a local process launcher."""

from .api import gather, ring_attention, shard
from .launch import run_local
from .protocol import DEFAULT_TIMEOUT, RingTimeout
from .ring import merge_partials

__all__ = ["run_local", "DEFAULT_TIMEOUT", "RingTimeout", "gather", "merge_partials", "ring_attention", "shard"]
