//! Support for the property tests: a deterministic PRNG, a random corpus with a model of the
//! live documents, an index builder that makes random segment layouts on disk (refresh points,
//! deletes, full and partial updates, force merges, 1 or 3 shards), filters that are both a
//! query and a predicate over the model, and a small harness that runs the real coordinator
//! over real `LocalShard`s with forced concurrency settings.
//!
//! Seeds: `TESSERA_PROP_SEED=<n>` (decimal or `0x…`) runs exactly that seed;
//! `TESSERA_PROP_CASES=<n>` changes how many seeds a test runs by default.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::settings::Settings;
use tessera_common::threadpool::ThreadPool;
use tessera_index::index_service::UpdateRequest;
use tessera_index::{Conditions, DocWrite, IndexService, NodeResources};
use tessera_mapping::Mapping;
use tessera_search::concurrent::{ConcurrencySettings, ConcurrentMode, SliceExecutor};
use tessera_search::reader_context::DEFAULT_KEEP_ALIVE;
use tessera_search::{
    LocalShard, LoopbackShard, ReaderContexts, ResponseOptions, Search, SearchSource, ShardGroup,
    ShardSearcher, ShardServices,
};

// ---------------------------------------------------------------------------------------------
// PRNG

/// splitmix64: tiny, fast, and good enough to drive property tests deterministically.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi);
        lo + self.below((hi - lo) as u64 + 1) as i64
    }

    pub fn usize(&mut self, lo: usize, hi: usize) -> usize {
        self.range(lo as i64, hi as i64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// A random subset of `items` of size `lo..=hi` (without repetition).
    pub fn subset<T: Clone>(&mut self, items: &[T], lo: usize, hi: usize) -> Vec<T> {
        let mut all = items.to_vec();
        self.shuffle(&mut all);
        all.truncate(self.usize(lo, hi.min(items.len())));
        all
    }
}

fn parse_seed(text: &str) -> u64 {
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("TESSERA_PROP_SEED must be a number, got {text:?}"))
}

/// The seeds a property test runs: `TESSERA_PROP_SEED` alone when set, else `default_cases`
/// (or `TESSERA_PROP_CASES`) fixed seeds derived from `salt`.
pub fn seeds(salt: u64, default_cases: usize) -> Vec<u64> {
    if let Ok(seed) = std::env::var("TESSERA_PROP_SEED") {
        return vec![parse_seed(&seed)];
    }
    let cases = std::env::var("TESSERA_PROP_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default_cases);
    let mut rng = Rng::new(salt);
    (0..cases).map(|_| rng.next_u64() % 1_000_000_007).collect()
}

// ---------------------------------------------------------------------------------------------
// dates (civil calendar, Howard Hinnant's algorithms), independent of tessera-date

pub const DAY_MS: i64 = 86_400_000;

/// Relative tolerance for values the model computes by another formula than the engine's
/// (a two-pass variance, a weighted average's quotient of compensated sums).
pub const FLOAT_REL: f64 = 1e-9;

pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// `2024-03-05T12:34:56.000Z` (OpenSearch's rendering of `strict_date_optional_time`).
pub fn iso_millis(millis: i64) -> String {
    let days = millis.div_euclid(DAY_MS);
    let rest = millis.rem_euclid(DAY_MS);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// `2024-03-05T12:34:56Z`: the one date format documents are written with.
pub fn iso_seconds(millis: i64) -> String {
    let full = iso_millis(millis);
    format!("{}Z", &full[..19])
}

/// The start of the UTC month holding `millis`.
pub fn month_start(millis: i64) -> i64 {
    let (y, m, _) = civil_from_days(millis.div_euclid(DAY_MS));
    days_from_civil(y, m, 1) * DAY_MS
}

/// The start of the month after the one starting at `start`.
pub fn next_month(start: i64) -> i64 {
    let (y, m, _) = civil_from_days(start.div_euclid(DAY_MS));
    let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    days_from_civil(y, m, 1) * DAY_MS
}

/// 2024-01-01T00:00:00Z; documents' dates fall in the 182 days after it.
pub fn base_millis() -> i64 {
    days_from_civil(2024, 1, 1) * DAY_MS
}

pub const DATE_SPAN_DAYS: i64 = 182;

// ---------------------------------------------------------------------------------------------
// the corpus

pub const COLORS: &[&str] = &["red", "green", "blue", "cyan", "magenta", "yellow", "black"];
pub const VOCAB: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima",
];

/// Every field of the corpus, in mapping order.
pub const FIELDS: &[&str] = &[
    "color", "user", "n", "nums", "x", "price", "ts", "flag", "body",
];

pub fn mapping() -> Value {
    json!({"properties": {
        "color": {"type": "keyword"},
        "user": {"type": "keyword"},
        "n": {"type": "long"},
        "nums": {"type": "long"},
        "x": {"type": "double"},
        "price": {"type": "scaled_float", "scaling_factor": 100},
        "ts": {"type": "date"},
        "flag": {"type": "boolean"},
        "body": {"type": "text"}
    }})
}

/// One document of the model. Empty vectors and `None` are missing fields; multi-valued
/// fields never repeat a value (so every engine's notion of "values" agrees).
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    pub id: String,
    /// keyword, low cardinality, 0..=3 values.
    pub color: Vec<String>,
    /// keyword, high cardinality.
    pub user: Option<String>,
    /// long.
    pub n: Option<i64>,
    /// long, 0..=3 values.
    pub nums: Vec<i64>,
    /// double with three decimals.
    pub x: Option<f64>,
    /// scaled_float (factor 100), kept as cents.
    pub price: Option<i64>,
    /// date, epoch millis (whole seconds).
    pub ts: Option<i64>,
    pub flag: Option<bool>,
    /// text: words of [`VOCAB`].
    pub body: Vec<String>,
    /// How `color` is written when it has one value: a string (true) or a one-element array.
    pub color_as_string: bool,
}

