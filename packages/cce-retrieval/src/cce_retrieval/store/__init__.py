"""The persisted store: `index.json`, its sidecar, fingerprint and sources, written atomically."""
