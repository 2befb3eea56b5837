//! Persistent key-value store backing the cache.
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub enum Eviction {
    LeastRecentlyUsed,
    OldestFirst,
}

pub struct KvStore {
    entries: HashMap<String, (Vec<u8>, Instant)>,
    ttl: Duration,
    eviction: Eviction,
}

impl KvStore {
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        let (value, stored_at) = self.entries.get(key)?;
        if stored_at.elapsed() > self.ttl {
            return None;
        }
        Some(value.as_slice())
    }

    pub fn insert(&mut self, key: String, value: Vec<u8>) {
        self.entries.insert(key, (value, Instant::now()));
    }
}

pub fn open_store(ttl_seconds: u64) -> KvStore {
    KvStore {
        entries: HashMap::new(),
        ttl: Duration::from_secs(ttl_seconds),
        eviction: Eviction::LeastRecentlyUsed,
    }
}
