//! `random_score`, as OpenSearch computes it, so that a seeded random order is the same one
//! OpenSearch gives: the seed is salted with the shard (`(index name hash << 10) | shard`,
//! mixed by HPPC's `BitMixer`), and a document's score is the low 24 bits of the murmur3 hash
//! of its field's first value as field data renders it — a keyword's bytes, a number's
//! decimal (Java's `Double.toString` for floating point), a boolean's `1`/`0`, an ip's 16
//! bytes, a geo point's `lat, lon`, the `_id`'s text — divided by 2^24. A document without a value scores the salted
//! seed itself. Without a seed the seed is the request's "now" and the document's number in
//! the shard is hashed: a new order every request, as in OpenSearch (segments here have no
//! Lucene doc base, so a hash of the segment's id stands in for it).

use std::net::Ipv6Addr;

use tantivy::columnar::{Column, StrColumn};
use tantivy::schema::Field;
use tantivy::store::StoreReader;
use tantivy::{DocId, SegmentReader};
use tessera_common::java_hash::{long_hash, mix, string_hash};
use tessera_common::murmur3::murmur3_x86_32;
use tessera_common::{Error, Result};
use tessera_mapping::field_table::{ID_FIELD, SEQ_NO_FIELD};
use tessera_mapping::{scaled_float_value, LeafKind};

use super::CompileContext;

/// Where a `random_score` function takes its randomness from, read from the mapping.
#[derive(Clone, Debug)]
pub(super) struct RandomScore {
    salted_seed: i32,
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    /// No seed: each document by its number.
    Doc,
    /// The `_id` (read from the document store).
    Id(Field),
    Keyword(String),
    /// Integers, dates (epoch milliseconds) and `_seq_no`: their decimal.
    Integer(String),
    Unsigned(String),
    /// Doubles and scaled floats (stored as integers × factor): Java's `Double.toString`.
    Float(String),
    Scaled(String, f64),
    Boolean(String),
    Ip(String),
    /// A geo point's latitude and longitude columns.
    Geo(String, String),
}

impl RandomScore {
    pub(super) fn prepare(
        ctx: &CompileContext,
        seed: Option<i32>,
        field: Option<&str>,
    ) -> Result<RandomScore> {
        let salt = (string_hash(ctx.index) << 10) | ctx.shard_id as i32;
        let Some(seed) = seed else {
            return Ok(RandomScore {
                salted_seed: mix(long_hash(ctx.now_millis), salt),
                source: Source::Doc,
            });
        };
        let name = field.unwrap_or(ID_FIELD);
        let failed = |e: Error| {
            ctx.error(format!("failed to create query: {}", e.reason()))
                .caused_by(e)
        };
        let source = match name {
            ID_FIELD => Source::Id(ctx.table.meta.id),
            SEQ_NO_FIELD => Source::Unsigned(SEQ_NO_FIELD.into()),
            _ => {
                let leaf = ctx.table.leaf(name).ok_or_else(|| {
                    failed(Error::illegal_argument(format!(
                        "Field [{name}] is not mapped on [[{}]] and cannot be used as a source of random numbers.",
                        ctx.index
                    )))
                })?;
                let path = leaf.path.clone();
                match &leaf.kind {
                    LeafKind::Text { .. } => {
                        return Err(failed(Error::text_fielddata_disabled(name)))
                    }
                    _ if !leaf.fast => {
                        return Err(failed(Error::illegal_argument(format!(
                            "Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
                            leaf.field_type.name()
                        ))))
                    }
                    LeafKind::Keyword { .. } => Source::Keyword(path),
                    LeafKind::Integer | LeafKind::Date { .. } => Source::Integer(path),
                    LeafKind::Float => Source::Float(path),
                    LeafKind::ScaledFloat { factor } => Source::Scaled(path, *factor),
                    LeafKind::Boolean => Source::Boolean(path),
                    LeafKind::Ip => Source::Ip(path),
                    LeafKind::GeoPoint {
                        lat: Some(lat),
                        lon: Some(lon),
                    } => {
                        let schema = ctx.table.schema();
                        Source::Geo(
                            schema.get_field_name(*lat).to_string(),
                            schema.get_field_name(*lon).to_string(),
                        )
                    }
                    _ => {
                        return Err(failed(Error::illegal_argument(format!(
                            "random_score on field [{name}] of type [{}] is not supported by Tessera",
                            leaf.field_type.name()
                        ))))
                    }
                }
            }
        };
        Ok(RandomScore {
            salted_seed: mix(seed, salt),
            source,
        })
    }

