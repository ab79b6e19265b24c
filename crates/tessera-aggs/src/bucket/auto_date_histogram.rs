//! `auto_date_histogram`: a date histogram that picks its own interval so that about
//! `buckets` buckets come back, from OpenSearch's ladder of roundings (seconds 1/5/10/30,
//! minutes 1/5/10/30, hours 1/3/12, days 1/7, months 1/3, years 1/5/10/20/50/100).
//!
//! OpenSearch coarsens the rounding while it collects, reduces shard results at the coarsest
//! rounding any shard used, then (final reduce) merges buckets up the ladder until they fit,
//! fills the gaps and finally merges runs of `1/5/10/…` buckets of the same rounding. Its
//! shards' choices depend on the order documents arrive in; Tessera's must not depend on how
//! documents were split into slices, so it works with exact, order-independent state:
//!
//! - A slice keeps its buckets at a rung of the ladder and moves one rung up only when its own
//!   data already breaks the shard's rule at the current rung (more than `buckets × max inner
//!   interval` buckets, or a key range wider than `buckets × max inner interval × rough unit
//!   length`). The shard's data includes the slice's, so the shard breaks it too: the shard's
//!   rounding is at least that coarse, and buckets kept at a finer rung can always be re-rounded
//!   to the coarser one exactly (the rungs nest). So a slice holds at most about
//!   `buckets × 30` buckets per parent, and moving up never loses information the final answer
//!   needs.
//! - [`InternalAutoDateHistogram::reduce`] re-rounds every part to the coarsest rung among them
//!   and merges by key: associative and order-independent.
//! - `finish_shard` computes the rung OpenSearch's shard would end on from the shard's exact
//!   keys (its rule applied to all the shard's data at once), re-rounds to it and records it;
//!   the coordinator keeps the coarsest recorded rung, as OpenSearch's reduce does.
//! - Rendering replays OpenSearch's final reduce on the exact merged buckets: merge up while
//!   there are too many buckets, pick the rung for the key span (`getAppropriateRounding`),
//!   fill empty buckets, merge again, then merge consecutive buckets by the rung's inner
//!   intervals; `interval` is the inner interval and the rung's unit (`7d`, `3h`, `1M`).
//!
//! Where OpenSearch's own answer depends on arrival order, Tessera gives the answer of the
//! "ideal" order-free shard, whose rung follows the rule on all its keys at once, and which
//! counts a multi-valued document once per distinct key at that rung (OpenSearch counts it
//! once per distinct key at the rung of the moment it was collected, which for all but the
//! first few documents of a shard is the final one). To do that, documents whose values fall
//! in several buckets are remembered (their keys, at the current rung) until the shard has
//! chosen its rung, and the buckets they were counted in twice are corrected when buckets
//! merge. Sub-aggregations cannot be corrected after the fact: they see a multi-valued
//! document once per distinct second its values fall in. For single-valued fields and
//! day-or-finer rungs the answer is exactly OpenSearch's.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_date::{CalendarUnit, TimeZone};

use crate::bucket::date_histogram::{date_format, parse_date_value, DateInterval, Rounding};
use crate::bucket::histogram::Bucket;
use crate::collector::{Collector, SegmentContext, SortedSegment, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{
    render_subs, too_many_buckets, InternalAgg, InternalAggregations, RenderContext, ShardFinish,
    DEFAULT_MAX_BUCKETS,
};
use crate::ords::{slot, IntMap};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    int_param, string_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, NumericValues, ValueSource};

const AGG: &str = "auto_date_histogram";

/// One rung of OpenSearch's ladder of roundings.
#[derive(Debug)]
struct Rung {
    unit: CalendarUnit,
    /// `minimum_interval` name.
    name: &'static str,
    /// OpenSearch's rough length of the unit (months are 30 days, years 365).
    rough: i64,
    abbreviation: &'static str,
    inner: &'static [i64],
    /// The unit's exact length for sub-day units (their next key is `round(key + unit)`).
    sub_day: Option<i64>,
}

const SECOND: i64 = 1_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

const LADDER: [Rung; 6] = [
    Rung {
        unit: CalendarUnit::Second,
        name: "second",
        rough: SECOND,
        abbreviation: "s",
        inner: &[1, 5, 10, 30],
        sub_day: Some(SECOND),
    },
    Rung {
        unit: CalendarUnit::Minute,
        name: "minute",
        rough: MINUTE,
        abbreviation: "m",
        inner: &[1, 5, 10, 30],
        sub_day: Some(MINUTE),
    },
    Rung {
        unit: CalendarUnit::Hour,
        name: "hour",
        rough: HOUR,
        abbreviation: "h",
        inner: &[1, 3, 12],
        sub_day: Some(HOUR),
    },
    Rung {
        unit: CalendarUnit::Day,
        name: "day",
        rough: DAY,
        abbreviation: "d",
        inner: &[1, 7],
        sub_day: None,
    },
    Rung {
        unit: CalendarUnit::Month,
        name: "month",
        rough: 30 * DAY,
        abbreviation: "M",
        inner: &[1, 3],
        sub_day: None,
    },
    Rung {
        unit: CalendarUnit::Year,
        name: "year",
        rough: 365 * DAY,
        abbreviation: "y",
        inner: &[1, 5, 10, 20, 50, 100],
        sub_day: None,
    },
];

#[derive(Clone, Debug, PartialEq)]
pub struct AutoDateHistogramRequest {
    pub source: ValuesSourceParams,
    /// The target number of buckets.
    pub buckets: usize,
    /// Index of the first rung (`minimum_interval`).
    pub first_rung: usize,
    pub time_zone: Option<String>,
}

