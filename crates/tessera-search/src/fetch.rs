//! The fetch phase: loading `_id`, `_source` and doc-value fields for the final hits only.
//!
//! The source is returned as the raw bytes the client sent (no parse, no re-serialisation)
//! unless `_source` filtering asks for a subset.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tantivy::schema::Value as _;
use tantivy::{DocAddress, TantivyDocument};
use tessera_common::{Error, Result};
use tessera_date::DateFormat;
use tessera_index::ShardSnapshot;
use tessera_mapping::range::RangeKind;
use tessera_mapping::{LeafField, LeafKind, SourceFilter};
use tessera_query::compile::script::PreparedScript;

use crate::decimal_format::DecimalFormat;
use crate::hit_meta::HitMetas;

use crate::request::{DocValueField, SourceSpec, StoredFields};

/// What to load for each hit.
#[derive(Clone, Debug)]
pub struct FetchSpec {
    pub source: SourceSpec,
    pub stored_fields: StoredFields,
    pub docvalue_fields: Vec<DocValueField>,
    pub fields: Vec<DocValueField>,
    pub version: bool,
    pub seq_no_primary_term: bool,
    pub explain: bool,
    pub highlight: Option<crate::highlight::HighlightSpec>,
    /// The query, for highlighting.
    pub query: Option<tessera_query::QueryAst>,
    /// The `inner_hits` of the query's `nested` queries (checked by the query phase).
    pub nested_inner_hits: Vec<crate::nested_inner_hits::NestedInnerHits>,
    pub script_fields: Vec<crate::request::ScriptField>,
}

impl FetchSpec {
    /// What a search request asks to load for each hit.
    pub fn of(request: &crate::request::SearchRequest) -> FetchSpec {
        let mut docvalue_fields = request.docvalue_fields.clone();
        // a collapsed hit shows its group's value, read from doc values
        if let Some(collapse) = &request.collapse {
            if !docvalue_fields.iter().any(|f| f.field == collapse.field) {
                docvalue_fields.push(DocValueField {
                    field: collapse.field.clone(),
                    format: None,
                });
            }
        }
        FetchSpec {
            source: request.source.clone(),
            stored_fields: request.stored_fields,
            docvalue_fields,
            fields: request.fields.clone(),
            version: request.version,
            seq_no_primary_term: request.seq_no_primary_term,
            explain: request.explain,
            highlight: request.highlight.clone(),
            query: request.highlight.as_ref().map(|_| request.query.clone()),
            nested_inner_hits: crate::nested_inner_hits::collect(&request.query)
                .unwrap_or_default(),
            script_fields: request.script_fields.clone(),
        }
    }
}

/// One loaded hit. It crosses the wire in [`WireFetchedDoc`]'s shape: the source as text, the
/// other JSON values as `WireJson`, since the binary encoding is not self-describing.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(into = "WireFetchedDoc", try_from = "WireFetchedDoc")]
pub struct FetchedDoc {
    pub id: Option<String>,
    pub source: Option<Box<RawValue>>,
    pub routing: Option<String>,
    pub version: Option<u64>,
    pub seq_no: Option<u64>,
    pub primary_term: Option<u64>,
    pub fields: Map<String, Value>,
    pub explanation: Option<Value>,
    pub highlight: Option<Map<String, Value>>,
    /// The names of the request's named queries the document matches, in OpenSearch's order.
    pub matched_queries: Vec<String>,
    /// The `inner_hits` of the query's `nested` queries, by name.
    pub inner_hits: Option<Map<String, Value>>,
}

#[derive(Serialize, Deserialize)]
struct WireFetchedDoc {
    id: Option<String>,
    /// The raw source, as text (the client's bytes, unchanged).
    source: Option<String>,
    routing: Option<String>,
    version: Option<u64>,
    seq_no: Option<u64>,
    primary_term: Option<u64>,
    fields: Vec<(String, WireJson)>,
    explanation: Option<WireJson>,
    highlight: Option<Vec<(String, WireJson)>>,
    matched_queries: Vec<String>,
    inner_hits: Option<Vec<(String, WireJson)>>,
}

