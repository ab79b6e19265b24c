//! `multi_terms`: one bucket per combination of the values of several fields, the most
//! frequent first; keys are lists (`["x", 4, false]`) with `key_as_string` joined by `|`.
//!
//! OpenSearch builds `multi_terms` on its `terms` machinery (the same reduce, shard trimming,
//! `doc_count_error_upper_bound`, `sum_other_doc_count` and ordering), and so does Tessera:
//! the intermediate result is [`InternalTerms`](crate::bucket::terms::InternalTerms) with
//! [`TermKey::Multi`] keys and one display format per field. Only collection is its own: each
//! document's values are read per field (strings through a slice-wide dictionary, numbers
//! as they are), a field without values takes its `missing` value or drops the document, and
//! every distinct combination of the fields' values is a bucket the document counts in once.
//! Keys compare value by value (ips by address, as OpenSearch compares their bytes). Each
//! field may `exclude` values; `include` is rejected, as OpenSearch's parser rejects it.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_date::{DateFormat, TimeZone};

use crate::bucket::auto_date_histogram::zone_error;
use crate::bucket::date_histogram::parse_date_value;
use crate::bucket::histogram::java_double;
use crate::bucket::order::BucketOrder;
use crate::bucket::terms::{
    parse_include, TermFilter, TermFilterSpec, TermKey, TermsBucket, TermsRequest,
};
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::{Formatter, ValueFormat};
use crate::internal::InternalAgg;
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, int_param, string_param, unknown_field, value_text, AggRequest, ValuesSourceParams,
};
use crate::values::{ip_to_string, Accepts, AnyValues, NumericKind, ValueSource};

const AGG: &str = "multi_terms";

/// One field of a `multi_terms` key.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiTermsSource {
    pub params: ValuesSourceParams,
    pub time_zone: Option<String>,
    pub exclude: TermFilterSpec,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MultiTermsRequest {
    pub sources: Vec<MultiTermsSource>,
    /// Size, shard size, counts, order and `show_term_doc_count_error`, as `terms` has them
    /// (its values source is unused).
    pub terms: TermsRequest,
}

fn failed(key: &str, cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
}

fn parse_source(item: &Value) -> Result<MultiTermsSource> {
    const CONFIG: &str = "field_config";
    let Value::Object(map) = item else {
        return Err(failed(
            "terms",
            Error::x_content_parse(format!(
                "[{CONFIG}] Expected START_OBJECT but was: {}",
                crate::bucket::token(item)
            )),
        ));
    };
    let mut source = MultiTermsSource {
        params: ValuesSourceParams::default(),
        time_zone: None,
        exclude: TermFilterSpec::default(),
    };
    for (key, value) in map {
        if source
            .params
            .accept(CONFIG, key, value)
            .map_err(|e| failed("terms", e))?
        {
            continue;
        }
        match key.as_str() {
            "time_zone" => {
                let zone = string_param(CONFIG, key, value).map_err(|e| failed("terms", e))?;
                TimeZone::parse(&zone)
                    .map_err(|e| failed("terms", zone_error(CONFIG, key, e.message)))?;
                source.time_zone = Some(zone);
            }
            "exclude" => parse_include(CONFIG, &mut source.exclude, value, false)
                .map_err(|e| failed("terms", e))?,
            "include" => {
                return Err(failed(
                    "terms",
                    Error::x_content_parse(format!(
                        "[{CONFIG}] unknown field [include] did you mean [exclude]?"
                    )),
                ))
            }
            _ => return Err(failed("terms", unknown_field(CONFIG, key))),
        }
    }
    Ok(source)
}

