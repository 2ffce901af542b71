import os

# No hub downloads, ever: every model comes from a local folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

# Two cores, two xdist workers: one thread each avoids oversubscription.
torch.set_num_threads(max(1, int(os.environ.get("ATTNSCOPE_TEST_THREADS", "1"))))


def pytest_configure(config):
    from tests import marks, memory_report

    # ATTNSCOPE_MEMORY_REPORT=DIR: peak memory and time per test module (tests/memory_report.py)
    memory_report.register(config)
    # an unmarked test that opens a model package's files or Chromium fails (tests/marks.py)
    marks.register(config)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # the real_model and browser marks, by rule, before -m selects (tests/marks.py)
    from tests import marks
    marks.mark(items)


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_protocol(item, nextitem):
    # After a module's last test, once its module fixtures are gone: give the freed memory back, so
    # that the next module's models do not stack on pages glibc kept (tests/memory_report.py); after
    # any test that leaves the process above 1 GB (a real model's long traces), trim the heap.
    # Here, not in pytest_runtest_teardown: until the protocol ends, item.funcargs still holds the
    # last test's fixture values (the module's model), so a release in teardown freed nothing of it.
    # trylast: inside the memory report's wrapper, which then reads what the process holds after.
    yield
    from tests.memory_report import release_memory, resident_kb, trim_heap
    if nextitem is None or nextitem.path != item.path:
        release_memory()
    elif resident_kb() > 1024 * 1024:
        trim_heap()


@pytest.fixture(scope="module")
def installed_model():
    """``get(name, **load_kwargs)``: ``attnscope.load`` of a model package (SmolLM2, Gemma, …),
    holding one model at a time: asking for another frees the one held (1-1.3 GB each), and the
    module's end frees the last. Use it from function-scoped fixtures, so that no fixture of the
    module keeps the previous model alive."""
    import attnscope
    from tests.memory_report import release_memory

    held: dict = {}

    def get(name: str, **kw):
        key = (name, tuple(sorted(kw.items())))
        if key not in held:
            held.clear()
            release_memory()
            held[key] = attnscope.load(name, **kw)
            release_memory()  # the load's freed buffers
        return held[key]

    yield get
    held.clear()
    release_memory()


#: "pre" with one norm more, on the attention block's output before its residual sum (a step name
#: and norm module no family uses): the layer variant the recipe tests register in one call.
PRE_ATTN_NORM = """
    attn_in        = ln1(x)
    attn           = attention(attn_in)
    attn_post_norm = ln_attn_post(attn)
    attn_resid     = x + attn_post_norm
    ffn_in         = ln2(attn_resid)
    ffn            = mlp(ffn_in)
    ffn_resid      = attn_resid + ffn
    out            = ffn_resid
"""


@pytest.fixture
def pre_attn_norm():
    """The recipe :data:`PRE_ATTN_NORM`, registered as ``test_pre_attn_norm`` for one test."""
    from attnscope.recipe import LAYER_RECIPES, register_layer_recipe

    name = "test_pre_attn_norm"
    yield register_layer_recipe(name, PRE_ATTN_NORM)
    LAYER_RECIPES.pop(name, None)


@pytest.fixture(scope="module")
def tiny_family(tmp_path_factory):
    """``get(name)``: attnscope's model of the tiny checkpoint ``attnscope.testing.tiny.FAMILIES[name]``
    writes, built and loaded on first use (one per module)."""
    import attnscope
    from attnscope.testing.tiny import FAMILIES
    root = tmp_path_factory.mktemp("tiny-family")
    cache: dict = {}

    def get(name):
        if name not in cache:
            cache[name] = attnscope.load(FAMILIES[name].build(root / name))
        return cache[name]
    return get
