//! Reading a document's sort values in one segment (from fast-field columns).
//!
//! Most documents of a large segment cannot enter the top hits, so the first sort field is
//! compared before a key is built: a number from its column, a keyword by its term ordinal
//! (ordinals order as the terms do within a segment; only a kept hit's key is turned into a
//! string, for the merge across segments and shards), a missing value by the `missing` rule.

use std::cell::Cell;
use std::net::Ipv6Addr;

use serde_json::Value;
use tantivy::columnar::{Column, StrColumn, TermOrdHit};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_index::sorted_columns::{float_key, key_float, SortedValues};
use tessera_mapping::field_table::SEQ_NO_FIELD;
use tessera_mapping::{scaled_float_value, FieldTable, LeafField, LeafKind};

/// The `_index` metadata field: constant within a shard.
const INDEX_FIELD: &str = "_index";

use crate::hits::ShardHit;
use crate::sort::{
    GeoDistanceSort, Missing, NestedSort, Order, SortField, SortFormat, SortMode, SortSpec,
    SortValue,
};
use std::sync::Arc;
use tessera_query::nested::{level_bits, DocBits, Level};
use tessera_query::CompileContext;

enum Reader {
    Score,
    Doc {
        base: u64,
    },
    I64 {
        column: Option<Column<i64>>,
        scale: Option<f64>,
    },
    F64 {
        column: Option<Column<f64>>,
    },
    Bool {
        column: Option<Column<bool>>,
    },
    Ip {
        column: Option<Column<Ipv6Addr>>,
    },
    Str {
        column: Option<StrColumn>,
        buffer: String,
    },
    /// `_seq_no` (its column holds unsigned values).
    U64 {
        column: Option<Column<u64>>,
    },
    /// `_index`: the same value for every document of the shard.
    Constant(SortValue),
    /// `_id`, read from the document store (OpenSearch allows sorting on it, rarely used).
    Id {
        store: tantivy::store::StoreReader,
        field: tantivy::schema::Field,
    },
    Unmapped,
    /// `_geo_distance`: the point columns (latitude, longitude) and the sort.
    GeoDistance {
        columns: Option<(Column<f64>, Column<f64>)>,
        sort: Arc<GeoDistanceSort>,
    },
    /// `_script`: the script, its columns on this segment and its frame.
    Script {
        script: std::sync::Arc<tessera_query::compile::script::PreparedScript>,
        docs: tessera_query::script_docs::SegmentDocs,
        frame: Vec<tessera_script::Value>,
        numeric: bool,
    },
}

struct KeyReader {
    reader: Reader,
    mode: SortMode,
    missing: SortValue,
    /// A nested sort: the value is read from these nested documents of each document.
    nested: Option<NestedDocs>,
    /// The documents a value is read from (the document itself, or its nested documents).
    docs: Vec<DocId>,
}

/// A nested sort's documents in one segment.
struct NestedDocs {
    /// The nested documents of the path that pass the filter.
    children: Arc<DocBits>,
    roots: Arc<DocBits>,
    max_children: Option<usize>,
}

impl NestedDocs {
    fn open(
        table: &FieldTable,
        nested: &NestedSort,
        segment: &SegmentReader,
    ) -> Result<Option<NestedDocs>> {
        let (Some(markers), Some(_)) = (table.meta.nested, table.nested_path(&nested.path)) else {
            return Ok(None);
        };
        let internal = |e: tantivy::TantivyError| Error::internal("read the nested documents", e);
        let children =
            level_bits(segment, markers, &Level::Path(nested.path.clone())).map_err(internal)?;
        let roots = level_bits(segment, markers, &Level::Root).map_err(internal)?;
        let children = match &nested.filter {
            None => children,
            Some(filter) => {
                let ctx = CompileContext {
                    searcher: None,
                    table,
                    index: "",
                    default_fields: &[],
                    now_millis: tessera_common::time::now_millis(),
                    max_terms_count: tessera_query::compile::DEFAULT_MAX_TERMS_COUNT,
                    clauses: Default::default(),
                    knn: Default::default(),
                    nested_scope: Default::default(),
                    deadline: None,
                    failures: None,
                    mapping: None,
                    legacy_bm25: true,
                    shard_id: 0,
                };
                ctx.nested_scope_replace(Some(nested.path.clone()));
                let weight = tessera_query::compile(filter, &ctx)?
                    .weight(tantivy::query::EnableScoring::disabled_from_schema(
                        table.schema(),
                    ))
                    .map_err(internal)?;
                let mut scorer = weight.scorer(segment, 1.0).map_err(internal)?;
                let mut matching = Vec::new();
                let mut doc = scorer.doc();
                while doc != tantivy::TERMINATED {
                    if children.contains(doc) {
                        matching.push(doc);
                    }
                    doc = scorer.advance();
                }
                Arc::new(DocBits::from_docs(segment.max_doc(), &matching))
            }
        };
        Ok(Some(NestedDocs {
            children,
            roots,
            max_children: nested.max_children,
        }))
    }