impl MultiTermsRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<MultiTermsRequest> {
        let mut terms = TermsRequest {
            source: ValuesSourceParams::default(),
            size: 10,
            shard_size: None,
            min_doc_count: 1,
            shard_min_doc_count: 0,
            order: BucketOrder::count_desc(),
            filter: TermFilterSpec::default(),
            show_term_doc_count_error: false,
        };
        let mut sources: Option<Vec<MultiTermsSource>> = None;
        for (key, value) in body {
            match key.as_str() {
                "terms" => {
                    let items = match value {
                        Value::Array(items) => items.iter().map(parse_source).collect(),
                        // a single object is a list of one, as OpenSearch's parser reads it
                        object @ Value::Object(_) => parse_source(object).map(|s| vec![s]),
                        other => Err(Error::x_content_parse(format!(
                            "[{AGG}] terms doesn't support values of type: {}",
                            crate::bucket::token(other)
                        ))),
                    }?;
                    if items.len() < 2 {
                        let hint = if items.len() == 1 {
                            " Use terms aggregation for single term aggregation"
                        } else {
                            ""
                        };
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "multi term aggregation must has at least 2 terms. Found [{}] in [{name}]{hint}",
                                items.len()
                            )),
                        ));
                    }
                    sources = Some(items);
                }
                "size" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[size] must be greater than 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    terms.size = n.min(i32::MAX as i64) as usize;
                }
                "shard_size" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[shardSize] must be greater than 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    terms.shard_size = Some(n.min(i32::MAX as i64) as usize);
                }
                "min_doc_count" | "shard_min_doc_count" => {
                    let n = int_param(AGG, key, value)?;
                    let java = if key == "min_doc_count" {
                        "minDocCount"
                    } else {
                        "shardMinDocCount"
                    };
                    if n < 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[{java}] must be greater than or equal to 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    if key == "min_doc_count" {
                        terms.min_doc_count = n as u64;
                    } else {
                        terms.shard_min_doc_count = n as u64;
                    }
                }
                "order" => terms.order = BucketOrder::parse(AGG, value)?,
                "show_term_doc_count_error" => {
                    terms.show_term_doc_count_error = bool_param(AGG, key, value)?
                }
                "collect_mode" => {
                    let mode = string_param(AGG, key, value)?;
                    if !matches!(mode.as_str(), "breadth_first" | "depth_first") {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "Unknown `collect_mode` [{mode}], expected one of [depth_first, breadth_first]"
                            )),
                        ));
                    }
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        let Some(sources) = sources else {
            return Err(Error::illegal_argument(format!(
                "[terms] must not be null. Found null terms in [{name}]"
            )));
        };
        // OpenSearch's ensureValidity
        terms.shard_min_doc_count = terms.shard_min_doc_count.min(terms.min_doc_count);
        Ok(MultiTermsRequest { sources, terms })
    }
}

/// The JSON key (`["x", 4, false]`) and `key_as_string` (`x|4|false`) of a combination.
pub(crate) fn render_key(values: &[TermKey], formatters: &[Formatter]) -> (Value, String) {
    let mut json_values = Vec::with_capacity(values.len());
    let mut texts = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let formatter = formatters.get(i).unwrap_or(&Formatter::Raw);
        let (json_value, text) = match (value, formatter) {
            (TermKey::Str(s), _) => (json!(s), s.clone()),
            (TermKey::Ip(bits), _) => {
                let text = ip_to_string(std::net::Ipv6Addr::from(*bits));
                (json!(text), text)
            }
            (TermKey::Long(n), Formatter::Boolean) => (json!(*n != 0), (*n != 0).to_string()),
            (TermKey::Long(n), Formatter::Raw) => (json!(n), n.to_string()),
            (TermKey::Double(f), Formatter::Raw) => (json!(f), java_double(*f)),
            (number, formatter) => {
                let f = number.as_f64().unwrap_or(f64::NAN);
                match formatter.as_string(f) {
                    Some(text) => (json!(text), text),
                    None => (number.to_json(), java_double(f)),
                }
            }
        };
        json_values.push(json_value);
        texts.push(text);
    }
    (Value::Array(json_values), texts.join("|"))
}

// ---- collection ----

/// How a field's values become parts of a key.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// Keyword and unmapped fields: ids in a slice-wide dictionary.
    Text,
    /// ip fields: ids in a slice-wide dictionary of addresses.
    Ip,
    /// long, date, boolean: exact `i64`s.
    Long,
    /// double, float, scaled_float: `f64` bits.
    Double,
}

#[derive(Clone)]
struct SourceSpec {
    source: ValueSource,
    kind: Kind,
    format: ValueFormat,
    filter: Option<Arc<TermFilter>>,
    /// The `missing` value: text for text kinds, else the encoded number.
    missing_text: Option<String>,
    missing_number: Option<u64>,
}

struct MultiTermsFactory {
    specs: Vec<SourceSpec>,
}