    /// The function on one segment.
    pub(super) fn open(&self, reader: &SegmentReader) -> tantivy::Result<RandomValues> {
        let fast = reader.fast_fields();
        let values = match &self.source {
            Source::Doc => Values::Doc(string_hash(&reader.segment_id().uuid_string())),
            Source::Id(field) => Values::Id(reader.get_store_reader(16)?, *field),
            Source::Keyword(path) => Values::Keyword(fast.str(path)?),
            Source::Integer(path) => Values::Integer(fast.column_opt(path)?),
            Source::Unsigned(path) => Values::Unsigned(fast.column_opt(path)?),
            Source::Float(path) => Values::Float(fast.column_opt(path)?),
            Source::Scaled(path, factor) => Values::Scaled(fast.column_opt(path)?, *factor),
            Source::Boolean(path) => Values::Boolean(fast.column_opt(path)?),
            Source::Ip(path) => Values::Ip(fast.column_opt(path)?),
            Source::Geo(lat, lon) => Values::Geo(fast.column_opt(lat)?.zip(fast.column_opt(lon)?)),
        };
        Ok(RandomValues {
            salted_seed: self.salted_seed,
            values,
            bytes: Vec::new(),
        })
    }
}

/// A segment's values of a `random_score` function.
pub(super) struct RandomValues {
    salted_seed: i32,
    values: Values,
    /// The current document's value as field data's bytes.
    bytes: Vec<u8>,
}

enum Values {
    Doc(i32),
    Id(StoreReader, Field),
    Keyword(Option<StrColumn>),
    Integer(Option<Column<i64>>),
    Unsigned(Option<Column<u64>>),
    Float(Option<Column<f64>>),
    Scaled(Option<Column<i64>>, f64),
    Boolean(Option<Column<bool>>),
    Ip(Option<Column<Ipv6Addr>>),
    Geo(Option<(Column<f64>, Column<f64>)>),
}

impl RandomValues {
    /// The function's score of `doc`, in `[0, 1)`.
    pub(super) fn score(&mut self, doc: DocId) -> f64 {
        let hash = if let Values::Doc(base) = self.values {
            mix(base.wrapping_add(doc as i32), self.salted_seed)
        } else if self.load(doc) {
            murmur3_x86_32(&self.bytes, self.salted_seed as u32) as i32
        } else {
            self.salted_seed
        };
        f64::from((hash & 0x00FF_FFFF) as f32 / (1 << 24) as f32)
    }

