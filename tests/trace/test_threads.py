"""Traces from several threads on one model never mix their hooks (a server shares one model)."""

import copy
import threading

import torch


def test_concurrent_traces_with_different_hooks(tiny_models):
    model = tiny_models["bert"]
    text = "The cat sat on the mat."
    plans = {i: {f"layers.{i % 2}.attn.weights[{i // 2}]": lambda t, n: torch.zeros_like(t)} for i in range(6)}
    alone = {i: model.trace(text, names="layers.1.out", hooks=h)["layers.1.out"] for i, h in plans.items()}
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = model.trace(text, names="layers.1.out", hooks=plans[i])["layers.1.out"]
                assert torch.equal(results[i], alone[i])
        except Exception as e:  # reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({results[i].sum().item() for i in plans}) == len(plans)  # really different ablations


def test_a_model_can_be_deep_copied(tiny_models):
    model = tiny_models["gpt2"]
    twin = copy.deepcopy(model)
    assert twin.lock is not model.lock
    assert torch.equal(twin.run("hello"), model.run("hello"))