fn missing_number(
    kind: &NumericKind,
    value: &Value,
    now: i64,
    zone: Option<&TimeZone>,
    format: Option<&str>,
) -> Result<f64> {
    let bad = || Error::illegal_argument(format!("failed to parse [missing] value [{value}]"));
    match (kind, value) {
        (_, Value::Number(n)) => n.as_f64().ok_or_else(bad),
        (NumericKind::Boolean, Value::Bool(b)) => Ok(*b as i64 as f64),
        (NumericKind::Boolean, Value::String(s)) if s == "true" || s == "false" => {
            Ok((s == "true") as i64 as f64)
        }
        (NumericKind::Date(field_format), Value::String(_)) => {
            let format = match format {
                Some(spec) => DateFormat::parse(spec).map_err(|e| {
                    Error::illegal_argument(format!("Invalid format: [{spec}]: {}", e.message))
                })?,
                None => field_format.clone(),
            };
            parse_date_value(value, &format, now, zone).map(|m| m as f64)
        }
        (_, Value::String(s)) => s.trim().parse::<f64>().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

pub fn factory(
    request: &AggRequest,
    multi: &MultiTermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    multi.terms.order.validate(&request.subs)?;
    let mut specs = Vec::with_capacity(multi.sources.len());
    for config in &multi.sources {
        let field = config.params.require_field(&request.name)?;
        let source = ValueSource::resolve(ctx.table, field, AGG, Accepts::Any)?;
        let zone = config
            .time_zone
            .as_deref()
            .map(|z| TimeZone::parse(z).map_err(|e| Error::illegal_argument(e.message)))
            .transpose()?;
        let kind = match (source.numeric_kind(), &source) {
            (Some(NumericKind::Long | NumericKind::Date(_) | NumericKind::Boolean), _) => {
                Kind::Long
            }
            (Some(NumericKind::Double | NumericKind::Scaled(_)), _) => Kind::Double,
            (None, ValueSource::Ip { .. }) => Kind::Ip,
            (None, _) => Kind::Text,
        };
        let format = match kind {
            Kind::Text | Kind::Ip => ValueFormat::Raw,
            _ => ValueFormat::for_source(
                &source,
                config.params.format.as_deref(),
                config.time_zone.as_deref(),
            )?,
        };
        let (missing_text, missing_number) = match (&config.params.missing, source.numeric_kind()) {
            (None, _) => (None, None),
            (Some(value), None) if kind == Kind::Ip => {
                let text = value_text(value);
                parse_ip(&text)?;
                (Some(text), None)
            }
            (Some(value), None) => (Some(value_text(value)), None),
            (Some(value), Some(numeric)) => {
                let number = missing_number(
                    numeric,
                    value,
                    ctx.now_millis,
                    zone.as_ref(),
                    config.params.format.as_deref(),
                )?;
                let encoded = if kind == Kind::Long {
                    number as i64 as u64
                } else {
                    number.to_bits()
                };
                (None, Some(encoded))
            }
        };
        specs.push(SourceSpec {
            source,
            kind,
            format,
            filter: TermFilter::compile(&config.exclude)?.map(Arc::new),
            missing_text,
            missing_number,
        });
    }
    Ok(Box::new(MultiTermsFactory { specs }))
}

impl Factory for MultiTermsFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(MultiTermsCollector {
            fields: self.specs.iter().cloned().map(FieldState::new).collect(),
            ords: HashMap::new(),
            keys: Vec::new(),
            counts: Vec::new(),
            by_parent: Vec::new(),
            subs,
            key: Vec::new(),
            doc_values: Vec::new(),
        }))
    }
}

/// An ip string as IPv6 bits (IPv4 mapped), with OpenSearch's error.
fn parse_ip(text: &str) -> Result<u128> {
    let ip: std::net::IpAddr = text
        .parse()
        .map_err(|_| Error::illegal_argument(format!("'{text}' is not an IP string literal.")))?;
    Ok(u128::from(match ip {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    }))
}

const UNRESOLVED: u32 = u32::MAX;
const EXCLUDED: u32 = u32::MAX - 1;

/// One field's readers and dictionary in one slice.
struct FieldState {
    spec: SourceSpec,
    /// The source's values in the current segment.
    values: AnyValues,
    terms: Vec<String>,
    term_ids: HashMap<String, u32>,
    ips: Vec<u128>,
    ip_ids: HashMap<u128, u32>,
    /// Segment ordinal → dictionary id (keyword fields).
    segment_map: Vec<u32>,
    text: String,
    /// The block's `(position, encoded value)` pairs.
    pairs: Vec<(u32, u64)>,
}

