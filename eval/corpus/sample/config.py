"""Load layered configuration for the cache and queue services."""

import json
import os

DEFAULTS = {"cache_size": 128, "ttl_seconds": 300, "queue_capacity": 64}


def load_config(path, env=None):
    """Read a JSON config file and apply CCE_* environment overrides."""
    env = os.environ if env is None else env
    with open(path, encoding="utf-8") as handle:
        values = dict(DEFAULTS, **json.load(handle))
    for key in DEFAULTS:
        override = env.get("CCE_" + key.upper())
        if override is not None:
            values[key] = int(override)
    return Config(values)


class Config:
    """Read-only view over merged settings."""

    def __init__(self, values):
        self._values = dict(values)

    def get(self, key, default=None):
        return self._values.get(key, default)

    def section(self, prefix):
        """Return the settings whose names start with `prefix`, prefix removed."""
        return {
            key[len(prefix):]: value
            for key, value in self._values.items()
            if key.startswith(prefix)
        }
