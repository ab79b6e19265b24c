//! Aggregations equal an independent computation over the same documents: the test keeps a
//! model of the live documents (after deletes, full and partial updates) and computes every
//! expected bucket and metric itself — terms counts (sizes large enough to be exact),
//! histogram and date_histogram buckets (day and month, with and without empty buckets),
//! range counts, filter/filters/missing/global counts, and the metrics, at the top and inside
//! buckets (also under parents that put a document in several buckets) — for 1 and 3 shards,
//! random segment layouts (among them force-merged segments of thousands of documents), under
//! random query filters, sequentially and sliced. `hits.total` is checked against the model too.
//!
//! The metrics are interpreted from their request by the model (a fixed set plus random ones
//! per seed), with the expectation each one's documentation makes computable:
//! * `min`/`max`/`sum`/`avg`/`stats`/`value_count`: exact, bit for bit (sums are exactly
//!   rounded: the model adds the doubles exactly in a big integer, or the raw integers of
//!   long, date, boolean and scaled_float fields, as the engine documents);
//! * `extended_stats`: count, min, max, sum and avg exact; sum of squares, variances and
//!   standard deviations within 1e-9 relative of a two-pass computation (plus the rounding
//!   error of OpenSearch's one-pass formula `(Σx² - (Σx)²/n)/n`, which cancels when the
//!   deviation is tiny next to the values);
//! * `weighted_avg`: within 1e-9 relative;
//! * `cardinality`: exactly the number of distinct values while it is at most the
//!   `precision_threshold` (linear counting), less the values whose hashes share their top 25
//!   bits with another's (linear counting keeps 25 bits of each hash, as OpenSearch does: the
//!   model hashes with the engine's public OpenSearch-compatible hash functions to know when
//!   that happens, then accepts any count between the distinct prefixes and the distinct
//!   values); no expectation above the threshold;
//! * `percentiles`/`percentile_ranks`: exact while the values have at most `50 × compression`
//!   distinct values (the sketch then holds every value), with t-digest's `AVLTreeDigest`
//!   interpolation over single-value centroids computed here from its definition;
//! * `top_hits`: the total, and hits whose sort keys are, position by position, the best keys
//!   of the bucket under the requested sort (ties may come in any order), with their model
//!   `_source` (filtered as requested) and `sort` values.
//!
//! A lone `terms` aggregation under a `match_all` counts segments without deletions from the
//! field's terms dictionary instead of its documents: checked on its own against the model.
//!
//! Reproduce with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test aggs_oracle`.

mod common;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use common::{
    base_millis, iso_millis, mode_all, mode_none, month_start, next_month, percent_key, seeds,
    sliced_modes, Doc, Engine, Filter, LayoutPlan, Rng, TestIndex, COLORS, DATE_SPAN_DAYS, DAY_MS,
    FLOAT_REL,
};
use serde_json::{json, Map, Value};
use tessera_aggs::metric::cardinality::{mix64, murmur3_x64_128};
use tessera_search::concurrent::ConcurrencySettings;

const CASES: usize = 6;

/// The fixed aggregations of every request, by name (random metrics are added per seed).
fn fixed_aggs() -> Value {
    serde_json::from_str(
        r#"{
        "colors": {"terms": {"field": "color", "size": 100}},
        "users": {"terms": {"field": "user", "size": 10000}},
        "ns": {"terms": {"field": "n", "size": 5000}},
        "flags": {"terms": {"field": "flag"}},
        "nums_terms": {"terms": {"field": "nums", "size": 100}},
        "n_hist": {"histogram": {"field": "n", "interval": 100, "min_doc_count": 1}},
        "n_hist_filled": {"histogram": {"field": "n", "interval": 250}},
        "x_hist": {"histogram": {"field": "x", "interval": 1000, "min_doc_count": 1}},
        "nums_hist": {"histogram": {"field": "nums", "interval": 10, "min_doc_count": 1}},
        "price_hist": {"histogram": {"field": "price", "interval": 250, "min_doc_count": 1}},
        "days": {"date_histogram": {"field": "ts", "calendar_interval": "day", "min_doc_count": 1}},
        "days_filled": {"date_histogram": {"field": "ts", "calendar_interval": "1d"}},
        "months": {"date_histogram": {"field": "ts", "calendar_interval": "month"}},
        "n_ranges": {"range": {"field": "n", "ranges": [
            {"to": -500}, {"from": -500, "to": 0}, {"from": 0, "to": 500}, {"from": 500},
            {"from": -100, "to": 100}
        ]}},
        "x_ranges": {"range": {"field": "x", "ranges": [{"to": -2500.5}, {"from": -2500.5, "to": 7000}]}},
        "n_min": {"min": {"field": "n"}},
        "n_max": {"max": {"field": "n"}},
        "n_sum": {"sum": {"field": "n"}},
        "n_avg": {"avg": {"field": "n"}},
        "n_stats": {"stats": {"field": "n"}},
        "n_count": {"value_count": {"field": "n"}},
        "x_stats": {"stats": {"field": "x"}},
        "x_sum": {"sum": {"field": "x"}},
        "x_avg": {"avg": {"field": "x"}},
        "price_stats": {"stats": {"field": "price"}},
        "price_sum_missing": {"sum": {"field": "price", "missing": 1.5}},
        "nums_stats": {"stats": {"field": "nums"}},
        "nums_count": {"value_count": {"field": "nums"}},
        "color_count": {"value_count": {"field": "color"}},
        "user_count": {"value_count": {"field": "user"}},
        "ts_min": {"min": {"field": "ts"}},
        "ts_max": {"max": {"field": "ts"}},
        "n_ext": {"extended_stats": {"field": "n"}},
        "x_ext": {"extended_stats": {"field": "x", "sigma": 3}},
        "price_ext": {"extended_stats": {"field": "price"}},
        "nums_ext": {"extended_stats": {"field": "nums", "missing": 0}},
        "ts_ext": {"extended_stats": {"field": "ts"}},
        "x_by_price": {"weighted_avg": {"value": {"field": "x"}, "weight": {"field": "price"}}},
        "nums_by_n": {"weighted_avg": {"value": {"field": "nums"}, "weight": {"field": "n", "missing": 1}}},
        "n_by_flag": {"weighted_avg": {"value": {"field": "n", "missing": 7}, "weight": {"field": "flag"}}},
        "user_card": {"cardinality": {"field": "user"}},
        "color_card": {"cardinality": {"field": "color", "missing": "none"}},
        "n_card": {"cardinality": {"field": "n"}},
        "n_card_100": {"cardinality": {"field": "n", "precision_threshold": 100}},
        "nums_card": {"cardinality": {"field": "nums"}},
        "flag_card": {"cardinality": {"field": "flag"}},
        "x_card": {"cardinality": {"field": "x"}},
        "ts_card": {"cardinality": {"field": "ts"}},
        "price_card": {"cardinality": {"field": "price", "missing": 0}},
        "n_pct": {"percentiles": {"field": "n"}},
        "x_pct": {"percentiles": {"field": "x", "percents": [0, 33.3, 50, 99.9, 100], "keyed": false}},
        "price_pct": {"percentiles": {"field": "price", "percents": [10, 90], "missing": 3}},
        "ts_pct": {"percentiles": {"field": "ts", "percents": [50]}},
        "nums_pct_small": {"percentiles": {"field": "nums", "tdigest": {"compression": 0.1}}},
        "n_ranks": {"percentile_ranks": {"field": "n", "values": [-500, 0, 12.5, 999]}},
        "x_ranks": {"percentile_ranks": {"field": "x", "values": [-2500.25, 0, 7000], "keyed": false}},
        "nums_ranks": {"percentile_ranks": {"field": "nums", "values": [-1, 0, 30, 59, 60]}},
        "top_x": {"top_hits": {"size": 3, "sort": [{"x": "desc"}]}},
        "top_ts": {"top_hits": {"size": 2, "from": 1, "sort": [{"ts": {"order": "asc", "missing": "_first"}}, {"n": "desc"}], "_source": ["n", "color"]}},
        "red": {"filter": {"term": {"color": "red"}}, "aggs": {
            "x_sum": {"sum": {"field": "x"}}, "price_avg": {"avg": {"field": "price"}},
            "top_user": {"top_hits": {"size": 2, "sort": [{"user": {"order": "desc", "missing": "_last"}}], "_source": false}}
        }},
        "no_user": {"missing": {"field": "user"}, "aggs": {"n_stats": {"stats": {"field": "n"}}}},
        "no_price": {"missing": {"field": "price"}},
        "everything": {"global": {}, "aggs": {
            "n_avg": {"avg": {"field": "n"}}, "x_count": {"value_count": {"field": "x"}},
            "x_ext": {"extended_stats": {"field": "x"}}
        }},
        "parts": {"filters": {"filters": {
            "flagged": {"term": {"flag": true}}, "priced": {"exists": {"field": "price"}}
        }, "other_bucket": true}},
        "by_flag": {"terms": {"field": "flag"}, "aggs": {
            "x_avg": {"avg": {"field": "x"}},
            "price_sum": {"sum": {"field": "price"}},
            "n_stats": {"stats": {"field": "n"}},
            "nums_count": {"value_count": {"field": "nums"}},
            "ts_ext": {"extended_stats": {"field": "ts"}},
            "n_pct": {"percentiles": {"field": "n", "percents": [25, 50, 75]}},
            "top_price": {"top_hits": {"size": 2, "sort": [{"price": {"order": "asc", "missing": 0}}, {"user": "asc"}]}}
        }},
        "by_color": {"terms": {"field": "color", "size": 100}, "aggs": {
            "x_avg": {"avg": {"field": "x"}},
            "price_sum": {"sum": {"field": "price"}},
            "n_stats": {"stats": {"field": "n"}},
            "nums_count": {"value_count": {"field": "nums"}},
            "x_ext": {"extended_stats": {"field": "x"}},
            "user_card": {"cardinality": {"field": "user"}},
            "nums_ranks": {"percentile_ranks": {"field": "nums", "values": [10, 45]}},
            "x_by_n": {"weighted_avg": {"value": {"field": "x"}, "weight": {"field": "n"}}},
            "top_nums": {"top_hits": {"size": 2, "sort": [{"nums": {"order": "desc", "mode": "max"}}, {"color": {"order": "asc", "mode": "min"}}]}}
        }},
        "by_month": {"date_histogram": {"field": "ts", "calendar_interval": "month"}, "aggs": {
            "colors": {"terms": {"field": "color", "size": 100}},
            "n_card": {"cardinality": {"field": "n"}}
        }}
    }"#,
    )
    .expect("the aggregations are JSON")
}

