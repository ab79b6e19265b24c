//! The `completion` suggester: the documents whose `completion` inputs start with a prefix
//! (or a regular expression, or a prefix within a few edits), best weight first, as
//! OpenSearch's suggester finds them in Lucene's per-segment FSTs.
//!
//! A shard reads each segment's keys (see `tessera_mapping::completion`) one range per query
//! context: the keys starting with the context and the exact part of the analyzed prefix.
//! Each key that matches scores as Lucene's `CompletionScorer`: its weight times the boost
//! (the context's boost plus, for a fuzzy prefix, the length of the prefix it shares with the
//! shortest accepted path), the weight alone where there is no boost. A document is one option
//! (its best key: score, then key order, as Lucene's top-N search pops them) showing every
//! context it matched; `skip_duplicates` keeps one option per text. The shard loads `_id` and
//! `_source` of its best `size` options; the coordinator sorts all shards' options by score
//! (then shard order), drops duplicate texts again when asked, and keeps `size`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::schema::Field;
use tantivy::{DocAddress, Searcher, TantivyDocument};
use tantivy_fst::Automaton;
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::completion::{decode_key, CompletionSpec, ContextKind, CONTEXT_END};
use tessera_mapping::geo::{encode_geohash, geohash_neighbours, parse_point};
use tessera_mapping::{LeafKind, SourceFilter};
use tessera_query::ast::Fuzziness;

use super::ShardInputs;

/// OpenSearch's defaults.
const DEFAULT_SIZE: usize = 5;
const DEFAULT_MIN_LENGTH: usize = 3;
const DEFAULT_PREFIX_LENGTH: usize = 1;
/// A geo query context's precision when it names none (OpenSearch's `GeoQueryContext`).
const DEFAULT_QUERY_PRECISION: i64 = 12;

/// The completion suggester's options.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionSuggester {
    pub field: String,
    pub analyzer: Option<String>,
    pub size: usize,
    /// Options each shard returns (at least `size`): more leave room for the duplicates the
    /// coordinator drops.
    pub shard_size: Option<usize>,
    pub skip_duplicates: bool,
    pub fuzzy: Option<FuzzyOptions>,
    /// `contexts` as given: resolved on the shard against the field's context mappings.
    pub contexts: Option<Map<String, Value>>,
}

/// How a fuzzy prefix matches.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzyOptions {
    pub edits: usize,
    pub transpositions: bool,
    /// Shorter prefixes match exactly.
    pub min_length: usize,
    /// Leading characters that must match exactly.
    pub prefix_length: usize,
    /// Count characters rather than bytes.
    pub unicode_aware: bool,
}

/// How the suggestion's text is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TextKind {
    /// `text` or `prefix`: analyzed, its form is a prefix of the keys'.
    Prefix,
    /// `regex`: a regular expression a prefix of the keys' form must match.
    Regex,
}

/// One shard's options for one suggestion, best first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletionOption {
    pub text: String,
    pub index: String,
    pub id: String,
    pub score: f32,
    pub routing: Option<String>,
    /// The `_source` as JSON text, filtered as the request asks (`None` when it asks none).
    pub source: Option<String>,
    /// Each context the document matched: the mapping's name and its values.
    pub contexts: Vec<(String, Vec<String>)>,
}