impl FieldState {
    fn new(spec: SourceSpec) -> FieldState {
        FieldState {
            spec,
            values: AnyValues::Unmapped,
            terms: Vec::new(),
            term_ids: HashMap::new(),
            ips: Vec::new(),
            ip_ids: HashMap::new(),
            segment_map: Vec::new(),
            text: String::new(),
            pairs: Vec::new(),
        }
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(id) = self.term_ids.get(term) {
            return *id;
        }
        if self.spec.filter.as_ref().is_some_and(|f| !f.accepts(term)) {
            return EXCLUDED;
        }
        let id = self.terms.len() as u32;
        self.terms.push(term.to_string());
        self.term_ids.insert(term.to_string(), id);
        id
    }

    fn ip_id(&mut self, bits: u128) -> u32 {
        if let Some(id) = self.ip_ids.get(&bits) {
            return *id;
        }
        let text = ip_to_string(std::net::Ipv6Addr::from(bits));
        if self.spec.filter.as_ref().is_some_and(|f| !f.accepts(&text)) {
            return EXCLUDED;
        }
        let id = self.ips.len() as u32;
        self.ips.push(bits);
        self.ip_ids.insert(bits, id);
        id
    }

    fn segment_term_id(&mut self, ord: u64) -> u32 {
        let mapped = self.segment_map[ord as usize];
        if mapped != UNRESOLVED {
            return mapped;
        }
        let mut text = std::mem::take(&mut self.text);
        if let AnyValues::Keyword(k) = &self.values {
            let _ = k.term(ord, &mut text);
        }
        let id = self.term_id(&text);
        self.text = text;
        self.segment_map[ord as usize] = id;
        id
    }

    fn number_accepted(&self, encoded: u64) -> bool {
        let Some(filter) = &self.spec.filter else {
            return true;
        };
        let (value, text) = match self.spec.kind {
            Kind::Long => {
                let n = encoded as i64;
                (n as f64, n.to_string())
            }
            _ => {
                let f = f64::from_bits(encoded);
                (f, f.to_string())
            }
        };
        let text = self.spec.format.as_string(value).unwrap_or(text);
        filter.accepts_number(value, &text)
    }

    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        // range fields are refused by `ValueSource::resolve` for this aggregation
        self.values = AnyValues::open(&self.spec.source, segment.reader)?;
        if let AnyValues::Keyword(values) = &self.values {
            self.segment_map.clear();
            self.segment_map.resize(values.num_terms(), UNRESOLVED);
        }
        Ok(())
    }

    /// Reads the block's values into `pairs` (ascending positions, distinct per document).
    fn read(&mut self, docs: &[DocId]) {
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        match self.spec.kind {
            Kind::Text => {
                if let AnyValues::Keyword(values) = &mut self.values {
                    values.for_each_ord(docs, |p, ord| pairs.push((p as u32, ord)));
                    for pair in pairs.iter_mut() {
                        pair.1 = self.segment_term_id(pair.1) as u64;
                    }
                }
                pairs.retain(|(_, id)| *id != EXCLUDED as u64);
            }
            Kind::Ip => {
                if let AnyValues::Ip(values) = &mut self.values {
                    let mut ips = Vec::new();
                    values.for_each(docs, |p, ip| ips.push((p as u32, u128::from(ip))));
                    for (p, bits) in ips {
                        let id = self.ip_id(bits);
                        pairs.push((p, id as u64));
                    }
                }
                pairs.retain(|(_, id)| *id != EXCLUDED as u64);
            }
            Kind::Long => {
                if let AnyValues::Numeric(values) = &mut self.values {
                    values.for_each_i64(docs, |p, v| pairs.push((p as u32, v as u64)));
                }
                pairs.retain(|(_, v)| self.number_accepted(*v));
            }
            Kind::Double => {
                if let AnyValues::Numeric(values) = &mut self.values {
                    values.for_each_f64(docs, |p, v| pairs.push((p as u32, v.to_bits())));
                }
                pairs.retain(|(_, v)| self.number_accepted(*v));
            }
        }
        // a document counts once per distinct combination
        pairs.sort_unstable();
        pairs.dedup();
        self.pairs = pairs;
    }

    /// The encoded `missing` value (`None` when there is none or it is excluded).
    fn missing(&mut self) -> Option<u64> {
        match self.spec.kind {
            Kind::Text => {
                let text = self.spec.missing_text.clone()?;
                let id = self.term_id(&text);
                (id != EXCLUDED).then_some(id as u64)
            }
            Kind::Ip => {
                let bits = parse_ip(self.spec.missing_text.as_deref()?).ok()?;
                let id = self.ip_id(bits);
                (id != EXCLUDED).then_some(id as u64)
            }
            _ => self
                .spec
                .missing_number
                .filter(|v| self.number_accepted(*v)),
        }
    }

    fn decode(&self, encoded: u64) -> TermKey {
        match self.spec.kind {
            Kind::Text => TermKey::Str(self.terms[encoded as usize].clone()),
            Kind::Ip => TermKey::Ip(self.ips[encoded as usize]),
            Kind::Long => TermKey::Long(encoded as i64),
            Kind::Double => TermKey::Double(f64::from_bits(encoded)),
        }
    }
}