/// The fixed aggregations plus random metrics of the kinds the model knows: four at the top,
/// two under `by_color` (a multi-valued parent), one under `by_flag`.
fn aggs(rng: &mut Rng) -> Value {
    let mut aggs = fixed_aggs();
    for i in 0..4 {
        aggs[format!("r{i}")] = random_metric(rng);
    }
    for i in 0..2 {
        aggs["by_color"]["aggs"][format!("r{i}")] = random_metric(rng);
    }
    aggs["by_flag"]["aggs"]["r0"] = random_metric(rng);
    aggs
}

const NUMERIC: &[&str] = &["n", "nums", "x", "price", "ts"];

/// A random metric the model computes.
fn random_metric(rng: &mut Rng) -> Value {
    let field = *rng.pick(NUMERIC);
    let missing = |rng: &mut Rng, body: &mut Value| {
        if field != "ts" && rng.chance(0.2) {
            body["missing"] = json!(rng.range(-5, 5) as f64 / *rng.pick(&[1.0, 4.0]));
        }
    };
    let mut body = json!({"field": field});
    match rng.below(9) {
        0 => {
            let kind = *rng.pick(&["min", "max", "sum", "avg", "stats", "value_count"]);
            if kind != "value_count" {
                missing(rng, &mut body);
            }
            json!({ kind: body })
        }
        1 => {
            missing(rng, &mut body);
            if rng.chance(0.5) {
                body["sigma"] = json!(*rng.pick(&[0.0, 1.0, 2.5]));
            }
            json!({ "extended_stats": body })
        }
        2 => {
            let weight_field = *rng.pick(&["n", "x", "price", "flag", "ts"]);
            let mut weight = json!({"field": weight_field});
            if rng.chance(0.3) {
                weight["missing"] = json!(rng.range(-2, 3));
            }
            missing(rng, &mut body);
            json!({"weighted_avg": {"value": body, "weight": weight}})
        }
        3 => {
            let field = *rng.pick(&["color", "user", "n", "nums", "x", "price", "ts", "flag"]);
            let mut body = json!({ "field": field });
            if rng.chance(0.6) {
                body["precision_threshold"] = json!(*rng.pick(&[0, 5, 40, 100, 3000]));
            }
            if rng.chance(0.2) {
                match field {
                    "color" | "user" => body["missing"] = json!("u00001"),
                    "ts" | "flag" => {}
                    _ => body["missing"] = json!(rng.range(-3, 3)),
                }
            }
            json!({ "cardinality": body })
        }
        4 | 5 => {
            missing(rng, &mut body);
            if rng.chance(0.3) {
                body["keyed"] = json!(false);
            }
            if rng.chance(0.3) {
                body["tdigest"] = json!({"compression": *rng.pick(&[0.1, 0.5, 2.0, 100.0])});
            }
            if rng.chance(0.5) {
                let mut percents: Vec<f64> = (0..rng.usize(1, 4))
                    .map(|_| *rng.pick(&[0.0, 0.1, 1.0, 12.5, 50.0, 66.6, 99.0, 100.0]))
                    .collect();
                percents.sort_by(f64::total_cmp);
                percents.dedup();
                body["percents"] = json!(percents);
                json!({ "percentiles": body })
            } else {
                let mut values: Vec<f64> = (0..rng.usize(1, 4))
                    .map(|_| match field {
                        "n" => rng.range(-1100, 1100) as f64,
                        "nums" => rng.range(-2, 61) as f64,
                        "x" => rng.range(-44_000, 44_000) as f64 / 4.0,
                        "price" => rng.range(0, 2100) as f64,
                        _ => (base_millis() + rng.range(-2, DATE_SPAN_DAYS + 2) * DAY_MS) as f64,
                    })
                    .collect();
                values.sort_by(f64::total_cmp);
                values.dedup();
                body["values"] = json!(values);
                json!({ "percentile_ranks": body })
            }
        }
        _ => json!({ "top_hits": random_top_hits(rng) }),
    }
}

/// A `top_hits` whose sort the model can follow (field sorts only: `_doc` and `_score` order
/// by index order, which the model does not know).
fn random_top_hits(rng: &mut Rng) -> Value {
    let mut sort = Vec::new();
    for _ in 0..rng.usize(1, 2) {
        let field = *rng.pick(&["n", "x", "ts", "price", "user", "flag", "nums", "color"]);
        let order = *rng.pick(&["asc", "desc"]);
        let mut spec = json!({ "order": order });
        match rng.below(4) {
            0 => spec["missing"] = json!("_first"),
            1 => spec["missing"] = json!("_last"),
            2 => {
                spec["missing"] = match field {
                    "user" | "color" => json!("u00002"),
                    "ts" | "flag" => json!("_first"),
                    _ => json!(rng.range(-10, 10)),
                }
            }
            _ => {}
        }
        if matches!(field, "nums" | "color") && rng.chance(0.6) {
            spec["mode"] = json!(*rng.pick(&["min", "max"]));
        }
        sort.push(json!({ field: spec }));
    }
    let mut body = json!({"size": rng.range(1, 4), "sort": sort});
    if rng.chance(0.3) {
        body["from"] = json!(rng.range(1, 3));
    }
    match rng.below(4) {
        0 => body["_source"] = json!(false),
        1 => body["_source"] = json!(["x", "user", "nums"]),
        2 => body["_source"] = json!({"excludes": ["body", "color"]}),
        _ => {}
    }
    body
}

// ---- exact sums ----

/// The exact sum of doubles, as two big integers (positive and negative parts) counting units
/// of 2^-1074, the smallest subnormal: every finite double is an integer multiple of it.
struct ExactSum {
    positive: Vec<u64>,
    negative: Vec<u64>,
}

/// 2304 bits: doubles span 2^-1074..2^1024 (2098 bits), the rest holds carries.
const LIMBS: usize = 36;

impl ExactSum {
    fn new() -> ExactSum {
        ExactSum {
            positive: vec![0; LIMBS],
            negative: vec![0; LIMBS],
        }
    }