impl CompletionSuggester {
    pub fn parse(value: &Value) -> Result<CompletionSuggester> {
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "[completion] must be an object, got a {}",
                token(value)
            )));
        };
        let mut field = None;
        let mut out = CompletionSuggester {
            field: String::new(),
            analyzer: None,
            size: DEFAULT_SIZE,
            shard_size: None,
            skip_duplicates: false,
            fuzzy: None,
            contexts: None,
        };
        for (key, value) in map {
            match key.as_str() {
                "field" => field = Some(string(key, value)?),
                "analyzer" => out.analyzer = Some(string(key, value)?),
                "size" => {
                    let size = integer(key, value)?;
                    if size <= 0 {
                        return Err(Error::illegal_argument("[size] must be a positive integer"));
                    }
                    out.size = size as usize;
                }
                "shard_size" => {
                    let size = integer(key, value)?;
                    if size <= 0 {
                        return Err(Error::illegal_argument(
                            "[shard_size] must be a positive integer",
                        ));
                    }
                    out.shard_size = Some(size as usize);
                }
                "skip_duplicates" => out.skip_duplicates = boolean(key, value)?,
                "fuzzy" => out.fuzzy = FuzzyOptions::parse(value)?,
                "contexts" => match value {
                    Value::Object(contexts) => out.contexts = Some(contexts.clone()),
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[completion] contexts must be an object, got a {}",
                            token(other)
                        )))
                    }
                },
                // as the `regexp` query: the default flags and none at all, no other set
                "regex" => {
                    let Value::Object(options) = value else {
                        return Err(Error::x_content_parse(format!(
                            "[completion] regex doesn't support values of type: {}",
                            token(value)
                        )));
                    };
                    for (key, value) in options {
                        match (key.as_str(), value) {
                            ("flags", Value::String(flags))
                                if flags == "ALL" || flags == "NONE" => {}
                            ("flags", _) => {
                                return Err(Error::not_supported(
                                    "completion [regex] flags other than ALL",
                                ))
                            }
                            ("max_determinized_states", value) => {
                                integer(key, value)?;
                            }
                            (other, _) => {
                                return Err(Error::x_content_parse(format!(
                                    "[regexp] unknown field [{other}]"
                                )))
                            }
                        }
                    }
                }
                other => {
                    return Err(Error::x_content_parse(format!(
                        "[completion] unknown field [{other}]"
                    )))
                }
            }
        }
        out.field = field.ok_or_else(|| {
            Error::new(
                "parse_exception",
                400,
                "the required field option [field] is missing",
            )
        })?;
        Ok(out)
    }

    /// The shard's best options for `text`.
    pub fn run(
        &self,
        text: &str,
        kind: TextKind,
        shard: &ShardInputs,
    ) -> Result<Vec<CompletionOption>> {
        let leaf = shard.table.leaf(&self.field).ok_or_else(|| {
            Error::illegal_argument(format!("no mapping found for field [{}]", self.field))
        })?;
        let LeafKind::Completion(spec) = &leaf.kind else {
            return Err(Error::illegal_argument(format!(
                "Field [{}] is not a completion suggest field",
                self.field
            )));
        };
        let ranges = self.context_ranges(spec)?;
        let matcher = match kind {
            TextKind::Regex => Matcher::Regex(tantivy_fst::Regex::new(text).map_err(|e| {
                Error::illegal_argument(format!("invalid regular expression [{text}]: {e}"))
            })?),
            TextKind::Prefix => {
                if let Some(name) = &self.analyzer {
                    if !tessera_mapping::analysis::ANALYZERS.contains(&name.as_str()) {
                        return Err(Error::illegal_argument(format!(
                            "analyzer [{name}] doesn't exists"
                        )));
                    }
                }
                let analyzer = self.analyzer.as_deref().unwrap_or(&spec.search_analyzer);
                let form = spec.form(analyzer, text);
                if form.is_empty() {
                    return Ok(Vec::new());
                }
                match &self.fuzzy {
                    Some(fuzzy) => Matcher::Fuzzy {
                        edits: if form.len() < fuzzy.min_length {
                            0
                        } else {
                            fuzzy.edits
                        },
                        form,
                        options: fuzzy.clone(),
                    },
                    None => Matcher::Prefix(form),
                }
            }
        };
        let Some(field) = leaf.field else {
            return Ok(Vec::new());
        };
        let mut matches = collect_matches(shard.searcher, field, spec, &ranges, &matcher)?;
        matches.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(&b.key)));
        let wanted = self.shard_size.unwrap_or(self.size).max(self.size);
        let mut seen_texts = std::collections::HashSet::new();
        let mut options = Vec::new();
        for best in matches.into_iter() {
            if options.len() == wanted {
                break;
            }
            if self.skip_duplicates && !seen_texts.insert(best.surface.clone()) {
                continue;
            }
            options.push(self.load(shard, spec, best)?);
        }
        Ok(options)
    }

    /// The key ranges to read: one per query context (category, or geohash cell with its
    /// neighbours), each with its boost; one unbounded range when the field has no contexts.
    fn context_ranges(&self, spec: &CompletionSpec) -> Result<Vec<ContextRange>> {
        let given = self.contexts.as_ref().filter(|c| !c.is_empty());
        if spec.contexts.is_empty() {
            if given.is_some() {
                return Err(Error::illegal_argument(format!(
                    "suggester [{}] doesn't expect any context",
                    self.field
                )));
            }
            return Ok(vec![ContextRange {
                prefix: Vec::new(),
                boost: 0.0,
                exact: false,
            }]);
        }
        let mandatory = || Error::illegal_argument("Missing mandatory contexts in context query");
        let given = given.ok_or_else(mandatory)?;
        let mut out = Vec::new();
        for (name, value) in given {
            let (index, mapping) = spec.context(name).ok_or_else(|| {
                let mut names: Vec<&str> = spec.contexts.iter().map(|c| c.name.as_str()).collect();
                names.sort_unstable();
                Error::illegal_argument(format!(
                    "Unknown context name [{name}], must be one of [{}]",
                    names.join(", ")
                ))
            })?;
            let items: Vec<&Value> = match value {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            for item in items {
                match mapping.kind {
                    ContextKind::Category => {
                        let (value, boost, prefix) = category_query(item)?;
                        out.push(ContextRange::new(index, &value, boost, !prefix));
                    }
                    ContextKind::Geo { precision } => {
                        for (cell, boost) in geo_query(item, precision)? {
                            let exact = cell.len() >= precision;
                            out.push(ContextRange::new(index, &cell, boost, exact));
                        }
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(mandatory());
        }
        Ok(out)
    }

    /// Reads the option's document: `_id` and the `_source` the request asks for.
    fn load(
        &self,
        shard: &ShardInputs,
        spec: &CompletionSpec,
        best: DocMatch,
    ) -> Result<CompletionOption> {
        let meta = shard.table.meta;
        let doc: TantivyDocument = shard
            .searcher
            .doc(best.address)
            .map_err(|e| Error::internal("read a suggested document", e))?;
        let id = doc
            .get_first(meta.id)
            .and_then(|v| tantivy::schema::Value::as_str(&v))
            .unwrap_or_default()
            .to_string();
        let routing = doc
            .get_first(meta.routing)
            .and_then(|v| tantivy::schema::Value::as_str(&v))
            .map(String::from);
        let source = match shard.source.enabled {
            true => doc
                .get_first(meta.source)
                .and_then(|v| tantivy::schema::Value::as_bytes(&v))
                .map(|bytes| render_source(bytes, shard))
                .transpose()?,
            false => None,
        };
        let (text, score) = (best.surface.clone(), best.score);
        let mut contexts: Vec<(String, Vec<String>)> = Vec::new();
        for (index, value) in best.contexts() {
            let Some(mapping) = spec.contexts.get(index as usize) else {
                continue;
            };
            match contexts.iter_mut().find(|(name, _)| *name == mapping.name) {
                Some((_, values)) => values.push(value),
                None => contexts.push((mapping.name.clone(), vec![value])),
            }
        }
        contexts.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(CompletionOption {
            text,
            index: shard.index.to_string(),
            id,
            score,
            routing,
            source,
            contexts,
        })
    }

    /// Merges the shards' options (shard order breaks ties) and renders the suggestion's one
    /// entry.
    pub fn reduce(&self, text: &str, shards: Vec<Vec<CompletionOption>>) -> Value {
        let mut all: Vec<(usize, usize, CompletionOption)> = shards
            .into_iter()
            .enumerate()
            .flat_map(|(shard, options)| {
                options
                    .into_iter()
                    .enumerate()
                    .map(move |(rank, option)| (shard, rank, option))
            })
            .collect();
        all.sort_by(|a, b| {
            b.2.score
                .total_cmp(&a.2.score)
                .then(a.0.cmp(&b.0))
                .then(a.1.cmp(&b.1))
        });
        let mut seen_texts = std::collections::HashSet::new();
        let options: Vec<Value> = all
            .into_iter()
            .map(|(_, _, option)| option)
            .filter(|option| !self.skip_duplicates || seen_texts.insert(option.text.clone()))
            .take(self.size)
            .map(render_option)
            .collect();
        json!([{
            "text": text,
            "offset": 0,
            "length": text.encode_utf16().count(),
            "options": options,
        }])
    }
}

fn render_option(option: CompletionOption) -> Value {
    let mut out = Map::new();
    out.insert("text".into(), json!(option.text));
    out.insert("_index".into(), json!(option.index));
    out.insert("_id".into(), json!(option.id));
    out.insert(
        "_score".into(),
        crate::source_fields::float_value(option.score),
    );
    if let Some(routing) = option.routing {
        out.insert("_routing".into(), json!(routing));
    }
    if let Some(source) = option.source {
        // the shard rendered it from the stored `_source`: it parses
        let value = serde_json::from_str(&source).unwrap_or(Value::Null);
        out.insert("_source".into(), value);
    }
    if !option.contexts.is_empty() {
        let contexts: Map<String, Value> = option
            .contexts
            .into_iter()
            .map(|(name, values)| (name, json!(values)))
            .collect();
        out.insert("contexts".into(), Value::Object(contexts));
    }
    Value::Object(out)
}

fn render_source(bytes: &[u8], shard: &ShardInputs) -> Result<String> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::internal("read _source", e))?;
    let filter = SourceFilter::new(shard.source.includes.clone(), shard.source.excludes.clone());
    if filter.is_noop() {
        return Ok(text.trim().to_string());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::internal("parse _source", e))?;
    Ok(filter.apply(&value).to_string())
}

impl FuzzyOptions {
    /// `fuzzy`: `true`, or an object of options (`false` and `{}`: see OpenSearch).
    fn parse(value: &Value) -> Result<Option<FuzzyOptions>> {
        let mut out = FuzzyOptions {
            // `AUTO` measures no term here: OpenSearch's `asDistance()` takes five
            // characters, one edit under the default bounds
            edits: 1,
            transpositions: true,
            min_length: DEFAULT_MIN_LENGTH,
            prefix_length: DEFAULT_PREFIX_LENGTH,
            unicode_aware: false,
        };
        let map = match value {
            Value::Bool(true) => return Ok(Some(out)),
            Value::Bool(false) => return Ok(None),
            Value::Object(map) => map,
            other => {
                return Err(Error::x_content_parse(format!(
                    "[completion] fuzzy doesn't support values of type: {}",
                    token(other)
                )))
            }
        };
        let wrap = |e: Error| {
            Error::x_content_parse("[completion] failed to parse field [fuzzy]").caused_by(e)
        };
        for (key, value) in map {
            match key.as_str() {
                "fuzziness" => {
                    // a count above two is two here (Lucene's automata go no further)
                    if let Some(n) = value.as_u64() {
                        out.edits = n.min(2) as usize;
                        continue;
                    }
                    let fuzziness = tessera_query::dsl::parse_fuzziness(value).map_err(wrap)?;
                    out.edits = match fuzziness {
                        Fuzziness::Edits(n) => (n as usize).min(2),
                        Fuzziness::Auto { low, high } => match 5 {
                            len if len < low => 0,
                            len if len < high => 1,
                            _ => 2,
                        },
                    };
                }
                "transpositions" => out.transpositions = boolean(key, value).map_err(wrap)?,
                "min_length" => out.min_length = integer(key, value).map_err(wrap)?.max(0) as usize,
                "prefix_length" => {
                    out.prefix_length = integer(key, value).map_err(wrap)?.max(0) as usize
                }
                "unicode_aware" => out.unicode_aware = boolean(key, value).map_err(wrap)?,
                "max_determinized_states" => {
                    integer(key, value).map_err(wrap)?;
                }
                other => {
                    return Err(wrap(Error::x_content_parse(format!(
                        "[fuzzy] unknown field [{other}]"
                    ))))
                }
            }
        }
        Ok(Some(out))
    }
}

/// A category query context: a value, or `{context, boost, prefix}`.
fn category_query(item: &Value) -> Result<(String, f32, bool)> {
    let scalar = |value: &Value| match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(Error::x_content_parse(format!(
            "[category] context doesn't support values of type: {}",
            token(other)
        ))),
    };
    let Value::Object(map) = item else {
        return Ok((scalar(item)?, 1.0, false));
    };
    let (mut value, mut boost, mut prefix) = (None, 1.0, false);
    for (key, item) in map {
        match key.as_str() {
            "context" => value = Some(scalar(item)?),
            "boost" => boost = number(key, item)? as f32,
            "prefix" => prefix = boolean(key, item)?,
            other => {
                return Err(Error::x_content_parse(format!(
                    "[category] unknown field [{other}]"
                )))
            }
        }
    }
    let value = value.ok_or_else(|| Error::x_content_parse("Required [context]".to_string()))?;
    Ok((value, boost, prefix))
}

