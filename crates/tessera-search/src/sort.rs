//! Sorting: the `sort` request option, sort values, and how hits compare.
//!
//! A hit's sort key is a list of [`SortValue`]s, one per sort field, compared field by field
//! with each field's order and missing-value placement; ties go to the lower shard, then the
//! lower segment and doc id, as in OpenSearch. The same comparison orders hits inside a slice,
//! across slices and across shards.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_common::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    Asc,
    Desc,
}

/// Where documents without a value go.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Missing {
    First,
    Last,
    Value(Value),
}

/// For multi-valued fields: which value sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortMode {
    Min,
    Max,
    Sum,
    Avg,
    Median,
}

/// One entry of `sort`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SortField {
    Score {
        order: Order,
    },
    Doc {
        order: Order,
    },
    /// `_shard_doc`: the shard's position in the request in the high 32 bits, the document's
    /// in the shard in the low ones — unique across a request, the tie-breaker of a point in
    /// time's pages.
    ShardDoc {
        order: Order,
    },
    Field {
        field: String,
        order: Order,
        missing: Missing,
        mode: Option<SortMode>,
        unmapped_type: Option<String>,
        format: Option<String>,
        /// `nested`: the value comes from the nested objects of a path.
        nested: Option<Box<NestedSort>>,
    },
    /// `_script`: a script's value (`type: number` or `string`).
    Script {
        script: Box<tessera_script::ScriptSpec>,
        numeric: bool,
        order: Order,
    },
    /// `_geo_distance`: the distance of a document's geo points from one or more origins.
    GeoDistance(Box<GeoDistanceSort>),
}

/// A `_geo_distance` sort. A document's value is picked by `mode` among the distances of
/// each of its points from each origin; one without a point sorts as an infinite distance
/// (last ascending, first descending), as in OpenSearch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoDistanceSort {
    pub field: String,
    /// The origins, as (latitude, longitude).
    pub origins: Vec<(f64, f64)>,
    pub order: Order,
    /// Meters per unit of the sort values.
    pub unit: f64,
    /// Default: the least distance ascending, the greatest descending.
    pub mode: Option<SortMode>,
    /// `distance_type: plane` (else `arc`, Lucene's haversine).
    pub plane: bool,
    /// An unmapped field sorts every document as missing instead of failing the shard.
    pub ignore_unmapped: bool,
}

/// A field sort's `nested`: the sort value of a document is picked (by `mode`) among the
/// values of its nested objects of `path` that match `filter`, the first `max_children` of
/// them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NestedSort {
    pub path: String,
    pub filter: Option<tessera_query::QueryAst>,
    pub max_children: Option<usize>,
}

/// Parses `nested` (`path`, `filter`, `max_children`).
fn parse_nested_sort(value: &Value) -> Result<Option<NestedSort>> {
    let failed = |cause: Error| {
        Error::new(
            "x_content_parse_exception",
            400,
            "[field_sort] failed to parse field [nested]",
        )
        .caused_by(cause)
    };
    let Value::Object(options) = value else {
        return Err(failed(Error::illegal_argument(
            "malformed nested sort format",
        )));
    };
    let (mut path, mut filter, mut max_children) = (None, None, None);
    for (key, v) in options {
        match key.as_str() {
            "path" => path = v.as_str().map(String::from),
            "filter" => filter = Some(tessera_query::parse_query(v)?),
            "max_children" => max_children = v.as_u64().map(|n| n as usize),
            "nested" => {
                return Err(Error::not_supported(
                    "a [nested] sort inside a [nested] sort",
                ))
            }
            other => {
                return Err(failed(Error::illegal_argument(format!(
                    "malformed nested sort format, unknown field name [{other}]"
                ))))
            }
        }
    }
    Ok(path.map(|path| NestedSort {
        path,
        filter,
        max_children,
    }))
}

impl SortField {
    pub fn order(&self) -> Order {
        match self {
            SortField::Score { order }
            | SortField::Doc { order }
            | SortField::ShardDoc { order }
            | SortField::Field { order, .. }
            | SortField::Script { order, .. } => *order,
            SortField::GeoDistance(sort) => sort.order,
        }
    }

    pub fn is_score(&self) -> bool {
        matches!(self, SortField::Score { .. })
    }
}