    fn add(&mut self, value: f64) {
        assert!(value.is_finite(), "the model sums finite values");
        let bits = value.to_bits();
        let exponent = (bits >> 52) & 0x7ff;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, shift) = if exponent == 0 {
            (fraction, 0)
        } else {
            (fraction | (1u64 << 52), exponent - 1)
        };
        if mantissa == 0 {
            return;
        }
        let limbs = if bits >> 63 == 1 {
            &mut self.negative
        } else {
            &mut self.positive
        };
        let wide = (mantissa as u128) << (shift % 64);
        let mut index = (shift / 64) as usize;
        let mut carry = 0u128;
        for part in [wide as u64, (wide >> 64) as u64] {
            let s = limbs[index] as u128 + part as u128 + carry;
            limbs[index] = s as u64;
            carry = s >> 64;
            index += 1;
        }
        while carry != 0 {
            let s = limbs[index] as u128 + carry;
            limbs[index] = s as u64;
            carry = s >> 64;
            index += 1;
        }
    }

    /// The exact sum rounded to the nearest double (ties to even).
    fn value(&self) -> f64 {
        let (big, small, negative) = match cmp_limbs(&self.positive, &self.negative) {
            Ordering::Equal => return 0.0,
            Ordering::Greater => (&self.positive, &self.negative, false),
            Ordering::Less => (&self.negative, &self.positive, true),
        };
        // magnitude = big - small
        let mut magnitude = vec![0u64; LIMBS];
        let mut borrow = 0i128;
        for i in 0..LIMBS {
            let d = big[i] as i128 - small[i] as i128 - borrow;
            if d < 0 {
                magnitude[i] = (d + (1i128 << 64)) as u64;
                borrow = 1;
            } else {
                magnitude[i] = d as u64;
                borrow = 0;
            }
        }
        let top_limb = (0..LIMBS)
            .rev()
            .find(|&i| magnitude[i] != 0)
            .expect("not zero");
        let high = top_limb * 64 + 63 - magnitude[top_limb].leading_zeros() as usize;
        let bit = |i: usize| (magnitude[i / 64] >> (i % 64)) & 1 == 1;
        let value = if high < 53 {
            // below 2^53 units: exactly representable (subnormal or the smallest normals)
            magnitude[0] as f64 * f64::from_bits(1)
        } else {
            let mut q = 0u64;
            for i in (high - 52..=high).rev() {
                q = (q << 1) | bit(i) as u64;
            }
            let half = bit(high - 53);
            let sticky = (0..high - 53).any(bit);
            let mut high = high;
            if half && (sticky || q & 1 == 1) {
                q += 1;
                if q == 1u64 << 53 {
                    q = 1u64 << 52;
                    high += 1;
                }
            }
            let biased = high as u64 - 51;
            if biased >= 2047 {
                f64::INFINITY
            } else {
                f64::from_bits((biased << 52) | (q & ((1u64 << 52) - 1)))
            }
        };
        if negative {
            -value
        } else {
            value
        }
    }
}