/// A geo query context: a point, or `{context: point, boost, precision, neighbours}` (or the
/// point's `lat` and `lon` beside those options), expanded as OpenSearch's
/// `GeoContextMapping` expands it: the point's cell at the lower of the query's and the
/// mapping's precisions (a prefix of the indexed cells when coarser), plus the cells around
/// it, or around its truncations to each of the `neighbours` precisions.
fn geo_query(item: &Value, mapping_precision: usize) -> Result<Vec<(String, f32)>> {
    let (point, boost, precision, neighbours) = match item {
        Value::Object(map) => {
            let mut point_fields = Map::new();
            let (mut point, mut boost, mut precision, mut neighbours) =
                (None, 1.0f32, DEFAULT_QUERY_PRECISION, Vec::new());
            for (key, value) in map {
                match key.as_str() {
                    "context" => match value {
                        Value::Object(_) => point = Some(parse_point(value)?),
                        other => {
                            return Err(Error::x_content_parse(format!(
                                "[geo] context doesn't support values of type: {}",
                                token(other)
                            )))
                        }
                    },
                    "lat" | "lon" => {
                        point_fields.insert(key.clone(), value.clone());
                    }
                    "boost" => boost = number(key, value)? as f32,
                    "precision" => precision = tessera_mapping::completion::geo_precision(value)?,
                    "neighbours" => {
                        let items: Vec<&Value> = match value {
                            Value::Array(items) => items.iter().collect(),
                            other => vec![other],
                        };
                        for item in items {
                            neighbours.push(tessera_mapping::completion::geo_precision(item)?);
                        }
                    }
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[geo] unknown field [{other}]"
                        )))
                    }
                }
            }
            let point = match point {
                Some(point) => point,
                None => parse_point(&Value::Object(point_fields))?,
            };
            (point, boost, precision, neighbours)
        }
        other => (
            parse_point(other)?,
            1.0,
            DEFAULT_QUERY_PRECISION,
            Vec::new(),
        ),
    };
    let length = (precision as usize).min(mapping_precision);
    let cell = encode_geohash(point, length);
    let mut cells = vec![cell.clone()];
    if neighbours.is_empty() && length == mapping_precision {
        cells.extend(geohash_neighbours(&cell)?);
    } else {
        for level in neighbours {
            let level = level as usize;
            if level < cell.len() {
                let truncated = &cell[..level];
                cells.push(truncated.to_string());
                cells.extend(geohash_neighbours(truncated)?);
            }
        }
    }
    cells.sort();
    cells.dedup();
    Ok(cells.into_iter().map(|cell| (cell, boost)).collect())
}

