"""ALBERT's layers share one set of weights (per group) yet keep their own hook points."""

import torch


def test_layers_share_their_group_parameters(encoders):
    one, two = encoders["albert"], encoders["albert_groups"]  # 3 layers in 1 group; 4 layers in 2 groups
    w = lambda m, i: m.layers[i].attn.W_qkv.weight  # noqa: E731
    assert w(one, 0) is w(one, 1) is w(one, 2)
    assert w(two, 0) is w(two, 1) and w(two, 2) is w(two, 3) and w(two, 0) is not w(two, 2)
    assert one.layers[2].ln2.bias is one.layers[0].ln2.bias


def test_each_layer_is_traced_on_its_own_input(encoders):
    model = encoders["albert"]
    tr = model.trace("Relative positions tell a head how far apart two tokens are.")
    assert [n for n in tr.names if n.endswith("attn.weights")] == [f"layers.{i}.attn.weights" for i in range(3)]
    assert not torch.allclose(tr["layers.0.attn.weights"], tr["layers.1.attn.weights"])
    assert torch.equal(tr["layers.0.out"], tr["layers.1.attn_in"])
    # layer 1 is layer 0's module weights applied to layer 0's output
    with torch.no_grad():
        again = model.layers[0](tr["layers.0.out"])
    assert (again - tr["layers.1.out"]).abs().max().item() <= 1e-6


def test_a_hook_on_one_layer_leaves_the_others(encoders):
    model = encoders["albert"]
    text = "Queries, keys and values are three projections of the same input."
    base = model.trace(text, names=["layers.0.out", "layers.2.attn.weights"])
    hooked = model.trace(text, names=["layers.0.out", "layers.2.attn.weights"],
                         hooks={"layers.1.attn.z": lambda t, n: torch.zeros_like(t)})
    assert torch.equal(base["layers.0.out"], hooked["layers.0.out"])
    assert not torch.allclose(base["layers.2.attn.weights"], hooked["layers.2.attn.weights"])


def test_gradients_add_up_over_the_sharing_layers(encoders):
    import copy

    model = copy.deepcopy(encoders["albert"])
    tr = model.trace("the quick brown fox", grad=True, names=[])
    tr.output.sum().backward()
    g = model.layers[0].ffn.W_1.weight.grad
    assert g is not None and g is model.layers[2].ffn.W_1.weight.grad and g.abs().sum() > 0


def test_sharing_survives_a_dtype_change(encoders):
    import copy

    model = copy.deepcopy(encoders["albert_groups"]).double()
    assert model.layers[0].attn.W_qkv.weight is model.layers[1].attn.W_qkv.weight
    assert model.layers[1].attn.W_qkv.weight.dtype == torch.float64
    assert model.run("我喜欢人工智能").dtype == torch.float64
