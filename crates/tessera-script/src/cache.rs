//! Compiled scripts kept by (lang, source, context), so a script sent with every request (or
//! run for every document) is parsed and compiled once. Bounded: the least recently used
//! script leaves when the cache is full (OpenSearch's `script.cache.max_size` is 100).
//!
//! The cache also enforces OpenSearch's guards when it compiles: a script longer than
//! `script.max_size_in_bytes` is refused, and compilations are rate limited per context
//! (`script.context.<context>.max_compilations_rate`, 75 per 5 minutes by default) or for all
//! contexts together (`script.max_compilations_rate` when it is not `use-context`), as token
//! buckets that refill continuously: a script that changes with every request (values written
//! into its source instead of `params`) would otherwise compile without end.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

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

/// How many compilations a period allows (`75/5m`); `None` is `unlimited`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompilationRate(Option<(u32, Duration)>);

impl CompilationRate {
    /// OpenSearch's default for every context.
    pub const DEFAULT: CompilationRate = CompilationRate(Some((75, Duration::from_secs(300))));
    pub const UNLIMITED: CompilationRate = CompilationRate(None);

    /// Parses `75/5m` or `unlimited`, with OpenSearch's errors.
    pub fn parse(value: &str) -> Result<CompilationRate, String> {
        if value == "unlimited" {
            return Ok(CompilationRate::UNLIMITED);
        }
        let Some((count, period)) = value.split_once('/') else {
            return Err(format!(
                "parameter must contain a positive integer and a timevalue, i.e. 10/1m, but was [{value}]"
            ));
        };
        let count: u32 = count
            .parse()
            .map_err(|_| format!("could not parse [{count}] as integer in value [{value}]"))?;
        let period = parse_period(period).ok_or_else(|| {
            format!("failed to parse setting [{value}] with value [{period}] as a time value")
        })?;
        if period.is_zero() {
            return Err(format!(
                "time value [{}] must be positive",
                period_text(period)
            ));
        }
        Ok(CompilationRate(Some((count, period))))
    }

    fn text(&self) -> String {
        match self.0 {
            None => "unlimited".to_string(),
            Some((count, period)) => format!("{count}/{}", period_text(period)),
        }
    }
}

fn parse_period(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let number: u64 = text[..split].parse().ok()?;
    let unit = match &text[split..] {
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86_400),
        _ => return None,
    };
    Some(unit * number as u32)
}

fn period_text(period: Duration) -> String {
    let secs = period.as_secs();
    if period.is_zero() {
        return "0s".to_string();
    }
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs.is_multiple_of(size) && secs >= size {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// The node's limits on compiling (set from its cluster settings).
#[derive(Debug, Clone, PartialEq)]
pub struct CompileLimits {
    /// `script.max_size_in_bytes`.
    pub max_size_in_bytes: usize,
    /// `script.max_compilations_rate`: `None` is `use-context`.
    pub general: Option<CompilationRate>,
    /// `script.context.<name>.max_compilations_rate`, by OpenSearch's context name; a
    /// context not named here has [`CompilationRate::DEFAULT`].
    pub contexts: HashMap<String, CompilationRate>,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            max_size_in_bytes: 65_535,
            general: None,
            contexts: HashMap::new(),
        }
    }
}

/// A token bucket of compilations.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    rate: CompilationRate,
    tokens: f64,
    refilled: Instant,
}

impl Bucket {
    fn full(rate: CompilationRate) -> Bucket {
        Bucket {
            rate,
            tokens: rate.0.map_or(0.0, |(count, _)| count as f64),
            refilled: Instant::now(),
        }
    }