impl Doc {
    pub fn random(rng: &mut Rng, id: String, users: u64) -> Doc {
        let mut color: Vec<String> = Vec::new();
        let colors = match rng.below(10) {
            0 => 0,
            1..=6 => 1,
            7 | 8 => 2,
            _ => 3,
        };
        while color.len() < colors {
            // skewed towards the first colors
            let c = COLORS[(rng.below(COLORS.len() as u64) * rng.below(COLORS.len() as u64 + 1)
                / COLORS.len() as u64) as usize]
                .to_string();
            if !color.contains(&c) {
                color.push(c);
            }
        }
        let mut nums = Vec::new();
        for _ in 0..rng.below(4) {
            let v = rng.range(0, 59);
            if !nums.contains(&v) {
                nums.push(v);
            }
        }
        let mut body = Vec::new();
        for _ in 0..rng.below(7) {
            let i = rng
                .below(VOCAB.len() as u64)
                .min(rng.below(VOCAB.len() as u64));
            body.push(VOCAB[i as usize].to_string());
        }
        Doc {
            id,
            color,
            user: rng
                .chance(0.9)
                .then(|| format!("u{:05}", rng.below(users.max(1)))),
            n: rng.chance(0.85).then(|| rng.range(-1000, 1000)),
            nums,
            x: rng
                .chance(0.8)
                .then(|| rng.range(-10_000_000, 10_000_000) as f64 / 1000.0),
            price: rng.chance(0.75).then(|| rng.range(0, 200_000)),
            ts: rng
                .chance(0.85)
                .then(|| base_millis() + rng.range(0, DATE_SPAN_DAYS * 86_400 - 1) * 1000),
            flag: rng.chance(0.8).then(|| rng.chance(0.4)),
            body,
            color_as_string: rng.chance(0.5),
        }
    }

    /// `price` as the document sends it (cents as a decimal number).
    pub fn price_value(&self) -> Option<f64> {
        self.price.map(|c| c as f64 / 100.0)
    }

    /// `price` as aggregations see it: the stored integer times the factor's inverse, as
    /// OpenSearch's (and Tessera's) scaled_float field data compute it.
    pub fn price_field_value(&self) -> Option<f64> {
        self.price.map(|c| c as f64 * (1.0 / 100.0))
    }

    /// The JSON of one field, `Null` when missing.
    pub fn field_json(&self, field: &str) -> Value {
        match field {
            "color" => match self.color.len() {
                0 => Value::Null,
                1 if self.color_as_string => json!(self.color[0]),
                _ => json!(self.color),
            },
            "user" => json!(self.user),
            "n" => json!(self.n),
            "nums" => {
                if self.nums.is_empty() {
                    Value::Null
                } else {
                    json!(self.nums)
                }
            }
            "x" => json!(self.x),
            "price" => json!(self.price_value()),
            "ts" => json!(self.ts.map(iso_seconds)),
            "flag" => json!(self.flag),
            "body" => {
                if self.body.is_empty() {
                    Value::Null
                } else {
                    json!(self.body.join(" "))
                }
            }
            other => panic!("unknown field {other}"),
        }
    }

    /// Copies `field` from `other` (a partial update).
    pub fn set_from(&mut self, other: &Doc, field: &str) {
        match field {
            "color" => {
                self.color = other.color.clone();
                self.color_as_string = other.color_as_string;
            }
            "user" => self.user = other.user.clone(),
            "n" => self.n = other.n,
            "nums" => self.nums = other.nums.clone(),
            "x" => self.x = other.x,
            "price" => self.price = other.price,
            "ts" => self.ts = other.ts,
            "flag" => self.flag = other.flag,
            "body" => self.body = other.body.clone(),
            other => panic!("unknown field {other}"),
        }
    }

    /// The `_source`: missing fields are omitted (or, sometimes, written as `null`).
    pub fn source(&self) -> Value {
        let mut map = Map::new();
        for field in FIELDS {
            let value = self.field_json(field);
            if !value.is_null() {
                map.insert(field.to_string(), value);
            }
        }
        Value::Object(map)
    }

    /// Numeric values of a numeric field, as the engine's columns hold them.
    pub fn numbers(&self, field: &str) -> Vec<f64> {
        match field {
            "n" => self.n.map(|v| v as f64).into_iter().collect(),
            "nums" => self.nums.iter().map(|&v| v as f64).collect(),
            "x" => self.x.into_iter().collect(),
            "price" => self.price_field_value().into_iter().collect(),
            "ts" => self.ts.map(|v| v as f64).into_iter().collect(),
            "flag" => self.flag.map(|b| b as i64 as f64).into_iter().collect(),
            other => panic!("{other} is not numeric"),
        }
    }

    /// String values of a keyword field.
    pub fn keywords(&self, field: &str) -> Vec<String> {
        match field {
            "color" => self.color.clone(),
            "user" => self.user.clone().into_iter().collect(),
            other => panic!("{other} is not a keyword field"),
        }
    }

