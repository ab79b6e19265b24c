//! Compiled scripts kept by (lang, source, context), so a script sent with every request (or
//! run for every document) is parsed and compiled once. Bounded: the least recently used
//! script leaves when the cache is full (OpenSearch's `script.cache.max_size` is 100).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use crate::compile::{compile, Script, ScriptContext};
use crate::error::ScriptError;

/// The process's compiled scripts, shared by every request, shard and node of the process
/// (a compiled script depends on its source and context only).
pub fn shared() -> &'static ScriptCache {
    static SHARED: LazyLock<ScriptCache> = LazyLock::new(ScriptCache::default);
    &SHARED
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScriptKey {
    pub lang: String,
    pub source: String,
    pub context: ScriptContext,
}

/// A bounded least-recently-used map of compiled scripts; compile errors are not kept.
pub struct ScriptCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    scripts: HashMap<ScriptKey, (Arc<Script>, u64)>,
    clock: u64,
    compilations: u64,
}

impl ScriptCache {
    pub fn new(capacity: usize) -> Self {
        ScriptCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The compiled painless script for `source` in `context`, compiling it on a miss.
    pub fn get_or_compile(
        &self,
        source: &str,
        context: ScriptContext,
    ) -> Result<Arc<Script>, ScriptError> {
        let key = ScriptKey {
            lang: "painless".to_string(),
            source: source.to_string(),
            context,
        };
        {
            let mut inner = crate::value::lock(&self.inner);
            inner.clock += 1;
            let now = inner.clock;
            if let Some((script, used)) = inner.scripts.get_mut(&key) {
                *used = now;
                return Ok(script.clone());
            }
        }
        // compiled outside the lock: another thread may compile the same script meanwhile
        let script = Arc::new(compile(source, context)?);
        let mut inner = crate::value::lock(&self.inner);
        inner.compilations += 1;
        if inner.scripts.len() >= self.capacity && !inner.scripts.contains_key(&key) {
            let oldest = inner
                .scripts
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                inner.scripts.remove(&oldest);
            }
        }
        let now = inner.clock;
        inner.scripts.insert(key, (script.clone(), now));
        Ok(script)
    }

    /// How many scripts were compiled (OpenSearch's `script.compilations` statistic).
    pub fn compilations(&self) -> u64 {
        crate::value::lock(&self.inner).compilations
    }

    pub fn len(&self) -> usize {
        crate::value::lock(&self.inner).scripts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for ScriptCache {
    fn default() -> Self {
        ScriptCache::new(100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_and_evicts_the_least_recently_used() {
        let cache = ScriptCache::new(2);
        let a = cache
            .get_or_compile("1 + 1", ScriptContext::PainlessTest)
            .unwrap();
        let again = cache
            .get_or_compile("1 + 1", ScriptContext::PainlessTest)
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(cache.compilations(), 1);
        cache
            .get_or_compile("2", ScriptContext::PainlessTest)
            .unwrap();
        cache
            .get_or_compile("1 + 1", ScriptContext::PainlessTest)
            .unwrap();
        cache
            .get_or_compile("3", ScriptContext::PainlessTest)
            .unwrap();
        assert_eq!(cache.len(), 2);
        // "2" was the least recently used
        cache
            .get_or_compile("1 + 1", ScriptContext::PainlessTest)
            .unwrap();
        assert_eq!(cache.compilations(), 3);
        cache
            .get_or_compile("2", ScriptContext::PainlessTest)
            .unwrap();
        assert_eq!(cache.compilations(), 4);
        // the same source in another context is another script
        cache.get_or_compile("2", ScriptContext::Score).unwrap();
        assert_eq!(cache.compilations(), 5);
        assert!(cache
            .get_or_compile("x", ScriptContext::PainlessTest)
            .is_err());
    }
}