fn cmp_limbs(a: &[u64], b: &[u64]) -> Ordering {
    for i in (0..LIMBS).rev() {
        match a[i].cmp(&b[i]) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

/// The exactly rounded sum of `values`.
fn exact_sum(values: &[f64]) -> f64 {
    let mut sum = ExactSum::new();
    values.iter().for_each(|&v| sum.add(v));
    sum.value()
}

#[test]
fn exact_sums_round_correctly() {
    assert_eq!(exact_sum(&[0.1; 10]), 1.0);
    assert_eq!(exact_sum(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
    assert_eq!(exact_sum(&[]), 0.0);
    assert_eq!(exact_sum(&[0.1, 0.2]), 0.30000000000000004);
    assert_eq!(exact_sum(&[0.1, 0.2, -0.3]), 2.7755575615628914e-17);
    let half_ulp = 2f64.powi(-53);
    assert_eq!(exact_sum(&[1.0, half_ulp]), 1.0);
    assert_eq!(exact_sum(&[1.0, half_ulp, 1e-300]), 1.0000000000000002);
    assert_eq!(
        exact_sum(&[1.0000000000000002, half_ulp]),
        1.0000000000000004
    );
    assert_eq!(exact_sum(&[f64::MAX, f64::MAX, -f64::MAX]), f64::MAX);
    assert_eq!(exact_sum(&[5e-324, 5e-324]), 1e-323);
    assert_eq!(exact_sum(&[-3.5, 1.25]), -2.25);
    let mut rng = Rng::new(5);
    for _ in 0..200 {
        // integers below 2^53 sum exactly in i128
        let values: Vec<i64> = (0..rng.usize(0, 50))
            .map(|_| rng.range(-(1 << 40), 1 << 40))
            .collect();
        let floats: Vec<f64> = values.iter().map(|&v| v as f64).collect();
        assert_eq!(
            exact_sum(&floats),
            values.iter().map(|&v| v as i128).sum::<i128>() as f64
        );
    }
}

// ---- the model of one metric ----

/// A numeric field's values in a document, or the `missing` value when it has none.
fn numbers_or(doc: &Doc, field: &str, missing: Option<f64>) -> Vec<f64> {
    let values = doc.numbers(field);
    match (values.is_empty(), missing) {
        (true, Some(m)) => vec![m],
        _ => values,
    }
}

/// Fields the engine stores as integers (summed raw, then scaled once), with their factor.
fn raw_factor(field: &str) -> Option<f64> {
    match field {
        "n" | "nums" | "ts" | "flag" => Some(1.0),
        "price" => Some(100.0),
        _ => None,
    }
}

/// A stored integer of an integer field, exactly.
fn raws(doc: &Doc, field: &str) -> Vec<i128> {
    match field {
        "n" => doc.n.map(|v| v as i128).into_iter().collect(),
        "nums" => doc.nums.iter().map(|&v| v as i128).collect(),
        "ts" => doc.ts.map(|v| v as i128).into_iter().collect(),
        "flag" => doc.flag.map(|b| b as i128).into_iter().collect(),
        "price" => doc.price.map(|v| v as i128).into_iter().collect(),
        other => panic!("{other} is not stored as integers"),
    }
}

/// `{"$approx": v, "$abs": a}`: within FLOAT_REL of `v` relative, or `a` absolute.
fn approx(v: f64, abs: f64) -> Value {
    if v.is_nan() {
        return json!("NaN");
    }
    json!({"$approx": v, "$abs": abs})
}

fn any() -> Value {
    json!({"$any": true})
}

fn number_or_null(v: Option<f64>) -> Value {
    v.map_or(Value::Null, |v| json!(v))
}

/// What the model expects of one aggregation, interpreted from its request.
struct Model<'a> {
    t: &'a TestIndex,
    /// The top_hits expectations referenced by `{"$top": i}`.
    tops: Vec<TopWant>,
}

impl Model<'_> {
    /// The expected response of the metric `request` over `docs`.
    fn metric(&mut self, request: &Value, docs: &[&Doc]) -> Value {
        let (kind, body) = request
            .as_object()
            .and_then(|o| o.iter().find(|(k, _)| *k != "aggs"))
            .expect("one aggregation type");
        let field = body["field"].as_str().unwrap_or_default();
        let missing = body.get("missing").and_then(Value::as_f64);
        match kind.as_str() {
            "value_count" => {
                let count: usize = docs
                    .iter()
                    .map(|d| match field {
                        "color" | "user" => d.keywords(field).len(),
                        _ => d.numbers(field).len(),
                    })
                    .sum();
                json!({ "value": count })
            }
            "min" | "max" | "sum" | "avg" | "stats" => {
                let values: Vec<f64> = docs
                    .iter()
                    .flat_map(|d| numbers_or(d, field, missing))
                    .collect();
                let sum = match (raw_factor(field), missing) {
                    (Some(factor), None) => {
                        let raw: i128 = docs.iter().flat_map(|d| raws(d, field)).sum();
                        if factor == 1.0 {
                            raw as f64
                        } else {
                            raw as f64 * (1.0 / factor)
                        }
                    }
                    _ => exact_sum(&values),
                };
                let min = values.iter().copied().reduce(f64::min);
                let max = values.iter().copied().reduce(f64::max);
                let avg = (!values.is_empty()).then(|| sum / values.len() as f64);
                let single = |v: Option<f64>| {
                    let mut out = json!({ "value": number_or_null(v) });
                    if let (Some(v), "ts", "min" | "max") = (v, field, kind.as_str()) {
                        out["value_as_string"] = json!(iso_millis(v as i64));
                    }
                    out
                };
                match kind.as_str() {
                    "min" => single(min),
                    "max" => single(max),
                    "sum" => json!({ "value": sum }),
                    "avg" => single(avg),
                    _ => json!({
                        "count": values.len(),
                        "min": number_or_null(min),
                        "max": number_or_null(max),
                        "avg": number_or_null(avg),
                        "sum": sum
                    }),
                }
            }
            "extended_stats" => {
                let values: Vec<f64> = docs
                    .iter()
                    .flat_map(|d| numbers_or(d, field, missing))
                    .collect();
                let sigma = body.get("sigma").and_then(Value::as_f64).unwrap_or(2.0);
                extended_stats(&values, sigma)
            }
            "weighted_avg" => {
                let value_field = body["value"]["field"].as_str().expect("value field");
                let value_missing = body["value"].get("missing").and_then(Value::as_f64);
                let weight_field = body["weight"]["field"].as_str().expect("weight field");
                let weight_missing = body["weight"].get("missing").and_then(Value::as_f64);
                let mut products = Vec::new();
                let mut weights = Vec::new();
                for doc in docs {
                    let w = numbers_or(doc, weight_field, weight_missing);
                    let [w] = w.as_slice() else {
                        continue; // no weight (several never happen: the fields are single-valued)
                    };
                    for v in numbers_or(doc, value_field, value_missing) {
                        products.push(v * w);
                        weights.push(*w);
                    }
                }
                let weight = exact_sum(&weights);
                if weight == 0.0 {
                    json!({ "value": null })
                } else {
                    json!({ "value": approx(exact_sum(&products) / weight, 0.0) })
                }
            }
            "cardinality" => {
                let threshold = body
                    .get("precision_threshold")
                    .and_then(Value::as_i64)
                    .unwrap_or(3000);
                // the values' 64-bit hashes, as OpenSearch hashes them
                let hashes: BTreeSet<u64> = match field {
                    "color" | "user" => {
                        let missing = body.get("missing").and_then(Value::as_str);
                        let mut hashes = BTreeSet::new();
                        for doc in docs {
                            let mut keywords = doc.keywords(field);
                            if let (true, Some(m)) = (keywords.is_empty(), missing) {
                                keywords.push(m.to_string());
                            }
                            hashes.extend(
                                keywords.iter().map(|k| murmur3_x64_128(k.as_bytes(), 0).0),
                            );
                        }
                        hashes
                    }
                    "x" | "price" => docs
                        .iter()
                        .flat_map(|d| numbers_or(d, field, missing))
                        .map(|v| mix64(v.to_bits()))
                        .collect(),
                    _ => docs
                        .iter()
                        .flat_map(|d| numbers_or(d, field, missing))
                        .map(|v| mix64(v as i64 as u64))
                        .collect(),
                };
                // linear counting keeps the top 25 bits of each hash (and, for one hash in
                // 2^(25-p), its run length): distinct values whose hashes share those bits count
                // once, as in OpenSearch
                let prefixes = hashes.iter().map(|h| h >> 39).collect::<BTreeSet<u64>>();
                if hashes.len() as i64 > threshold {
                    json!({ "value": any() })
                } else if prefixes.len() == hashes.len() {
                    json!({ "value": hashes.len() })
                } else {
                    json!({ "value": {"$between": [prefixes.len(), hashes.len()]} })
                }
            }
            "percentiles" | "percentile_ranks" => {
                let mut values: Vec<f64> = docs
                    .iter()
                    .flat_map(|d| numbers_or(d, field, missing))
                    .collect();
                values.sort_by(f64::total_cmp);
                let compression = body
                    .pointer("/tdigest/compression")
                    .and_then(Value::as_f64)
                    .unwrap_or(100.0);
                let capacity = (compression * 50.0).round().clamp(16.0, 4_000_000.0) as usize;
                let mut distinct = values.clone();
                distinct.dedup();
                let exact = distinct.len() <= capacity;
                let ranks = kind == "percentile_ranks";
                let keys: Vec<f64> = match body.get(if ranks { "values" } else { "percents" }) {
                    Some(keys) => keys
                        .as_array()
                        .expect("an array")
                        .iter()
                        .map(|k| k.as_f64().expect("a number"))
                        .collect(),
                    None => vec![1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0],
                };
                let value_of = |key: f64| -> Value {
                    if values.is_empty() {
                        Value::Null
                    } else if !exact {
                        any()
                    } else if ranks {
                        json!(digest_cdf(&values, key).clamp(0.0, 1.0) * 100.0)
                    } else {
                        json!(digest_quantile(&values, key / 100.0))
                    }
                };
                let keyed = body.get("keyed").and_then(Value::as_bool).unwrap_or(true);
                let rendered = if keyed {
                    let mut map = Map::new();
                    for &key in &keys {
                        map.insert(percent_key(key), value_of(key));
                    }
                    Value::Object(map)
                } else {
                    Value::Array(
                        keys.iter()
                            .map(|&key| json!({"key": key, "value": value_of(key)}))
                            .collect(),
                    )
                };
                json!({ "values": rendered })
            }
            "top_hits" => {
                let want = TopWant::new(body, docs);
                self.tops.push(want);
                json!({ "$top": self.tops.len() - 1 })
            }
            other => panic!("no model for {other}"),
        }
    }

    /// The expected sub-aggregations of a bucket holding `docs`.
    fn subs(&mut self, request: &Value, docs: &[&Doc]) -> Map<String, Value> {
        let mut out = Map::new();
        for (name, sub) in request
            .get("aggs")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let value = match sub.get("terms") {
                Some(terms) => self.terms(terms["field"].as_str().expect("a field"), sub, docs),
                None => self.metric(sub, docs),
            };
            out.insert(name.clone(), value);
        }
        out
    }

    /// Terms buckets of `field` (sizes are large: all buckets), count desc then key asc, with
    /// the sub-aggregations of `request`.
    fn terms(&mut self, field: &str, request: &Value, docs: &[&Doc]) -> Value {
        let key_json = |k: &Key| -> Map<String, Value> {
            let mut m = Map::new();
            match k {
                Key::Text(s) => {
                    m.insert("key".into(), json!(s));
                }
                Key::Int(v) => {
                    m.insert("key".into(), json!(v));
                    if field == "flag" {
                        m.insert(
                            "key_as_string".into(),
                            json!(if *v == 1 { "true" } else { "false" }),
                        );
                    }
                }
            }
            m
        };
        let groups = group(docs, |d| match field {
            "color" | "user" => d.keywords(field).into_iter().map(Key::Text).collect(),
            "flag" => d.flag.map(|b| Key::Int(b as i64)).into_iter().collect(),
            "n" | "nums" => d
                .numbers(field)
                .into_iter()
                .map(|v| Key::Int(v as i64))
                .collect(),
            other => panic!("no terms model for {other}"),
        });
        let mut entries: Vec<(&Key, &Vec<&Doc>)> = groups.iter().collect();
        entries.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        let mut buckets = Vec::new();
        for (k, bucket_docs) in entries {
            let mut bucket = key_json(k);
            bucket.insert("doc_count".into(), json!(bucket_docs.len()));
            bucket.extend(self.subs(request, bucket_docs));
            buckets.push(Value::Object(bucket));
        }
        json!({"doc_count_error_upper_bound": 0, "sum_other_doc_count": 0, "buckets": buckets})
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Int(i64),
    Text(String),
}

/// `extended_stats` of `values`: the sums exact, the variances two-pass.
fn extended_stats(values: &[f64], sigma: f64) -> Value {
    let n = values.len();
    if n == 0 {
        let nulls = |names: &[&str]| -> Map<String, Value> {
            names.iter().map(|k| (k.to_string(), Value::Null)).collect()
        };
        let mut out = nulls(&[
            "min",
            "max",
            "avg",
            "sum_of_squares",
            "variance",
            "variance_population",
            "variance_sampling",
            "std_deviation",
            "std_deviation_population",
            "std_deviation_sampling",
        ]);
        out.insert("count".into(), json!(0));
        out.insert("sum".into(), json!(0.0));
        out.insert(
            "std_deviation_bounds".into(),
            Value::Object(nulls(&[
                "upper",
                "lower",
                "upper_population",
                "lower_population",
                "upper_sampling",
                "lower_sampling",
            ])),
        );
        return Value::Object(out);
    }
    let count = n as f64;
    let sum = exact_sum(values);
    let avg = sum / count;
    let squares: Vec<f64> = values.iter().map(|v| v * v).collect();
    let sum_of_squares = exact_sum(&squares);
    // two-pass: the mean, then the squared deviations from it
    let deviations: Vec<f64> = values.iter().map(|v| (v - avg) * (v - avg)).collect();
    let m2 = exact_sum(&deviations);
    let population = m2 / count;
    let sampling = m2 / (count - 1.0);
    // OpenSearch's one-pass formula loses about 3 ulps of Σx² to cancellation
    let slack = 4.0 * f64::EPSILON * sum_of_squares;
    let var = |v: f64, divisor: f64| approx(v, slack / divisor);
    // a deviation within the bounds of its variance's tolerance
    let std = |v: f64, divisor: f64| -> Value {
        if v.is_nan() {
            return json!("NaN");
        }
        let tol = (FLOAT_REL * v).max(slack / divisor);
        json!({"$between": [(v - tol).max(0.0).sqrt(), (v + tol).sqrt()]})
    };
    let bound = |v: f64, divisor: f64, sign: f64| -> Value {
        if v.is_nan() {
            return json!("NaN");
        }
        let tol = (FLOAT_REL * v).max(slack / divisor);
        let (lo, hi) = ((v - tol).max(0.0).sqrt(), (v + tol).sqrt());
        let (a, b) = (avg + sign * sigma * lo, avg + sign * sigma * hi);
        // the rounding of `avg ± sigma × std` itself
        let rounding = 4.0 * f64::EPSILON * (avg.abs() + sigma * hi);
        json!({"$between": [a.min(b) - rounding, a.max(b) + rounding]})
    };
    let min = values.iter().copied().reduce(f64::min);
    let max = values.iter().copied().reduce(f64::max);
    json!({
        "count": n,
        "min": min,
        "max": max,
        "avg": avg,
        "sum": sum,
        "sum_of_squares": approx(sum_of_squares, 0.0),
        "variance": var(population, count),
        "variance_population": var(population, count),
        "variance_sampling": var(sampling, count - 1.0),
        "std_deviation": std(population, count),
        "std_deviation_population": std(population, count),
        "std_deviation_sampling": std(sampling, count - 1.0),
        "std_deviation_bounds": {
            "upper": bound(population, count, 1.0),
            "lower": bound(population, count, -1.0),
            "upper_population": bound(population, count, 1.0),
            "lower_population": bound(population, count, -1.0),
            "upper_sampling": bound(sampling, count - 1.0, 1.0),
            "lower_sampling": bound(sampling, count - 1.0, -1.0)
        }
    })
}

// ---- t-digest over single-value centroids ----

/// `AbstractTDigest.weightedAverage`: the weighted mean, kept between the two values.
fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let (x1, w1, x2, w2) = if x1 <= x2 {
        (x1, w1, x2, w2)
    } else {
        (x2, w2, x1, w1)
    };
    let x = (x1 * w1 + x2 * w2) / (w1 + w2);
    x1.max(x.min(x2))
}

/// `AVLTreeDigest.quantile(q)` of t-digest 3.2 when every value of `sorted` is its own
/// centroid of weight 1.
fn digest_quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let (min, max) = (sorted[0], sorted[n - 1]);
    let index = q * n as f64;
    let mut weight_so_far = 0.5;
    if index < weight_so_far {
        return (min * index + sorted[0] * (weight_so_far - index)) / weight_so_far;
    }
    for i in 0..n - 1 {
        let dw = 1.0;
        if weight_so_far + dw > index {
            let z1 = index - weight_so_far;
            let z2 = weight_so_far + dw - index;
            return weighted_average(sorted[i], z2, sorted[i + 1], z1);
        }
        weight_so_far += dw;
    }
    let z1 = index - weight_so_far;
    let z2 = 0.5 - z1;
    weighted_average(sorted[n - 1], z2, max, z1)
}