    /// Puts `doc`'s first value (the smallest, as field data sorts them) into `bytes`;
    /// false when it has none.
    fn load(&mut self, doc: DocId) -> bool {
        let bytes = &mut self.bytes;
        bytes.clear();
        let decimal = |bytes: &mut Vec<u8>, text: String| bytes.extend_from_slice(text.as_bytes());
        match &self.values {
            Values::Doc(_) => return false,
            Values::Id(store, field) => {
                use tantivy::schema::Value as _;
                let Ok(stored) = store.get::<tantivy::TantivyDocument>(doc) else {
                    return false;
                };
                let Some(id) = stored.get_first(*field).and_then(|v| v.as_str()) else {
                    return false;
                };
                bytes.extend_from_slice(id.as_bytes());
            }
            Values::Keyword(column) => {
                let Some(column) = column else { return false };
                let Some(ord) = column.term_ords(doc).min() else {
                    return false;
                };
                if column.ord_to_bytes(ord, bytes).is_err() {
                    return false;
                }
            }
            Values::Integer(column) => match column.as_ref().and_then(|c| first(c, doc)) {
                Some(value) => decimal(bytes, value.to_string()),
                None => return false,
            },
            Values::Unsigned(column) => match column.as_ref().and_then(|c| first(c, doc)) {
                Some(value) => decimal(bytes, value.to_string()),
                None => return false,
            },
            Values::Float(column) => match column.as_ref().and_then(|c| first_float(c, doc)) {
                Some(value) => decimal(bytes, tessera_common::settings::java_double(value)),
                None => return false,
            },
            Values::Scaled(column, factor) => match column.as_ref().and_then(|c| first(c, doc)) {
                Some(value) => decimal(
                    bytes,
                    tessera_common::settings::java_double(scaled_float_value(value, *factor)),
                ),
                None => return false,
            },
            Values::Boolean(column) => match column.as_ref().and_then(|c| first(c, doc)) {
                Some(value) => bytes.push(if value { b'1' } else { b'0' }),
                None => return false,
            },
            Values::Ip(column) => match column.as_ref().and_then(|c| first(c, doc)) {
                Some(value) => bytes.extend_from_slice(&value.octets()),
                None => return false,
            },
            Values::Geo(columns) => {
                let Some((lat, lon)) = columns.as_ref().and_then(|(lats, lons)| {
                    lats.values_for_doc(doc)
                        .zip(lons.values_for_doc(doc))
                        .min_by(|a, b| geo_order(*a, *b))
                }) else {
                    return false;
                };
                let java_double = tessera_common::settings::java_double;
                decimal(bytes, format!("{}, {}", java_double(lat), java_double(lon)));
            }
        }
        true
    }
}

fn first<T: PartialOrd + Copy + std::fmt::Debug + Send + Sync + 'static>(
    column: &Column<T>,
    doc: DocId,
) -> Option<T> {
    column
        .values_for_doc(doc)
        .reduce(|a, b| if b < a { b } else { a })
}

/// How two points of a document sort in Lucene's doc values: by the long of their encodings,
/// the latitude in its high half (signed), the longitude in its low half (unsigned: negative
/// longitudes after the others).
fn geo_order(a: (f64, f64), b: (f64, f64)) -> std::cmp::Ordering {
    let lon_key = |lon: f64| (lon < 0.0, lon);
    a.0.total_cmp(&b.0).then_with(|| {
        let (a, b) = (lon_key(a.1), lon_key(b.1));
        a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
    })
}

fn first_float(column: &Column<f64>, doc: DocId) -> Option<f64> {
    column.values_for_doc(doc).reduce(f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(values: Values, salted_seed: i32) -> RandomValues {
        RandomValues {
            salted_seed,
            values,
            bytes: Vec::new(),
        }
    }

    #[test]
    fn scores_are_opensearchs() {
        // OpenSearch 2.19.6, index `rs`, one shard: `random_score` with seed 10 on `_seq_no`
        // scores the document of seq_no 0 0.7347494 and that of seq_no 1 0.6670488
        let salted = mix(10, string_hash("rs") << 10);
        let hash = murmur3_x86_32(b"0", salted as u32) as i32;
        assert_eq!((hash & 0x00FF_FFFF) as f32 / (1 << 24) as f32, 0.734_749_4);
        let hash = murmur3_x86_32(b"1", salted as u32) as i32;
        assert_eq!((hash & 0x00FF_FFFF) as f32 / (1 << 24) as f32, 0.667_048_8);
        // a document without a value scores the salted seed (seed 1: 0.37996066)
        let mut missing = values(Values::Integer(None), mix(1, string_hash("rs") << 10));
        assert_eq!(missing.score(0) as f32, 0.379_960_66);
    }

    #[test]
    fn documents_without_a_seed_spread_over_the_unit_interval() {
        let mut random = values(Values::Doc(17), 12345);
        let scores: Vec<f64> = (0..1000).map(|doc| random.score(doc)).collect();
        assert!(scores.iter().all(|s| (0.0..1.0).contains(s)));
        let low = scores.iter().filter(|s| **s < 0.5).count();
        assert!((400..600).contains(&low), "{low}");
    }
}