    /// The nested documents of the root document `doc`, in order.
    fn of(&self, doc: DocId, out: &mut Vec<DocId>) {
        out.clear();
        let start = self.roots.prev_set(doc).map_or(0, |d| d + 1);
        let mut child = self.children.next_set(start);
        while child != tantivy::TERMINATED && child < doc {
            if self.max_children.is_some_and(|max| out.len() >= max) {
                break;
            }
            out.push(child);
            child = self.children.next_set(child + 1);
        }
    }
}

/// The sort values of documents of one segment.
pub struct SegmentSortKeys {
    readers: Vec<KeyReader>,
    /// The first failure of a `_script` sort (a key cannot fail: the collector asks).
    error: Option<Error>,
    /// Set when the first sort field can be read as a number without allocating (see
    /// [`SegmentSortKeys::cannot_beat`]).
    lead: Option<Lead>,
    /// For a keyword lead: the worst kept hit's value placed among this segment's term
    /// ordinals, recomputed only when the worst hit changes.
    ord_bound: Cell<Option<OrdBound>>,
}

/// How the first sort field's value of a document compares with the worst kept hit's.
struct Lead {
    spec: SortSpec,
    /// The only sort field: a tie with the worst kept hit cannot win either, since a slice
    /// visits documents in index order, the tie-breaker.
    sole: bool,
    /// A keyword field compared by term ordinal (else one number per document).
    keyword: bool,
}

/// Where a kept hit's keyword value falls in a segment's terms dictionary.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdBound {
    /// The hit it was computed for: shard, segment, doc.
    hit: (u32, u32, u32),
    place: OrdPlace,
}

/// A keyword value's place among a segment's term ordinals.
#[derive(Clone, Copy, Debug, PartialEq)]
enum OrdPlace {
    /// The segment has the term, with this ordinal.
    Exact(u64),
    /// The segment lacks it; this is the ordinal of the first term after it.
    Before(u64),
}

impl OrdPlace {
    /// How a document whose value has ordinal `ord` compares with the value placed, in the
    /// terms' natural (ascending) order.
    #[inline]
    fn natural(self, ord: u64) -> std::cmp::Ordering {
        match self {
            OrdPlace::Exact(at) => ord.cmp(&at),
            OrdPlace::Before(next) if ord >= next => std::cmp::Ordering::Greater,
            OrdPlace::Before(_) => std::cmp::Ordering::Less,
        }
    }
}

/// Whether a sort field renders missing values as numbers (true) or null.
pub fn sort_format(table: &FieldTable, field: &SortField) -> SortFormat {
    let text = |is_text: bool| {
        if is_text {
            SortFormat::Text
        } else {
            SortFormat::Number
        }
    };
    match field {
        SortField::Score { .. }
        | SortField::Doc { .. }
        | SortField::ShardDoc { .. }
        | SortField::GeoDistance(_) => SortFormat::Number,
        SortField::Script { numeric, .. } => text(!numeric),
        SortField::Field {
            field,
            unmapped_type,
            ..
        } => match table.leaf(field) {
            None if field == "_id" || field == INDEX_FIELD => SortFormat::Text,
            None if field == SEQ_NO_FIELD => SortFormat::Number,
            Some(leaf) if leaf.field_type.is_float32() => SortFormat::Float32,
            Some(leaf) => text(matches!(
                leaf.kind,
                LeafKind::Keyword { .. } | LeafKind::Ip | LeafKind::Text { .. }
            )),
            None => text(matches!(
                unmapped_type.as_deref(),
                Some("keyword" | "text" | "ip")
            )),
        },
    }
}

/// The metadata fields OpenSearch sorts on: `_id`, `_index` (the shard's index name) and
/// `_seq_no`.
fn is_sortable_meta_field(field: &str) -> bool {
    matches!(field, "_id" | INDEX_FIELD | SEQ_NO_FIELD)
}

/// Checks that every sort field can be sorted on in this shard, with OpenSearch's errors.
pub fn validate_sort(table: &FieldTable, index: &str, fields: &[SortField]) -> Result<()> {
    for field in fields {
        if let SortField::Field {
            field,
            unmapped_type,
            nested,
            ..
        } = field
        {
            if let Some(nested) = nested.as_ref().filter(|n| !n.path.is_empty()) {
                check_nested_path(table, index, &nested.path)?;
            }
            match table.leaf(field) {
                None if unmapped_type.is_some() || is_sortable_meta_field(field) => {}
                // metadata fields with no field data
                None if field == "_version" || field == "_routing" => {
                    return Err(Error::illegal_argument(format!(
                        "Fielddata is not supported on field [{field}] of type [{field}]"
                    )));
                }
                None => {
                    return Err(Error::query_shard(
                        index,
                        format!("No mapping found for [{field}] in order to sort on"),
                    ));
                }
                Some(leaf) => check_sortable(leaf)?,
            }
        }
        if let SortField::GeoDistance(sort) = field {
            check_geo_distance(table, sort)?;
        }
    }
    Ok(())
}

