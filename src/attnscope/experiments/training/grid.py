"""The grid of runs: one spec per (task, variant, d_k, seed), run in worker processes, resumable."""

from __future__ import annotations

from dataclasses import asdict
from typing import Optional

from ..base import check_positive_int, progress_bar
from ..tasks import task_options
from .loop import train_one
from .settings import Settings


def run_specs(settings: Settings, seed: int, task_objs: dict) -> list[dict]:
    """One spec per (task, variant, d_k, seed index); seed i of every variant is the same seed."""
    sdict = asdict(settings)
    specs = []
    for t in settings.tasks:
        for d_k in settings.d_ks:
            for variant in settings.variants:
                for i in range(settings.seeds[t]):
                    specs.append({"task": task_options(task_objs[t]), "variant": variant, "d_k": d_k,
                                  "seed": seed * 1000 + i, "seed_index": i, "eval_seed": 10_000 + seed,
                                  "steps": settings.steps[t], "batch": settings.batch[t],
                                  "eval_size": settings.eval_size[t], "settings": sdict})
    return specs


def _train_indexed(item: tuple) -> tuple:
    """Worker entry point: ``(i, spec)`` → ``(i, train_one(spec))``."""
    i, spec = item
    return i, train_one(spec)


def run_label(sp: dict) -> str:
    return f"{sp['task']['name']}-{sp['variant']}-dk{sp['d_k']}-s{sp['seed_index']}"


def execute(specs: list[dict], *, jobs: int = 1, progress: bool = True, store=None) -> list[dict]:
    """Run the specs (in ``jobs`` spawned processes when > 1); results in the order of ``specs``.

    ``store``: a :class:`~.runstore.RunStore`; runs found in it are not trained again, and every
    run is saved to it as soon as it finishes. SIGTERM stops the grid like Ctrl-C: the workers are
    terminated, the finished runs stay in the store, and KeyboardInterrupt propagates.
    """
    import os

    from ..runstore import ignore_interrupts, sigterm_as_interrupt

    cpus = os.cpu_count() or 1
    jobs = check_positive_int("jobs", jobs, high=max(4 * cpus, 4))
    results: list[Optional[dict]] = [None] * len(specs)
    if store is not None:
        for i, sp in enumerate(specs):
            results[i] = store.load(sp, run_label(sp))
    todo = [i for i, r in enumerate(results) if r is None]
    resumed = len(specs) - len(todo)
    bar = progress_bar(total=len(specs), desc="training", enabled=progress, unit="run")
    if resumed:
        import sys
        print(f"training: {resumed} of {len(specs)} runs already finished in {store.folder}/, "
              f"training the other {len(todo)}", file=sys.stderr, flush=True)
        bar.update(resumed)
    label = lambda sp: f"{sp['task']['name']} {sp['variant']} d_k={sp['d_k']} s{sp['seed_index']}"

    def finished(i: int, result: dict) -> None:
        results[i] = result
        if store is not None:
            store.save(specs[i], result, run_label(specs[i]))
        bar.set_postfix_str(label(specs[i]))
        bar.update(1)

    try:
        with sigterm_as_interrupt():
            if jobs == 1 or len(todo) <= 1:
                for i in todo:
                    bar.set_postfix_str(label(specs[i]))
                    finished(i, train_one(specs[i]))
            else:
                import multiprocessing as mp

                # Longest runs first, so that the last ones to finish are short.
                order = sorted(todo, key=lambda i: -specs[i]["steps"] * specs[i]["batch"] *
                               (32 if specs[i]["task"]["name"] == "lm" else 12))
                pool = mp.get_context("spawn").Pool(min(jobs, len(todo)), initializer=ignore_interrupts)
                try:
                    for i, result in pool.imap_unordered(_train_indexed, [(i, specs[i]) for i in order]):
                        finished(i, result)
                    pool.close()
                except BaseException:
                    pool.terminate()  # stop the workers now; join() below reaps them
                    raise
                finally:
                    pool.join()
    finally:
        bar.close()
    return results  # type: ignore[return-value]