/// `AVLTreeDigest.cdf(x)` of t-digest 3.2 over single-value centroids.
fn digest_cdf(sorted: &[f64], x: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return if x < sorted[0] { 0.0 } else { 1.0 };
    }
    let interpolate = |x: f64, x0: f64, x1: f64| (x - x0) / (x1 - x0);
    let mut r = 0.0;
    let mut a = 0;
    let mut left = (sorted[1] - sorted[0]) / 2.0;
    let mut right = left;
    // the look-ahead `b = a + 1`; the loop runs while a centroid follows `b`
    while a + 2 < n {
        if x < sorted[a] + right {
            let value = (r + interpolate(x, sorted[a] - left, sorted[a] + right)) / n as f64;
            return if value > 0.0 { value } else { 0.0 };
        }
        r += 1.0;
        a += 1;
        left = right;
        right = (sorted[a + 1] - sorted[a]) / 2.0;
    }
    if x < sorted[a] + right {
        (r + interpolate(x, sorted[a] - left, sorted[a] + right)) / n as f64
    } else {
        1.0
    }
}

// ---- top_hits ----

#[derive(Clone, Debug, PartialEq)]
enum SortValue {
    Num(f64),
    Text(String),
}

impl SortValue {
    fn cmp(&self, other: &SortValue) -> Ordering {
        match (self, other) {
            (SortValue::Num(a), SortValue::Num(b)) => a.total_cmp(b),
            (SortValue::Text(a), SortValue::Text(b)) => a.cmp(b),
            _ => panic!("mixed sort values"),
        }
    }
}

#[derive(Clone, Debug)]
enum SortMissing {
    First,
    Last,
    Value(SortValue),
}

#[derive(Clone, Debug)]
struct SortSpec {
    field: String,
    asc: bool,
    missing: SortMissing,
    /// Use the largest of several values (default: for descending sorts).
    max: bool,
}

impl SortSpec {
    fn parse(spec: &Value) -> SortSpec {
        let (field, options) = spec
            .as_object()
            .and_then(|o| o.iter().next())
            .expect("{field: options}");
        let asc = match options {
            Value::String(order) => order == "asc",
            _ => options["order"] != "desc",
        };
        let text = matches!(field.as_str(), "user" | "color");
        let missing = match options.get("missing") {
            None => SortMissing::Last,
            Some(m) if m == "_last" => SortMissing::Last,
            Some(m) if m == "_first" => SortMissing::First,
            Some(m) if text => {
                SortMissing::Value(SortValue::Text(m.as_str().expect("a string").to_string()))
            }
            Some(m) => SortMissing::Value(SortValue::Num(m.as_f64().expect("a number"))),
        };
        let max = match options.get("mode").and_then(Value::as_str) {
            Some(mode) => mode == "max",
            None => !asc,
        };
        SortSpec {
            field: field.clone(),
            asc,
            missing,
            max,
        }
    }

    /// The doc's own value for this sort (before `missing`).
    fn own(&self, doc: &Doc) -> Option<SortValue> {
        let values: Vec<SortValue> = match self.field.as_str() {
            "user" | "color" => doc
                .keywords(&self.field)
                .into_iter()
                .map(SortValue::Text)
                .collect(),
            field => doc.numbers(field).into_iter().map(SortValue::Num).collect(),
        };
        let pick = |a: SortValue, b: SortValue| {
            let b_wins = match a.cmp(&b) {
                Ordering::Less => self.max,
                _ => !self.max,
            };
            if b_wins {
                b
            } else {
                a
            }
        };
        values.into_iter().reduce(pick)
    }

    /// The doc's value for ordering: its own, or the `missing` value; `None` sorts first or
    /// last as `missing` says.
    fn key(&self, doc: &Doc) -> Option<SortValue> {
        match (self.own(doc), &self.missing) {
            (Some(v), _) => Some(v),
            (None, SortMissing::Value(v)) => Some(v.clone()),
            (None, _) => None,
        }
    }

    fn compare(&self, a: &Option<SortValue>, b: &Option<SortValue>) -> Ordering {
        let missing_first = matches!(self.missing, SortMissing::First);
        match (a, b) {
            (Some(a), Some(b)) => {
                let o = a.cmp(b);
                if self.asc {
                    o
                } else {
                    o.reverse()
                }
            }
            (None, None) => Ordering::Equal,
            (None, Some(_)) if missing_first => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) if missing_first => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
        }
    }

    /// The `sort` value a hit shows for a doc that has its own value.
    fn shown(&self, value: &SortValue) -> Value {
        match (value, self.field.as_str()) {
            (SortValue::Text(s), _) => json!(s),
            (SortValue::Num(v), "x" | "price") => json!(v),
            (SortValue::Num(v), _) => json!(*v as i64),
        }
    }
}