/// A geo distance sort needs a geo point field with doc values (or `ignore_unmapped`).
fn check_geo_distance(table: &FieldTable, sort: &GeoDistanceSort) -> Result<()> {
    let field = &sort.field;
    match table.leaf(field).map(|leaf| &leaf.kind) {
        None if sort.ignore_unmapped => Ok(()),
        None => Err(Error::illegal_argument(format!(
            "failed to find mapper for [{field}] for geo distance based sort"
        ))),
        Some(LeafKind::GeoPoint {
            lat: Some(_),
            lon: Some(_),
        }) => Ok(()),
        Some(LeafKind::GeoPoint { .. }) => Err(Error::illegal_argument(format!(
            "Can't load fielddata on [{field}] because fielddata is unsupported on fields of type [geo_point]. Use doc values instead."
        ))),
        Some(_) => Err(Error::illegal_argument(format!(
            "field [{field}] is not a geo_point field: a geo distance sort needs one"
        ))),
    }
}

/// A nested sort's `path` must be a nested field, as in OpenSearch.
fn check_nested_path(table: &FieldTable, index: &str, path: &str) -> Result<()> {
    if table.nested_path(path).is_some() {
        return Ok(());
    }
    let is_object = table.leaves().any(|leaf| {
        leaf.path.starts_with(path) && leaf.path.as_bytes().get(path.len()) == Some(&b'.')
    });
    Err(Error::query_shard(
        index,
        if is_object {
            format!("[nested] nested object under path [{path}] is not of nested type")
        } else {
            format!("[nested] failed to find nested object under path [{path}]")
        },
    ))
}

fn check_sortable(leaf: &LeafField) -> Result<()> {
    match leaf.kind {
        LeafKind::Text { .. } => Err(Error::text_fielddata_disabled(&leaf.path)),
        LeafKind::GeoPoint { .. } => Err(Error::illegal_argument(format!(
            "can't sort on geo_point field without using specific sorting feature, like geo_distance: [{}]",
            leaf.path
        ))),
        LeafKind::KnnVector(_) => Err(Error::illegal_argument(format!(
            "sorting on the knn_vector field [{}] is not supported by Tessera",
            leaf.path
        ))),
        LeafKind::Completion(_) | LeafKind::Percolator => Err(Error::illegal_argument(format!(
            "sorting on the {} field [{}] is not supported by Tessera",
            leaf.field_type.name(),
            leaf.path
        ))),
        // OpenSearch sorts by the bytes of its range encoding, an order of no use
        LeafKind::Range { .. } => Err(Error::illegal_argument(format!(
            "sorting on the range field [{}] of type [{}] is not supported by Tessera",
            leaf.path,
            leaf.field_type.name()
        ))),
        _ if !leaf.fast => Err(Error::illegal_argument(format!(
            "Can't load fielddata on [{}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
            leaf.path,
            leaf.field_type.name()
        ))),
        _ => Ok(()),
    }
}

