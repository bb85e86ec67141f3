"""The KV caches kept for forking: finished runs' and branches', in a byte-bounded LRU."""

from __future__ import annotations

import threading
from collections import OrderedDict

from transformers import DynamicCache

from engine.run.kv_cache import cache_bytes


class Prefixes:
    """KV caches of finished runs and branches, keyed by (trace key, branch id), least recently
    used dropped first once they hold more than `max_bytes`. Entries are never mutated: a fork
    copies before it crops."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, str], tuple[DynamicCache, int]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, key: tuple[str, str], cache: DynamicCache) -> None:
        size = cache_bytes(cache)
        with self._lock:
            self._items.pop(key, None)
            if size > self.max_bytes:
                return
            self._items[key] = (cache, size)
            while sum(n for _, n in self._items.values()) > self.max_bytes:
                self._items.popitem(last=False)

    def get(self, key: tuple[str, str]) -> DynamicCache | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]