/// OpenSearch's error for a bad `time_zone` parameter of aggregation `agg`.
pub(crate) fn zone_error(agg: &str, key: &str, message: String) -> Error {
    let kind = if message.starts_with("Unknown time-zone ID") {
        "zone_rules_exception"
    } else {
        "date_time_exception"
    };
    Error::x_content_parse(format!("[{agg}] failed to parse field [{key}]"))
        .caused_by(Error::new(kind, 400, message))
}

impl AutoDateHistogramRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<AutoDateHistogramRequest> {
        let mut request = AutoDateHistogramRequest {
            source: ValuesSourceParams::default(),
            buckets: 10,
            first_rung: 0,
            time_zone: None,
        };
        let failed = |key: &str, cause: Error| {
            Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]"))
                .caused_by(cause)
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "buckets" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 || n > i32::MAX as i64 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "buckets must be greater than 0 for [{name}]"
                            )),
                        ));
                    }
                    request.buckets = n as usize;
                }
                "minimum_interval" => {
                    if value.is_null() {
                        request.first_rung = 0;
                        continue;
                    }
                    let text = string_param(AGG, key, value)?;
                    request.first_rung = LADDER
                        .iter()
                        .position(|r| r.name == text)
                        .ok_or_else(|| {
                            failed(
                                key,
                                Error::illegal_argument(
                                    "minimum_interval must be one of [[year, minute, second, hour, month, day]]",
                                ),
                            )
                        })?;
                }
                "time_zone" => {
                    let zone = string_param(AGG, key, value)?;
                    TimeZone::parse(&zone).map_err(|e| zone_error(AGG, key, e.message))?;
                    request.time_zone = Some(zone);
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }

    fn zone(&self) -> Result<TimeZone> {
        match &self.time_zone {
            None => Ok(TimeZone::utc()),
            Some(z) => TimeZone::parse(z).map_err(|e| Error::illegal_argument(e.message)),
        }
    }

    fn ladder(&self) -> Result<Ladder> {
        Ladder::new(
            &LADDER[self.first_rung.min(LADDER.len() - 1)..],
            self.zone()?,
        )
    }
}

/// The request's rungs with their prepared roundings.
struct Ladder {
    rungs: &'static [Rung],
    roundings: Vec<Rounding>,
    /// Per rung whose rounding is calendar arithmetic (months, years, or any rung in a zone
    /// with transitions): the buckets met so far as sorted `[start, end)` pairs, so rounding
    /// values in random order costs a binary search instead of a calendar computation.
    spans: Vec<Option<Vec<(i64, i64)>>>,
}

/// Bucket spans kept per rung before the cache starts over.
const MAX_SPANS: usize = 4096;

impl Ladder {
    fn new(rungs: &'static [Rung], zone: TimeZone) -> Result<Ladder> {
        let fixed = zone.fixed_offset().is_some();
        Ok(Ladder {
            roundings: rungs
                .iter()
                .map(|r| Rounding::new(DateInterval::Calendar(r.unit), zone.clone(), 0))
                .collect(),
            spans: rungs
                .iter()
                .map(|r| {
                    let arithmetic =
                        fixed && r.unit != CalendarUnit::Month && r.unit != CalendarUnit::Year;
                    (!arithmetic).then(Vec::new)
                })
                .collect(),
            rungs,
        })
    }

    fn len(&self) -> usize {
        self.rungs.len()
    }

    fn last(&self) -> usize {
        self.rungs.len() - 1
    }

    #[inline]
    fn round(&mut self, level: usize, value: i64) -> i64 {
        let Some(spans) = &mut self.spans[level] else {
            return self.roundings[level].round(value);
        };
        let i = spans.partition_point(|(start, _)| *start <= value);
        if i > 0 && value < spans[i - 1].1 {
            return spans[i - 1].0;
        }
        let start = self.roundings[level].round(value);
        let end = self.roundings[level].next(start);
        if end > start && value >= start && value < end {
            if spans.len() >= MAX_SPANS {
                spans.clear();
            }
            let at = spans.partition_point(|(s, _)| *s < start);
            spans.insert(at, (start, end));
        }
        start
    }

    /// The key of the bucket after the one holding `key` (OpenSearch's `nextRoundingValue`).
    fn next(&mut self, level: usize, key: i64) -> i64 {
        match self.rungs[level].sub_day {
            Some(unit) => self.round(level, key.saturating_add(unit)),
            None => {
                let start = self.round(level, key);
                self.roundings[level].next(start)
            }
        }
    }

    fn max_inner(&self, level: usize) -> i64 {
        *self.rungs[level].inner.last().unwrap_or(&1)
    }

    /// Whether `distinct` keys spanning `min_key..=max_key` at `level` are too many for the
    /// shard's rule (`increaseRoundingIfNeeded`) with `target` buckets.
    fn breaks_rule(
        &self,
        level: usize,
        target: usize,
        distinct: usize,
        min_key: i64,
        max_key: i64,
    ) -> bool {
        if level >= self.last() {
            return false;
        }
        let max_inner = self.max_inner(level) as i128;
        let target = target as i128;
        distinct as i128 > target * max_inner
            || (max_key as i128 - min_key as i128)
                > target * max_inner * self.rungs[level].rough as i128
    }

    /// OpenSearch's `getAppropriateRounding`: the rung for keys spanning `min_key..max_key`,
    /// no finer than `level`.
    fn appropriate_level(
        &mut self,
        min_key: i64,
        max_key: i64,
        level: usize,
        target: usize,
    ) -> usize {
        if level == self.last() {
            return level;
        }
        let target = target as i128;
        let mut current = level;
        for i in level + 1..self.len() {
            let duration = max_key as i128 - min_key as i128;
            let rough = duration / self.rungs[i].rough as i128;
            if rough < target * self.max_inner(i) as i128 {
                current = i - 1;
                break;
            }
        }
        loop {
            let mut required: i128 = 0;
            let mut key = min_key;
            let limit = target * self.max_inner(current) as i128;
            while key < max_key && required <= limit {
                required += 1;
                let next = self.next(current, key);
                if next <= key {
                    break;
                }
                key = next;
            }
            current += 1;
            if !(required > limit && current < self.len()) {
                return current - 1;
            }
        }
    }
}