/// Converts a JSON value (a `missing` value or a `search_after` entry) to a sort value of
/// the field's kind.
pub fn sort_value_for(table: &FieldTable, field: &SortField, value: &Value) -> Result<SortValue> {
    let bad = || Error::illegal_argument(format!("Failed to parse sort value [{value}]"));
    if value.is_null() {
        return Ok(SortValue::Missing);
    }
    let as_i64 = || match value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.parse::<i64>().ok(),
        _ => None,
    };
    let as_f64 = || match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    match field {
        SortField::Score { .. } => as_f64().map(SortValue::F64).ok_or_else(bad),
        SortField::Doc { .. } | SortField::ShardDoc { .. } => {
            as_i64().map(SortValue::I64).ok_or_else(bad)
        }
        SortField::Script { numeric: true, .. } | SortField::GeoDistance(_) => {
            as_f64().map(SortValue::F64).ok_or_else(bad)
        }
        SortField::Script { .. } => Ok(SortValue::Str(
            value
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| value.to_string()),
        )),
        SortField::Field {
            field,
            unmapped_type,
            ..
        } => {
            let leaf = table.leaf(field);
            match leaf.map(|l| l.kind.clone()) {
                Some(LeafKind::Integer) => as_i64().map(SortValue::I64).ok_or_else(bad),
                Some(LeafKind::Date { format }) => match as_i64() {
                    Some(n) => Ok(SortValue::I64(n)),
                    None => {
                        let text = value.as_str().ok_or_else(bad)?;
                        format
                            .parse_millis(text, None, false)
                            .map(SortValue::I64)
                            .map_err(|_| bad())
                    }
                },
                Some(LeafKind::Boolean) => match value {
                    Value::Bool(b) => Ok(SortValue::I64(*b as i64)),
                    Value::String(s) if s == "true" => Ok(SortValue::I64(1)),
                    Value::String(s) if s == "false" => Ok(SortValue::I64(0)),
                    _ => as_i64().map(SortValue::I64).ok_or_else(bad),
                },
                // a float's values are 32-bit: 0.6 (as rendered) is the column's 0.6000000238…
                Some(LeafKind::Float) if leaf.is_some_and(|l| l.field_type.is_float32()) => {
                    let parsed = match value {
                        Value::Number(n) => n.to_string().parse::<f32>().ok(),
                        Value::String(s) => s.parse::<f32>().ok(),
                        _ => None,
                    };
                    parsed.map(|f| SortValue::F64(f as f64)).ok_or_else(bad)
                }
                Some(LeafKind::Float) | Some(LeafKind::ScaledFloat { .. }) => {
                    as_f64().map(SortValue::F64).ok_or_else(bad)
                }
                Some(LeafKind::Ip) => {
                    let text = value.as_str().ok_or_else(bad)?;
                    tessera_mapping::values::parse_ip(text).map(SortValue::Ip)
                }
                Some(_) => Ok(SortValue::Str(match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })),
                None if field == SEQ_NO_FIELD => as_i64().map(SortValue::I64).ok_or_else(bad),
                None => match unmapped_type.as_deref() {
                    _ if field == "_id" || field == INDEX_FIELD => Ok(SortValue::Str(
                        value
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(|| value.to_string()),
                    )),
                    Some("keyword" | "text" | "ip") => Ok(SortValue::Str(
                        value
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(|| value.to_string()),
                    )),
                    _ => as_f64().map(SortValue::F64).ok_or_else(bad),
                },
            }
        }
    }
}

