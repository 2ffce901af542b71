import os

# No hub downloads, ever: every model comes from a local folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import torch  # noqa: E402

# Two cores, two xdist workers: one thread each avoids oversubscription.
torch.set_num_threads(max(1, int(os.environ.get("ATTNSCOPE_TEST_THREADS", "1"))))


def pytest_configure(config):
    # ATTNSCOPE_MEMORY_REPORT=DIR: peak memory and time per test module (tests/memory_report.py)
    from tests.memory_report import register
    register(config)
