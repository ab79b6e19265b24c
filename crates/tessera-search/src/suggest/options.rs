//! Reading a suggester's options as OpenSearch's parsers coerce them: numbers from numeric
//! strings (truncated where an integer is asked for), enum names in any case. `what` names
//! the object in errors (`suggester[term]`, `[direct_generator]`…).

use serde_json::Value;
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::analysis::ANALYZERS;

pub fn string_option(what: &str, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        other => Err(unsupported(what, key, other)),
    }
}

/// An enum option's value, upper-cased as OpenSearch resolves it.
pub fn enum_option(what: &str, key: &str, value: &Value) -> Result<String> {
    Ok(string_option(what, key, value)?.to_uppercase())
}

pub fn no_enum_constant(class: &str, value: &str) -> Error {
    Error::illegal_argument(format!(
        "No enum constant org.opensearch.search.suggest.{class}.{value}"
    ))
}

/// A number option (a number, or a numeric string).
pub fn number_option(what: &str, key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
        Value::String(text) => text.trim().parse::<f64>().map_err(|_| {
            Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{text}\""),
            )
        }),
        other => Err(unsupported(what, key, other)),
    }
}

pub fn int_option(what: &str, key: &str, value: &Value) -> Result<i64> {
    Ok(number_option(what, key, value)?.trunc() as i64)
}

pub fn float_option(what: &str, key: &str, value: &Value) -> Result<f32> {
    Ok(number_option(what, key, value)? as f32)
}

/// A boolean option: `true`/`false`, also as strings.
pub fn bool_option(what: &str, key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(text) if text == "true" => Ok(true),
        Value::String(text) if text == "false" => Ok(false),
        Value::String(text) => Err(Error::illegal_argument(format!(
            "Failed to parse value [{text}] as only [true] or [false] are allowed."
        ))),
        other => Err(unsupported(what, key, other)),
    }
}

fn unsupported(what: &str, key: &str, value: &Value) -> Error {
    Error::parsing(format!(
        "{what} [{key}] doesn't support values of type: {}",
        token(value)
    ))
}

/// The options each shard returns: `shard_size`, else `size` (at least 5).
pub fn shard_size(size: usize, shard_size: Option<i64>) -> Result<usize> {
    match shard_size {
        Some(n) if n <= 0 => Err(Error::illegal_argument(format!(
            "ShardSize must be positive but was: {n}"
        ))),
        Some(n) => Ok(n as usize),
        None => Ok(size.max(5)),
    }
}

/// Refuses an analyzer the node does not know.
pub fn check_analyzer(name: Option<&str>) -> Result<()> {
    match name {
        Some(name) if !ANALYZERS.contains(&name) => Err(Error::illegal_argument(format!(
            "analyzer [{name}] doesn't exists"
        ))),
        _ => Ok(()),
    }
}