impl SegmentSortKeys {
    pub fn new(
        table: &FieldTable,
        fields: &[SortField],
        segment: &SegmentReader,
        doc_base: u64,
        shard_index: u32,
        index: &str,
    ) -> Result<SegmentSortKeys> {
        let fast = segment.fast_fields();
        let open_err = |e: tantivy::TantivyError| Error::internal("open a sort column", e);
        let mut readers = Vec::with_capacity(fields.len());
        for field in fields {
            let (reader, mode, missing) = match field {
                SortField::Score { .. } => (Reader::Score, SortMode::Min, SortValue::Missing),
                SortField::Doc { .. } => (
                    Reader::Doc { base: doc_base },
                    SortMode::Min,
                    SortValue::Missing,
                ),
                SortField::ShardDoc { .. } => (
                    Reader::Doc {
                        base: ((shard_index as u64) << 32) + doc_base,
                    },
                    SortMode::Min,
                    SortValue::Missing,
                ),
                SortField::GeoDistance(sort) => {
                    let columns = match table.leaf(&sort.field).map(|leaf| &leaf.kind) {
                        Some(LeafKind::GeoPoint {
                            lat: Some(lat),
                            lon: Some(lon),
                        }) => {
                            let schema = table.schema();
                            let column = |field| {
                                fast.column_opt::<f64>(schema.get_field_name(field))
                                    .map_err(open_err)
                            };
                            column(*lat)?.zip(column(*lon)?)
                        }
                        _ => None,
                    };
                    let mode = sort.mode.unwrap_or(match sort.order {
                        Order::Asc => SortMode::Min,
                        Order::Desc => SortMode::Max,
                    });
                    (
                        Reader::GeoDistance {
                            columns,
                            sort: Arc::new((**sort).clone()),
                        },
                        mode,
                        SortValue::F64(f64::INFINITY),
                    )
                }
                SortField::Script {
                    script, numeric, ..
                } => {
                    let script = tessera_query::compile::script::PreparedScript::prepare(
                        table,
                        script,
                        if *numeric {
                            tessera_script::ScriptContext::NumberSort
                        } else {
                            tessera_script::ScriptContext::StringSort
                        },
                    )?;
                    let docs = script.fields.open(segment).map_err(open_err)?;
                    let frame = script.script.new_frame();
                    (
                        Reader::Script {
                            script: std::sync::Arc::new(script),
                            docs,
                            frame,
                            numeric: *numeric,
                        },
                        SortMode::Min,
                        SortValue::Missing,
                    )
                }
                SortField::Field {
                    field: path,
                    order,
                    missing,
                    mode,
                    ..
                } => {
                    let mode = mode.unwrap_or(if *order == Order::Asc {
                        SortMode::Min
                    } else {
                        SortMode::Max
                    });
                    let missing = match missing {
                        Missing::Value(v) => sort_value_for(table, field, v)?,
                        _ => SortValue::Missing,
                    };
                    let reader = match table.leaf(path) {
                        None if path == INDEX_FIELD => {
                            Reader::Constant(SortValue::Str(index.into()))
                        }
                        None if path == SEQ_NO_FIELD => Reader::U64 {
                            column: fast.column_opt::<u64>(SEQ_NO_FIELD).map_err(open_err)?,
                        },
                        None if path == "_id" => Reader::Id {
                            store: segment
                                .get_store_reader(16)
                                .map_err(|e| Error::internal("open the document store", e))?,
                            field: table.meta.id,
                        },
                        None => Reader::Unmapped,
                        Some(leaf) => match &leaf.kind {
                            LeafKind::Integer | LeafKind::Date { .. } => Reader::I64 {
                                column: fast.column_opt::<i64>(path).map_err(open_err)?,
                                scale: None,
                            },
                            LeafKind::ScaledFloat { factor } => Reader::I64 {
                                column: fast.column_opt::<i64>(path).map_err(open_err)?,
                                scale: Some(*factor),
                            },
                            LeafKind::Float => Reader::F64 {
                                column: fast.column_opt::<f64>(path).map_err(open_err)?,
                            },
                            LeafKind::Boolean => Reader::Bool {
                                column: fast.column_opt::<bool>(path).map_err(open_err)?,
                            },
                            LeafKind::Ip => Reader::Ip {
                                column: fast.column_opt::<Ipv6Addr>(path).map_err(open_err)?,
                            },
                            LeafKind::Keyword { .. } => Reader::Str {
                                column: fast.str(path).map_err(open_err)?,
                                buffer: String::new(),
                            },
                            // refused by `check_sortable`
                            LeafKind::Text { .. }
                            | LeafKind::GeoPoint { .. }
                            | LeafKind::Range { .. }
                            | LeafKind::KnnVector(_)
                            | LeafKind::Completion(_)
                            | LeafKind::Percolator => Reader::Unmapped,
                        },
                    };
                    (reader, mode, missing)
                }
            };
            let nested = match field {
                SortField::Field {
                    nested: Some(nested),
                    ..
                } if !nested.path.is_empty() => NestedDocs::open(table, nested, segment)?,
                _ => None,
            };
            // a nested sort whose path is not mapped here reads no value
            let reader = match field {
                SortField::Field {
                    nested: Some(n), ..
                } if !n.path.is_empty() && nested.is_none() => Reader::Unmapped,
                _ => reader,
            };
            readers.push(KeyReader {
                reader,
                mode,
                missing,
                nested,
                docs: Vec::new(),
            });
        }
        let lead = readers
            .first()
            .filter(|first| first.is_single_number() || first.is_keyword())
            .map(|first| Lead {
                spec: SortSpec::for_field(&fields[0]),
                sole: fields.len() == 1,
                keyword: first.is_keyword(),
            });
        Ok(SegmentSortKeys {
            readers,
            error: None,
            lead,
            ord_bound: Cell::new(None),
        })
    }

    /// True when `doc` surely sorts after `worst` (so it cannot enter a full top-k); false
    /// when unsure (a lead field that is not one number per document or a keyword, or a tie
    /// that later sort fields decide). Sorting a large segment by one field otherwise builds a
    /// key and a hit for every match; with this check almost every document costs one column
    /// read and one comparison. A document without a value compares by the field's `missing`
    /// (a sparse field's documents mostly lack it).
    #[inline]
    pub fn cannot_beat(&self, doc: u32, worst: &ShardHit) -> bool {
        let (Some(lead), Some(worst_lead)) = (&self.lead, worst.sort.first()) else {
            return false;
        };
        let first = &self.readers[0];
        let order = if lead.keyword {
            match first.lead_ord(doc) {
                Some(ord) => {
                    let SortValue::Str(worst_text) = worst_lead else {
                        return false;
                    };
                    let Some(place) = self.ord_place(worst, worst_text) else {
                        return false;
                    };
                    match lead.spec.order {
                        Order::Asc => place.natural(ord),
                        Order::Desc => place.natural(ord).reverse(),
                    }
                }
                None => lead.spec.compare(&first.missing, worst_lead),
            }
        } else {
            match first.single_number(doc) {
                Some(value) => lead.spec.compare(&value, worst_lead),
                None if first.has_no_value(doc) => lead.spec.compare(&first.missing, worst_lead),
                None => return false,
            }
        };
        match order {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => lead.sole,
            std::cmp::Ordering::Less => false,
        }
    }