fn parse_order(value: &Value) -> Result<Order> {
    match value.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("asc") => Ok(Order::Asc),
        Some("desc") => Ok(Order::Desc),
        _ => Err(Error::illegal_argument(format!(
            "Unknown SortOrder [{}]",
            value.as_str().unwrap_or(&value.to_string())
        ))),
    }
}

fn parse_mode(value: &Value) -> Result<SortMode> {
    Ok(match value.as_str().unwrap_or_default() {
        "min" => SortMode::Min,
        "max" => SortMode::Max,
        "sum" => SortMode::Sum,
        "avg" => SortMode::Avg,
        "median" => SortMode::Median,
        other => {
            return Err(Error::illegal_argument(format!(
                "Unknown SortMode [{other}]"
            )))
        }
    })
}

fn field_sort(name: &str, order: Option<Order>) -> SortField {
    match name {
        "_score" => SortField::Score {
            order: order.unwrap_or(Order::Desc),
        },
        "_doc" => SortField::Doc {
            order: order.unwrap_or(Order::Asc),
        },
        "_shard_doc" => SortField::ShardDoc {
            order: order.unwrap_or(Order::Asc),
        },
        field => SortField::Field {
            field: field.to_string(),
            order: order.unwrap_or(Order::Asc),
            missing: Missing::Last,
            mode: None,
            unmapped_type: None,
            format: None,
            nested: None,
        },
    }
}

/// `{"_script": {"type": "number"|"string", "script": …, "order": …}}`.
fn script_sort(options: &Value) -> Result<SortField> {
    let Value::Object(options) = options else {
        return Err(Error::parsing("[_script] sort takes an object"));
    };
    let (mut script, mut numeric, mut order) = (None, None, Order::Asc);
    for (key, value) in options {
        match key.as_str() {
            "script" => script = Some(tessera_script::ScriptSpec::parse("_script", value)?),
            "type" => {
                numeric = Some(match value.as_str() {
                    Some("number") => true,
                    Some("string") => false,
                    _ => {
                        return Err(Error::illegal_argument(format!(
                            "Unknown ScriptSortType [{}]",
                            value.as_str().unwrap_or(&value.to_string())
                        )))
                    }
                })
            }
            "order" => order = parse_order(value)?,
            "mode" => {
                parse_mode(value)?;
            }
            "nested" | "nested_path" | "nested_filter" => {
                return Err(Error::not_supported("[nested] sort"))
            }
            other => {
                return Err(Error::x_content_parse(format!(
                    "[_script] unknown field [{other}]"
                )))
            }
        }
    }
    let numeric = numeric.ok_or_else(|| Error::illegal_argument("Required [type]"))?;
    let script = script.ok_or_else(|| Error::illegal_argument("Required [script]"))?;
    Ok(SortField::Script {
        script: Box::new(script),
        numeric,
        order,
    })
}

/// `{"_geo_distance": {"<field>": origins, "order", "unit", "mode", "distance_type",
/// "ignore_unmapped", "validation_method"}}`.
fn geo_distance_sort(options: &Value) -> Result<SortField> {
    const SORT: &str = "_geo_distance";
    let Value::Object(options) = options else {
        return Err(Error::parsing(format!("[{SORT}] sort takes an object")));
    };
    let unsupported = |key: &str| Error::parsing(format!("[{SORT}] does not support [{key}]"));
    let text = |key: &str, value: &Value| {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| unsupported(key))
    };
    let mut sort = GeoDistanceSort {
        field: String::new(),
        origins: Vec::new(),
        order: Order::Asc,
        unit: 1.0,
        mode: None,
        plane: false,
        ignore_unmapped: false,
    };
    for (key, value) in options {
        match key.as_str() {
            "order" => sort.order = parse_order(value)?,
            "unit" => {
                let name = text(key, value)?;
                sort.unit = tessera_mapping::geo::unit_meters(&name).ok_or_else(|| {
                    Error::illegal_argument(format!("No distance unit match [{name}]"))
                })?;
            }
            "mode" => {
                let mode = parse_mode(value)?;
                if mode == SortMode::Sum {
                    return Err(Error::illegal_argument(
                        "sort_mode [sum] isn't supported for sorting by geo distance",
                    ));
                }
                sort.mode = Some(mode);
            }
            "distance_type" => {
                sort.plane = match text(key, value)?.to_ascii_lowercase().as_str() {
                    "arc" => false,
                    "plane" => true,
                    other => {
                        return Err(Error::illegal_argument(format!(
                            "No geo distance for [{other}]"
                        )))
                    }
                }
            }
            "ignore_unmapped" => {
                sort.ignore_unmapped = value.as_bool().ok_or_else(|| unsupported(key))?
            }
            // the only method Tessera has: a malformed origin is refused
            "validation_method" if text(key, value)?.eq_ignore_ascii_case("strict") => {}
            "validation_method" | "nested" => {
                return Err(Error::not_supported(&format!("[{key}] in a [{SORT}] sort")))
            }
            field => {
                if !sort.field.is_empty()
                    || !(value.is_string() || value.is_array() || value.is_object())
                {
                    return Err(unsupported(field));
                }
                sort.field = field.to_string();
                let points: Vec<&Value> = match value {
                    Value::Array(items) if !items.iter().all(Value::is_number) => {
                        items.iter().collect()
                    }
                    one => vec![one],
                };
                for point in points {
                    let point = tessera_mapping::geo::parse_point(point)?;
                    sort.origins.push((point.lat, point.lon));
                }
            }
        }
    }
    if sort.field.is_empty() || sort.origins.is_empty() {
        return Err(Error::illegal_argument(format!(
            "[{SORT}] needs a field and at least one origin"
        )));
    }
    Ok(SortField::GeoDistance(Box::new(sort)))
}

