"""The KV caches kept for forking: finished runs' and branches', in a byte-bounded LRU."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from transformers import DynamicCache

from engine.schema.branches import ROOT, lineage


def cache_key(trace, branch: str = ROOT) -> str:
    """The name a lineage's kept cache is found by: a digest of what determines the cache, the
    model and the token ids (the prompt's, then the run's or branch's generated ones). Never the
    run id a trace carries: a file whose tokens were edited, or that names another run's id,
    names another digest, misses, and has its prefix computed from its own tokens."""
    ids = [t.id for t in trace.prompt.tokens] + [s.id for s in lineage(trace, branch)]
    return hashlib.sha256(f"{trace.model.id}|{ids}".encode()).hexdigest()


def held_bytes(cache: DynamicCache | None) -> int:
    """Bytes of memory a kept cache pins: the whole storage under every layer's keys and values,
    each storage once. Not the cache's figure (engine/run/kv_cache.py counts the positions written):
    a view (a cropped layer, a static cache's filled part) pins all of the storage it was cut from,
    and what a cap bounds is the memory, not the view."""
    if cache is None:
        return 0
    storages: dict[int, int] = {}
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if t is not None and t.numel():
                s = t.untyped_storage()
                storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


class Prefixes:
    """KV caches of finished runs and branches, keyed by `cache_key`, least recently
    used dropped first once they hold more than `max_bytes` (their storage, `held_bytes`). Entries
    are never mutated: a fork copies before it crops."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[DynamicCache, int]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, key: str, cache: DynamicCache) -> None:
        size = held_bytes(cache)
        with self._lock:
            self._items.pop(key, None)
            if size > self.max_bytes:
                return
            self._items[key] = (cache, size)
            while self._held() > self.max_bytes:
                self._items.popitem(last=False)

    def get(self, key: str) -> DynamicCache | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def held(self) -> int:
        """Bytes the kept caches pin now (what the cap bounds)."""
        with self._lock:
            return self._held()

    def _held(self) -> int:
        return sum(n for _, n in self._items.values())

    def __len__(self) -> int:
        return len(self._items)