/// Merges sorted buckets whose keys round to the same key at `level` (OpenSearch's
/// `mergeBuckets`); the merged bucket takes the rounded key.
fn rebucket(
    buckets: Vec<Bucket<i64>>,
    ladder: &mut Ladder,
    level: usize,
    subs: &[AggRequest],
) -> Result<Vec<Bucket<i64>>> {
    let mut out: Vec<Bucket<i64>> = Vec::with_capacity(buckets.len());
    let mut pending: Vec<InternalAggregations> = Vec::new();
    for bucket in buckets {
        let key = ladder.round(level, bucket.key);
        match out.last_mut() {
            Some(last) if last.key == key => {
                last.doc_count += bucket.doc_count;
                pending.push(bucket.subs);
            }
            _ => {
                flush_subs(out.last_mut(), &mut pending, subs)?;
                out.push(Bucket {
                    key,
                    doc_count: bucket.doc_count,
                    subs: InternalAggregations::default(),
                });
                pending.push(bucket.subs);
            }
        }
    }
    flush_subs(out.last_mut(), &mut pending, subs)?;
    Ok(out)
}

fn flush_subs(
    bucket: Option<&mut Bucket<i64>>,
    pending: &mut Vec<InternalAggregations>,
    subs: &[AggRequest],
) -> Result<()> {
    if let Some(bucket) = bucket {
        if !pending.is_empty() {
            bucket.subs = InternalAggregations::reduce(std::mem::take(pending), subs)?;
        }
    }
    pending.clear();
    Ok(())
}

// ---- collection ----

struct AutoFactory {
    source: ValueSource,
    format: ValueFormat,
    request: AutoDateHistogramRequest,
    missing: Option<i64>,
    sub_requests: Arc<Vec<AggRequest>>,
}

pub fn factory(
    request: &AggRequest,
    auto: &AutoDateHistogramRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let source = ValueSource::resolve_params(ctx, &auto.source, AGG, Accepts::Numeric)?;
    // OpenSearch's bucket ceiling: max_buckets over the largest inner interval of all rungs
    // but the last (with only the year rung left, OpenSearch fails on an empty stream)
    let rungs = &LADDER[auto.first_rung.min(LADDER.len() - 1)..];
    let largest_inner = rungs[..rungs.len() - 1]
        .iter()
        .flat_map(|r| r.inner.iter().copied())
        .max()
        .ok_or_else(|| Error::new("no_such_element_exception", 500, "No value present"))?;
    let ceiling = DEFAULT_MAX_BUCKETS as i64 / largest_inner;
    if auto.buckets as i64 > ceiling {
        return Err(Error::illegal_argument(format!(
            "buckets must be less than {ceiling}"
        )));
    }
    let zone = auto.zone()?;
    let format = match &source {
        // a script without a field gives dates (OpenSearch's default value type here)
        ValueSource::Script(script) if script.field_kind.is_none() => ValueFormat::Date {
            format: date_format(&source, auto.source.format.as_deref())?
                .spec()
                .to_string(),
            zone: auto.time_zone.clone(),
        },
        _ => ValueFormat::for_source(
            &source,
            auto.source.format.as_deref(),
            auto.time_zone.as_deref(),
        )?,
    };
    let missing = match &auto.source.missing {
        None => None,
        Some(value) => {
            let format = date_format(&source, auto.source.format.as_deref())?;
            Some(parse_date_value(
                value,
                &format,
                ctx.now_millis,
                Some(&zone),
            )?)
        }
    };
    Ok(Box::new(AutoFactory {
        source,
        format,
        request: auto.clone(),
        missing,
        sub_requests: Arc::new(request.subs.clone()),
    }))
}

impl Factory for AutoFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(AutoCollector {
            source: self.source.clone(),
            format: self.format.clone(),
            target: self.request.buckets,
            ladder: self.request.ladder()?,
            missing: self.missing,
            values: None,
            states: Vec::new(),
            ord_keys: Vec::new(),
            counts: Vec::new(),
            subs,
            sub_requests: self.sub_requests.clone(),
            pairs: Vec::new(),
            seen: Vec::new(),
            doc_keys: Vec::new(),
            single_parent,
        }))
    }
}

/// The buckets of one parent bucket in one slice.
struct ParentState {
    level: usize,
    /// Smallest and largest value seen (their keys at `level` give the key range).
    min: i64,
    max: i64,
    /// Key at `level` → the ordinal new documents of that key go to. Ordinals created at finer
    /// rungs keep their counts and are grouped by their re-rounded key when the slice builds.
    keys: IntMap<i64, u32>,
    ords: Vec<u32>,
    /// How much to take off the count of a key at `level`: documents counted in several
    /// buckets that have since merged into this one.
    adjust: IntMap<i64, u64>,
    /// The distinct keys at `level` of documents still counted in two or more buckets.
    multi: Vec<Vec<i64>>,
}

impl Default for ParentState {
    fn default() -> Self {
        ParentState {
            level: 0,
            min: i64::MAX,
            max: i64::MIN,
            keys: IntMap::default(),
            ords: Vec::new(),
            adjust: IntMap::default(),
            multi: Vec::new(),
        }
    }
}