struct MultiTermsCollector {
    fields: Vec<FieldState>,
    /// `[parent, value of each field]` → bucket ordinal.
    ords: HashMap<Vec<u64>, u32>,
    keys: Vec<Vec<u64>>,
    counts: Vec<u64>,
    /// Ordinals of each parent bucket, in creation order.
    by_parent: Vec<Vec<u32>>,
    subs: SubCollectors,
    key: Vec<u64>,
    /// Per field, the current document's values.
    doc_values: Vec<Vec<u64>>,
}

impl MultiTermsCollector {
    /// Counts `doc` in every combination of `self.doc_values` (odometer order).
    fn add_combinations(&mut self, doc: DocId, parent: u32) {
        let n = self.doc_values.len();
        let mut index = vec![0usize; n];
        loop {
            self.key.clear();
            self.key.push(parent as u64);
            for (field, i) in index.iter().enumerate() {
                self.key.push(self.doc_values[field][*i]);
            }
            let ord = match self.ords.get(self.key.as_slice()) {
                Some(ord) => *ord,
                None => {
                    let ord = self.keys.len() as u32;
                    self.ords.insert(self.key.clone(), ord);
                    self.keys.push(self.key.clone());
                    slot(&mut self.by_parent, parent).push(ord);
                    ord
                }
            };
            *slot(&mut self.counts, ord) += 1;
            if !self.subs.is_empty() {
                self.subs.push(doc, ord);
            }
            // next combination
            let mut field = n;
            loop {
                if field == 0 {
                    return;
                }
                field -= 1;
                index[field] += 1;
                if index[field] < self.doc_values[field].len() {
                    break;
                }
                index[field] = 0;
            }
        }
    }
}

