//! The field types Tessera supports and the parameters each accepts.
//!
//! OpenSearch rejects unknown mapping parameters (`unknown parameter [x] on mapper [f] of type
//! [keyword]`) and unknown types (`No handler for type [x] declared on field [f]`); so does
//! Tessera, with the same words, so that a mapping that works here works there and vice versa.

use serde_json::Value;
use tessera_common::{Error, Result};

/// A mapping type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    Text,
    MatchOnlyText,
    Keyword,
    Long,
    Integer,
    Short,
    Byte,
    Double,
    Float,
    HalfFloat,
    ScaledFloat,
    Date,
    Boolean,
    Ip,
    GeoPoint,
    IntegerRange,
    LongRange,
    FloatRange,
    DoubleRange,
    DateRange,
    IpRange,
    /// A dense vector for k-NN search (see [`crate::knn`]).
    KnnVector,
    /// Inputs for the completion suggester (see [`crate::completion`]).
    Completion,
    /// A stored query, for the `percolate` query: kept as its JSON in a bytes column.
    Percolator,
    Object,
    /// An object whose array items are each indexed as a hidden child document (see
    /// `crate::nested`).
    Nested,
}

/// Types OpenSearch has that Tessera does not implement: named so the error can say so.
const UNSUPPORTED_TYPES: &[&str] = &[
    "flat_object",
    "join",
    "alias",
    "binary",
    "search_as_you_type",
    "geo_shape",
    "unsigned_long",
    "date_nanos",
    "rank_feature",
    "rank_features",
    "token_count",
    "constant_keyword",
    "wildcard",
    "derived",
    "star_tree",
    "semantic",
];

const COMMON_LEAF: &[&str] = &["copy_to", "meta", "fields"];
const NUMERIC_PARAMS: &[&str] = &[
    "boost",
    "coerce",
    "doc_values",
    "ignore_malformed",
    "index",
    "null_value",
    "store",
];