/// What a `top_hits` must answer for one bucket.
struct TopWant {
    sort: Vec<SortSpec>,
    /// The bucket's documents, by id.
    ids: BTreeSet<String>,
    /// The sort keys of positions `from..from + size` of the bucket in sort order.
    keys: Vec<Vec<Option<SortValue>>>,
    /// `_source`: `None` when disabled, else the includes and excludes.
    source: Option<(Vec<String>, Vec<String>)>,
}

impl TopWant {
    fn new(body: &Value, docs: &[&Doc]) -> TopWant {
        let sort: Vec<SortSpec> = body["sort"]
            .as_array()
            .expect("the oracle's top_hits sort")
            .iter()
            .map(SortSpec::parse)
            .collect();
        let from = body.get("from").and_then(Value::as_u64).unwrap_or(0) as usize;
        let size = body.get("size").and_then(Value::as_u64).unwrap_or(3) as usize;
        let mut keys: Vec<Vec<Option<SortValue>>> = docs
            .iter()
            .map(|d| sort.iter().map(|s| s.key(d)).collect())
            .collect();
        keys.sort_by(|a, b| compare_keys(&sort, a, b));
        let keys = keys.into_iter().skip(from).take(size).collect();
        let strings = |v: &Value| -> Vec<String> {
            match v {
                Value::String(s) => vec![s.clone()],
                Value::Array(items) => items
                    .iter()
                    .map(|s| s.as_str().expect("a pattern").to_string())
                    .collect(),
                _ => Vec::new(),
            }
        };
        let source = match body.get("_source") {
            None => Some((Vec::new(), Vec::new())),
            Some(Value::Bool(false)) => None,
            Some(Value::Object(o)) => Some((
                o.get("includes").map(strings).unwrap_or_default(),
                o.get("excludes").map(strings).unwrap_or_default(),
            )),
            Some(other) => Some((strings(other), Vec::new())),
        };
        TopWant {
            sort,
            ids: docs.iter().map(|d| d.id.clone()).collect(),
            keys,
            source,
        }
    }

    fn check(&self, t: &TestIndex, got: &Value, path: &str) -> Option<String> {
        let hits = &got["hits"];
        let total = json!({"value": self.ids.len(), "relation": "eq"});
        if hits["total"] != total {
            return Some(format!(
                "{path}.hits.total: expected {total} vs actual {}",
                hits["total"]
            ));
        }
        if !hits["max_score"].is_null() {
            return Some(format!("{path}.hits.max_score: {}", hits["max_score"]));
        }
        let Some(list) = hits["hits"].as_array() else {
            return Some(format!("{path}.hits.hits: missing in {got}"));
        };
        if list.len() != self.keys.len() {
            return Some(format!(
                "{path}.hits.hits: expected {} hits, got {}: {got}",
                self.keys.len(),
                list.len()
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, (hit, want)) in list.iter().zip(&self.keys).enumerate() {
            let at = format!("{path}.hits.hits[{i}]");
            let id = hit["_id"].as_str().unwrap_or_default();
            let Some(doc) = t.live.get(id).filter(|_| self.ids.contains(id)) else {
                return Some(format!("{at}: {id} is not in the bucket: {hit}"));
            };
            if !seen.insert(id) {
                return Some(format!("{at}: {id} twice"));
            }
            let key: Vec<Option<SortValue>> = self.sort.iter().map(|s| s.key(doc)).collect();
            if compare_keys(&self.sort, &key, want) != Ordering::Equal {
                return Some(format!(
                    "{at}: {id} has sort key {key:?}, expected {want:?} at this position ({hit})"
                ));
            }
            if hit["_index"] != "props" || !hit["_score"].is_null() {
                return Some(format!("{at}: _index or _score: {hit}"));
            }
            for (j, spec) in self.sort.iter().enumerate() {
                if let Some(own) = spec.own(doc) {
                    if hit["sort"][j] != spec.shown(&own) {
                        return Some(format!(
                            "{at}.sort[{j}]: expected {} vs actual {}",
                            spec.shown(&own),
                            hit["sort"][j]
                        ));
                    }
                }
            }
            let want_source = self.source.as_ref().map(|(includes, excludes)| {
                let mut source = doc.source();
                let object = source.as_object_mut().expect("an object");
                object.retain(|k, _| {
                    (includes.is_empty() || includes.contains(k)) && !excludes.contains(k)
                });
                source
            });
            // partial updates write `null` for fields they remove: the same as missing
            let mut got_source = hit.get("_source").cloned();
            if let Some(object) = got_source.as_mut().and_then(Value::as_object_mut) {
                object.retain(|_, v| !v.is_null());
            }
            if got_source != want_source {
                return Some(format!(
                    "{at}._source: expected {want_source:?} vs actual {got_source:?}"
                ));
            }
        }
        None
    }
}

fn compare_keys(sort: &[SortSpec], a: &[Option<SortValue>], b: &[Option<SortValue>]) -> Ordering {
    sort.iter()
        .zip(a.iter().zip(b))
        .map(|(s, (a, b))| s.compare(a, b))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}

// ---- bucket models ----

/// Docs grouped by each distinct key a doc has (a doc counts once per key).
fn group<'a, K: Ord>(docs: &[&'a Doc], keys: impl Fn(&Doc) -> Vec<K>) -> BTreeMap<K, Vec<&'a Doc>> {
    let mut groups: BTreeMap<K, Vec<&'a Doc>> = BTreeMap::new();
    for doc in docs {
        let distinct: BTreeSet<K> = keys(doc).into_iter().collect();
        for k in distinct {
            groups.entry(k).or_default().push(doc);
        }
    }
    groups
}

/// Histogram buckets (`floor(v / interval) * interval`), filled with empty buckets between
/// the first and last when `filled`.
fn histogram(docs: &[&Doc], field: &str, interval: f64, filled: bool) -> Value {
    let groups = group(docs, |d| {
        d.numbers(field)
            .iter()
            .map(|v| (v / interval).floor() as i64)
            .collect()
    });
    let mut counts: BTreeMap<i64, usize> = groups.iter().map(|(k, v)| (*k, v.len())).collect();
    if filled {
        if let (Some(&first), Some(&last)) = (counts.keys().next(), counts.keys().last()) {
            for k in first..=last {
                counts.entry(k).or_insert(0);
            }
        }
    }
    let buckets: Vec<Value> = counts
        .into_iter()
        .map(|(k, c)| json!({"key": k as f64 * interval, "doc_count": c}))
        .collect();
    json!({ "buckets": buckets })
}

/// Range buckets, in (from, to) order as OpenSearch sorts them.
fn ranges(docs: &[&Doc], field: &str, bounds: &[(Option<f64>, Option<f64>)]) -> Value {
    let mut sorted = bounds.to_vec();
    let lo = |b: &(Option<f64>, Option<f64>)| b.0.unwrap_or(f64::NEG_INFINITY);
    let hi = |b: &(Option<f64>, Option<f64>)| b.1.unwrap_or(f64::INFINITY);
    sorted.sort_by(|a, b| lo(a).total_cmp(&lo(b)).then(hi(a).total_cmp(&hi(b))));
    let buckets: Vec<Value> = sorted
        .iter()
        .map(|b| {
            let count = docs
                .iter()
                .filter(|d| d.numbers(field).iter().any(|&v| lo(b) <= v && v < hi(b)))
                .count();
            let mut bucket = Map::new();
            if let Some(from) = b.0 {
                bucket.insert("from".into(), json!(from));
            }
            if let Some(to) = b.1 {
                bucket.insert("to".into(), json!(to));
            }
            bucket.insert("doc_count".into(), json!(count));
            Value::Object(bucket)
        })
        .collect();
    json!({ "buckets": buckets })
}