/// A JSON value in the binary encoding, numbers with their exact type and bits. JSON text
/// would not do: serde_json (without `float_roundtrip`) reads some floats back one ulp off,
/// e.g. an f32 score widened to f64, printed with 17 digits, in an explanation.
#[derive(Serialize, Deserialize)]
enum WireJson {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    String(String),
    Array(Vec<WireJson>),
    /// Entries in order (the map keeps insertion order).
    Object(Vec<(String, WireJson)>),
}

impl From<Value> for WireJson {
    fn from(value: Value) -> WireJson {
        match value {
            Value::Null => WireJson::Null,
            Value::Bool(b) => WireJson::Bool(b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => WireJson::U64(u),
                (None, Some(i)) => WireJson::I64(i),
                _ => WireJson::F64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => WireJson::String(s),
            Value::Array(items) => WireJson::Array(items.into_iter().map(WireJson::from).collect()),
            Value::Object(map) => WireJson::Object(wire_map(map)),
        }
    }
}

impl From<WireJson> for Value {
    fn from(wire: WireJson) -> Value {
        match wire {
            WireJson::Null => Value::Null,
            WireJson::Bool(b) => Value::Bool(b),
            WireJson::U64(u) => Value::from(u),
            WireJson::I64(i) => Value::from(i),
            // a JSON value holds no NaN or infinity: none was sent
            WireJson::F64(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            WireJson::String(s) => Value::String(s),
            WireJson::Array(items) => Value::Array(items.into_iter().map(Value::from).collect()),
            WireJson::Object(entries) => Value::Object(json_map(entries)),
        }
    }
}

fn wire_map(map: Map<String, Value>) -> Vec<(String, WireJson)> {
    map.into_iter()
        .map(|(k, v)| (k, WireJson::from(v)))
        .collect()
}

fn json_map(entries: Vec<(String, WireJson)>) -> Map<String, Value> {
    entries
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect()
}

impl From<FetchedDoc> for WireFetchedDoc {
    fn from(doc: FetchedDoc) -> WireFetchedDoc {
        WireFetchedDoc {
            id: doc.id,
            source: doc.source.map(|s| String::from(Box::<str>::from(s))),
            routing: doc.routing,
            version: doc.version,
            seq_no: doc.seq_no,
            primary_term: doc.primary_term,
            fields: wire_map(doc.fields),
            explanation: doc.explanation.map(WireJson::from),
            highlight: doc.highlight.map(wire_map),
            matched_queries: doc.matched_queries,
            inner_hits: doc.inner_hits.map(wire_map),
        }
    }
}

impl TryFrom<WireFetchedDoc> for FetchedDoc {
    type Error = serde_json::Error;

