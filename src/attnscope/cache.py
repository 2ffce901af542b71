"""Where attnscope writes the files it derives: ``$ATTNSCOPE_CACHE``, else
``$XDG_CACHE_HOME/attnscope``, else ``~/.cache/attnscope``.

At its root, model files assembled from their packages (Gemma 3's GGUF: :mod:`.models.packages`);
under ``kernels/``, the compiled loops built on first use (:mod:`.attribution.pair_norms`).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache folder (not created here)."""
    env = os.environ.get("ATTNSCOPE_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "attnscope"


def kernels_dir() -> Path:
    """Where compiled loops are kept (:mod:`.attribution.pair_norms`)."""
    return cache_dir() / "kernels"