impl Model<'_> {
    /// Date histogram buckets by `round` (bucket start of a date) and `next` (the next start),
    /// with the sub-aggregations of `request`.
    fn date_histogram(
        &mut self,
        request: &Value,
        docs: &[&Doc],
        round: impl Fn(i64) -> i64,
        next: impl Fn(i64) -> i64,
        filled: bool,
    ) -> Value {
        let mut groups = group(docs, |d| d.ts.map(&round).into_iter().collect());
        if filled {
            if let (Some(&first), Some(&last)) = (groups.keys().next(), groups.keys().last()) {
                let mut k = first;
                while k < last {
                    groups.entry(k).or_default();
                    k = next(k);
                }
            }
        }
        let mut buckets = Vec::new();
        for (k, bucket_docs) in &groups {
            let mut bucket = Map::new();
            bucket.insert("key_as_string".into(), json!(iso_millis(*k)));
            bucket.insert("key".into(), json!(k));
            bucket.insert("doc_count".into(), json!(bucket_docs.len()));
            bucket.extend(self.subs(request, bucket_docs));
            buckets.push(Value::Object(bucket));
        }
        json!({ "buckets": buckets })
    }

    /// A single-bucket aggregation over `docs`.
    fn single(&mut self, request: &Value, docs: &[&Doc]) -> Value {
        let mut out = Map::new();
        out.insert("doc_count".into(), json!(docs.len()));
        out.extend(self.subs(request, docs));
        Value::Object(out)
    }

    /// The expected `aggregations` for the live docs matching `filter`.
    fn expected(&mut self, aggs: &Value, filter: &Filter) -> Map<String, Value> {
        let t = self.t;
        let docs: Vec<&Doc> = t.matching(filter).collect();
        let all: Vec<&Doc> = t.live.values().collect();
        let day = |t: i64| t.div_euclid(DAY_MS) * DAY_MS;
        let mut out = Map::new();
        for (name, request) in aggs.as_object().expect("an object") {
            let value = match name.as_str() {
                "colors" | "users" | "ns" | "flags" | "nums_terms" | "by_flag" | "by_color" => {
                    let field = request["terms"]["field"].as_str().expect("a field");
                    self.terms(field, request, &docs)
                }
                "n_hist" => histogram(&docs, "n", 100.0, false),
                "n_hist_filled" => histogram(&docs, "n", 250.0, true),
                "x_hist" => histogram(&docs, "x", 1000.0, false),
                "nums_hist" => histogram(&docs, "nums", 10.0, false),
                "price_hist" => histogram(&docs, "price", 250.0, false),
                "days" => self.date_histogram(request, &docs, day, |k| k + DAY_MS, false),
                "days_filled" => self.date_histogram(request, &docs, day, |k| k + DAY_MS, true),
                "months" | "by_month" => {
                    self.date_histogram(request, &docs, month_start, next_month, true)
                }
                "n_ranges" => ranges(
                    &docs,
                    "n",
                    &[
                        (None, Some(-500.0)),
                        (Some(-500.0), Some(0.0)),
                        (Some(0.0), Some(500.0)),
                        (Some(500.0), None),
                        (Some(-100.0), Some(100.0)),
                    ],
                ),
                "x_ranges" => ranges(
                    &docs,
                    "x",
                    &[(None, Some(-2500.5)), (Some(-2500.5), Some(7000.0))],
                ),
                "red" => {
                    let red: Vec<&Doc> = docs
                        .iter()
                        .copied()
                        .filter(|d| d.color.iter().any(|c| c == "red"))
                        .collect();
                    self.single(request, &red)
                }
                "no_user" => {
                    let bucket: Vec<&Doc> =
                        docs.iter().copied().filter(|d| d.user.is_none()).collect();
                    self.single(request, &bucket)
                }
                "no_price" => {
                    let bucket: Vec<&Doc> =
                        docs.iter().copied().filter(|d| d.price.is_none()).collect();
                    self.single(request, &bucket)
                }
                "everything" => self.single(request, &all),
                "parts" => {
                    let flagged = |d: &&&Doc| d.flag == Some(true);
                    let priced = |d: &&&Doc| d.price.is_some();
                    json!({"buckets": {
                        "flagged": {"doc_count": docs.iter().filter(flagged).count()},
                        "priced": {"doc_count": docs.iter().filter(priced).count()},
                        "_other_": {"doc_count": docs.iter().filter(|d| !flagged(d) && !priced(d)).count()}
                    }})
                }
                _ => self.metric(request, &docs),
            };
            out.insert(name.clone(), value);
        }
        out
    }

    /// The first difference between the model's `want` and the engine's `got`: objects of
    /// `want` may omit keys of `got` (`*_as_string`); numbers are equal as doubles; markers
    /// stand for tolerances (`$approx`, `$between`), anything (`$any`) and top_hits (`$top`).
    fn diff(&self, want: &Value, got: &Value, path: &str) -> Option<String> {
        let as_number = |v: &Value| v.as_f64();
        match want {
            Value::Object(w) if w.contains_key("$any") => None,
            Value::Object(w) if w.contains_key("$approx") => {
                let v = w["$approx"].as_f64().expect("a number");
                let abs = w["$abs"].as_f64().unwrap_or(0.0);
                match as_number(got) {
                    Some(g) if g == v || (g - v).abs() <= (FLOAT_REL * v.abs()).max(abs) => None,
                    _ => Some(format!("{path}: expected {v} (±{abs}) vs actual {got}")),
                }
            }
            Value::Object(w) if w.contains_key("$between") => {
                let lo = w["$between"][0].as_f64().expect("a number");
                let hi = w["$between"][1].as_f64().expect("a number");
                let slack = 1e-12 * lo.abs().max(hi.abs());
                match as_number(got) {
                    Some(g) if lo - slack <= g && g <= hi + slack => None,
                    _ => Some(format!("{path}: expected in [{lo}, {hi}] vs actual {got}")),
                }
            }
            Value::Object(w) if w.contains_key("$top") => {
                let i = w["$top"].as_u64().expect("an index") as usize;
                self.tops[i].check(self.t, got, path)
            }
            Value::Object(w) => {
                let Value::Object(g) = got else {
                    return Some(format!("{path}: expected an object vs actual {got}"));
                };
                w.iter().find_map(|(key, wv)| match g.get(key) {
                    None => Some(format!("{path}.{key}: missing in {got}")),
                    Some(gv) => self.diff(wv, gv, &format!("{path}.{key}")),
                })
            }
            Value::Array(w) => {
                let Some(g) = got.as_array().filter(|g| g.len() == w.len()) else {
                    return Some(format!(
                        "{path}: expected {} items vs actual {got}",
                        w.len()
                    ));
                };
                w.iter()
                    .zip(g)
                    .enumerate()
                    .find_map(|(i, (wv, gv))| self.diff(wv, gv, &format!("{path}[{i}]")))
            }
            Value::Number(_) => match (as_number(want), as_number(got)) {
                (Some(w), Some(g)) if w == g => None,
                _ => Some(format!("{path}: expected {want} vs actual {got}")),
            },
            _ => (want != got).then(|| format!("{path}: expected {want} vs actual {got}")),
        }
    }
}

/// Runs the aggregations under `filter` with `settings` and compares with the model.
fn check(
    engine: &Engine,
    t: &TestIndex,
    filter: &Filter,
    settings: ConcurrencySettings,
    aggs: &Value,
) -> Vec<String> {
    let body = json!({
        "query": filter.to_json(), "size": 0, "track_total_hits": true, "aggs": aggs
    });
    let response = engine.search(&engine.targets(&t.index), &body, settings);
    let mut problems = Vec::new();
    if response.get("error").is_some() || response["_shards"]["failed"] != json!(0) {
        let failure = response.get("error").unwrap_or(&response["_shards"]);
        problems.push(format!("query {}: failed {failure}", body["query"]));
        return problems;
    }
    let count = t.matching(filter).count();
    if response["hits"]["total"] != json!({"value": count, "relation": "eq"}) {
        problems.push(format!(
            "query {}: hits.total {} but the model has {count} matches",
            body["query"], response["hits"]["total"]
        ));
    }
    let mut model = Model {
        t,
        tops: Vec::new(),
    };
    for (name, want) in model.expected(aggs, filter) {
        let got = &response["aggregations"][&name];
        if let Some(diff) = model.diff(&want, got, &name) {
            problems.push(format!(
                "query {}, aggregation {name} {}: {diff}",
                body["query"], aggs[&name]
            ));
        }
    }
    problems
}

fn modes(rng: &mut Rng) -> Vec<(String, ConcurrencySettings)> {
    let slices = rng.usize(2, 8);
    vec![
        ("none".into(), mode_none()),
        (format!("all/{slices}"), mode_all(slices)),
        ("all/0".into(), mode_all(0)),
    ]
}