    fn try_from(wire: WireFetchedDoc) -> std::result::Result<FetchedDoc, serde_json::Error> {
        Ok(FetchedDoc {
            id: wire.id,
            source: wire.source.map(RawValue::from_string).transpose()?,
            routing: wire.routing,
            version: wire.version,
            seq_no: wire.seq_no,
            primary_term: wire.primary_term,
            fields: json_map(wire.fields),
            explanation: wire.explanation.map(Value::from),
            highlight: wire.highlight.map(json_map),
            matched_queries: wire.matched_queries,
            inner_hits: wire.inner_hits.map(json_map),
        })
    }
}

fn read_u64(snapshot: &ShardSnapshot, address: DocAddress, field: &str) -> Result<u64> {
    let segment = snapshot.searcher.segment_reader(address.segment_ord);
    let column = segment
        .fast_fields()
        .u64(field)
        .map_err(|e| Error::internal(format!("read the {field} column"), e))?;
    Ok(column.first(address.doc_id).unwrap_or(0))
}

/// Loads `docs` (segment ordinal, doc id) from one shard snapshot.
pub fn fetch_docs(
    snapshot: &ShardSnapshot,
    docs: &[(u32, u32)],
    spec: &FetchSpec,
    weight: Option<&dyn tantivy::query::Weight>,
    highlight_terms: &[tessera_query::highlight_terms::HighlightTerm],
    named: &[(String, Box<dyn tantivy::query::Weight>)],
) -> Result<Vec<FetchedDoc>> {
    let meta = snapshot.table.meta;
    let filter = SourceFilter::new(spec.source.includes.clone(), spec.source.excludes.clone());
    let want_source = spec.source.enabled && spec.stored_fields.returns_source();
    let scripts = ScriptFields::prepare(snapshot, &spec.script_fields)?;
    let returns_id = spec.stored_fields.returns_id();
    let parse_source = !spec.fields.is_empty() || spec.highlight.is_some();
    let mut hit_metas = HitMetas::new(snapshot);
    let mut out = Vec::with_capacity(docs.len());
    for &(segment_ord, doc_id) in docs {
        let address = DocAddress::new(segment_ord, doc_id);
        // a hit that shows only its _id (and no _routing) is served without the store
        let file_id = match returns_id && !want_source && !parse_source {
            true => hit_metas.id(segment_ord, doc_id)?,
            false => None,
        };
        let stored = want_source
            || parse_source
            || (returns_id && file_id.is_none())
            || hit_metas.routed(segment_ord)?;
        let doc: TantivyDocument = if stored {
            snapshot
                .searcher
                .doc(address)
                .map_err(|e| Error::internal("read a stored document", e))?
        } else {
            TantivyDocument::new()
        };
        let id = match file_id {
            Some(id) => Some(id),
            None if returns_id => doc
                .get_first(meta.id)
                .and_then(|v| v.as_str())
                .map(String::from),
            None => None,
        };
        let source = if want_source {
            match doc.get_first(meta.source).and_then(|v| v.as_bytes()) {
                Some(bytes) => Some(render_source(bytes, &filter)?),
                None => None,
            }
        } else {
            None
        };
        let routing = doc
            .get_first(meta.routing)
            .and_then(|v| v.as_str())
            .map(String::from);
        let version = spec
            .version
            .then(|| {
                read_u64(
                    snapshot,
                    address,
                    tessera_mapping::field_table::VERSION_FIELD,
                )
            })
            .transpose()?;
        let (seq_no, primary_term) = if spec.seq_no_primary_term {
            (
                Some(read_u64(
                    snapshot,
                    address,
                    tessera_mapping::field_table::SEQ_NO_FIELD,
                )?),
                Some(read_u64(
                    snapshot,
                    address,
                    tessera_mapping::field_table::PRIMARY_TERM_FIELD,
                )?),
            )
        } else {
            (None, None)
        };
        let mut fields = docvalue_fields(snapshot, address, &spec.docvalue_fields)?;
        scripts.add(snapshot, address, &mut fields)?;
        let mut highlight = None;
        if parse_source {
            if let Some(bytes) = doc.get_first(meta.source).and_then(|v| v.as_bytes()) {
                let parsed: Value = serde_json::from_slice(bytes)
                    .map_err(|e| Error::internal("parse _source", e))?;
                crate::source_fields::source_fields(
                    &snapshot.table,
                    &parsed,
                    &spec.fields,
                    &mut fields,
                );
                if let Some(highlight_spec) = &spec.highlight {
                    let found = crate::highlight::highlight(
                        &snapshot.table,
                        &parsed,
                        highlight_spec,
                        highlight_terms,
                    );
                    highlight = (!found.is_empty()).then_some(found);
                }
            }
        }
        let explanation = match weight {
            Some(weight) => {
                let segment = snapshot.searcher.segment_reader(segment_ord);
                let explained = weight
                    .explain(segment, doc_id)
                    .map_err(|e| Error::internal("explain a hit", e))?;
                Some(explanation_json(&explained))
            }
            None => None,
        };
        out.push(FetchedDoc {
            id,
            source,
            routing,
            version,
            seq_no,
            primary_term,
            fields,
            explanation,
            highlight,
            matched_queries: matched_queries(snapshot, address, named)?,
            inner_hits: None,
        });
    }
    Ok(out)
}

/// `script_fields`, compiled once per fetch.
struct ScriptFields<'a> {
    scripts: Vec<(&'a crate::request::ScriptField, PreparedScript)>,
}

impl<'a> ScriptFields<'a> {
    fn prepare(
        snapshot: &ShardSnapshot,
        fields: &'a [crate::request::ScriptField],
    ) -> Result<ScriptFields<'a>> {
        let scripts = fields
            .iter()
            .map(|field| {
                let script = PreparedScript::prepare(
                    &snapshot.table,
                    &field.script,
                    tessera_script::ScriptContext::Filter,
                )?;
                Ok((field, script))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ScriptFields { scripts })
    }