/// Re-rounds a multi-valued document's sorted distinct keys to `level`; each key that
/// absorbs `m` of them is owed `m - 1` (the document was counted `m` times in it).
fn rekey_doc(
    keys: &mut Vec<i64>,
    ladder: &mut Ladder,
    level: usize,
    mut owe: impl FnMut(i64, u64),
) {
    for key in keys.iter_mut() {
        *key = ladder.round(level, *key);
    }
    let mut i = 0;
    while i < keys.len() {
        let mut end = i + 1;
        while end < keys.len() && keys[end] == keys[i] {
            end += 1;
        }
        if end - i > 1 {
            owe(keys[i], (end - i - 1) as u64);
        }
        i = end;
    }
    keys.dedup();
}

struct AutoCollector {
    source: ValueSource,
    format: ValueFormat,
    target: usize,
    ladder: Ladder,
    missing: Option<i64>,
    values: Option<NumericValues>,
    states: Vec<ParentState>,
    /// The key each ordinal was created with (at its parent's rung of the time).
    ord_keys: Vec<i64>,
    counts: Vec<u64>,
    subs: SubCollectors,
    sub_requests: Arc<Vec<AggRequest>>,
    pairs: Vec<(u32, i64)>,
    seen: Vec<bool>,
    doc_keys: Vec<i64>,
    single_parent: bool,
}

impl AutoCollector {
    /// Counts `count` documents of parent 0 whose values, from `first` to `last`, all fall in
    /// the bucket of `first` at the current rung (as `add` would, one by one).
    fn add_run(&mut self, first: i64, last: i64, count: u64) {
        let state = slot(&mut self.states, 0);
        state.min = state.min.min(first);
        state.max = state.max.max(last);
        let key = self.ladder.round(state.level, first);
        let ord = match state.keys.get(&key) {
            Some(ord) => *ord,
            None => {
                let ord = self.ord_keys.len() as u32;
                self.ord_keys.push(key);
                self.counts.push(0);
                state.keys.insert(key, ord);
                state.ords.push(ord);
                promote_if_needed(state, &mut self.ladder, self.target);
                ord
            }
        };
        self.counts[ord as usize] += count;
    }

    /// Counts `doc` (of `parent`) in the bucket of `value`.
    #[inline]
    fn add(&mut self, doc: DocId, parent: u32, value: i64) {
        let state = slot(&mut self.states, parent);
        if value < state.min {
            state.min = value;
        }
        if value > state.max {
            state.max = value;
        }
        let key = self.ladder.round(state.level, value);
        let ord = match state.keys.get(&key) {
            Some(ord) => *ord,
            None => {
                let ord = self.ord_keys.len() as u32;
                self.ord_keys.push(key);
                self.counts.push(0);
                state.keys.insert(key, ord);
                state.ords.push(ord);
                promote_if_needed(state, &mut self.ladder, self.target);
                ord
            }
        };
        self.counts[ord as usize] += 1;
        if !self.subs.is_empty() {
            self.subs.push(doc, ord);
        }
    }
}

/// Moves `state` up the ladder while its own keys break the shard's rule.
fn promote_if_needed(state: &mut ParentState, ladder: &mut Ladder, target: usize) {
    loop {
        let level = state.level;
        if level >= ladder.last() {
            return;
        }
        let min_key = ladder.round(level, state.min);
        let max_key = ladder.round(level, state.max);
        if !ladder.breaks_rule(level, target, state.keys.len(), min_key, max_key) {
            return;
        }
        state.level += 1;
        let old = std::mem::take(&mut state.keys);
        let mut ords: Vec<(i64, u32)> = old.into_iter().collect();
        // keep the smallest ordinal of each merged key, so the choice does not depend on
        // hash order
        ords.sort_unstable_by_key(|(_, ord)| *ord);
        for (key, ord) in ords {
            let key = ladder.round(state.level, key);
            state.keys.entry(key).or_insert(ord);
        }
        let level = state.level;
        if !state.adjust.is_empty() {
            for (key, owed) in std::mem::take(&mut state.adjust) {
                *state.adjust.entry(ladder.round(level, key)).or_default() += owed;
            }
        }
        let ParentState { multi, adjust, .. } = state;
        multi.retain_mut(|keys| {
            rekey_doc(keys, ladder, level, |key, owed| {
                *adjust.entry(key).or_default() += owed
            });
            keys.len() >= 2
        });
    }
}

impl Collector for AutoCollector {
    fn sorted_field(&self) -> Option<&str> {
        let ValueSource::Numeric { path, kind } = &self.source else {
            return None;
        };
        let integers = matches!(kind, NumericKind::Date(_) | NumericKind::Long);
        (integers && self.subs.is_empty() && self.single_parent && self.missing.is_none())
            .then_some(path.as_str())
    }

