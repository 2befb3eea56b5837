"""A small least-recently-used cache with per-entry expiry."""

import time
from collections import OrderedDict

from config import Config


class LruCache:
    """Evicts the least recently used entry once `capacity` is reached."""

    def __init__(self, capacity, ttl_seconds, clock=time.monotonic):
        self.capacity = capacity
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries = OrderedDict()

    def get(self, key):
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, expires_at = entry
        if self._clock() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key, value):
        self._entries[key] = (value, self._clock() + self.ttl_seconds)
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


def cache_from_config(config: Config) -> LruCache:
    return LruCache(config.get("cache_size", 128), config.get("ttl_seconds", 300))