    /// Adds each script's values for the document at `address` (a list gives its elements,
    /// anything else one value, as OpenSearch shows script fields).
    fn add(
        &self,
        snapshot: &ShardSnapshot,
        address: DocAddress,
        fields: &mut Map<String, Value>,
    ) -> Result<()> {
        for (field, script) in &self.scripts {
            let segment = snapshot.searcher.segment_reader(address.segment_ord);
            let mut docs = script
                .fields
                .open(segment)
                .map_err(|e| Error::internal("open the script's columns", e))?;
            docs.set_doc(address.doc_id);
            let mut frame = script.script.new_frame();
            let value = match script.run(&mut frame, &docs, 0.0) {
                Ok(value) => value,
                Err(_) if field.ignore_failure => continue,
                Err(e) => return Err(e),
            };
            let values = match value.to_json() {
                Value::Array(items) => items,
                other => vec![other],
            };
            fields.insert(field.name.clone(), Value::Array(values));
        }
        Ok(())
    }
}

/// The names of `named` (name and non-scoring weight, in the order hits list them) that the
/// document at `address` matches.
fn matched_queries(
    snapshot: &ShardSnapshot,
    address: DocAddress,
    named: &[(String, Box<dyn tantivy::query::Weight>)],
) -> Result<Vec<String>> {
    let segment = snapshot.searcher.segment_reader(address.segment_ord);
    let mut out = Vec::new();
    for (name, weight) in named {
        if crate::named_queries::matches(weight.as_ref(), segment, address.doc_id)? {
            out.push(name.clone());
        }
    }
    Ok(out)
}

fn render_source(bytes: &[u8], filter: &SourceFilter) -> Result<Box<RawValue>> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::internal("read _source", e))?;
    if filter.is_noop() {
        return RawValue::from_string(text.trim().to_string())
            .map_err(|e| Error::internal("read _source", e));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::internal("parse _source", e))?;
    let filtered = filter.apply(&value);
    serde_json::value::to_raw_value(&filtered).map_err(|e| Error::internal("render _source", e))
}

/// A document's ranges as `{"gte": from, "lte": to}` objects (inclusive bounds, as stored).
fn range_doc_values(
    fast: &tantivy::fastfield::FastFieldReaders,
    snapshot: &ShardSnapshot,
    from: tantivy::schema::Field,
    to: tantivy::schema::Field,
    kind: &RangeKind,
    date_format: Option<DateFormat>,
    doc: tantivy::DocId,
) -> Result<Vec<Value>> {
    let open_err = |e: tantivy::TantivyError| Error::internal("open a doc-value column", e);
    let schema = snapshot.table.schema();
    let (from, to) = (schema.get_field_name(from), schema.get_field_name(to));
    let pair = |low: Value, high: Value| {
        let mut range = Map::new();
        range.insert("gte".into(), low);
        range.insert("lte".into(), high);
        Value::Object(range)
    };
    Ok(match kind {
        RangeKind::Float | RangeKind::Double => {
            match (
                fast.column_opt::<f64>(from).map_err(open_err)?,
                fast.column_opt::<f64>(to).map_err(open_err)?,
            ) {
                (Some(lows), Some(highs)) => lows
                    .values_for_doc(doc)
                    .zip(highs.values_for_doc(doc))
                    .map(|(low, high)| match kind {
                        RangeKind::Float => pair(
                            crate::source_fields::float_value(low as f32),
                            crate::source_fields::float_value(high as f32),
                        ),
                        _ => pair(Value::from(low), Value::from(high)),
                    })
                    .collect(),
                _ => Vec::new(),
            }
        }
        RangeKind::Ip => {
            match (
                fast.column_opt::<std::net::Ipv6Addr>(from)
                    .map_err(open_err)?,
                fast.column_opt::<std::net::Ipv6Addr>(to)
                    .map_err(open_err)?,
            ) {
                (Some(lows), Some(highs)) => {
                    let ip = |v| Value::String(tessera_mapping::values::format_ip(v));
                    lows.values_for_doc(doc)
                        .zip(highs.values_for_doc(doc))
                        .map(|(low, high)| pair(ip(low), ip(high)))
                        .collect()
                }
                _ => Vec::new(),
            }
        }
        _ => match (
            fast.column_opt::<i64>(from).map_err(open_err)?,
            fast.column_opt::<i64>(to).map_err(open_err)?,
        ) {
            (Some(lows), Some(highs)) => {
                let show = |v: i64| match &date_format {
                    Some(format) => Value::String(format.format_millis(v, None)),
                    None => Value::from(v),
                };
                lows.values_for_doc(doc)
                    .zip(highs.values_for_doc(doc))
                    .map(|(low, high)| pair(show(low), show(high)))
                    .collect()
            }
            _ => Vec::new(),
        },
    })
}