/// Keys starting with `prefix` (a context, whole or its start); `boost` 0 means no context.
struct ContextRange {
    prefix: Vec<u8>,
    boost: f32,
    /// Whether `prefix` holds the whole context value (else keys must be checked to start
    /// with the value, any value continuing it).
    exact: bool,
}

impl ContextRange {
    fn new(index: u8, value: &str, boost: f32, exact: bool) -> ContextRange {
        let mut prefix = vec![index];
        prefix.extend_from_slice(value.as_bytes());
        if exact {
            prefix.push(CONTEXT_END);
        }
        ContextRange {
            prefix,
            boost,
            exact,
        }
    }
}

/// How a key's analyzed form matches the text.
enum Matcher {
    Prefix(Vec<u8>),
    Fuzzy {
        form: Vec<u8>,
        edits: usize,
        options: FuzzyOptions,
    },
    Regex(tantivy_fst::Regex),
}

impl Matcher {
    /// The bytes every matching form starts with (narrows the key range).
    fn exact_start(&self) -> &[u8] {
        match self {
            Matcher::Prefix(form) => form,
            Matcher::Fuzzy { form, options, .. } => &form[..exact_bytes(form, options)],
            Matcher::Regex(_) => &[],
        }
    }

    /// `None` when the form does not match; else the boost the match adds (a fuzzy prefix:
    /// the length it shares with the shortest accepted prefix of the form).
    fn matches(&self, candidate: &[u8]) -> Option<f32> {
        match self {
            Matcher::Prefix(form) => candidate.starts_with(form).then_some(0.0),
            Matcher::Fuzzy {
                form,
                edits,
                options,
            } => fuzzy_boost(form, candidate, *edits, options),
            Matcher::Regex(regex) => {
                let mut state = regex.start();
                if regex.is_match(&state) {
                    return Some(0.0);
                }
                for &byte in candidate {
                    state = regex.accept(&state, byte);
                    if regex.is_match(&state) {
                        return Some(0.0);
                    }
                    if !regex.can_match(&state) {
                        return None;
                    }
                }
                None
            }
        }
    }
}