    pub fn has(&self, field: &str) -> bool {
        match field {
            "color" => !self.color.is_empty(),
            "user" => self.user.is_some(),
            "n" => self.n.is_some(),
            "nums" => !self.nums.is_empty(),
            "x" => self.x.is_some(),
            "price" => self.price.is_some(),
            "ts" => self.ts.is_some(),
            "flag" => self.flag.is_some(),
            "body" => !self.body.is_empty(),
            other => panic!("unknown field {other}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// filters: a query and a predicate over the model

#[derive(Clone, Debug)]
pub enum Filter {
    All,
    /// `term` on a keyword field.
    Keyword(&'static str, String),
    /// `terms` on a keyword field.
    KeywordIn(&'static str, Vec<String>),
    /// `range` on `n`: `gte`..`lte`.
    NBetween(i64, i64),
    /// `range` on `x`: `gt`.
    XAbove(f64),
    /// `range` on `ts`: `gte`..`lt`, written as dates.
    TsBetween(i64, i64),
    Flag(bool),
    Exists(&'static str),
    /// `match` on `body` with one word.
    Word(String),
    /// `bool.filter`.
    And(Vec<Filter>),
    /// `bool.should` with `minimum_should_match: 1`.
    Or(Vec<Filter>),
    /// `bool.must_not`.
    Not(Box<Filter>),
}

impl Filter {
    pub fn to_json(&self) -> Value {
        match self {
            Filter::All => json!({"match_all": {}}),
            Filter::Keyword(field, value) => json!({"term": {*field: value}}),
            Filter::KeywordIn(field, values) => json!({"terms": {*field: values}}),
            Filter::NBetween(lo, hi) => json!({"range": {"n": {"gte": lo, "lte": hi}}}),
            Filter::XAbove(lo) => json!({"range": {"x": {"gt": lo}}}),
            Filter::TsBetween(lo, hi) => {
                json!({"range": {"ts": {"gte": iso_seconds(*lo), "lt": iso_seconds(*hi)}}})
            }
            Filter::Flag(b) => json!({"term": {"flag": b}}),
            Filter::Exists(field) => json!({"exists": {"field": field}}),
            Filter::Word(word) => json!({"match": {"body": word}}),
            Filter::And(items) => {
                json!({"bool": {"filter": items.iter().map(Filter::to_json).collect::<Vec<_>>()}})
            }
            Filter::Or(items) => json!({"bool": {
                "should": items.iter().map(Filter::to_json).collect::<Vec<_>>(),
                "minimum_should_match": 1
            }}),
            Filter::Not(inner) => json!({"bool": {"must_not": [inner.to_json()]}}),
        }
    }

    pub fn matches(&self, doc: &Doc) -> bool {
        match self {
            Filter::All => true,
            Filter::Keyword(field, value) => doc.keywords(field).contains(value),
            Filter::KeywordIn(field, values) => {
                doc.keywords(field).iter().any(|v| values.contains(v))
            }
            Filter::NBetween(lo, hi) => doc.n.is_some_and(|n| *lo <= n && n <= *hi),
            Filter::XAbove(lo) => doc.x.is_some_and(|x| x > *lo),
            Filter::TsBetween(lo, hi) => doc.ts.is_some_and(|t| *lo <= t && t < *hi),
            Filter::Flag(b) => doc.flag == Some(*b),
            Filter::Exists(field) => doc.has(field),
            Filter::Word(word) => doc.body.contains(word),
            Filter::And(items) => items.iter().all(|f| f.matches(doc)),
            Filter::Or(items) => items.iter().any(|f| f.matches(doc)),
            Filter::Not(inner) => !inner.matches(doc),
        }
    }

    /// A random filter, nested at most `depth` levels.
    pub fn random(rng: &mut Rng, users: u64, depth: u32) -> Filter {
        let leaf_kinds = 9;
        let kinds = if depth == 0 {
            leaf_kinds
        } else {
            leaf_kinds + 3
        };
        match rng.below(kinds) {
            0 => Filter::Keyword("color", rng.pick(COLORS).to_string()),
            1 => Filter::KeywordIn(
                "user",
                (0..rng.usize(1, 6))
                    .map(|_| format!("u{:05}", rng.below(users.max(1))))
                    .collect(),
            ),
            2 => {
                let lo = rng.range(-1100, 900);
                Filter::NBetween(lo, lo + rng.range(0, 1200))
            }
            3 => Filter::XAbove(rng.range(-12_000, 8_000) as f64 / 1.5),
            4 => {
                let lo = base_millis()
                    + rng.range(-5, DATE_SPAN_DAYS) * DAY_MS
                    + rng.range(0, 86_399) * 1000;
                Filter::TsBetween(lo, lo + rng.range(1, 90) * DAY_MS)
            }
            5 => Filter::Flag(rng.chance(0.5)),
            6 => Filter::Exists(FIELDS[rng.below(FIELDS.len() as u64) as usize]),
            7 => Filter::Word(rng.pick(VOCAB).to_string()),
            8 => Filter::All,
            9 => Filter::And(
                (0..rng.usize(1, 3))
                    .map(|_| Filter::random(rng, users, depth - 1))
                    .collect(),
            ),
            10 => Filter::Or(
                (0..rng.usize(1, 3))
                    .map(|_| Filter::random(rng, users, depth - 1))
                    .collect(),
            ),
            _ => Filter::Not(Box::new(Filter::random(rng, users, depth - 1))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the index

/// How the corpus is laid out on disk.
#[derive(Clone, Debug)]
pub struct LayoutPlan {
    pub docs: usize,
    pub shards: u32,
    /// Refreshes while indexing (segments per shard, before merges).
    pub refreshes: usize,
    /// Chance that a refresh interval also deletes and updates earlier documents.
    pub churn: f64,
    /// Force-merge to this many segments at the end (`None`: no force merge).
    pub force_merge: Option<usize>,
    /// Deletes and updates after the force merge (so a merged segment has deleted docs).
    pub churn_after_merge: bool,
}

impl LayoutPlan {
    pub fn random(rng: &mut Rng, docs: usize, shards: u32) -> LayoutPlan {
        let force_merge = match rng.below(10) {
            0..=1 => Some(1),
            2 => Some(2),
            _ => None,
        };
        LayoutPlan {
            docs,
            shards,
            refreshes: rng.usize(1, 12),
            churn: *rng.pick(&[0.0, 0.3, 0.7]),
            force_merge,
            churn_after_merge: force_merge.is_some() && rng.chance(0.5),
        }
    }
}

/// An index built from a random plan, and the model of its live documents.
pub struct TestIndex {
    _dir: tempfile::TempDir,
    pub index: Arc<IndexService>,
    /// The live documents, by id.
    pub live: BTreeMap<String, Doc>,
    pub users: u64,
    pub plan: LayoutPlan,
}

impl TestIndex {
    /// Builds an index of a random layout: a document count drawn from `docs` (`lo..hi`), a
    /// shard count picked from `shards`, then a random [`LayoutPlan`].
    pub fn random(rng: &mut Rng, docs: (usize, usize), shards: &[u32]) -> TestIndex {
        let docs = rng.usize(docs.0, docs.1);
        let shards = *rng.pick(shards);
        let plan = LayoutPlan::random(rng, docs, shards);
        TestIndex::build(rng, plan)
    }

    /// Builds an index with `plan`, documents drawn from `rng`.
    pub fn build(rng: &mut Rng, plan: LayoutPlan) -> TestIndex {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = json!({
            "number_of_shards": plan.shards,
            "number_of_replicas": 0,
            "refresh_interval": "-1",
            "translog": {"durability": "async"}
        });
        let index = IndexService::create(
            &dir.path().join("props"),
            "props",
            "props-uuid",
            Settings::from_json(&settings)
                .expect("settings")
                .with_prefix("index."),
            Mapping::parse(&mapping()).expect("mapping"),
            &NodeResources {
                indexing_threads: 1,
                indexing_buffer_bytes: 64 << 20,
                merge_threads: 1,
                scripts: Default::default(),
            },
        )
        .expect("create the index");
        let mut built = TestIndex {
            _dir: dir,
            index: Arc::new(index),
            live: BTreeMap::new(),
            users: (plan.docs as u64 / 3).max(5),
            plan: plan.clone(),
        };
        // refresh points: `refreshes - 1` distinct cuts
        let mut cuts: Vec<usize> = (1..plan.docs).collect();
        rng.shuffle(&mut cuts);
        cuts.truncate(plan.refreshes.saturating_sub(1));
        cuts.push(plan.docs);
        cuts.sort_unstable();
        let mut next = 0;
        for cut in cuts {
            let mut ops = Vec::new();
            while next < cut {
                let id = format!("d{next}");
                ops.push(Op::Index(Doc::random(rng, id, built.users)));
                next += 1;
            }
            if rng.chance(plan.churn) {
                ops.extend(built.churn(rng));
            }
            built.apply(ops);
            built.index.refresh().expect("refresh");
        }
        if let Some(segments) = plan.force_merge {
            force_merge(&built.index, segments, &plan);
            if plan.churn_after_merge {
                let ops = built.churn(rng);
                built.apply(ops);
            }
        }
        built.index.refresh().expect("refresh");
        built
    }

    /// Random deletes, full updates, partial updates and re-creations of deleted ids.
    fn churn(&mut self, rng: &mut Rng) -> Vec<Op> {
        let ids: Vec<String> = self.live.keys().cloned().collect();
        if ids.is_empty() {
            return Vec::new();
        }
        let count = rng.usize(1, (ids.len() / 10).max(1));
        let mut ops = Vec::new();
        for id in rng.subset(&ids, count, count) {
            ops.push(match rng.below(4) {
                0 => Op::Delete(id),
                1 => Op::Index(Doc::random(rng, id, self.users)),
                _ => {
                    let fresh = Doc::random(rng, id.clone(), self.users);
                    Op::Update(id, fresh, rng.subset(FIELDS, 1, 3))
                }
            });
        }
        // sometimes bring a deleted id back
        if rng.chance(0.3) {
            let id = format!("d{}", rng.below(self.plan.docs as u64));
            if !self.live.contains_key(&id) {
                ops.push(Op::Index(Doc::random(rng, id, self.users)));
            }
        }
        ops
    }

    /// Applies `ops` to the index (batched per shard, in order) and to the model.
    fn apply(&mut self, ops: Vec<Op>) {
        let mut per_shard: BTreeMap<u32, Vec<DocWrite>> = BTreeMap::new();
        for op in ops {
            let shard = self.index.shard_for(op.id(), None);
            let write = match op {
                Op::Index(doc) => {
                    let source = serde_json::to_vec(&doc.source()).expect("source");
                    let write = DocWrite::Index {
                        id: Some(doc.id.clone()),
                        auto_generated_id: false,
                        source: source.into(),
                        routing: None,
                        conditions: Conditions::default(),
                    };
                    self.live.insert(doc.id.clone(), doc);
                    write
                }
                Op::Delete(id) => {
                    self.live.remove(&id);
                    DocWrite::Delete {
                        id,
                        routing: None,
                        conditions: Conditions::default(),
                    }
                }
                Op::Update(id, fresh, fields) => {
                    let current = self.live.get_mut(&id).expect("updates target live docs");
                    let mut partial = Map::new();
                    for field in &fields {
                        current.set_from(&fresh, field);
                        partial.insert(field.to_string(), fresh.field_json(field));
                    }
                    DocWrite::Update(Box::new(UpdateRequest {
                        id,
                        doc: Some(Value::Object(partial)),
                        ..UpdateRequest::default()
                    }))
                }
            };
            per_shard.entry(shard).or_default().push(write);
        }
        for (shard, writes) in per_shard {
            for result in self
                .index
                .write_shard(shard, writes, false)
                .expect("write to the shard")
            {
                result.expect("a write failed");
            }
        }
    }

    /// Deletes every live document `keep` refuses, then refreshes.
    pub fn delete_unless(&mut self, keep: impl Fn(&Doc) -> bool) {
        let ops: Vec<Op> = self
            .live
            .values()
            .filter(|d| !keep(d))
            .map(|d| Op::Delete(d.id.clone()))
            .collect();
        self.apply(ops);
        self.index.refresh().expect("refresh");
    }

    /// The segment layout actually on disk: per shard, `max_doc(-deleted)` of each segment in
    /// index order.
    pub fn layout(&self) -> String {
        let mut shards = Vec::new();
        for shard in self.index.shards() {
            let snapshot = shard.snapshot();
            let readers = snapshot.searcher.segment_readers();
            let segments: Vec<String> = snapshot
                .segments_in_order
                .iter()
                .map(|&ord| {
                    let r = &readers[ord as usize];
                    match r.num_deleted_docs() {
                        0 => format!("{}", r.max_doc()),
                        d => format!("{}-{d}", r.max_doc()),
                    }
                })
                .collect();
            shards.push(format!("[{}]", segments.join(" ")));
        }
        format!(
            "{} live docs; segments {}",
            self.live.len(),
            shards.join(" ")
        )
    }

    pub fn describe(&self) -> String {
        format!("plan {:?}; {}", self.plan, self.layout())
    }

    /// The shard a document lives on.
    pub fn shard_of(&self, id: &str) -> u32 {
        self.index.shard_for(id, None)
    }

    /// Live documents matching `filter`.
    pub fn matching<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = &'a Doc> + 'a {
        self.live.values().filter(move |d| filter.matches(d))
    }
}

/// `IndexService::force_merge`; a failure fails the test (force merges wait for background
/// merges, so nothing may race with them).
fn force_merge(index: &IndexService, segments: usize, plan: &LayoutPlan) {
    if let Err(e) = index.force_merge(segments) {
        panic!("force merge to {segments} segments ({plan:?}): {e:?}");
    }
}

enum Op {
    Index(Doc),
    Delete(String),
    /// id, a fresh random doc, and the fields to take from it.
    Update(String, Doc, Vec<&'static str>),
}

impl Op {
    fn id(&self) -> &str {
        match self {
            Op::Index(doc) => &doc.id,
            Op::Delete(id) | Op::Update(id, _, _) => id,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// running searches

/// Thread pools, a slice executor and a small runtime, shared by the searches of a test.
pub struct Engine {
    runtime: tokio::runtime::Runtime,
    search_pool: ThreadPool,
    index_searcher: ThreadPool,
    services: Arc<ShardServices>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    pub fn new() -> Engine {
        let search_pool = ThreadPool::new("search", 3, 1000);
        let index_searcher = ThreadPool::new("index_searcher", 4, 1000);
        Engine {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            services: Arc::new(ShardServices {
                executor: Arc::new(SliceExecutor::new(
                    index_searcher.clone(),
                    search_pool.clone(),
                    4,
                    Arc::new(|| 0.0),
                )),
                pool: search_pool.clone(),
                contexts: Arc::new(ReaderContexts::new(DEFAULT_KEEP_ALIVE)),
                load: Arc::new(tessera_search::search_load::SearchLoad::new(4)),
                breaker: None,
            }),
            search_pool,
            index_searcher,
        }
    }

    /// One `LocalShard` target per shard of `index`; behind the loopback transport (every
    /// request and answer through the wire encoding) when `TESSERA_SHARD_TRANSPORT=loopback`.
    pub fn targets(&self, index: &Arc<IndexService>) -> Vec<Arc<dyn ShardSearcher>> {
        let loopback = std::env::var("TESSERA_SHARD_TRANSPORT").as_deref() == Ok("loopback");
        (0..index.metadata().number_of_shards)
            .map(|shard| {
                let local = Arc::new(LocalShard::new(
                    index.clone(),
                    shard,
                    "node-props",
                    self.services.clone(),
                )) as Arc<dyn ShardSearcher>;
                if loopback {
                    Arc::new(LoopbackShard::new(local)) as Arc<dyn ShardSearcher>
                } else {
                    local
                }
            })
            .collect()
    }

    /// Reader contexts still open (every search must have released its own).
    pub fn open_contexts(&self) -> usize {
        self.services.contexts.open_count()
    }

    /// Runs `body` through the real coordinator. The answer is the response JSON without
    /// `took` and `profile`, or `{"error": …, "status": …}`.
    pub fn search(
        &self,
        targets: &[Arc<dyn ShardSearcher>],
        body: &Value,
        concurrency: ConcurrencySettings,
    ) -> Value {
        let groups = targets.iter().cloned().map(ShardGroup::single).collect();
        self.search_groups(groups, body, concurrency)
    }

    /// [`search`](Self::search) over shard groups of any number of copies.
    pub fn search_groups(
        &self,
        groups: Vec<ShardGroup>,
        body: &Value,
        concurrency: ConcurrencySettings,
    ) -> Value {
        let source = SearchSource {
            concurrency,
            ..SearchSource::from_body(body)
        };
        let search = match Search::parse(source) {
            Ok(s) => s,
            Err(e) => return json!({"error": e.to_json(), "status": e.status()}),
        };
        let response = self.runtime.block_on(tessera_search::search(
            &self.search_pool,
            groups,
            search,
            ResponseOptions::default(),
        ));
        assert_eq!(
            self.open_contexts(),
            0,
            "the search left reader contexts open"
        );
        match response {
            Ok(response) => {
                let mut value = serde_json::to_value(&response).expect("serialise the response");
                let object = value.as_object_mut().expect("an object");
                object.remove("took");
                object.remove("profile");
                value
            }
            Err(e) => json!({"error": e.to_json(), "status": e.status()}),
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.search_pool.shutdown();
        self.index_searcher.shutdown();
    }
}

/// Sequential search: one slice per shard.
pub fn mode_none() -> ConcurrencySettings {
    ConcurrencySettings {
        mode: Some(ConcurrentMode::None),
        max_slice_count: None,
    }
}

/// `all` with a slice cap (0 = Lucene's heuristic).
pub fn mode_all(max_slice_count: usize) -> ConcurrencySettings {
    ConcurrencySettings {
        mode: Some(ConcurrentMode::All),
        max_slice_count: Some(max_slice_count),
    }
}

/// Every setting the equivalence property compares against `mode_none`.
pub fn sliced_modes() -> Vec<(String, ConcurrencySettings)> {
    let mut modes: Vec<(String, ConcurrencySettings)> = (1..=8)
        .map(|n| (format!("all/max_slice_count={n}"), mode_all(n)))
        .collect();
    modes.push(("all/max_slice_count=0".into(), mode_all(0)));
    modes.push((
        "auto/max_slice_count=0".into(),
        ConcurrencySettings {
            mode: Some(ConcurrentMode::Auto),
            max_slice_count: Some(0),
        },
    ));
    modes
}

// ---------------------------------------------------------------------------------------------
// comparing JSON

/// The first difference between two JSON values, as `path: expected vs actual`; exact.
pub fn first_diff(expected: &Value, actual: &Value) -> Option<String> {
    diff_at(expected, actual, "$", &|_| 0.0, false)
}

/// Expected ⊆ actual: objects of `expected` may omit keys of `actual`; arrays must have the
/// same length; floats equal within `rel`.
pub fn subset_diff_approx(expected: &Value, actual: &Value, rel: f64) -> Option<String> {
    diff_at(expected, actual, "$", &|_| rel, true)
}

/// `a` and `b` equal within `rel` relative to the larger, or `rel` absolute below 1.
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    if a == b {
        return true;
    }
    let scale = a.abs().max(b.abs());
    (a - b).abs() <= rel * scale.max(1.0)
}

fn brief(v: &Value) -> String {
    let text = v.to_string();
    if text.len() > 400 {
        let mut end = 400;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    } else {
        text
    }
}

/// Compares recursively; `tolerance(path)` is the relative tolerance of floats at `path`.
fn diff_at(
    expected: &Value,
    actual: &Value,
    path: &str,
    tolerance: &dyn Fn(&str) -> f64,
    subset: bool,
) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                let child = format!("{path}.{key}");
                match a.get(key) {
                    None => return Some(format!("{child}: expected {} but missing", brief(ev))),
                    Some(av) => {
                        if let Some(d) = diff_at(ev, av, &child, tolerance, subset) {
                            return Some(d);
                        }
                    }
                }
            }
            if !subset {
                if let Some(key) = a.keys().find(|k| !e.contains_key(*k)) {
                    return Some(format!(
                        "{path}.{key}: unexpected {}",
                        brief(&a[key.as_str()])
                    ));
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Some(format!(
                    "{path}: expected {} items, got {}: expected {} vs actual {}",
                    e.len(),
                    a.len(),
                    brief(expected),
                    brief(actual)
                ));
            }
            e.iter().zip(a).enumerate().find_map(|(i, (ev, av))| {
                diff_at(ev, av, &format!("{path}[{i}]"), tolerance, subset)
            })
        }
        (Value::Number(e), Value::Number(a)) => {
            let same = if e.is_f64() || a.is_f64() {
                let x = e.as_f64().unwrap_or(f64::NAN);
                let y = a.as_f64().unwrap_or(f64::NAN);
                x == y || close(x, y, tolerance(path))
            } else {
                e == a
            };
            (!same).then(|| format!("{path}: expected {e} vs actual {a}"))
        }
        (e, a) => (e != a).then(|| format!("{path}: expected {} vs actual {}", brief(e), brief(a))),
    }
}

// ---------------------------------------------------------------------------------------------
// random requests

fn order(rng: &mut Rng) -> &'static str {
    if rng.chance(0.5) {
        "asc"
    } else {
        "desc"
    }
}

/// A random query: filters, scored full-text queries, and mixes of both.
pub fn random_query(rng: &mut Rng, users: u64) -> Value {
    let word = |rng: &mut Rng| rng.pick(VOCAB).to_string();
    match rng.below(12) {
        0 => json!({"match_all": {}}),
        11 => json!({"more_like_this": {
            "fields": ["body"],
            "like": format!("{} {} {}", word(rng), word(rng), word(rng)),
            "min_term_freq": 1,
            "min_doc_freq": 1,
            "max_query_terms": rng.usize(1, 4),
        }}),
        10 => json!({"terms_set": {"body": {
            "terms": [word(rng), word(rng), word(rng)],
            "minimum_should_match_script": {"source": *rng.pick(&["1", "2", "params.num_terms"])},
        }}}),
        9 => json!({"function_score": {
            "query": Filter::random(rng, users, 1).to_json(),
            "random_score": {"seed": rng.range(0, 1000), "field": *rng.pick(&["n", "user", "_seq_no"])},
            "boost_mode": *rng.pick(&["replace", "sum"]),
        }}),
        8 => json!({"bool": {
            "filter": [Filter::random(rng, users, 1).to_json()],
            "should": [{"distance_feature": {
                "field": "ts",
                "origin": format!("2024-0{}-1{}", rng.range(1, 7), rng.range(0, 9)),
                "pivot": *rng.pick(&["12h", "3d", "30d"]),
            }}]
        }}),
        1..=3 => Filter::random(rng, users, 2).to_json(),
        4 => json!({"match": {"body": format!("{} {}", word(rng), word(rng))}}),
        5 => json!({"bool": {
            "must": [{"match": {"body": word(rng)}}],
            "should": [{"match": {"body": word(rng)}}, {"term": {"color": rng.pick(COLORS)}}],
            "filter": [Filter::random(rng, users, 1).to_json()]
        }}),
        6 => {
            json!({"constant_score": {"filter": Filter::random(rng, users, 1).to_json(), "boost": 2.5}})
        }
        _ => json!({"bool": {
            "should": [
                {"match": {"body": {"query": word(rng), "boost": 2}}},
                {"range": {"n": {"gte": rng.range(-1000, 1000)}}}
            ],
            "must_not": [Filter::random(rng, users, 0).to_json()]
        }}),
    }
}

/// A random `sort`: fields of every type, both orders, missing first/last/value, multi-value
/// modes, `_score` and `_doc`.
pub fn random_sort(rng: &mut Rng) -> Value {
    let mut sort = Vec::new();
    for _ in 0..rng.usize(1, 3) {
        let o = order(rng);
        let missing = *rng.pick(&["_first", "_last"]);
        sort.push(match rng.below(12) {
            0 => json!({"n": o}),
            1 => json!({"x": {"order": o, "missing": missing}}),
            2 => json!({"ts": o}),
            3 => json!({"user": {"order": o, "missing": missing}}),
            4 => json!({"price": {"order": o, "missing": missing}}),
            5 => json!({"color": {"order": o, "mode": *rng.pick(&["min", "max"])}}),
            6 => json!({"nums": {"order": o, "mode": *rng.pick(&["min", "max", "sum", "avg"])}}),
            7 => json!({"flag": o}),
            8 => json!("_score"),
            9 => json!({"_doc": o}),
            10 => json!({"x": {"order": o, "missing": 0}}),
            _ => json!({"n": {"order": o, "missing": rng.range(-50, 50)}}),
        });
    }
    Value::Array(sort)
}

const NUMERIC: &[&str] = &["n", "nums", "x", "price", "ts"];

/// A random aggregation tree (1..=3 top-level aggregations, sub-aggregations up to
/// `depth` levels), covering every implemented type: terms, histogram, date_histogram, range,
/// filter(s), missing, global; min, max, sum, avg, stats, value_count, extended_stats,
/// cardinality, percentiles, percentile_ranks, weighted_avg and top_hits; bucket orders by
/// sub-aggregations (single-value metrics and any value of multi-value ones).
pub fn random_aggs(rng: &mut Rng, users: u64, depth: u32) -> Value {
    let mut gen = AggGen { users, counter: 0 };
    let mut aggs = Map::new();
    for _ in 0..rng.usize(1, 3) {
        let (name, body) = gen.agg(rng, depth, true);
        aggs.insert(name, body);
    }
    Value::Object(aggs)
}

/// How a bucket aggregation can be ordered by a metric sub-aggregation.
enum OrderKeys {
    /// By the metric's name.
    Single,
    /// By `name.key`, one of these keys.
    Multi(Vec<String>),
    /// Not at all (top_hits).
    NotNumeric,
}

/// Percents a `percentiles` request picks from; integral ones can be bucket order keys.
const PERCENTS: &[f64] = &[
    0.0, 0.5, 1.0, 5.0, 10.0, 25.0, 33.3, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0,
];

/// Values a `percentile_ranks` request on `field` could ask about: around its values.
fn rank_values(rng: &mut Rng, field: &str) -> Vec<f64> {
    let mut values: Vec<f64> = (0..rng.usize(1, 4))
        .map(|_| match field {
            "n" => rng.range(-1100, 1100) as f64,
            "nums" => rng.range(-5, 65) as f64,
            "x" => rng.range(-11_000, 11_000) as f64 / *rng.pick(&[1.0, 4.0]),
            "price" => rng.range(0, 2100) as f64,
            "ts" => (base_millis() + rng.range(-5, DATE_SPAN_DAYS + 5) * DAY_MS) as f64,
            other => panic!("no ranks for {other}"),
        })
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
}

/// The keys OpenSearch names percentiles and ranks with (Java's `Double.toString` of numbers
/// written here: integral or with few decimals, below 10^7, or dates' millis).
pub fn percent_key(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e7 {
        format!("{value:.1}")
    } else if value.abs() < 1e7 {
        format!("{value}")
    } else {
        // 1.7040672E12
        let text = format!("{value:e}");
        let (mantissa, exponent) = text.split_once('e').expect("scientific");
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exponent}")
    }
}

/// A random `missing` for a numeric metric on `field` (none for dates), sometimes.
fn numeric_missing(rng: &mut Rng, field: &str, body: &mut Value) {
    if rng.chance(0.15) && field != "ts" {
        body["missing"] = json!(rng.range(-5, 5));
    }
}

/// A random metric aggregation body and how buckets can be ordered by it.
fn random_metric(rng: &mut Rng) -> (Value, OrderKeys) {
    let kind = *rng.pick(&[
        "min",
        "max",
        "sum",
        "avg",
        "stats",
        "value_count",
        "extended_stats",
        "cardinality",
        "percentiles",
        "percentile_ranks",
        "weighted_avg",
        "top_hits",
    ]);
    match kind {
        "extended_stats" => {
            let field = *rng.pick(NUMERIC);
            let mut body = json!({"field": field});
            numeric_missing(rng, field, &mut body);
            if rng.chance(0.3) {
                body["sigma"] = json!(*rng.pick(&[0.0, 1.0, 2.5, 3.0]));
            }
            let keys = [
                "count",
                "min",
                "max",
                "avg",
                "sum",
                "sum_of_squares",
                "variance",
                "variance_sampling",
                "std_deviation",
                "std_upper",
                "std_lower_sampling",
            ];
            let keys = keys.iter().map(|k| k.to_string()).collect();
            (json!({ kind: body }), OrderKeys::Multi(keys))
        }
        "cardinality" => {
            let field = *rng.pick(&["color", "user", "n", "nums", "x", "price", "ts", "flag"]);
            let mut body = json!({"field": field});
            if rng.chance(0.5) {
                body["precision_threshold"] = json!(*rng.pick(&[0, 1, 10, 100, 1000, 3000, 40000]));
            }
            if rng.chance(0.15) {
                match field {
                    "color" | "user" => body["missing"] = json!("none"),
                    "ts" | "flag" => {}
                    _ => body["missing"] = json!(rng.range(-5, 5)),
                }
            }
            (json!({ kind: body }), OrderKeys::Single)
        }
        "percentiles" | "percentile_ranks" => {
            let field = *rng.pick(NUMERIC);
            let mut body = json!({"field": field});
            numeric_missing(rng, field, &mut body);
            let keys: Vec<f64> = if kind == "percentiles" {
                if rng.chance(0.3) {
                    default_percents()
                } else {
                    let mut p = rng.subset(PERCENTS, 1, 4);
                    p.sort_by(f64::total_cmp);
                    body["percents"] = json!(p);
                    p
                }
            } else {
                let values = rank_values(rng, field);
                body["values"] = json!(values);
                values
            };
            if rng.chance(0.3) {
                body["keyed"] = json!(false);
            }
            if rng.chance(0.25) {
                // capacity 50 × compression (at least 16): small ones quantise
                body["tdigest"] = json!({"compression": *rng.pick(&[0.1, 1.0, 5.0, 20.0, 100.0])});
            }
            let order_keys = keys
                .iter()
                .filter(|k| k.fract() == 0.0 && k.abs() < 1e15)
                .map(|k| format!("{}", *k as i64))
                .collect::<Vec<_>>();
            let order = if order_keys.is_empty() {
                OrderKeys::NotNumeric
            } else {
                OrderKeys::Multi(order_keys)
            };
            (json!({ kind: body }), order)
        }
        "weighted_avg" => {
            let value_field = *rng.pick(NUMERIC);
            let weight_field = *rng.pick(&["n", "x", "price", "flag"]);
            let mut value = json!({"field": value_field});
            let mut weight = json!({"field": weight_field});
            numeric_missing(rng, value_field, &mut value);
            if rng.chance(0.2) {
                weight["missing"] = json!(rng.range(0, 3));
            }
            (
                json!({ kind: {"value": value, "weight": weight} }),
                OrderKeys::Single,
            )
        }
        "top_hits" => (json!({ kind: random_top_hits(rng) }), OrderKeys::NotNumeric),
        "stats" | "min" | "max" | "sum" | "avg" | "value_count" => {
            let field = if kind == "value_count" && rng.chance(0.4) {
                *rng.pick(&["color", "user"])
            } else {
                *rng.pick(NUMERIC)
            };
            let mut body = json!({"field": field});
            if kind != "value_count" {
                numeric_missing(rng, field, &mut body);
            }
            let order = if kind == "stats" {
                OrderKeys::Multi(
                    ["min", "max", "avg", "sum", "count"]
                        .iter()
                        .map(|k| k.to_string())
                        .collect(),
                )
            } else {
                OrderKeys::Single
            };
            (json!({ kind: body }), order)
        }
        other => unreachable!("{other}"),
    }
}

/// OpenSearch's default percents.
fn default_percents() -> Vec<f64> {
    vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0]
}

/// A random `top_hits` body: size, from, sorts of every kind, `_source` filtering, version and
/// sequence numbers, track_scores.
pub fn random_top_hits(rng: &mut Rng) -> Value {
    let mut body = json!({"size": rng.range(1, 4)});
    if rng.chance(0.2) {
        body["from"] = json!(rng.range(0, 2));
    }
    if rng.chance(0.7) {
        body["sort"] = random_sort(rng);
    }
    match rng.below(5) {
        0 => body["_source"] = json!(false),
        1 => body["_source"] = json!(["n", "color"]),
        2 => body["_source"] = json!({"excludes": ["body", "user"]}),
        _ => {}
    }
    if rng.chance(0.2) {
        body["version"] = json!(true);
    }
    if rng.chance(0.2) {
        body["seq_no_primary_term"] = json!(true);
    }
    if rng.chance(0.2) {
        body["track_scores"] = json!(true);
    }
    body
}

struct AggGen {
    users: u64,
    counter: u32,
}

impl AggGen {
    fn agg(&mut self, rng: &mut Rng, depth: u32, top: bool) -> (String, Value) {
        let users = self.users;
        self.counter += 1;
        let name = format!("a{}", self.counter);
        let pick = rng.below(11);
        if depth == 0 || pick < 2 {
            return (name, random_metric(rng).0);
        }
        // significant_text takes no sub-aggregations
        if pick == 10 && rng.chance(0.3) {
            let body = json!({"significant_text": {
                "field": "body",
                "min_doc_count": rng.usize(1, 3),
                "size": *rng.pick(&[2, 5, 20]),
            }});
            return (name, body);
        }
        // bucket aggregations, with sub-aggregations
        let mut subs = Map::new();
        let mut metric_sub: Option<(String, OrderKeys)> = None;
        if rng.chance(0.7) {
            for _ in 0..rng.usize(1, 2) {
                if rng.chance(0.6) {
                    self.counter += 1;
                    let sub_name = format!("a{}", self.counter);
                    let (body, keys) = random_metric(rng);
                    subs.insert(sub_name.clone(), body);
                    if !matches!(keys, OrderKeys::NotNumeric) {
                        metric_sub = Some((sub_name, keys));
                    }
                } else {
                    let (sub_name, body) = self.agg(rng, depth - 1, false);
                    subs.insert(sub_name, body);
                }
            }
        }
        let sub_order = |rng: &mut Rng| -> Option<Value> {
            let (sub, keys) = metric_sub.as_ref()?;
            let path = match keys {
                OrderKeys::Multi(keys) => format!("{sub}.{}", rng.pick(keys)),
                _ => sub.clone(),
            };
            Some(json!([{ path: order(rng) }, {"_key": "asc"}]))
        };
        let mut body = match pick - 2 + if top { 0 } else { 1 } {
            // `global` only at the top
            0 if rng.chance(0.3) => json!({"global": {}}),
            0..=2 => {
                let field = *rng.pick(&["color", "user", "n", "flag", "nums", "ts", "x", "price"]);
                let mut terms = json!({"field": field, "size": *rng.pick(&[1, 3, 10, 50, 500])});
                if rng.chance(0.3) {
                    terms["shard_size"] = json!(rng.range(1, 20));
                }
                match rng.below(6) {
                    0 => terms["order"] = json!({"_key": order(rng)}),
                    1 => terms["order"] = json!({"_count": "asc"}),
                    2 => {
                        if let Some(o) = sub_order(rng) {
                            terms["order"] = o;
                        }
                    }
                    _ => {}
                }
                if rng.chance(0.2) {
                    terms["min_doc_count"] = json!(rng.range(0, 3));
                }
                if rng.chance(0.3) {
                    terms["show_term_doc_count_error"] = json!(true);
                }
                if field == "color" && rng.chance(0.3) {
                    terms["exclude"] = json!([rng.pick(COLORS)]);
                }
                if field == "user" && rng.chance(0.2) {
                    terms["include"] = json!("u0000.*");
                }
                if rng.chance(0.15) && matches!(field, "color" | "user") {
                    terms["missing"] = json!("none");
                }
                json!({ "terms": terms })
            }
            3 => {
                let field = *rng.pick(&["n", "nums", "x", "price"]);
                let mut h = json!({"field": field, "interval": *rng.pick(&[50.0, 100.0, 333.3, 1000.0, 2500.0])});
                if rng.chance(0.2) {
                    h["offset"] = json!(rng.range(0, 40));
                }
                h["min_doc_count"] = json!(*rng.pick(&[0, 1, 3]));
                if rng.chance(0.2) {
                    h["extended_bounds"] = json!({"min": -3000, "max": 3000});
                }
                if rng.chance(0.2) {
                    h["order"] = json!({"_count": "desc"});
                } else if let Some(o) = sub_order(rng).filter(|_| rng.chance(0.2)) {
                    h["order"] = o;
                }
                if rng.chance(0.15) {
                    h["keyed"] = json!(true);
                }
                json!({ "histogram": h })
            }
            4 => {
                let mut d = json!({"field": "ts"});
                if rng.chance(0.6) {
                    d["calendar_interval"] =
                        json!(*rng.pick(&["day", "week", "month", "quarter", "1d", "1M"]));
                } else {
                    d["fixed_interval"] = json!(*rng.pick(&["12h", "7d", "90m", "3d"]));
                }
                if rng.chance(0.3) {
                    d["time_zone"] = json!(*rng.pick(&["+05:30", "-08:00", "Europe/Paris"]));
                }
                if rng.chance(0.15) {
                    d["offset"] = json!("+6h");
                }
                d["min_doc_count"] = json!(*rng.pick(&[0, 1]));
                if rng.chance(0.15) {
                    d["extended_bounds"] = json!({"min": "2023-12-01", "max": "2024-08-01"});
                }
                if rng.chance(0.15) {
                    d["keyed"] = json!(true);
                }
                json!({ "date_histogram": d })
            }
            5 => {
                let field = *rng.pick(&["n", "x", "price", "nums"]);
                let mut ranges = Vec::new();
                for _ in 0..rng.usize(1, 4) {
                    let mut r = Map::new();
                    let from = rng.range(-1000, 1000);
                    if rng.chance(0.8) {
                        r.insert("from".into(), json!(from));
                    }
                    if rng.chance(0.8) {
                        r.insert("to".into(), json!(from + rng.range(1, 1500)));
                    }
                    if rng.chance(0.2) {
                        r.insert("key".into(), json!(format!("r{}", ranges.len())));
                    }
                    ranges.push(Value::Object(r));
                }
                json!({"range": {"field": field, "ranges": ranges, "keyed": rng.chance(0.2)}})
            }
            6 => json!({ "filter": Filter::random(rng, users, 1).to_json() }),
            7 => {
                let mut filters = Map::new();
                for i in 0..rng.usize(1, 3) {
                    filters.insert(format!("f{i}"), Filter::random(rng, users, 1).to_json());
                }
                json!({"filters": {"filters": filters, "other_bucket": rng.chance(0.5)}})
            }
            _ => json!({"missing": {"field": *rng.pick(&FIELDS[..8])}}),
        };
        if !subs.is_empty() {
            body["aggs"] = Value::Object(subs);
        }
        (name, body)
    }
}