fn docvalue_fields(
    snapshot: &ShardSnapshot,
    address: DocAddress,
    requested: &[DocValueField],
) -> Result<Map<String, Value>> {
    let mut fields = Map::new();
    if requested.is_empty() {
        return Ok(fields);
    }
    let segment = snapshot.searcher.segment_reader(address.segment_ord);
    let fast = segment.fast_fields();
    let doc = address.doc_id;
    let open_err = |e: tantivy::TantivyError| Error::internal("open a doc-value column", e);
    for request in requested {
        let paths = snapshot.table.expand(&request.field);
        for path in paths {
            let Some(leaf) = snapshot.table.leaf(&path) else {
                continue;
            };
            if !leaf.fast {
                continue;
            }
            let number_format = numeric_format(leaf, request)?;
            let double = |v: f64| match &number_format {
                Some(format) => Value::String(format.format_f64(v)),
                None => json_f64(v),
            };
            let values: Vec<Value> = match &leaf.kind {
                LeafKind::Integer => fast
                    .column_opt::<i64>(&path)
                    .map_err(open_err)?
                    .map(|c| {
                        c.values_for_doc(doc)
                            .map(|v| match &number_format {
                                Some(format) => Value::String(format.format_i64(v)),
                                None => Value::from(v),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                LeafKind::ScaledFloat { factor } => fast
                    .column_opt::<i64>(&path)
                    .map_err(open_err)?
                    .map(|c| {
                        c.values_for_doc(doc)
                            .map(|v| double(tessera_mapping::scaled_float_value(v, *factor)))
                            .collect()
                    })
                    .unwrap_or_default(),
                LeafKind::Float => fast
                    .column_opt::<f64>(&path)
                    .map_err(open_err)?
                    .map(|c| c.values_for_doc(doc).map(double).collect())
                    .unwrap_or_default(),
                LeafKind::Date { format } => {
                    let format = match &request.format {
                        Some(spec) => crate::source_fields::date_format(spec)?,
                        None => format.clone(),
                    };
                    fast.column_opt::<i64>(&path)
                        .map_err(open_err)?
                        .map(|c| {
                            c.values_for_doc(doc)
                                .map(|v| Value::String(format.format_millis(v, None)))
                                .collect()
                        })
                        .unwrap_or_default()
                }
                LeafKind::Boolean => fast
                    .column_opt::<bool>(&path)
                    .map_err(open_err)?
                    .map(|c| c.values_for_doc(doc).map(Value::Bool).collect())
                    .unwrap_or_default(),
                LeafKind::Ip => fast
                    .column_opt::<std::net::Ipv6Addr>(&path)
                    .map_err(open_err)?
                    .map(|c| {
                        c.values_for_doc(doc)
                            .map(|ip| Value::String(tessera_mapping::values::format_ip(ip)))
                            .collect()
                    })
                    .unwrap_or_default(),
                LeafKind::Keyword { .. } => match fast.str(&path).map_err(open_err)? {
                    Some(column) => {
                        let mut out = Vec::new();
                        let mut buffer = String::new();
                        for ord in column.term_ords(doc) {
                            if column.ord_to_str(ord, &mut buffer).unwrap_or(false) {
                                out.push(Value::String(buffer.clone()));
                            }
                        }
                        out
                    }
                    None => Vec::new(),
                },
                LeafKind::GeoPoint {
                    lat: Some(lat),
                    lon: Some(lon),
                } => {
                    let schema = snapshot.table.schema();
                    let lats = fast
                        .column_opt::<f64>(schema.get_field_name(*lat))
                        .map_err(open_err)?;
                    let lons = fast
                        .column_opt::<f64>(schema.get_field_name(*lon))
                        .map_err(open_err)?;
                    match (lats, lons) {
                        (Some(lats), Some(lons)) => lats
                            .values_for_doc(doc)
                            .zip(lons.values_for_doc(doc))
                            .map(|(lat, lon)| Value::String(format!("{lat}, {lon}")))
                            .collect(),
                        _ => Vec::new(),
                    }
                }
                LeafKind::Range {
                    kind,
                    from: Some(from),
                    to: Some(to),
                } => {
                    let date_format = match (kind, &request.format) {
                        (RangeKind::Date(_), Some(spec)) => {
                            Some(crate::source_fields::date_format(spec)?)
                        }
                        (RangeKind::Date(field_format), None) => Some(field_format.clone()),
                        _ => None,
                    };
                    range_doc_values(fast, snapshot, *from, *to, kind, date_format, doc)?
                }
                LeafKind::Text { .. }
                | LeafKind::GeoPoint { .. }
                | LeafKind::Range { .. }
                | LeafKind::KnnVector(_)
                | LeafKind::Completion(_)
                | LeafKind::Percolator => Vec::new(),
            };
            if !values.is_empty() {
                // asking for a field twice (say, with two formats) appends both renderings
                match fields.get_mut(&path) {
                    Some(Value::Array(existing)) => existing.extend(values),
                    _ => {
                        fields.insert(path, Value::Array(values));
                    }
                }
            }
        }
    }
    Ok(fields)
}

/// The `DecimalFormat` of a numeric doc-value field's `format` (`None`: plain numbers, also
/// for the old `use_field_mapping`); an error for a format on a field whose values take none.
fn numeric_format(leaf: &LeafField, request: &DocValueField) -> Result<Option<DecimalFormat>> {
    let Some(spec) = request.format.as_deref() else {
        return Ok(None);
    };
    match leaf.kind {
        _ if spec == "use_field_mapping" => Ok(None),
        LeafKind::Integer | LeafKind::Float | LeafKind::ScaledFloat { .. } => {
            DecimalFormat::parse(spec).map(Some)
        }
        LeafKind::Keyword { .. } | LeafKind::Boolean | LeafKind::Ip => {
            Err(Error::illegal_argument(format!(
                "Field [{}] of type [{}] does not support custom formats",
                leaf.path,
                leaf.field_type.name()
            )))
        }
        _ => Ok(None),
    }
}

/// Rejects doc-value fields that have no doc values to read, and formats their values cannot
/// take, before the query runs (so the failure is a shard failure, as in OpenSearch).
pub fn validate_docvalue_fields(
    table: &tessera_mapping::FieldTable,
    requested: &[DocValueField],
) -> Result<()> {
    for request in requested {
        for path in table.expand(&request.field) {
            if let Some(leaf) = table.leaf(&path) {
                numeric_format(leaf, request)?;
                if matches!(leaf.kind, LeafKind::Text { .. }) {
                    return Err(Error::text_fielddata_disabled(&path));
                }
            }
        }
    }
    Ok(())
}

/// tantivy's explanation in OpenSearch's shape: `value`, `description`, `details` (always an
/// array).
fn explanation_json(explanation: &tantivy::query::Explanation) -> Value {
    fn normalise(value: &mut Value) {
        if let Value::Object(map) = value {
            map.remove("context");
            let details = map
                .entry("details")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = details {
                items.iter_mut().for_each(normalise);
            }
        }
    }
    let mut value = serde_json::to_value(explanation).unwrap_or(Value::Null);
    normalise(&mut value);
    value
}

fn json_f64(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}
