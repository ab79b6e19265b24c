//! Bucket aggregations.

use serde_json::Value;

pub mod auto_date_histogram;
pub mod composite;
pub mod date_histogram;
pub mod date_range;
pub mod filter;
pub mod histogram;
pub mod missing;
pub mod multi_terms;
pub mod order;
pub mod range;
pub mod range_histogram;
pub mod significant_terms;
pub mod terms;

/// The JSON token name OpenSearch uses in parse errors.
pub(crate) fn token(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "START_OBJECT",
        Value::Array(_) => "START_ARRAY",
        Value::String(_) => "VALUE_STRING",
        Value::Number(_) => "VALUE_NUMBER",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Null => "VALUE_NULL",
    }
}