    /// Where the worst kept hit's keyword `text` falls among this segment's ordinals (cached
    /// for that hit: the worst hit changes rarely once the top is full).
    fn ord_place(&self, worst: &ShardHit, text: &str) -> Option<OrdPlace> {
        let hit = (worst.shard_index, worst.segment_ord, worst.doc);
        if let Some(bound) = self.ord_bound.get().filter(|b| b.hit == hit) {
            return Some(bound.place);
        }
        let Reader::Str {
            column: Some(column),
            ..
        } = &self.readers[0].reader
        else {
            return None;
        };
        let dictionary = column.dictionary();
        let place = match dictionary.term_ord_or_next(text.as_bytes()).ok()? {
            TermOrdHit::Exact(ord) => OrdPlace::Exact(ord),
            // past the last block: after every term
            TermOrdHit::Next(ord) => OrdPlace::Before(ord.min(dictionary.num_terms() as u64)),
        };
        self.ord_bound.set(Some(OrdBound { hit, place }));
        Some(place)
    }

    /// Whether the first sort field is one number per document read from a numeric column
    /// (the sorts [`SegmentSortKeys::top_candidates`] can narrow).
    pub fn numeric_lead(&self) -> bool {
        self.lead.is_some()
            && matches!(
                self.readers.first().map(|r| &r.reader),
                Some(Reader::I64 {
                    column: Some(_),
                    ..
                }) | Some(Reader::F64 { column: Some(_) })
            )
    }

    /// The documents of the segment that can be among its `k` best by the lead sort field, in
    /// doc order, when that field is a numeric column whose sorted values (with their
    /// documents, ascending among equal values) are in `sorted`: those better than the k-th
    /// value and, of those tied with it, the first few when the field is the only sort field
    /// (ties go to the first documents), or all of them when later fields decide. OpenSearch
    /// skips by its points index the same way. `None` when that does not narrow anything.
    ///
    /// With `after` (the lead value of a `search_after` or a scroll's position), the top
    /// after it: every document tied with it (the hit's tie-break decides) and those up to the
    /// k-th value beyond, ties included.
    ///
    /// `live_docs` is the segment's number of live documents: when some have no value (a
    /// sparse field), they sort by `missing`, so the copy can only narrow a sort whose
    /// missing values come last and only when it holds the whole top (k values at least
    /// beyond the `after` position): the documents without a value are then never visited.
    pub fn top_candidates(
        &self,
        k: usize,
        sorted: &SortedValues,
        after: Option<&SortValue>,
        live_docs: usize,
    ) -> Option<Vec<DocId>> {
        let lead = self.lead.as_ref()?;
        // the copy's keys must be of the column's kind: floats for a double, else integers
        let first_reader = self.readers.first()?;
        let first = &first_reader.reader;
        let floats = matches!(first, Reader::F64 { .. });
        let values = &sorted.values;
        if !self.numeric_lead() || floats != sorted.floats || k == 0 || values.len() <= k {
            return None;
        }
        let sparse = values.len() != live_docs;
        if sparse && (lead.spec.missing_first || first_reader.missing != SortValue::Missing) {
            return None;
        }
        if sorted.floats {
            // float keys order -0.0 before 0.0 and NaNs at the ends; the sort may not
            let (low, high) = (key_float(values[0]), key_float(values[values.len() - 1]));
            let both_zeros = values.binary_search(&float_key(-0.0)).is_ok()
                && values.binary_search(&float_key(0.0)).is_ok();
            if low.is_nan() || high.is_nan() || both_zeros {
                return None;
            }
        }
        if let Some(after) = after {
            // the sort value in the copy's units: a scaled column sorts by scaled values
            let scaled = matches!(first, Reader::I64 { scale: Some(_), .. });
            let key = match after {
                SortValue::I64(v) if !floats && !scaled => *v,
                SortValue::F64(f) if floats && !f.is_nan() => float_key(*f),
                _ => return None,
            };
            let run_of = |value: i64| {
                values.partition_point(|v| *v < value)..values.partition_point(|v| *v <= value)
            };
            let ties = run_of(key);
            let range = match lead.spec.order {
                Order::Asc => match values.get(ties.end + k - 1) {
                    Some(&kth) => ties.start..run_of(kth).end,
                    None if sparse => return None,
                    None => ties.start..values.len(),
                },
                Order::Desc => match ties.start.checked_sub(k) {
                    Some(at) => run_of(values[at]).start..ties.end,
                    None if sparse => return None,
                    None => 0..ties.end,
                },
            };
            let mut docs = sorted.docs[range].to_vec();
            docs.sort_unstable();
            return Some(docs);
        }
        let kth = match lead.spec.order {
            Order::Asc => values[k - 1],
            Order::Desc => values[values.len() - k],
        };
        let run = values.partition_point(|v| *v < kth)..values.partition_point(|v| *v <= kth);
        let mut docs: Vec<DocId> = match lead.spec.order {
            Order::Asc => sorted.docs[..run.start].to_vec(),
            Order::Desc => sorted.docs[run.end..].to_vec(),
        };
        let tied = &sorted.docs[run];
        let keep = if lead.sole {
            (k - docs.len()).min(tied.len())
        } else {
            tied.len()
        };
        docs.extend_from_slice(&tied[..keep]);
        docs.sort_unstable();
        Some(docs)
    }