/// Random layouts of 1 and 3 shards, then force-merged segments of 2000+ live documents
/// (aggregations read their columns in several blocks per segment).
#[test]
fn aggregations_equal_the_model() {
    let engine = Engine::new();
    let mut failures = Vec::new();
    let mut checks = 0;
    let mut shard_counts = BTreeSet::new();
    let mut run = |seed: u64, rng: &mut Rng, t: &TestIndex, filters: &[Filter]| {
        let aggs = aggs(rng);
        for filter in filters {
            for (name, settings) in modes(rng) {
                checks += 1;
                for problem in check(&engine, t, filter, settings, &aggs) {
                    failures.push(format!(
                        "seed {seed} ({}), mode {name}: {}",
                        t.describe(),
                        &problem[..problem.len().min(1500)]
                    ));
                }
            }
        }
    };
    for seed in seeds(0xA6650, CASES) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        shard_counts.insert(shards);
        let docs = rng.usize(300, 1200 * shards as usize);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let mut filters = vec![Filter::All];
        for _ in 0..3 {
            filters.push(Filter::random(&mut rng, t.users, 2));
        }
        run(seed, &mut rng, &t, &filters);
    }
    // big segments
    for seed in seeds(0xB16A66, 2) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let mut plan = LayoutPlan::random(&mut rng, 2500 * shards as usize, shards);
        plan.force_merge = Some(1);
        let t = TestIndex::build(&mut rng, plan);
        let filters = [
            Filter::All,
            Filter::Keyword("color", COLORS[0].to_string()),
            Filter::random(&mut rng, t.users, 1),
        ];
        run(seed, &mut rng, &t, &filters);
    }
    eprintln!("{checks} checks; shard counts {shard_counts:?}");
    assert!(
        failures.is_empty(),
        "{} aggregation results differ from the model; reproduce with TESSERA_PROP_SEED=<seed>:\n{}",
        failures.len(),
        failures
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn match_all_terms_counted_from_the_dictionary_equal_the_model() {
    let engine = Engine::new();
    for seed in seeds(0xD1C7, 4) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(100, 800);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let targets = engine.targets(&t.index);
        for field in ["user", "color"] {
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for doc in t.live.values() {
                let distinct: BTreeSet<String> = doc.keywords(field).into_iter().collect();
                for key in distinct {
                    *want.entry(key).or_default() += 1;
                }
            }
            let body =
                json!({"size": 0, "aggs": {"t": {"terms": {"field": field, "size": 10000}}}});
            for (name, settings) in [("none".to_string(), mode_none())]
                .into_iter()
                .chain(sliced_modes())
            {
                let response = engine.search(&targets, &body, settings);
                let got: BTreeMap<String, u64> = response["aggregations"]["t"]["buckets"]
                    .as_array()
                    .expect("buckets")
                    .iter()
                    .map(|b| {
                        let key = b["key"].as_str().expect("key").to_string();
                        (key, b["doc_count"].as_u64().expect("doc_count"))
                    })
                    .collect();
                let context = format!("seed {seed}, {name}, {}, field {field}", t.describe());
                assert_eq!(got, want, "{context}");
                assert_eq!(
                    response["hits"]["total"]["value"],
                    json!(t.live.len()),
                    "{context}"
                );
            }
        }
    }
}

/// A range's `from` and `to`, `None` where it is open.
type Bounds = (Option<i64>, Option<i64>);

/// A lone `range` aggregation on an integer or date field counts whole segments from the
/// field's sorted values (under a match-all, or a range query on the same field): the counts
/// are the model's, with and without slices.
#[test]
fn lone_range_aggregations_counted_from_sorted_values_equal_the_model() {
    let engine = Engine::new();
    for seed in seeds(0x5A_06, 4) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(100, 800);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let targets = engine.targets(&t.index);
        let day = 86_400_000i64;
        let cases: [(&str, Vec<Bounds>); 2] = [
            (
                "n",
                vec![
                    (None, Some(-500)),
                    (Some(-500), Some(0)),
                    (Some(-100), Some(100)),
                    (Some(0), None),
                ],
            ),
            (
                "ts",
                vec![
                    (None, Some(base_millis() + 3 * day)),
                    (Some(base_millis() + 2 * day), Some(base_millis() + 9 * day)),
                    (Some(base_millis() + 9 * day), None),
                ],
            ),
        ];
        for (field, bounds) in cases {
            let value = |d: &Doc| if field == "n" { d.n } else { d.ts };
            let ranges: Vec<Value> = bounds
                .iter()
                .map(|(from, to)| {
                    let mut r = Map::new();
                    if let Some(from) = from {
                        r.insert("from".into(), json!(from));
                    }
                    if let Some(to) = to {
                        r.insert("to".into(), json!(to));
                    }
                    Value::Object(r)
                })
                .collect();
            // under a match-all, and under a range query on `n` (the aggregated field or not)
            for query in [
                json!({"match_all": {}}),
                json!({"range": {"n": {"gte": -300, "lte": 600}}}),
            ] {
                let in_query = |d: &Doc| {
                    query.get("range").is_none() || d.n.is_some_and(|n| (-300..=600).contains(&n))
                };
                let mut want: Vec<(Option<i64>, Option<i64>, u64)> = bounds
                    .iter()
                    .map(|(from, to)| {
                        let count = t
                            .live
                            .values()
                            .filter(|d| in_query(d))
                            .filter_map(value)
                            .filter(|v| from.is_none_or(|f| *v >= f) && to.is_none_or(|t| *v < t))
                            .count() as u64;
                        (*from, *to, count)
                    })
                    .collect();
                // the response lists ranges by (from, to)
                want.sort_by_key(|(from, to, _)| {
                    (from.unwrap_or(i64::MIN), to.unwrap_or(i64::MAX))
                });
                let want: Vec<u64> = want.into_iter().map(|(_, _, c)| c).collect();
                let body = json!({"size": 0, "query": query,
                    "aggs": {"r": {"range": {"field": field, "ranges": ranges}}}});
                for (name, settings) in [("none".to_string(), mode_none())]
                    .into_iter()
                    .chain(sliced_modes())
                {
                    let response = engine.search(&targets, &body, settings);
                    let got: Vec<u64> = response["aggregations"]["r"]["buckets"]
                        .as_array()
                        .expect("buckets")
                        .iter()
                        .map(|b| b["doc_count"].as_u64().expect("doc_count"))
                        .collect();
                    assert_eq!(
                        got,
                        want,
                        "seed {seed}, {name}, {}, request {body}",
                        t.describe()
                    );
                }
            }
        }
    }
}

/// A lone `composite` of one daily `date_histogram` source counts whole segments from the
/// date's sorted values: every page (followed by `after_key`, both orders) holds the model's
/// days and counts, with and without slices.
#[test]
fn lone_composite_date_histograms_counted_from_sorted_values_equal_the_model() {
    let engine = Engine::new();
    for seed in seeds(0xC0_4D, 4) {
        let mut rng = Rng::new(seed);
        let shards = if rng.chance(0.5) { 1 } else { 3 };
        let docs = rng.usize(100, 800);
        let plan = LayoutPlan::random(&mut rng, docs, shards);
        let t = TestIndex::build(&mut rng, plan);
        let targets = engine.targets(&t.index);
        let mut days: BTreeMap<i64, u64> = BTreeMap::new();
        for doc in t.live.values() {
            if let Some(ts) = doc.ts {
                *days.entry(ts.div_euclid(DAY_MS) * DAY_MS).or_default() += 1;
            }
        }
        for asc in [true, false] {
            let mut want: Vec<(i64, u64)> = days.iter().map(|(k, v)| (*k, *v)).collect();
            if !asc {
                want.reverse();
            }
            let size = rng.usize(1, 6);
            for (name, settings) in [("none".to_string(), mode_none())]
                .into_iter()
                .chain(sliced_modes())
            {
                let mut got = Vec::new();
                let mut after: Option<Value> = None;
                loop {
                    let mut composite = json!({
                        "size": size,
                        "sources": [{"day": {"date_histogram": {"field": "ts",
                            "calendar_interval": "day", "order": if asc { "asc" } else { "desc" }}}}],
                    });
                    if let Some(after) = &after {
                        composite["after"] = after.clone();
                    }
                    let body = json!({"size": 0, "query": {"match_all": {}},
                        "aggs": {"c": {"composite": composite}}});
                    let response = engine.search(&targets, &body, settings);
                    let buckets = response["aggregations"]["c"]["buckets"]
                        .as_array()
                        .expect("buckets")
                        .clone();
                    for b in &buckets {
                        got.push((
                            b["key"]["day"].as_i64().expect("key"),
                            b["doc_count"].as_u64().expect("doc_count"),
                        ));
                    }
                    if buckets.len() < size {
                        break;
                    }
                    after = Some(response["aggregations"]["c"]["after_key"].clone());
                }
                assert_eq!(
                    got,
                    want,
                    "seed {seed}, {name}, {}, asc {asc}",
                    t.describe()
                );
            }
        }
    }
}