/// Parses `sort`: `"field"`, `{"field": "desc"}`, `{"field": {"order": …, "missing": …}}`, or
/// a list of those.
pub fn parse_sort(value: &Value) -> Result<Vec<SortField>> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::String(name) => out.push(field_sort(name, None)),
            Value::Object(map) => {
                for (name, spec) in map {
                    if name == "_script" {
                        out.push(script_sort(spec)?);
                        continue;
                    }
                    if name == "_geo_distance" || name == "_geoDistance" {
                        out.push(geo_distance_sort(spec)?);
                        continue;
                    }
                    match spec {
                        Value::String(_) => out.push(field_sort(name, Some(parse_order(spec)?))),
                        Value::Object(options) => {
                            let mut sort = field_sort(name, None);
                            let mut order = None;
                            for (key, v) in options {
                                match (key.as_str(), &mut sort) {
                                    ("order", _) => order = Some(parse_order(v)?),
                                    ("missing", SortField::Field { missing, .. }) => {
                                        *missing = match v.as_str() {
                                            Some("_last") => Missing::Last,
                                            Some("_first") => Missing::First,
                                            _ => Missing::Value(v.clone()),
                                        }
                                    }
                                    ("mode", SortField::Field { mode, .. }) => {
                                        *mode = Some(parse_mode(v)?)
                                    }
                                    ("unmapped_type", SortField::Field { unmapped_type, .. }) => {
                                        *unmapped_type = v.as_str().map(String::from)
                                    }
                                    ("format", SortField::Field { format, .. }) => {
                                        *format = v.as_str().map(String::from)
                                    }
                                    ("numeric_type", _) => {}
                                    ("nested", SortField::Field { nested, .. }) => {
                                        *nested = parse_nested_sort(v)?.map(Box::new)
                                    }
                                    // the older form of `nested.path` and `nested.filter`
                                    ("nested_path", SortField::Field { nested, .. }) => {
                                        let path = v.as_str().unwrap_or_default().to_string();
                                        match nested {
                                            Some(n) => n.path = path,
                                            None => {
                                                *nested = Some(Box::new(NestedSort {
                                                    path,
                                                    filter: None,
                                                    max_children: None,
                                                }))
                                            }
                                        }
                                    }
                                    ("nested_filter", SortField::Field { nested, .. }) => {
                                        let filter = Some(tessera_query::parse_query(v)?);
                                        match nested {
                                            Some(n) => n.filter = filter,
                                            None => {
                                                *nested = Some(Box::new(NestedSort {
                                                    path: String::new(),
                                                    filter,
                                                    max_children: None,
                                                }))
                                            }
                                        }
                                    }
                                    ("nested" | "nested_path" | "nested_filter", _) => {
                                        return Err(Error::parsing(format!(
                                            "[field_sort] unknown field [{key}]"
                                        )))
                                    }
                                    (other, _) => {
                                        return Err(Error::parsing(format!(
                                            "[field_sort] unknown field [{other}]"
                                        )))
                                    }
                                }
                            }
                            if let Some(order) = order {
                                sort = match sort {
                                    SortField::Score { .. } => SortField::Score { order },
                                    SortField::Doc { .. } => SortField::Doc { order },
                                    SortField::ShardDoc { .. } => SortField::ShardDoc { order },
                                    SortField::Field {
                                        field,
                                        missing,
                                        mode,
                                        unmapped_type,
                                        format,
                                        nested,
                                        ..
                                    } => SortField::Field {
                                        field,
                                        order,
                                        missing,
                                        mode,
                                        unmapped_type,
                                        format,
                                        // `nested_filter` without `nested_path` is no nested sort
                                        nested: nested.filter(|n| !n.path.is_empty()),
                                    },
                                    other @ (SortField::Script { .. }
                                    | SortField::GeoDistance(_)) => other,
                                };
                            }
                            out.push(sort);
                        }
                        _ => {
                            return Err(Error::parsing(format!(
                                "[sort] unexpected value for field [{name}]"
                            )))
                        }
                    }
                }
            }
            _ => {
                return Err(Error::parsing(
                    "[sort] must be a string, an object or an array",
                ))
            }
        }
    }
    Ok(out)
}