/// The byte length of the part of a fuzzy prefix that must match exactly: its first
/// `prefix_length` labels, characters when `unicode_aware`, else bytes (as Lucene's automaton
/// then runs over UTF-8 bytes).
fn exact_bytes(form: &[u8], options: &FuzzyOptions) -> usize {
    let labels = options.prefix_length;
    match (options.unicode_aware, std::str::from_utf8(form)) {
        (true, Ok(text)) => text
            .char_indices()
            .nth(labels)
            .map_or(form.len(), |(at, _)| at),
        _ => labels.min(form.len()),
    }
}

/// Lucene's fuzzy completion boost: the intersection of the Levenshtein automaton with the
/// keys stops at the first accepted prefix of each key (the shortest prefix within `edits`
/// of the query, exact on its first `prefix_length` characters), and the boost is the
/// number of leading labels that prefix shares with the query.
fn fuzzy_boost(
    query: &[u8],
    candidate: &[u8],
    edits: usize,
    options: &FuzzyOptions,
) -> Option<f32> {
    let units = |bytes: &[u8]| -> Vec<u32> {
        match (options.unicode_aware, std::str::from_utf8(bytes)) {
            (true, Ok(text)) => text.chars().map(|c| c as u32).collect(),
            _ => bytes.iter().map(|&b| b as u32).collect(),
        }
    };
    let (q, c) = (units(query), units(candidate));
    let exact = options.prefix_length.min(q.len());
    if c.len() < exact || q[..exact] != c[..exact] {
        return None;
    }
    // rows of the edit distance between the candidate's prefixes and the query
    let mut before: Vec<usize> = Vec::new();
    let mut previous: Vec<usize> = (0..=q.len()).collect();
    if previous[q.len()] <= edits && exact == 0 {
        return Some(0.0);
    }
    for i in 1..=c.len() {
        let mut row = vec![i; q.len() + 1];
        for j in 1..=q.len() {
            let cost = usize::from(c[i - 1] != q[j - 1]);
            row[j] = (previous[j] + 1)
                .min(row[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if options.transpositions
                && i > 1
                && j > 1
                && c[i - 1] == q[j - 2]
                && c[i - 2] == q[j - 1]
            {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        if i >= exact && row[q.len()] <= edits {
            let shared = c[..i].iter().zip(&q).take_while(|(a, b)| a == b).count();
            return Some(shared as f32);
        }
        before = std::mem::replace(&mut previous, row);
    }
    None
}

/// A document's best matching key, and the contexts of all its matching keys.
struct DocMatch {
    address: DocAddress,
    score: f32,
    key: Vec<u8>,
    surface: String,
    /// Each matched context with the best score and key it matched with, in no order until
    /// [`DocMatch::contexts`] sorts them.
    matched: Vec<(f32, Vec<u8>, (u8, String))>,
}

impl DocMatch {
    /// Whether `score` and `key` rank above the document's best so far (score, then key
    /// order, as Lucene's top-N search pops them).
    fn beaten_by(&self, score: f32, key: &[u8]) -> bool {
        score > self.score || (score == self.score && key < self.key.as_slice())
    }

    /// The contexts it matched, best first.
    fn contexts(mut self) -> Vec<(u8, String)> {
        self.matched
            .sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        self.matched.into_iter().map(|(_, _, c)| c).collect()
    }
}

/// Every document with a matching key, in no order.
fn collect_matches(
    searcher: &Searcher,
    field: Field,
    spec: &CompletionSpec,
    ranges: &[ContextRange],
    matcher: &Matcher,
) -> Result<Vec<DocMatch>> {
    let has_contexts = !spec.contexts.is_empty();
    let mut docs: HashMap<DocAddress, DocMatch> = HashMap::new();
    let io = |e: std::io::Error| Error::internal("read a completion field", e);
    for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
        let inverted = segment
            .inverted_index(field)
            .map_err(|e| Error::internal("open a completion field", e))?;
        let terms = inverted.terms();
        let alive = segment.alive_bitset();
        for range in ranges {
            let mut start = range.prefix.clone();
            if range.exact || range.prefix.is_empty() {
                start.extend_from_slice(matcher.exact_start());
            }
            let mut stream = match successor(&start) {
                Some(end) => terms.range().ge(&start).lt(end).into_stream().map_err(io)?,
                None => terms.range().ge(&start).into_stream().map_err(io)?,
            };
            while stream.advance() {
                let bytes = stream.key();
                let Some(key) = decode_key(bytes, has_contexts) else {
                    continue;
                };
                // under a context prefix the range holds every form: check the exact part
                if !range.exact
                    && !range.prefix.is_empty()
                    && !key.form.starts_with(matcher.exact_start())
                {
                    continue;
                }
                let Some(match_boost) = matcher.matches(key.form) else {
                    continue;
                };
                let boost = range.boost + match_boost;
                let weight = key.weight as f32;
                // Lucene's `CompletionScorer.score`
                let score = if boost == 0.0 {
                    weight
                } else if weight == 0.0 {
                    boost
                } else {
                    weight * boost
                };
                let context = key.context.map(|(index, value)| (index, value.to_string()));
                let mut postings = inverted
                    .read_postings_from_terminfo(
                        stream.value(),
                        tantivy::schema::IndexRecordOption::Basic,
                    )
                    .map_err(io)?;
                let mut doc = tantivy::DocSet::doc(&postings);
                while doc != tantivy::TERMINATED {
                    if alive.is_none_or(|alive| alive.is_alive(doc)) {
                        let address = DocAddress::new(segment_ord as u32, doc);
                        let found = docs.entry(address).or_insert_with(|| DocMatch {
                            address,
                            score: f32::NEG_INFINITY,
                            key: Vec::new(),
                            surface: String::new(),
                            matched: Vec::new(),
                        });
                        if found.beaten_by(score, bytes) {
                            found.score = score;
                            found.key = bytes.to_vec();
                            found.surface = key.surface.to_string();
                        }
                        if let Some(context) = &context {
                            match found.matched.iter_mut().find(|(_, _, c)| c == context) {
                                Some(known)
                                    if score > known.0
                                        || (score == known.0 && bytes < known.1.as_slice()) =>
                                {
                                    known.0 = score;
                                    known.1 = bytes.to_vec();
                                }
                                Some(_) => {}
                                None => {
                                    found.matched.push((score, bytes.to_vec(), context.clone()))
                                }
                            }
                        }
                    }
                    doc = tantivy::DocSet::advance(&mut postings);
                }
            }
        }
    }
    Ok(docs.into_values().collect())
}

/// The smallest byte string greater than every string starting with `prefix` (`None`: no
/// bound).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn string(key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(Error::x_content_parse(format!(
            "[completion] {key} doesn't support values of type: {}",
            token(other)
        ))),
    }
}