    fn collect_sorted(&mut self, segment: &SortedSegment) {
        let values = segment.values;
        let range = segment.matching();
        let (mut i, end) = (range.start, range.end);
        while i < end {
            // the run of values in the bucket of values[i] at the current rung (the rung may
            // move up as buckets are added; each run is rounded at the rung of its time)
            let level = self.states.first().map_or(0, |s| s.level);
            let key = self.ladder.round(level, values[i]);
            let (mut lo, mut hi) = (i + 1, end);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.ladder.round(level, values[mid]) <= key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            self.add_run(values[i], values[lo - 1], (lo - i) as u64);
            i = lo;
        }
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(NumericValues::open(&self.source, segment.reader)?);
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(values) = &mut self.values else {
            return;
        };
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        values.for_each_i64(docs, |p, v| pairs.push((p as u32, v)));
        if let Some(missing) = self.missing {
            let seen = &mut self.seen;
            seen.clear();
            seen.resize(docs.len(), false);
            for (p, _) in &pairs {
                seen[*p as usize] = true;
            }
            let had_values = pairs.len();
            for (p, s) in seen.iter().enumerate() {
                if !*s {
                    pairs.push((p as u32, missing));
                }
            }
            if pairs.len() > had_values {
                pairs.sort_by_key(|(p, _)| *p);
            }
        }
        let mut i = 0;
        while i < pairs.len() {
            let position = pairs[i].0;
            let mut end = i + 1;
            while end < pairs.len() && pairs[end].0 == position {
                end += 1;
            }
            let doc = docs[position as usize];
            let parent = parents[position as usize];
            if end == i + 1 {
                self.add(doc, parent, pairs[i].1);
            } else {
                // a document counts once per distinct second (the finest rung) of its values
                let mut keys = std::mem::take(&mut self.doc_keys);
                keys.clear();
                for &(_, value) in &pairs[i..end] {
                    keys.push(self.ladder.round(0, value));
                }
                keys.sort_unstable();
                keys.dedup();
                for &key in &keys {
                    self.add(doc, parent, key);
                }
                if keys.len() > 1 {
                    // counted once per distinct second so far: remember the document until
                    // its buckets can no longer merge
                    let mut doc_keys = keys.clone();
                    let state = slot(&mut self.states, parent);
                    let ParentState {
                        level,
                        multi,
                        adjust,
                        ..
                    } = state;
                    rekey_doc(&mut doc_keys, &mut self.ladder, *level, |key, owed| {
                        *adjust.entry(key).or_default() += owed
                    });
                    if doc_keys.len() >= 2 {
                        multi.push(doc_keys);
                    }
                }
                self.doc_keys = keys;
            }
            i = end;
        }
        self.pairs = pairs;
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let Some(state) = self.states.get(parent as usize) else {
            return Ok(InternalAgg::AutoDateHistogram(InternalAutoDateHistogram {
                format: self.format.clone(),
                ..Default::default()
            }));
        };
        let level = state.level;
        let mut groups: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
        for &ord in &state.ords {
            let key = self.ladder.round(level, self.ord_keys[ord as usize]);
            groups.entry(key).or_default().push(ord);
        }
        let mut buckets = Vec::with_capacity(groups.len());
        for (key, ords) in groups {
            let doc_count = ords
                .iter()
                .map(|o| self.counts[*o as usize])
                .sum::<u64>()
                .saturating_sub(state.adjust.get(&key).copied().unwrap_or(0));
            let subs = if ords.len() == 1 {
                self.subs.build(ords[0])?
            } else {
                let parts = ords
                    .iter()
                    .map(|o| self.subs.build(*o))
                    .collect::<Result<Vec<_>>>()?;
                InternalAggregations::reduce(parts, &self.sub_requests)?
            };
            buckets.push(Bucket {
                key,
                doc_count,
                subs,
            });
        }
        Ok(InternalAgg::AutoDateHistogram(InternalAutoDateHistogram {
            buckets,
            level: level as u8,
            shard_level: None,
            multi: state.multi.clone(),
            format: self.format.clone(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalAutoDateHistogram {
    /// Sorted by key; keys are bucket starts at rung `level`.
    pub buckets: Vec<Bucket<i64>>,
    /// The rung of the keys (an index into the request's ladder).
    pub level: u8,
    /// The coarsest rung a finished shard settled on (`None` before `finish_shard`).
    pub shard_level: Option<u8>,
    /// Distinct keys (at `level`) of documents counted in two or more buckets; kept until the
    /// shard has chosen its rung, then dropped (beyond it, OpenSearch sums counts).
    pub multi: Vec<Vec<i64>>,
    pub format: ValueFormat,
}

/// Takes off bucket counts what re-rounding the multi-valued documents to `level` owes.
fn correct_multi(
    buckets: &mut [Bucket<i64>],
    multi: &mut Vec<Vec<i64>>,
    ladder: &mut Ladder,
    level: usize,
) {
    let mut owed: IntMap<i64, u64> = IntMap::default();
    multi.retain_mut(|keys| {
        rekey_doc(keys, ladder, level, |key, n| {
            *owed.entry(key).or_default() += n
        });
        keys.len() >= 2
    });
    if owed.is_empty() {
        return;
    }
    for bucket in buckets {
        if let Some(n) = owed.get(&bucket.key) {
            bucket.doc_count = bucket.doc_count.saturating_sub(*n);
        }
    }
}

fn auto_request(request: &AggRequest) -> Result<&AutoDateHistogramRequest> {
    match &request.kind {
        AggKind::AutoDateHistogram(a) => Ok(a),
        _ => Err(Error::illegal_state(
            "auto_date_histogram result for another request",
        )),
    }
}

impl InternalAutoDateHistogram {
    pub fn reduce(
        parts: Vec<InternalAutoDateHistogram>,
        request: &AggRequest,
    ) -> Result<InternalAutoDateHistogram> {
        let auto = auto_request(request)?;
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let level = parts.iter().map(|p| p.level).max().unwrap_or(0);
        let shard_level = parts.iter().filter_map(|p| p.shard_level).max();
        let mut ladder = auto.ladder()?;
        let mut merged: BTreeMap<i64, (u64, Vec<InternalAggregations>)> = BTreeMap::new();
        let mut multi = Vec::new();
        for part in parts {
            multi.extend(part.multi);
            let rerounded = part.level < level;
            for bucket in part.buckets {
                let key = if rerounded {
                    ladder.round(level as usize, bucket.key)
                } else {
                    bucket.key
                };
                let entry = merged.entry(key).or_default();
                entry.0 += bucket.doc_count;
                entry.1.push(bucket.subs);
            }
        }
        let buckets = merged
            .into_iter()
            .map(|(key, (doc_count, subs))| {
                Ok(Bucket {
                    key,
                    doc_count,
                    subs: InternalAggregations::reduce(subs, &request.subs)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut buckets = buckets;
        correct_multi(&mut buckets, &mut multi, &mut ladder, level as usize);
        Ok(InternalAutoDateHistogram {
            buckets,
            level,
            shard_level,
            multi,
            format,
        })
    }

    /// Settles the shard on the rung OpenSearch's shard rule gives for all its keys.
    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        let auto = auto_request(request)?;
        let mut ladder = auto.ladder()?;
        let mut level = (self.level as usize).min(ladder.last());
        if let (Some(first), Some(last)) = (self.buckets.first(), self.buckets.last()) {
            let (first, last) = (first.key, last.key);
            loop {
                let mut distinct = 0usize;
                let mut previous = None;
                for bucket in &self.buckets {
                    let key = ladder.round(level, bucket.key);
                    if previous != Some(key) {
                        distinct += 1;
                        previous = Some(key);
                    }
                }
                let min_key = ladder.round(level, first);
                let max_key = ladder.round(level, last);
                if !ladder.breaks_rule(level, auto.buckets, distinct, min_key, max_key) {
                    break;
                }
                level += 1;
            }
        }
        if level > self.level as usize {
            self.buckets = rebucket(
                std::mem::take(&mut self.buckets),
                &mut ladder,
                level,
                &request.subs,
            )?;
            correct_multi(&mut self.buckets, &mut self.multi, &mut ladder, level);
            self.level = level as u8;
        }
        self.multi.clear();
        self.shard_level = Some(self.shard_level.unwrap_or(0).max(level as u8));
        for bucket in &mut self.buckets {
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    pub fn for_each_subs(
        &mut self,
        mut f: impl FnMut(&mut InternalAggregations) -> Result<()>,
    ) -> Result<()> {
        self.buckets.iter_mut().try_for_each(|b| f(&mut b.subs))
    }

    /// OpenSearch's final reduce on the exact buckets, then the JSON.
    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let auto = auto_request(request)?;
        let target = auto.buckets;
        let mut ladder = auto.ladder()?;
        let last_level = ladder.last();
        let mut level = (self.level.max(self.shard_level.unwrap_or(0)) as usize).min(last_level);
        let mut buckets = self.buckets;
        if level > self.level as usize {
            buckets = rebucket(buckets, &mut ladder, level, &request.subs)?;
        }
        // too many buckets for this rung even at its largest inner interval: move up
        let merge_if_needed = |buckets: Vec<Bucket<i64>>,
                               level: &mut usize,
                               ladder: &mut Ladder|
         -> Result<Vec<Bucket<i64>>> {
            let mut buckets = buckets;
            while buckets.len() as i128 > target as i128 * ladder.max_inner(*level) as i128
                && *level < last_level
            {
                *level += 1;
                buckets = rebucket(buckets, ladder, *level, &request.subs)?;
            }
            Ok(buckets)
        };
        buckets = merge_if_needed(buckets, &mut level, &mut ladder)?;
        if let (Some(first), Some(last)) = (buckets.first(), buckets.last()) {
            let (first, last) = (first.key, last.key);
            let appropriate = ladder.appropriate_level(first, last, level, target);
            if appropriate != level {
                level = appropriate;
                buckets = rebucket(buckets, &mut ladder, level, &request.subs)?;
            }
            let empty = InternalAggregations::empty(&request.subs);
            let mut filled = Vec::with_capacity(buckets.len());
            let mut previous: Option<i64> = None;
            for bucket in buckets {
                if let Some(previous) = previous {
                    let mut key = ladder.next(level, previous);
                    while key < bucket.key {
                        // dates spread over millennia at the coarsest rung: stop at the
                        // bucket limit rather than build an endless list
                        if filled.len() >= ctx.max_buckets {
                            return Err(too_many_buckets(ctx.max_buckets, filled.len() + 1));
                        }
                        filled.push(Bucket {
                            key,
                            doc_count: 0,
                            subs: empty.clone(),
                        });
                        let next = ladder.next(level, key);
                        if next <= key {
                            break;
                        }
                        key = next;
                    }
                }
                previous = Some(bucket.key);
                filled.push(bucket);
            }
            buckets = filled;
        }
        buckets = merge_if_needed(buckets, &mut level, &mut ladder)?;
        let mut inner = 1;
        if buckets.len() > target {
            let rung_inner = ladder.rungs[level].inner;
            if let Some(&interval) = rung_inner.iter().find(|&&interval| {
                (buckets.len() as i64 + interval - 1) / interval <= target as i64
            }) {
                inner = interval;
                let mut merged: Vec<Bucket<i64>> = Vec::new();
                let mut pending = Vec::new();
                for (i, bucket) in buckets.into_iter().enumerate() {
                    if i as i64 % interval == 0 {
                        flush_subs(merged.last_mut(), &mut pending, &request.subs)?;
                        merged.push(Bucket {
                            key: bucket.key,
                            doc_count: 0,
                            subs: InternalAggregations::default(),
                        });
                    }
                    if let Some(last) = merged.last_mut() {
                        last.doc_count += bucket.doc_count;
                    }
                    pending.push(bucket.subs);
                }
                flush_subs(merged.last_mut(), &mut pending, &request.subs)?;
                buckets = merged;
            }
        }
        ctx.add_buckets(buckets.len())?;
        let formatter = self.format.formatter();
        let mut rendered = Vec::with_capacity(buckets.len());
        for bucket in buckets {
            let mut out = Map::new();
            if let Some(text) = formatter.as_string(bucket.key as f64) {
                out.insert("key_as_string".into(), json!(text));
            }
            out.insert("key".into(), json!(bucket.key));
            out.insert("doc_count".into(), json!(bucket.doc_count));
            render_subs(&mut out, bucket.subs, &request.subs, ctx)?;
            rendered.push(Value::Object(out));
        }
        let mut out = Map::new();
        out.insert("buckets".into(), Value::Array(rendered));
        out.insert(
            "interval".into(),
            json!(format!("{inner}{}", ladder.rungs[level].abbreviation)),
        );
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use crate::test_util::{json_diff, render_shards, split_docs, Rng, TestShard};

    const JAN1: i64 = 1_420_070_400_000;

    fn parse_err(body: Value) -> (String, Option<String>) {
        let e = parse_aggregations(&json!({"r": {"auto_date_histogram": body}})).unwrap_err();
        (
            e.reason().to_string(),
            e.cause().map(|c| format!("{}: {}", c.kind(), c.reason())),
        )
    }

    #[test]
    fn parse_errors_match_opensearch() {
        assert_eq!(
            parse_err(json!({"field": "d", "buckets": 0})),
            (
                "[auto_date_histogram] failed to parse field [buckets]".into(),
                Some("illegal_argument_exception: buckets must be greater than 0 for [r]".into())
            )
        );
        assert_eq!(
            parse_err(json!({"field": "d", "minimum_interval": "week"})).1,
            Some("illegal_argument_exception: minimum_interval must be one of [[year, minute, second, hour, month, day]]".into())
        );
        assert_eq!(
            parse_err(json!({"field": "d", "keyed": true})).0,
            "[auto_date_histogram] unknown field [keyed]"
        );
        assert_eq!(
            parse_err(json!({"field": "d", "time_zone": "Bogus/Zone"})).1,
            Some("zone_rules_exception: Unknown time-zone ID: Bogus/Zone".into())
        );
        assert_eq!(
            parse_err(json!({"field": "d", "buckets": "abc"})).1,
            Some("number_format_exception: For input string: \"abc\"".into())
        );
        let ok = parse_aggregations(&json!({"r": {"auto_date_histogram": {"field": "d", "minimum_interval": "day", "buckets": "7"}}})).unwrap();
        let AggKind::AutoDateHistogram(a) = &ok[0].kind else {
            panic!()
        };
        assert_eq!((a.first_rung, a.buckets), (3, 7));
    }

    /// Timestamps also used (through the same formula) to record OpenSearch's answers.
    fn stamps(n: u64, span: i64, seed: u64) -> Vec<i64> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| JAN1 + (rng.below(1 << 40) as i64 % span))
            .collect()
    }

    fn date_shard(values: &[Value], segments: usize) -> TestShard {
        TestShard::new(
            json!({"properties": {"d": {"type": "date"}, "m": {"type": "long"}}}),
            values,
            segments,
        )
    }

    /// `{buckets, interval}` rendered from keys at the finest rung through the whole
    /// reduce/finish/render path of one shard.
    fn render_stamps(stamps: &[i64], body: Value) -> Value {
        let docs: Vec<Value> = stamps.iter().map(|t| json!({"d": t})).collect();
        let shard = date_shard(&docs, 3);
        shard.render(&json!({"r": {"auto_date_histogram": body}}), 2, 1)["r"].clone()
    }

    fn summary(result: &Value) -> (Vec<(i64, u64)>, String) {
        let buckets = result["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["key"].as_i64().unwrap(), b["doc_count"].as_u64().unwrap()))
            .collect();
        (buckets, result["interval"].as_str().unwrap().to_string())
    }

    #[test]
    fn ladder_next_follows_opensearch() {
        let mut ladder = Ladder::new(&LADDER, TimeZone::utc()).unwrap();
        // sub-day rungs step from any instant to the next aligned key
        assert_eq!(ladder.next(1, JAN1 + 30_500), JAN1 + MINUTE);
        assert_eq!(ladder.next(3, JAN1 + 5 * HOUR), JAN1 + DAY);
        assert_eq!(ladder.next(4, JAN1), JAN1 + 31 * DAY);
        // 20 days span needs 20 steps of a day
        assert_eq!(ladder.appropriate_level(JAN1, JAN1 + 20 * DAY, 0, 20), 3);
        assert_eq!(ladder.appropriate_level(JAN1, JAN1 + 200 * DAY, 3, 20), 4);
    }

    /// OpenSearch 2.19 on the same documents (recorded): a single day bucket, seconds spread
    /// over 3 hours and 20 days, and a two-year span.
    #[test]
    fn renders_like_opensearch() {
        // 3 docs at 00:00:01, 00:00:01.5 and 00:00:09 → 2 second buckets with a gap filled
        let r = render_stamps(
            &[JAN1 + 1000, JAN1 + 1500, JAN1 + 9000],
            json!({"field": "d"}),
        );
        assert_eq!(
            summary(&r),
            (
                vec![
                    (JAN1 + 1000, 2),
                    (JAN1 + 2000, 0),
                    (JAN1 + 3000, 0),
                    (JAN1 + 4000, 0),
                    (JAN1 + 5000, 0),
                    (JAN1 + 6000, 0),
                    (JAN1 + 7000, 0),
                    (JAN1 + 8000, 0),
                    (JAN1 + 9000, 1)
                ],
                "1s".into()
            )
        );
        assert_eq!(r["buckets"][0]["key_as_string"], "2015-01-01T00:00:01.000Z");
        // 600 docs over 20 days, 10 buckets: 3 weekly buckets
        let r = render_stamps(
            &stamps(600, 20 * DAY, 1),
            json!({"field": "d", "buckets": 10}),
        );
        assert_eq!(
            summary(&r),
            (
                vec![(JAN1, 188), (JAN1 + 7 * DAY, 205), (JAN1 + 14 * DAY, 207)],
                "7d".into()
            )
        );
        // 500 docs over 3 hours, 7 buckets: merged runs of 30 minutes
        let r = render_stamps(
            &stamps(500, 3 * HOUR, 2),
            json!({"field": "d", "buckets": 7}),
        );
        let half_hours: Vec<(i64, u64)> = [93, 76, 96, 86, 79, 70]
            .iter()
            .enumerate()
            .map(|(i, c)| (JAN1 + i as i64 * 30 * MINUTE, *c))
            .collect();
        assert_eq!(summary(&r), (half_hours, "30m".into()));
        // 400 docs over 700 days in +05:30, 5 buckets: years starting at local midnight
        let r = render_stamps(
            &stamps(400, 700 * DAY, 3),
            json!({"field": "d", "buckets": 5, "time_zone": "+05:30", "format": "yyyy-MM"}),
        );
        assert_eq!(
            summary(&r),
            (
                vec![(JAN1 - 19_800_000, 210), (JAN1 + 31_516_200_000, 190)],
                "1y".into()
            )
        );
        assert_eq!(r["buckets"][0]["key_as_string"], "2015-01");
    }

    #[test]
    fn any_slicing_and_sharding_gives_the_same_answer() {
        let mut rng = Rng::new(11);
        for (span, target) in [
            (20 * DAY, 20),
            (36 * HOUR, 10),
            (400 * DAY, 7),
            (90 * MINUTE, 30),
        ] {
            let docs: Vec<Value> = (0..700)
                .map(|i| {
                    let t = JAN1 + rng.below(span as u64) as i64;
                    match i % 13 {
                        0 => json!({"m": 1}),
                        1 => json!({"d": [t, t + rng.below(span as u64 / 4) as i64], "m": 2}),
                        _ => json!({"d": t, "m": i % 3}),
                    }
                })
                .collect();
            let body = json!({"r": {"auto_date_histogram": {"field": "d", "buckets": target},
                "aggs": {"s": {"sum": {"field": "m"}}, "t": {"terms": {"field": "m"}}}}});
            let shard = date_shard(&docs, 4);
            let reference = shard.render(&body, 1, 0);
            for seed in 1..10 {
                let slices = 1 + (seed as usize * 3) % 8;
                let other = shard.render(&body, slices, seed);
                assert_eq!(
                    json_diff(&reference, &other, 1e-12, ""),
                    None,
                    "slices {slices}"
                );
            }
            // the same documents on 3 shards: the keys and counts agree with one shard
            let parts = split_docs(&docs, 3, 5);
            let shards: Vec<TestShard> = parts.iter().map(|p| date_shard(p, 2)).collect();
            let refs: Vec<&TestShard> = shards.iter().collect();
            let multi = render_shards(&refs, &body, 3, 9).unwrap();
            assert_eq!(summary(&multi["r"]), summary(&reference["r"]));
            let total: u64 = summary(&reference["r"]).0.iter().map(|b| b.1).sum();
            assert!(total >= 700 - 700 / 13, "{total}");
        }
    }

    #[test]
    fn under_a_parent_each_bucket_picks_its_own_rung() {
        let docs: Vec<Value> = (0..400)
            .map(|i| {
                if i % 2 == 0 {
                    json!({"m": 0, "d": JAN1 + i * 37 * SECOND})
                } else {
                    json!({"m": 1, "d": JAN1 + i * 3 * DAY})
                }
            })
            .collect();
        let shard = date_shard(&docs, 3);
        let body = json!({"t": {"terms": {"field": "m"},
            "aggs": {"a": {"auto_date_histogram": {"field": "d", "buckets": 10}}}}});
        let reference = shard.render(&body, 1, 0);
        for seed in 1..6 {
            assert_eq!(shard.render(&body, seed as usize + 1, seed), reference);
        }
        let buckets = reference["t"]["buckets"].as_array().unwrap();
        // recorded from OpenSearch on the same documents
        let counts = |b: &Value| -> Vec<u64> {
            b["a"]["buckets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["doc_count"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(buckets[0]["a"]["interval"], "30m");
        assert_eq!(counts(&buckets[0]), [25, 24, 24, 25, 24, 24, 25, 24, 5]);
        assert_eq!(buckets[1]["a"]["interval"], "1y");
        assert_eq!(counts(&buckets[1]), [61, 61, 61, 17]);
        assert_eq!(buckets[1]["a"]["buckets"][3]["key"], 1_514_764_800_000i64);
    }

    #[test]
    fn dates_spread_over_millennia_hit_the_bucket_limit() {
        let shard = date_shard(
            &[
                json!({"d": -62_135_596_800_000i64}),
                json!({"d": 253_402_214_400_000i64}),
            ],
            1,
        );
        let requests = parse_aggregations(
            &json!({"r": {"auto_date_histogram": {"field": "d", "buckets": 1}}}),
        )
        .unwrap();
        let result = shard.shard_result(&requests, 1, 0, 1).unwrap();
        let reduced =
            crate::internal::InternalAggregations::reduce(vec![result], &requests).unwrap();
        let e = reduced
            .render(&requests, &mut RenderContext::new(1000))
            .unwrap_err();
        assert_eq!(e.kind(), "too_many_buckets_exception");
    }

    #[test]
    fn empty_and_unmapped_results() {
        let shard = date_shard(&[json!({"m": 1})], 1);
        let r = shard.render(
            &json!({"r": {"auto_date_histogram": {"field": "d", "minimum_interval": "hour"}}}),
            1,
            0,
        );
        assert_eq!(r["r"], json!({"buckets": [], "interval": "1h"}));
        let r = shard.render(
            &json!({"r": {"auto_date_histogram": {"field": "nope"}}}),
            1,
            0,
        );
        assert_eq!(r["r"], json!({"buckets": [], "interval": "1s"}));
        let e = shard
            .try_run(
                &json!({"r": {"auto_date_histogram": {"field": "d", "buckets": 3000}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!(e.reason(), "buckets must be less than 2184");
        let e = shard
            .try_run(
                &json!({"r": {"auto_date_histogram": {"field": "d", "minimum_interval": "year"}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!((e.kind(), e.status()), ("no_such_element_exception", 500));
    }
}