    /// The sort values of `doc` (with `score`).
    pub fn key(&mut self, doc: u32, score: f32) -> Vec<SortValue> {
        let error = &mut self.error;
        self.readers
            .iter_mut()
            .map(|r| r.value(doc, score, error))
            .collect()
    }

    /// The first failure of a `_script` sort while building keys, once.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }
}

/// The distance between an origin and a point in the sort's unit, as OpenSearch computes it.
fn geo_distance(sort: &GeoDistanceSort, lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    use tessera_mapping::geo::{distance_meters, GeoPoint};
    let origin = GeoPoint {
        lat: lat1,
        lon: lon1,
    };
    let point = GeoPoint {
        lat: lat2,
        lon: lon2,
    };
    distance_meters(origin, point, sort.plane) / sort.unit
}

fn pick_numeric(values: impl Iterator<Item = f64>, mode: SortMode) -> Option<f64> {
    // every visited document pays for this: only the median keeps the values
    let mut count = 0usize;
    let counted = values.inspect(|_| count += 1);
    let picked = match mode {
        SortMode::Min => counted.fold(f64::INFINITY, f64::min),
        SortMode::Max => counted.fold(f64::NEG_INFINITY, f64::max),
        SortMode::Sum => counted.sum(),
        SortMode::Avg => counted.sum::<f64>(),
        SortMode::Median => {
            let mut all: Vec<f64> = counted.collect();
            all.sort_by(|a, b| a.total_cmp(b));
            let mid = all.len() / 2;
            match all.len() {
                0 => 0.0,
                n if n.is_multiple_of(2) => (all[mid - 1] + all[mid]) / 2.0,
                _ => all[mid],
            }
        }
    };
    match (count, mode) {
        (0, _) => None,
        (n, SortMode::Avg) => Some(picked / n as f64),
        _ => Some(picked),
    }
}

fn pick_ord<T: Ord + Copy>(mut values: impl Iterator<Item = T>, mode: SortMode) -> Option<T> {
    let first = values.next()?;
    Some(values.fold(first, |acc, v| {
        if mode == SortMode::Max {
            acc.max(v)
        } else {
            acc.min(v)
        }
    }))
}

impl KeyReader {
    /// A numeric column with one value per document at most, picked by min or max: then the
    /// value is the document's one value, readable without allocating.
    fn is_single_number(&self) -> bool {
        if self.nested.is_some() {
            return false;
        }
        let single =
            |c: tantivy::columnar::Cardinality| c != tantivy::columnar::Cardinality::Multivalued;
        let column = match &self.reader {
            Reader::I64 {
                column: Some(c), ..
            } => single(c.get_cardinality()),
            Reader::F64 { column: Some(c) } => single(c.get_cardinality()),
            _ => false,
        };
        column && matches!(self.mode, SortMode::Min | SortMode::Max)
    }

    /// A keyword column: its term ordinals order as its values do.
    fn is_keyword(&self) -> bool {
        self.nested.is_none()
            && matches!(
                self.reader,
                Reader::Str {
                    column: Some(_),
                    ..
                }
            )
    }

    /// The ordinal of the term [`KeyReader::value`] would pick for `doc` in a keyword column
    /// (the least, or the greatest with `max`), `None` when the document has none.
    #[inline]
    fn lead_ord(&self, doc: u32) -> Option<u64> {
        let Reader::Str {
            column: Some(column),
            ..
        } = &self.reader
        else {
            return None;
        };
        let mode = if self.mode == SortMode::Max {
            SortMode::Max
        } else {
            SortMode::Min
        };
        pick_ord(column.term_ords(doc), mode)
    }

    /// Whether a numeric column has no value for `doc` (so it sorts by `missing`).
    #[inline]
    fn has_no_value(&self, doc: u32) -> bool {
        match &self.reader {
            Reader::I64 {
                column: Some(c), ..
            } => c.first(doc).is_none(),
            Reader::F64 { column: Some(c) } => c.first(doc).is_none(),
            _ => false,
        }
    }

    /// The value [`KeyReader::value`] gives a document of a [`KeyReader::is_single_number`]
    /// column, or `None` when it has no value (or a NaN, which `value` would not keep).
    #[inline]
    fn single_number(&self, doc: u32) -> Option<SortValue> {
        match &self.reader {
            Reader::I64 {
                column: Some(c),
                scale: None,
            } => c.first(doc).map(SortValue::I64),
            Reader::I64 {
                column: Some(c),
                scale: Some(factor),
            } => c
                .first(doc)
                .map(|v| SortValue::F64(scaled_float_value(v, *factor))),
            Reader::F64 { column: Some(c) } => {
                c.first(doc).filter(|v| !v.is_nan()).map(SortValue::F64)
            }
            _ => None,
        }
    }