fn integer(key: &str, value: &Value) -> Result<i64> {
    match value {
        Value::Number(n) => n.as_i64().ok_or_else(|| {
            Error::x_content_parse(format!("[completion] {key} must be an integer"))
        }),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| Error::x_content_parse(format!("[completion] {key} must be an integer"))),
        other => Err(Error::x_content_parse(format!(
            "[completion] {key} doesn't support values of type: {}",
            token(other)
        ))),
    }
}

fn number(key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| Error::x_content_parse(format!("[{key}] must be a number, got [{s}]"))),
        other => Err(Error::x_content_parse(format!(
            "[{key}] doesn't support values of type: {}",
            token(other)
        ))),
    }
}

fn boolean(key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
        other => Err(Error::x_content_parse(format!(
            "[completion] {key} doesn't support values of type: {}",
            token(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fuzzy(edits: usize) -> FuzzyOptions {
        FuzzyOptions {
            edits,
            transpositions: true,
            min_length: 3,
            prefix_length: 1,
            unicode_aware: false,
        }
    }

    #[test]
    fn a_fuzzy_prefix_boosts_by_what_its_shortest_accepted_path_shares() {
        // OpenSearch: "nir" within one edit scores Nivrana and Nirvana ×2, "nirv" Nirvana ×3
        // and Nivrana ×2
        let one = fuzzy(1);
        assert_eq!(fuzzy_boost(b"nir", b"nivrana", 1, &one), Some(2.0));
        assert_eq!(fuzzy_boost(b"nir", b"nirvana", 1, &one), Some(2.0));
        assert_eq!(fuzzy_boost(b"nirv", b"nirvana", 1, &one), Some(3.0));
        assert_eq!(fuzzy_boost(b"nirv", b"nivrana", 1, &one), Some(2.0));
        // no edits: the prefix itself
        assert_eq!(fuzzy_boost(b"ni", b"nice", 0, &one), Some(2.0));
        assert_eq!(fuzzy_boost(b"nir", b"nevermind", 1, &one), None);
        // the first character is never fuzzy
        assert_eq!(fuzzy_boost(b"nir", b"mir", 1, &one), None);
        // a swap is one edit with transpositions, two without
        assert!(fuzzy_boost(
            b"abcd",
            b"bacd",
            1,
            &FuzzyOptions {
                prefix_length: 0,
                ..one.clone()
            }
        )
        .is_some());
        let no_swaps = FuzzyOptions {
            prefix_length: 0,
            transpositions: false,
            ..one
        };
        assert_eq!(fuzzy_boost(b"abcd", b"bacd", 1, &no_swaps), None);
        // the exact part counts bytes unless unicode_aware: `ñ` is two of them
        let form = "ñx".as_bytes();
        assert_eq!(exact_bytes(form, &fuzzy(1)), 1);
        let unicode = FuzzyOptions {
            unicode_aware: true,
            ..fuzzy(1)
        };
        assert_eq!(exact_bytes(form, &unicode), 2);
    }

    #[test]
    fn a_regex_matches_a_prefix_of_the_form() {
        let regex = Matcher::Regex(tantivy_fst::Regex::new("n[ie]r?").unwrap());
        assert_eq!(regex.matches(b"nevermind"), Some(0.0));
        assert_eq!(regex.matches(b"nirvana"), Some(0.0));
        assert_eq!(regex.matches(b"nothing"), None);
    }

    #[test]
    fn geo_contexts_expand_to_cells_and_neighbours() {
        // the query's precision is capped by the mapping's; at the mapping's precision the
        // cells around count too
        let cells = geo_query(&json!({"lat": 43.662, "lon": -79.380}), 4).unwrap();
        assert_eq!(cells.len(), 9);
        assert!(cells.iter().any(|(cell, _)| cell == "dpz8"));
        // coarser than the mapping: a prefix of the indexed cells, nothing around
        let cells = geo_query(
            &json!({"context": {"lat": 43.662, "lon": -79.380}, "precision": 2, "boost": 3}),
            4,
        )
        .unwrap();
        assert_eq!(cells, [("dp".to_string(), 3.0)]);
        let e = geo_query(&json!({"context": "dpz8"}), 4).unwrap_err();
        assert_eq!(
            e.reason(),
            "[geo] context doesn't support values of type: VALUE_STRING"
        );
    }

    #[test]
    fn options_merge_by_score_then_shard_and_drop_duplicates() {
        let option = |text: &str, id: &str, score: f32| CompletionOption {
            text: text.into(),
            index: "i".into(),
            id: id.into(),
            score,
            routing: None,
            source: None,
            contexts: Vec::new(),
        };
        let mut suggester = CompletionSuggester::parse(&json!({"field": "s", "size": 3})).unwrap();
        let shards = vec![
            vec![option("a", "1", 5.0), option("b", "2", 1.0)],
            vec![option("a", "3", 5.0), option("c", "4", 2.0)],
        ];
        let ids = |value: Value| -> Vec<String> {
            value[0]["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["_id"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(ids(suggester.reduce("x", shards.clone())), ["1", "3", "4"]);
        suggester.skip_duplicates = true;
        assert_eq!(ids(suggester.reduce("x", shards)), ["1", "4", "2"]);
    }

    #[test]
    fn options_are_checked_as_opensearch_checks_them() {
        let e = CompletionSuggester::parse(&json!({"field": "s", "bogus": 1})).unwrap_err();
        assert_eq!(e.reason(), "[completion] unknown field [bogus]");
        let e = CompletionSuggester::parse(&json!({})).unwrap_err();
        assert_eq!(e.reason(), "the required field option [field] is missing");
        let e =
            CompletionSuggester::parse(&json!({"field": "s", "fuzzy": {"bogus": 3}})).unwrap_err();
        assert_eq!(e.reason(), "[completion] failed to parse field [fuzzy]");
        let fuzzy = CompletionSuggester::parse(&json!({"field": "s", "fuzzy": {"fuzziness": 3}}))
            .unwrap()
            .fuzzy
            .unwrap();
        assert_eq!(fuzzy.edits, 2);
        let sized = CompletionSuggester::parse(&json!({"field": "s", "shard_size": 9})).unwrap();
        assert_eq!(sized.shard_size, Some(9));
        assert!(CompletionSuggester::parse(&json!({"field": "s", "shard_size": 0})).is_err());
        // regex options as the regexp query takes them
        let flags = |flags: &str| {
            CompletionSuggester::parse(&json!({"field": "s", "regex": {"flags": flags}}))
        };
        assert!(flags("ALL").is_ok() && flags("NONE").is_ok());
        assert!(flags("INTERSECTION").is_err());
    }

    use serde_json::json;
}
