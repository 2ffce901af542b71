"""Running padded batches through a model with the statistics hook: :class:`BatchAnalyzer`.

Each layer's weights ``(B, H, L, L)`` go through :func:`.stats.attention_sums` inside the hook on
``layers.*.attn.weights`` and are dropped before the next layer runs, so no weight tensor
outlives its layer.

On a CPU the batches run side by side on *lanes*: ``n`` threads (``n`` = torch's thread count by
default), each with one torch thread and its own replica of the model (the module tree copied,
every parameter and buffer shared, so a replica costs no weight memory). A batch runs on one core
from its first layer to its statistics, with no OpenMP barrier after each op: on the 2-core
machine of benchmarks/analysis.py two lanes beat one forward on two threads plus statistics
beside it (see docs/guide/performance.md). The sums are added to the accumulator in the
order the batches were submitted, whatever order the lanes finish in, so a run's result does not
depend on thread timing. On a GPU, or with one lane, a batch runs at a time on the caller's
thread.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import Future
from typing import Callable, Optional

import torch

from ..errors import ConfigError
from ..i18n import error
from ..threads import one_thread
from .accumulate import StatsAccumulator
from .decoder_heads import causal_attention_sums
from .importance import as_model_batch
from .replica import replicate
from .stats import BatchContext, StatOptions, attention_sums, batch_context, stats_dtype, uniform_distance_sums

Tensor = torch.Tensor

WEIGHTS = "layers.*.attn.weights"


def batch_bytes(model, tb) -> int:
    """A generous estimate of the memory one batch takes while it runs: the L×L matrices of one
    layer (scores, weights, the statistics' scratch) and the hidden states."""
    B, L = tb.input_ids.shape
    c = model.config
    elem = torch.finfo(model.dtype).bits // 8 if model.dtype.is_floating_point else 4
    d = max(c.d_model, getattr(c, "d_ff", 0) or 0)
    return elem * (4 * B * c.n_heads * L * L + 8 * B * L * d)


def available_bytes() -> int:
    """Memory the system can give now (Linux: MemAvailable), or 8 GiB where it cannot tell."""
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return 8 << 30


class _Lane:
    """One replica of the model and the statistics of the batch it is running."""

    def __init__(self, model, reduce) -> None:
        self.model = model
        self.reduce = reduce
        self.context: Optional[BatchContext] = None
        self.sums: list = []

    def on_weights(self, w: Tensor, name: str) -> None:
        layer = int(name.split(".")[1])
        context = self.context.for_layer(layer) if self.context is not None else None
        self.sums.append((layer, self.reduce(w, context=context)))
        return None  # observe only

    def run(self, tb, options: StatOptions) -> tuple[list, tuple]:
        """``([(layer, sums)], baseline)`` of one batch (the hooks are attached by the caller)."""
        m = self.model
        mask = tb.attention_mask.to(m.device)
        kinds = {k: v.to(m.device) for k, v in tb.kinds.items()}
        # masks, kinds and index tables once per batch, for all layers
        self.context = batch_context(mask, kinds, options, dtype=stats_dtype(m.dtype), device=m.device)
        self.sums = []
        try:
            batch = as_model_batch(tb, m.device)
            # Without padding the mask changes nothing but the kernel's path: the explicit one adds
            # it to every layer's scores (a pass over the L×L matrices; + 0 keeps every bit), the
            # fused one takes a masked form. Left out, as transformers leaves out an all-ones mask.
            model_mask = None if bool(mask.all()) else batch.attention_mask
            m(batch.input_ids, model_mask, batch.token_type_ids)  # (B, L, d); the hooks reduce
            return self.sums, uniform_distance_sums(mask, kinds, options)  # the same for every head
        finally:
            self.context, self.sums = None, []


class BatchAnalyzer:
    """Runs padded batches through ``model`` and adds their statistics to ``acc``, in order.

    ``submit(tb)`` queues a batch (returning once it is queued, after adding the batches that
    are done); ``flush()`` waits for all of them; ``analyzer(tb)`` is both for one batch. Use as
    a context manager (or call :meth:`close`) to stop the lanes.

    Args:
        model: an :class:`attnscope.Model` in eval mode.
        acc: the accumulator the sums go to.
        options: :class:`.stats.StatOptions`.
        lanes: batches run at once on a CPU, each on its own thread (see the module docstring);
            None = torch's thread count; always 1 on other devices.
        on_done: called with each batch once its sums are added (progress bars).
        max_bytes: memory the batches in flight may take together (estimated by
            :func:`batch_bytes`; one batch always runs); None = half of what is available.
    """

    def __init__(self, model, acc: StatsAccumulator, options: StatOptions, *, lanes: Optional[int] = None,
                 on_done: Optional[Callable] = None, max_bytes: Optional[int] = None) -> None:
        if lanes is not None and (isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1):
            raise error(ConfigError, "errors.analysis_lanes", value=repr(lanes))
        self.model, self.acc, self.options, self.on_done = model, acc, options, on_done
        self.device = model.device
        # a causal model's corpus pass also measures the attention sink (:mod:`.decoder_heads`)
        self.reduce = causal_attention_sums if options.causal else attention_sums
        n = torch.get_num_threads() if lanes is None else lanes
        self.lanes = n if self.device.type == "cpu" else 1
        self.max_bytes = max_bytes
        self._pending: deque = deque()  # (tb, future, bytes), in submission order
        self._jobs: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._local = _Lane(model, self.reduce)  # the one-lane path: the model itself

    # -- the lanes ---------------------------------------------------------------------------------
    def _start(self) -> None:
        replicas = [replicate(self.model) for _ in range(self.lanes)]  # errors surface here, not in a thread
        before = torch.get_num_threads()
        started = threading.Barrier(self.lanes + 1)
        for r in replicas:
            t = threading.Thread(target=self._lane_main, args=(r, started), daemon=True,
                                 name="attnscope-analyze")
            t.start()
            self._threads.append(t)
        started.wait()
        torch.set_num_threads(before)  # the lanes' first set moved the process default too
        if self.max_bytes is None:
            self.max_bytes = available_bytes() // 2

    def _lane_main(self, replica, started: threading.Barrier) -> None:
        one_thread()
        started.wait()
        lane = _Lane(replica, self.reduce)
        with torch.no_grad(), replica.hooks({WEIGHTS: lane.on_weights}):
            while True:
                job = self._jobs.get()
                if job is None:
                    return
                tb, fut = job
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(lane.run(tb, self.options))
                except BaseException as e:  # handed to the caller by _collect
                    fut.set_exception(e)

    # -- submitting and collecting ------------------------------------------------------------------
    def submit(self, tb) -> None:
        """Queue one batch (a :class:`.batching.TokenBatch`); its sums are added in order."""
        if self.lanes == 1:
            with torch.no_grad(), self.model.hooks({WEIGHTS: self._local.on_weights}):
                self._add(tb, self._local.run(tb, self.options))
            return
        if not self._threads:
            self._start()
        nbytes = batch_bytes(self.model, tb)
        # keep every lane busy (one batch queued behind each) within the memory budget
        while self._pending and (len(self._pending) >= 2 * self.lanes
                                 or sum(n for _, _, n in self._pending) + nbytes > self.max_bytes):
            self._collect_head()
        fut: Future = Future()
        self._pending.append((tb, fut, nbytes))
        self._jobs.put((tb, fut))
        while self._pending and self._pending[0][1].done():
            self._collect_head()

    def flush(self) -> None:
        """Wait for every submitted batch and add its sums (re-raises a lane's error)."""
        while self._pending:
            self._collect_head()

    def __call__(self, tb) -> None:
        self.submit(tb)
        self.flush()

    def _collect_head(self) -> None:
        tb, fut, _ = self._pending[0]
        try:
            result = fut.result()
        finally:
            self._pending.popleft()
        self._add(tb, result)

    def _add(self, tb, result) -> None:
        sums, (s, c) = result
        for layer, part in sums:
            self.acc.add(layer, part)
        H = self.acc.n_heads
        self.acc.add(0, {"baseline_distance": (s.expand(H), c.expand(H))})
        self.acc.count(texts=len(tb), tokens=tb.n_tokens, batches=1, truncated=tb.truncated,
                       truncated_tokens=tb.cut_tokens)
        if self.on_done is not None:
            self.on_done(tb)

    def close(self) -> None:
        """Stop the lanes (batches not yet added are dropped: call :meth:`flush` first)."""
        for _, fut, _ in self._pending:
            fut.cancel()
        self._pending.clear()
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()
        self._threads = []

    def __enter__(self) -> "BatchAnalyzer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