    fn value(&mut self, doc: u32, score: f32, error: &mut Option<Error>) -> SortValue {
        self.docs.clear();
        match &self.nested {
            Some(nested) => nested.of(doc, &mut self.docs),
            None => self.docs.push(doc),
        }
        let docs = &self.docs;
        let value = match &mut self.reader {
            Reader::Script {
                script,
                docs,
                frame,
                numeric,
            } => {
                docs.set_doc(doc);
                match script.run(frame, docs, f64::from(score)) {
                    Ok(v) if *numeric => match v.as_f64() {
                        Some(f) => Some(SortValue::F64(f)),
                        None => {
                            error.get_or_insert_with(|| {
                                Error::new(
                                    "class_cast_exception",
                                    400,
                                    format!(
                                        "class {} cannot be cast to class java.lang.Number",
                                        v.java_class()
                                    ),
                                )
                            });
                            None
                        }
                    },
                    Ok(tessera_script::Value::Null) => None,
                    Ok(v) => Some(SortValue::Str(v.to_java_string())),
                    Err(e) => {
                        error.get_or_insert(e);
                        None
                    }
                }
            }
            Reader::GeoDistance {
                columns: Some((lats, lons)),
                sort,
            } => {
                let sort: &GeoDistanceSort = sort;
                let points = docs
                    .iter()
                    .flat_map(|d| lats.values_for_doc(*d).zip(lons.values_for_doc(*d)));
                let distances = points.flat_map(|(lat, lon)| {
                    sort.origins.iter().map(move |&(from_lat, from_lon)| {
                        geo_distance(sort, from_lat, from_lon, lat, lon)
                    })
                });
                pick_numeric(distances, self.mode).map(SortValue::F64)
            }
            Reader::Score => Some(SortValue::F64(score as f64)),
            Reader::Doc { base } => Some(SortValue::I64((*base + doc as u64) as i64)),
            Reader::I64 {
                column: Some(column),
                scale: None,
            } => {
                let values = docs.iter().flat_map(|d| column.values_for_doc(*d));
                match self.mode {
                    SortMode::Min | SortMode::Max => {
                        pick_ord(values, self.mode).map(SortValue::I64)
                    }
                    mode => pick_numeric(values.map(|v| v as f64), mode)
                        .map(|f| SortValue::I64(f as i64)),
                }
            }
            Reader::I64 {
                column: Some(column),
                scale: Some(factor),
            } => pick_numeric(
                docs.iter()
                    .flat_map(|d| column.values_for_doc(*d))
                    .map(|v| scaled_float_value(v, *factor)),
                self.mode,
            )
            .map(SortValue::F64),
            Reader::F64 {
                column: Some(column),
            } => pick_numeric(
                docs.iter().flat_map(|d| column.values_for_doc(*d)),
                self.mode,
            )
            .map(SortValue::F64),
            Reader::Bool {
                column: Some(column),
            } => pick_ord(
                docs.iter()
                    .flat_map(|d| column.values_for_doc(*d))
                    .map(|b| b as i64),
                self.mode,
            )
            .map(SortValue::I64),
            Reader::Ip {
                column: Some(column),
            } => pick_ord(
                docs.iter().flat_map(|d| column.values_for_doc(*d)),
                self.mode,
            )
            .map(SortValue::Ip),
            Reader::Str {
                column: Some(column),
                buffer,
            } => {
                let mode = if self.mode == SortMode::Max {
                    SortMode::Max
                } else {
                    SortMode::Min
                };
                match pick_ord(docs.iter().flat_map(|d| column.term_ords(*d)), mode) {
                    Some(ord) => {
                        buffer.clear();
                        match column.ord_to_str(ord, buffer) {
                            Ok(true) => Some(SortValue::Str(buffer.clone())),
                            _ => None,
                        }
                    }
                    None => None,
                }
            }
            Reader::U64 {
                column: Some(column),
            } => pick_ord(
                docs.iter()
                    .flat_map(|d| column.values_for_doc(*d))
                    .map(|v| v as i64),
                self.mode,
            )
            .map(SortValue::I64),
            Reader::Constant(value) => Some(value.clone()),
            Reader::Id { store, field } => store
                .get::<tantivy::TantivyDocument>(doc)
                .ok()
                .and_then(|d| {
                    use tantivy::schema::Value as _;
                    d.get_first(*field)
                        .and_then(|v| v.as_str().map(|s| SortValue::Str(s.to_string())))
                }),
            _ => None,
        };
        value.unwrap_or_else(|| self.missing.clone())
    }
}