/// One sort value of a hit. `Missing` sorts according to the field's `missing` option.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SortValue {
    Missing,
    I64(i64),
    F64(f64),
    Str(String),
    Ip(std::net::Ipv6Addr),
}

impl SortValue {
    fn rank(&self) -> u8 {
        match self {
            SortValue::Missing => 0,
            SortValue::I64(_) | SortValue::F64(_) => 1,
            SortValue::Str(_) => 2,
            SortValue::Ip(_) => 3,
        }
    }

    /// Natural ascending order of two present values.
    fn natural(&self, other: &SortValue) -> Ordering {
        match (self, other) {
            (SortValue::I64(a), SortValue::I64(b)) => a.cmp(b),
            (SortValue::F64(a), SortValue::F64(b)) => a.total_cmp(b),
            (SortValue::I64(a), SortValue::F64(b)) => (*a as f64).total_cmp(b),
            (SortValue::F64(a), SortValue::I64(b)) => a.total_cmp(&(*b as f64)),
            (SortValue::Str(a), SortValue::Str(b)) => a.cmp(b),
            (SortValue::Ip(a), SortValue::Ip(b)) => a.cmp(b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

/// How one sort field compares values (order and missing placement).
#[derive(Clone, Debug, PartialEq)]
pub struct SortSpec {
    pub order: Order,
    pub missing_first: bool,
}

impl SortSpec {
    pub fn for_field(field: &SortField) -> SortSpec {
        match field {
            SortField::Score { order }
            | SortField::Doc { order }
            | SortField::ShardDoc { order }
            | SortField::Script { order, .. } => SortSpec {
                order: *order,
                missing_first: false,
            },
            SortField::Field { order, missing, .. } => SortSpec {
                order: *order,
                missing_first: matches!(missing, Missing::First),
            },
            // a document without a point has an infinite distance, not a missing value
            SortField::GeoDistance(sort) => SortSpec {
                order: sort.order,
                missing_first: false,
            },
        }
    }

    /// `Less` when `a` comes first.
    pub fn compare(&self, a: &SortValue, b: &SortValue) -> Ordering {
        match (a, b) {
            (SortValue::Missing, SortValue::Missing) => Ordering::Equal,
            (SortValue::Missing, _) => {
                if self.missing_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (_, SortValue::Missing) => {
                if self.missing_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ => {
                let natural = a.natural(b);
                if self.order == Order::Asc {
                    natural
                } else {
                    natural.reverse()
                }
            }
        }
    }
}

/// Compares two sort keys field by field.
pub fn compare_keys(specs: &[SortSpec], a: &[SortValue], b: &[SortValue]) -> Ordering {
    for (i, spec) in specs.iter().enumerate() {
        let ordering = spec.compare(&a[i], &b[i]);
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// How a sort field's values render; the shard knows the mapping and tells the coordinator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SortFormat {
    /// `keyword`, `text`, `ip`, `_id`: a missing value renders as `null`.
    Text,
    /// A missing value renders as the extreme long.
    #[default]
    Number,
    /// `float` and `half_float`: the values are 32-bit floats, printed as Java prints a float
    /// (0.6, where the column's double is 0.6000000238418579).
    Float32,
}

/// The sort value OpenSearch renders for a hit: missing numbers become the extreme long
/// (`Long.MAX_VALUE` sorts last ascending), missing strings `null`.
pub fn render_sort_value(value: &SortValue, field: &SortField, format: SortFormat) -> Value {
    match value {
        SortValue::I64(n) => Value::from(*n),
        SortValue::F64(f) if format == SortFormat::Float32 => {
            crate::source_fields::float_value(*f as f32)
        }
        // Java prints an infinite double (a geo distance sort's missing point) as a string
        SortValue::F64(f) if f.is_infinite() => {
            Value::String(if *f > 0.0 { "Infinity" } else { "-Infinity" }.to_string())
        }
        SortValue::F64(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        SortValue::Str(s) => Value::String(s.clone()),
        SortValue::Ip(ip) => Value::String(tessera_mapping::values::format_ip(*ip)),
        SortValue::Missing if format != SortFormat::Text => {
            let last = !matches!(
                field,
                SortField::Field {
                    missing: Missing::First,
                    ..
                }
            );
            let asc = field.order() == Order::Asc;
            if last == asc {
                Value::from(i64::MAX)
            } else {
                Value::from(i64::MIN)
            }
        }
        SortValue::Missing => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_all_forms() {
        let sorts = parse_sort(&json!(["a", {"b": "desc"}, {"c": {"order": "desc", "missing": "_first", "mode": "max"}}, "_score", {"_doc": "desc"}])).unwrap();
        assert_eq!(sorts.len(), 5);
        assert!(
            matches!(&sorts[0], SortField::Field { field, order: Order::Asc, missing: Missing::Last, .. } if field == "a")
        );
        assert!(matches!(
            &sorts[1],
            SortField::Field {
                order: Order::Desc,
                ..
            }
        ));
        assert!(matches!(
            &sorts[2],
            SortField::Field {
                missing: Missing::First,
                mode: Some(SortMode::Max),
                ..
            }
        ));
        assert_eq!(sorts[3], SortField::Score { order: Order::Desc });
        assert_eq!(sorts[4], SortField::Doc { order: Order::Desc });
        assert!(parse_sort(&json!({"a": "sideways"})).is_err());
        assert!(parse_sort(&json!({"a": {"bogus": 1}})).is_err());
    }

    #[test]
    fn missing_values_go_last_by_default_in_both_orders() {
        let asc = SortSpec {
            order: Order::Asc,
            missing_first: false,
        };
        let desc = SortSpec {
            order: Order::Desc,
            missing_first: false,
        };
        assert_eq!(
            asc.compare(&SortValue::I64(1), &SortValue::Missing),
            Ordering::Less
        );
        assert_eq!(
            desc.compare(&SortValue::I64(1), &SortValue::Missing),
            Ordering::Less
        );
        assert_eq!(
            desc.compare(&SortValue::I64(1), &SortValue::I64(2)),
            Ordering::Greater
        );
        let first = SortSpec {
            order: Order::Asc,
            missing_first: true,
        };
        assert_eq!(
            first.compare(&SortValue::Missing, &SortValue::I64(1)),
            Ordering::Less
        );
    }

    /// A plain sort on `field`, missing values last.
    fn by_field(field: &str, order: Order) -> SortField {
        SortField::Field {
            field: field.into(),
            order,
            missing: Missing::Last,
            mode: None,
            unmapped_type: None,
            format: None,
            nested: None,
        }
    }

    #[test]
    fn renders_missing_as_opensearch_does() {
        let asc = by_field("n", Order::Asc);
        assert_eq!(
            render_sort_value(&SortValue::Missing, &asc, SortFormat::Number),
            json!(i64::MAX)
        );
        let desc = by_field("n", Order::Desc);
        assert_eq!(
            render_sort_value(&SortValue::Missing, &desc, SortFormat::Float32),
            json!(i64::MIN)
        );
        assert_eq!(
            render_sort_value(&SortValue::Missing, &asc, SortFormat::Text),
            Value::Null
        );
    }

    #[test]
    fn float_fields_render_their_sort_values_as_floats() {
        let field = by_field("f", Order::Asc);
        let stored = SortValue::F64(0.6f32 as f64);
        assert_eq!(
            render_sort_value(&stored, &field, SortFormat::Float32),
            json!(0.6)
        );
        assert_eq!(
            render_sort_value(&stored, &field, SortFormat::Number),
            json!(0.6000000238418579)
        );
        // a half_float's value, as OpenSearch prints it
        let half = SortValue::F64(0.60009765625);
        assert_eq!(
            render_sort_value(&half, &field, SortFormat::Float32),
            json!(0.60009766)
        );
    }
}