    /// Takes one compilation, if the bucket has one.
    fn take(&mut self, now: Instant) -> bool {
        let Some((count, period)) = self.rate.0 else {
            return true;
        };
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens =
            (self.tokens + elapsed * count as f64 / period.as_secs_f64()).min(count as f64);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// A bounded least-recently-used map of compiled scripts; compile errors are not kept.
pub struct ScriptCache {
    capacity: usize,
    inner: Mutex<Inner>,
    /// Whether the limits are the process's ([`shared`]'s), read at each compilation.
    follows_shared: bool,
}

#[derive(Default)]
struct Inner {
    scripts: HashMap<ScriptKey, (Arc<Script>, u64)>,
    clock: u64,
    compilations: u64,
    limits: CompileLimits,
    /// The compilation budgets: by context name, or `""` for the general one.
    buckets: HashMap<String, Bucket>,
    /// How many compilations the rate limits refused (`script.compilation_limit_triggered`).
    limit_triggered: u64,
}

impl ScriptCache {
    pub fn new(capacity: usize) -> Self {
        ScriptCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
            follows_shared: false,
        }
    }

    /// A cache of its own whose limits are those set on the process's [`shared`] cache (a
    /// node's update scripts), with budgets of its own.
    pub fn following_shared(capacity: usize) -> Self {
        ScriptCache {
            follows_shared: true,
            ..ScriptCache::new(capacity)
        }
    }

    /// Installs the node's limits; budgets whose rate changed start full.
    pub fn set_limits(&self, limits: CompileLimits) {
        let mut inner = crate::value::lock(&self.inner);
        if inner.limits != limits {
            inner.buckets.clear();
            inner.limits = limits;
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
        // the limits apply when a script is compiled
        if self.follows_shared {
            let limits = crate::value::lock(&shared().inner).limits.clone();
            self.set_limits(limits);
        }
        {
            let mut inner = crate::value::lock(&self.inner);
            let max = inner.limits.max_size_in_bytes;
            if source.len() > max {
                return Err(ScriptError::refused(
                    "illegal_argument_exception",
                    format!(
                        "exceeded max allowed inline script size in bytes [{max}] with size [{}] for script [{source}]",
                        source.len()
                    ),
                ));
            }
            inner.take_compilation(context)?;
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

    /// How many compilations the rate limits refused.
    pub fn limit_triggered(&self) -> u64 {
        crate::value::lock(&self.inner).limit_triggered
    }

    pub fn len(&self) -> usize {
        crate::value::lock(&self.inner).scripts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    /// Takes one compilation from the budget that applies to `context`.
    fn take_compilation(&mut self, context: ScriptContext) -> Result<(), ScriptError> {
        let name = context.name();
        let (key, rate, setting) = match self.limits.general {
            Some(rate) => (
                String::new(),
                rate,
                "script.max_compilations_rate".to_string(),
            ),
            None => (
                name.to_string(),
                self.limits
                    .contexts
                    .get(name)
                    .copied()
                    .unwrap_or(CompilationRate::DEFAULT),
                format!("script.context.{name}.max_compilations_rate"),
            ),
        };
        let bucket = self
            .buckets
            .entry(key)
            .or_insert_with(|| Bucket::full(rate));
        if bucket.take(Instant::now()) {
            return Ok(());
        }
        self.limit_triggered += 1;
        Err(ScriptError::refused(
            "circuit_breaking_exception",
            format!(
                "[script] Too many dynamic script compilations within, max: [{}]; please use indexed, or scripts with parameters instead; this limit can be changed by the [{setting}] setting",
                rate.text()
            ),
        ))
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
    fn rates_parse_as_opensearch_reads_them() {
        assert_eq!(
            CompilationRate::parse("75/5m"),
            Ok(CompilationRate::DEFAULT)
        );
        assert_eq!(
            CompilationRate::parse("unlimited"),
            Ok(CompilationRate::UNLIMITED)
        );
        assert_eq!(CompilationRate::parse("10/1m").unwrap().text(), "10/1m");
        assert_eq!(CompilationRate::parse("90/30s").unwrap().text(), "90/30s");
        assert_eq!(
            CompilationRate::parse("abc").unwrap_err(),
            "parameter must contain a positive integer and a timevalue, i.e. 10/1m, but was [abc]"
        );
        assert_eq!(
            CompilationRate::parse("x/1m").unwrap_err(),
            "could not parse [x] as integer in value [x/1m]"
        );
        assert_eq!(
            CompilationRate::parse("10/0s").unwrap_err(),
            "time value [0s] must be positive"
        );
    }

    #[test]
    fn compilations_are_rate_limited_per_context_and_sizes_capped() {
        let cache = ScriptCache::new(100);
        let mut contexts = HashMap::new();
        contexts.insert("score".to_string(), CompilationRate::parse("2/1h").unwrap());
        cache.set_limits(CompileLimits {
            max_size_in_bytes: 20,
            general: None,
            contexts,
        });
        for source in ["1.0", "2.0"] {
            cache.get_or_compile(source, ScriptContext::Score).unwrap();
        }
        // a cached script needs no budget; another context has its own
        cache.get_or_compile("1.0", ScriptContext::Score).unwrap();
        cache.get_or_compile("3.0", ScriptContext::Filter).unwrap();
        let refused = cache
            .get_or_compile("3.0", ScriptContext::Score)
            .unwrap_err()
            .to_exception("3.0");
        assert_eq!(
            (refused.kind(), refused.status()),
            ("circuit_breaking_exception", 429)
        );
        assert_eq!(
            refused.reason(),
            "[script] Too many dynamic script compilations within, max: [2/1h]; please use indexed, or scripts with parameters instead; this limit can be changed by the [script.context.score.max_compilations_rate] setting"
        );
        assert_eq!(cache.limit_triggered(), 1);
        let long = "1.0 + 1.0 + 1.0 + 1.0 + 1.0";
        let err = cache
            .get_or_compile(long, ScriptContext::Filter)
            .unwrap_err()
            .to_exception(long);
        assert_eq!(
            err.reason(),
            "exceeded max allowed inline script size in bytes [20] with size [27] for script [1.0 + 1.0 + 1.0 + 1.0 + 1.0]"
        );
        // one budget for every context
        cache.set_limits(CompileLimits {
            general: Some(CompilationRate::parse("1/1h").unwrap()),
            ..CompileLimits::default()
        });
        cache.get_or_compile("4.0", ScriptContext::Filter).unwrap();
        let err = cache
            .get_or_compile("5.0", ScriptContext::Score)
            .unwrap_err();
        assert!(err
            .reason
            .ends_with("the [script.max_compilations_rate] setting"));
    }

    #[test]
    fn a_bucket_refills_with_time() {
        let start = Instant::now();
        let mut bucket = Bucket::full(CompilationRate::parse("2/10s").unwrap());
        bucket.refilled = start;
        assert!(bucket.take(start) && bucket.take(start));
        assert!(!bucket.take(start));
        assert!(bucket.take(start + Duration::from_secs(5)));
        assert!(!bucket.take(start + Duration::from_secs(6)));
    }

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