impl FieldType {
    pub fn parse(name: &str, field: &str) -> Result<FieldType> {
        Ok(match name {
            "text" => FieldType::Text,
            "match_only_text" => FieldType::MatchOnlyText,
            "keyword" => FieldType::Keyword,
            "long" => FieldType::Long,
            "integer" => FieldType::Integer,
            "short" => FieldType::Short,
            "byte" => FieldType::Byte,
            "double" => FieldType::Double,
            "float" => FieldType::Float,
            "half_float" => FieldType::HalfFloat,
            "scaled_float" => FieldType::ScaledFloat,
            "date" => FieldType::Date,
            "boolean" => FieldType::Boolean,
            "ip" => FieldType::Ip,
            "geo_point" => FieldType::GeoPoint,
            "integer_range" => FieldType::IntegerRange,
            "long_range" => FieldType::LongRange,
            "float_range" => FieldType::FloatRange,
            "double_range" => FieldType::DoubleRange,
            "date_range" => FieldType::DateRange,
            "ip_range" => FieldType::IpRange,
            "knn_vector" => FieldType::KnnVector,
            "completion" => FieldType::Completion,
            "percolator" => FieldType::Percolator,
            "object" => FieldType::Object,
            "nested" => FieldType::Nested,
            other if UNSUPPORTED_TYPES.contains(&other) => {
                return Err(Error::mapper_parsing(format!(
                    "No handler for type [{other}] declared on field [{field}]: the type is not supported by Tessera"
                )))
            }
            other => {
                return Err(Error::mapper_parsing(format!(
                    "No handler for type [{other}] declared on field [{field}]"
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::MatchOnlyText => "match_only_text",
            FieldType::Keyword => "keyword",
            FieldType::Long => "long",
            FieldType::Integer => "integer",
            FieldType::Short => "short",
            FieldType::Byte => "byte",
            FieldType::Double => "double",
            FieldType::Float => "float",
            FieldType::HalfFloat => "half_float",
            FieldType::ScaledFloat => "scaled_float",
            FieldType::Date => "date",
            FieldType::Boolean => "boolean",
            FieldType::Ip => "ip",
            FieldType::GeoPoint => "geo_point",
            FieldType::IntegerRange => "integer_range",
            FieldType::LongRange => "long_range",
            FieldType::FloatRange => "float_range",
            FieldType::DoubleRange => "double_range",
            FieldType::DateRange => "date_range",
            FieldType::IpRange => "ip_range",
            FieldType::KnnVector => "knn_vector",
            FieldType::Completion => "completion",
            FieldType::Percolator => "percolator",
            FieldType::Object => "object",
            FieldType::Nested => "nested",
        }
    }

    /// Objects and nested objects: fields with `properties` and no value of their own.
    pub fn is_object(self) -> bool {
        matches!(self, FieldType::Object | FieldType::Nested)
    }

    pub fn is_text(self) -> bool {
        matches!(self, FieldType::Text | FieldType::MatchOnlyText)
    }

    pub fn is_integer(self) -> bool {
        matches!(
            self,
            FieldType::Long | FieldType::Integer | FieldType::Short | FieldType::Byte
        )
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            FieldType::Double | FieldType::Float | FieldType::HalfFloat | FieldType::ScaledFloat
        )
    }

    /// `float` and `half_float`: 32-bit values (kept in a column of doubles), which OpenSearch
    /// prints as Java prints a float.
    pub fn is_float32(self) -> bool {
        matches!(self, FieldType::Float | FieldType::HalfFloat)
    }

    pub fn is_numeric(self) -> bool {
        self.is_integer() || self.is_float()
    }

    /// The range types (`integer_range`, …, `ip_range`).
    pub fn is_range(self) -> bool {
        matches!(
            self,
            FieldType::IntegerRange
                | FieldType::LongRange
                | FieldType::FloatRange
                | FieldType::DoubleRange
                | FieldType::DateRange
                | FieldType::IpRange
        )
    }

    /// The parameters this type accepts besides `type`.
    pub fn allowed_params(self) -> Vec<&'static str> {
        let specific: &[&str] = match self {
            FieldType::Text => &[
                "analyzer",
                "search_analyzer",
                "search_quote_analyzer",
                "boost",
                "eager_global_ordinals",
                "fielddata",
                "fielddata_frequency_filter",
                "index",
                "index_options",
                "index_prefixes",
                "index_phrases",
                "norms",
                "position_increment_gap",
                "similarity",
                "store",
                "term_vector",
            ],
            FieldType::MatchOnlyText => &[
                "analyzer",
                "search_analyzer",
                "search_quote_analyzer",
                "index_prefixes",
                "index_phrases",
                "position_increment_gap",
            ],
            FieldType::Keyword => &[
                "boost",
                "doc_values",
                "eager_global_ordinals",
                "ignore_above",
                "index",
                "index_options",
                "norms",
                "null_value",
                "normalizer",
                "similarity",
                "split_queries_on_whitespace",
                "store",
            ],
            FieldType::Long
            | FieldType::Integer
            | FieldType::Short
            | FieldType::Byte
            | FieldType::Double
            | FieldType::Float
            | FieldType::HalfFloat => NUMERIC_PARAMS,
            FieldType::ScaledFloat => &[
                "boost",
                "coerce",
                "doc_values",
                "ignore_malformed",
                "index",
                "null_value",
                "store",
                "scaling_factor",
            ],
            FieldType::Date => &[
                "boost",
                "doc_values",
                "format",
                "locale",
                "ignore_malformed",
                "index",
                "null_value",
                "store",
                "print_format",
            ],
            FieldType::Boolean => &["boost", "doc_values", "index", "null_value", "store"],
            FieldType::Ip => &[
                "boost",
                "doc_values",
                "ignore_malformed",
                "index",
                "null_value",
                "store",
            ],
            FieldType::GeoPoint => &[
                "ignore_malformed",
                "ignore_z_value",
                "null_value",
                "store",
                "doc_values",
                "index",
            ],
            // `fields` and `copy_to` are refused by `FieldMapping::parse` with their own
            // message: a range value is an object that other fields could not take
            FieldType::IntegerRange
            | FieldType::LongRange
            | FieldType::FloatRange
            | FieldType::DoubleRange
            | FieldType::DateRange
            | FieldType::IpRange => &[
                "boost",
                "coerce",
                "doc_values",
                "format",
                "ignore_malformed",
                "index",
                "locale",
                "store",
            ],
            FieldType::Object => return vec!["properties", "dynamic", "enabled"],
            FieldType::Nested => {
                return vec![
                    "properties",
                    "dynamic",
                    "enabled",
                    "include_in_parent",
                    "include_in_root",
                ]
            }
            FieldType::Completion => &[
                "analyzer",
                "search_analyzer",
                "preserve_separators",
                "preserve_position_increments",
                "max_input_length",
                "contexts",
            ],
            FieldType::Percolator => return Vec::new(),
            FieldType::KnnVector => {
                return vec![
                    "dimension",
                    "data_type",
                    "space_type",
                    "method",
                    "mode",
                    "compression_level",
                    "meta",
                ]
            }
        };
        let mut all: Vec<&'static str> = specific.to_vec();
        all.extend_from_slice(COMMON_LEAF);
        all
    }
}

/// How a mapping reacts to fields it does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dynamic {
    /// Add them to the mapping.
    True,
    /// Keep them in `_source` only.
    False,
    /// Reject the document.
    Strict,
}

impl Dynamic {
    pub fn parse(value: &Value, field: &str) -> Result<Dynamic> {
        match value {
            Value::Bool(true) => Ok(Dynamic::True),
            Value::Bool(false) => Ok(Dynamic::False),
            Value::String(s) if s == "true" => Ok(Dynamic::True),
            Value::String(s) if s == "false" => Ok(Dynamic::False),
            Value::String(s) if s == "strict" => Ok(Dynamic::Strict),
            other => Err(Error::illegal_argument(format!(
                "Could not convert [{field}.dynamic] to boolean"
            ))
            .caused_by(Error::illegal_argument(format!(
                "Failed to parse value [{}] as only [true] or [false] are allowed.",
                crate::mapping::plain(other)
            )))),
        }
    }

    pub fn to_json(self) -> Value {
        match self {
            Dynamic::True => Value::String("true".into()),
            Dynamic::False => Value::String("false".into()),
            Dynamic::Strict => Value::String("strict".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_and_rejects_unknown_types() {
        assert_eq!(
            FieldType::parse("scaled_float", "f").unwrap(),
            FieldType::ScaledFloat
        );
        let e = FieldType::parse("bogus", "f").unwrap_err();
        assert_eq!(
            e.reason(),
            "No handler for type [bogus] declared on field [f]"
        );
        assert_eq!(FieldType::parse("nested", "f").unwrap(), FieldType::Nested);
        let e = FieldType::parse("join", "f").unwrap_err();
        assert!(e.reason().contains("not supported by Tessera"));
        assert_eq!(
            FieldType::parse("double_range", "f").unwrap(),
            FieldType::DoubleRange
        );
        assert!(FieldType::DateRange.is_range() && !FieldType::Date.is_range());
    }

    #[test]
    fn keyword_accepts_ignore_above_but_not_analyzer() {
        let params = FieldType::Keyword.allowed_params();
        assert!(params.contains(&"ignore_above"));
        assert!(!params.contains(&"analyzer"));
        assert!(FieldType::Text.allowed_params().contains(&"fields"));
    }

    #[test]
    fn dynamic_values() {
        assert_eq!(
            Dynamic::parse(&Value::String("strict".into()), "_doc").unwrap(),
            Dynamic::Strict
        );
        assert_eq!(
            Dynamic::parse(&Value::Bool(false), "_doc").unwrap(),
            Dynamic::False
        );
        assert!(Dynamic::parse(&Value::String("maybe".into()), "_doc").is_err());
    }
}