impl Collector for MultiTermsCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        for field in &mut self.fields {
            field.set_segment(segment)?;
        }
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        for field in &mut self.fields {
            field.read(docs);
        }
        let mut cursors = vec![0usize; self.fields.len()];
        self.doc_values.resize_with(self.fields.len(), Vec::new);
        for (position, &doc) in docs.iter().enumerate() {
            let mut complete = true;
            for (f, field) in self.fields.iter_mut().enumerate() {
                let values = &mut self.doc_values[f];
                values.clear();
                let pairs = &field.pairs;
                while cursors[f] < pairs.len() && pairs[cursors[f]].0 as usize == position {
                    values.push(pairs[cursors[f]].1);
                    cursors[f] += 1;
                }
                if values.is_empty() {
                    match field.missing() {
                        Some(missing) => values.push(missing),
                        None => complete = false,
                    }
                }
            }
            if complete {
                self.add_combinations(doc, parents[position]);
            }
        }
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let ords = self
            .by_parent
            .get(parent as usize)
            .cloned()
            .unwrap_or_default();
        let mut buckets = Vec::with_capacity(ords.len());
        for ord in ords {
            let encoded = &self.keys[ord as usize];
            let key = self
                .fields
                .iter()
                .zip(&encoded[1..])
                .map(|(field, value)| field.decode(*value))
                .collect();
            buckets.push(TermsBucket {
                key: TermKey::Multi(key),
                doc_count: self.counts[ord as usize],
                doc_count_error: 0,
                subs: self.subs.build(ord)?,
                first_seen: u64::MAX,
            });
        }
        Ok(InternalAgg::Terms(crate::bucket::terms::InternalTerms {
            buckets,
            value_type: crate::bucket::terms::TermsValueType::String,
            format: ValueFormat::Raw,
            formats: self.fields.iter().map(|f| f.spec.format.clone()).collect(),
            doc_count_error_upper_bound: 0,
            sum_other_doc_count: 0,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use crate::test_util::{json_diff, render_shards, split_docs, Rng, TestShard};

    fn parse_err(body: Value) -> (String, Option<String>) {
        let e = parse_aggregations(&json!({"m": {"multi_terms": body}})).unwrap_err();
        (
            e.reason().to_string(),
            e.cause().map(|c| format!("{}: {}", c.kind(), c.reason())),
        )
    }

    #[test]
    fn parse_errors_match_opensearch() {
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}]})),
            (
                "[multi_terms] failed to parse field [terms]".into(),
                Some("illegal_argument_exception: multi term aggregation must has at least 2 terms. Found [1] in [m] Use terms aggregation for single term aggregation".into())
            )
        );
        assert_eq!(
            parse_err(json!({"terms": []})).1.unwrap(),
            "illegal_argument_exception: multi term aggregation must has at least 2 terms. Found [0] in [m]"
        );
        assert_eq!(
            parse_err(json!({"terms": {"field": "k"}})).1.unwrap(),
            "illegal_argument_exception: multi term aggregation must has at least 2 terms. Found [1] in [m] Use terms aggregation for single term aggregation"
        );
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}, {"field": "j", "include": ["a"]}]})).1.unwrap(),
            "x_content_parse_exception: [field_config] unknown field [include] did you mean [exclude]?"
        );
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}, {"bogus": 1}]}))
                .1
                .unwrap(),
            "x_content_parse_exception: [field_config] unknown field [bogus]"
        );
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}, {"field": "j"}], "bogus": 1})).0,
            "[multi_terms] unknown field [bogus]"
        );
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}, {"field": "j"}], "size": 0}))
                .1
                .unwrap(),
            "illegal_argument_exception: [size] must be greater than 0. Found [0] in [m]"
        );
        assert_eq!(
            parse_err(json!({"terms": [{"field": "k"}, {"field": "j"}], "shard_size": 0}))
                .1
                .unwrap(),
            "illegal_argument_exception: [shardSize] must be greater than 0. Found [0] in [m]"
        );
        let aggs = parse_aggregations(&json!({"m": {"multi_terms": {
            "terms": [{"field": "k"}, {"field": "j", "exclude": "a.*", "missing": "z"}],
            "shard_min_doc_count": 5, "min_doc_count": 2}}}))
        .unwrap();
        let crate::request::AggKind::MultiTerms(m) = &aggs[0].kind else {
            panic!()
        };
        assert_eq!(m.sources.len(), 2);
        assert_eq!(m.terms.shard_min_doc_count, 2);
    }

    /// Keys as OpenSearch 2.19 renders them: strings, raw numbers, booleans as JSON booleans,
    /// dates in the field's format, doubles in Java's notation in `key_as_string`.
    #[test]
    fn keys_render_like_opensearch() {
        let date = ValueFormat::Date {
            format: "yyyy-MM-dd HH:mm".into(),
            zone: Some("+01:00".into()),
        };
        let formatters = vec![
            ValueFormat::Raw.formatter(),
            ValueFormat::Raw.formatter(),
            ValueFormat::Boolean.formatter(),
            date.formatter(),
            ValueFormat::Raw.formatter(),
            ValueFormat::Raw.formatter(),
        ];
        let (key, text) = render_key(
            &[
                TermKey::Str("w".into()),
                TermKey::Long(4),
                TermKey::Long(0),
                TermKey::Long(1_420_071_540_000),
                TermKey::Double(1e10),
                TermKey::Ip(u128::from(
                    std::net::Ipv4Addr::new(10, 0, 3, 11).to_ipv6_mapped(),
                )),
            ],
            &formatters,
        );
        assert_eq!(
            key,
            json!([
                "w",
                4,
                false,
                "2015-01-01 01:19",
                10000000000.0,
                "10.0.3.11"
            ])
        );
        assert_eq!(text, "w|4|false|2015-01-01 01:19|1.0E10|10.0.3.11");
    }

    fn docs(seed: u64, n: usize) -> Vec<Value> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|i| {
                let k = ["a", "b", "c", "d"][rng.below(4) as usize];
                let n1 = rng.below(4) as i64;
                match i % 9 {
                    0 => json!({"k": k}),
                    1 => json!({"k": [k, "e", k], "n": [n1, n1, 7], "ip": "10.0.0.18"}),
                    2 => json!({"n": n1, "b": true, "ip": "10.0.0.6"}),
                    _ => {
                        json!({"k": k, "n": n1, "b": i % 2 == 0, "ip": format!("10.0.0.{}", i % 3)})
                    }
                }
            })
            .collect()
    }

    fn shard(docs: &[Value], segments: usize) -> TestShard {
        TestShard::new(
            json!({"properties": {"k": {"type": "keyword"}, "n": {"type": "long"},
                   "b": {"type": "boolean"}, "ip": {"type": "ip"}}}),
            docs,
            segments,
        )
    }

    #[test]
    fn counts_are_exact_and_slice_and_shard_invariant() {
        let docs = docs(3, 400);
        let body = json!({"m": {"multi_terms": {
            "terms": [{"field": "k", "missing": "none"}, {"field": "n"}, {"field": "b", "missing": false}],
            "size": 100, "min_doc_count": 1},
            "aggs": {"s": {"sum": {"field": "n"}}}}});
        let one = shard(&docs, 4);
        let reference = one.render(&body, 1, 0);
        for seed in 1..6 {
            let other = one.render(&body, 1 + seed as usize, seed);
            assert_eq!(json_diff(&reference, &other, 0.0, ""), None);
        }
        // every distinct combination counts a document once
        let mut expected: std::collections::BTreeMap<String, u64> = Default::default();
        for d in &docs {
            let list = |v: &Value, missing: Option<Value>| -> Vec<String> {
                let mut out: Vec<String> = match v {
                    Value::Null => missing.into_iter().map(|m| m.to_string()).collect(),
                    Value::Array(a) => a.iter().map(|x| x.to_string()).collect(),
                    x => vec![x.to_string()],
                };
                out.sort();
                out.dedup();
                out
            };
            for k in list(&d["k"], Some(json!("none"))) {
                for n in list(&d["n"], None) {
                    for b in list(&d["b"], Some(json!(false))) {
                        *expected
                            .entry(format!("{}|{}|{}", k.trim_matches('"'), n, b))
                            .or_default() += 1;
                    }
                }
            }
        }
        let got: std::collections::BTreeMap<String, u64> = reference["m"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["key_as_string"].as_str().unwrap().to_string(),
                    b["doc_count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, expected);
        // split over 3 shards, trimmed to 3 buckets each way
        let small =
            json!({"m": {"multi_terms": {"terms": [{"field": "k"}, {"field": "ip"}], "size": 3}}});
        let parts = split_docs(&docs, 3, 7);
        let shards: Vec<TestShard> = parts.iter().map(|p| shard(p, 2)).collect();
        let refs: Vec<&TestShard> = shards.iter().collect();
        let first = render_shards(&refs, &small, 2, 1).unwrap();
        for seed in 2..5 {
            let other = render_shards(&refs, &small, seed as usize, seed).unwrap();
            assert_eq!(json_diff(&first, &other, 0.0, ""), None);
        }
        let all: u64 = first["m"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["doc_count"].as_u64().unwrap())
            .sum::<u64>()
            + first["m"]["sum_other_doc_count"].as_u64().unwrap();
        let with_both = docs
            .iter()
            .map(|d| match (&d["k"], &d["ip"]) {
                (Value::Null, _) | (_, Value::Null) => 0,
                (Value::Array(_), _) => 2, // "a|…" and "e|…"
                _ => 1,
            })
            .sum::<u64>();
        assert_eq!(all, with_both);
    }

    #[test]
    fn ip_keys_order_by_address() {
        let docs: Vec<Value> = [
            "10.0.0.18",
            "10.0.0.6",
            "10.0.0.6",
            "10.0.0.18",
            "10.0.0.200",
        ]
        .iter()
        .map(|ip| json!({"k": "a", "ip": ip}))
        .collect();
        let out = shard(&docs, 1).render(
            &json!({"m": {"multi_terms": {"terms": [{"field": "k"}, {"field": "ip"}],
                "order": {"_key": "asc"}}}}),
            1,
            0,
        );
        let keys: Vec<&str> = out["m"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["key_as_string"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["a|10.0.0.6", "a|10.0.0.18", "a|10.0.0.200"]);
    }
}
