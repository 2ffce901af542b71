"""Where ``attnscope serve`` keeps the texts it holds (:class:`attnscope.viewer.held.HeldText`): by
the id of the text (:func:`text_id`), the least recently used dropped first beyond a byte budget."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Optional, Sequence

from .held import HeldText


def text_id(model_name: str, text: str) -> str:
    """The id of a held text: the same text (for the same model) is traced once."""
    return hashlib.sha256(f"{model_name}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()[:24]


class TextStore:
    """Held texts by id, least recently used dropped first once their bytes pass ``max_bytes``
    (the newest is always kept, and what :meth:`put` is told to keep)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[HeldText]:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: str, held: HeldText, keep: Sequence[str] = ()) -> None:
        """Hold ``held`` as ``key``; drop the least recent others while over the budget, never
        ``key`` nor those in ``keep`` (the other text of the page that is being answered)."""
        with self._lock:
            self._items[key] = held
            self._items.move_to_end(key)
            kept = {key, *keep}
            while sum(h.nbytes for h in self._items.values()) > self.max_bytes:
                old = next((k for k in self._items if k not in kept), None)
                if old is None:
                    break
                del self._items[old]

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(h.nbytes for h in self._items.values())
