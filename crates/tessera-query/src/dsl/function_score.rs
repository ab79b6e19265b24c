//! `function_score`: a query whose score is combined with functions of each document — a
//! weight, a field's value (`field_value_factor`) or a decay with the distance of a field's
//! value from an origin (`gauss`, `exp`, `linear`). Functions come in a `functions` array
//! (each with an optional `filter` and `weight`) or as one function at the top level, never
//! both, as in OpenSearch. A `script_score` function is a Painless script (`dsl::script`).

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use super::{as_f32, object, parse_query};
use crate::ast::{
    DecayCurve, DecayFunction, FieldValueModifier, FilterFunction, FunctionBoostMode,
    FunctionScoreMode, FunctionScoreQuery, MultiValueMode, QueryAst, ScoreFunction,
};

const QUERY: &str = "function_score";

/// The score functions OpenSearch knows, by name.
const FUNCTIONS: &[&str] = &[
    "weight",
    "field_value_factor",
    "gauss",
    "exp",
    "linear",
    "random_score",
    "script_score",
];

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut query = None;
    let mut functions: Option<Vec<FilterFunction>> = None;
    let mut single: Option<(Option<f32>, Option<ScoreFunction>)> = None;
    let mut score_mode = FunctionScoreMode::Multiply;
    let mut boost_mode = FunctionBoostMode::Multiply;
    let mut max_boost = f32::MAX;
    let mut min_score = None;
    let mut boost = 1.0;
    for (key, value) in object(QUERY, body)? {
        match key.as_str() {
            "query" => query = Some(parse_query(value)?),
            "boost" => boost = as_f32(QUERY, key, value)?,
            "max_boost" => max_boost = as_f32(QUERY, key, value)?,
            "min_score" => min_score = Some(as_f32(QUERY, key, value)?),
            "score_mode" => score_mode = score_mode_of(value)?,
            "boost_mode" => boost_mode = boost_mode_of(value)?,
            "_name" => {}
            "functions" => {
                if single.is_some() {
                    return Err(malformed(
                        "you can either define [functions] array or a single function, not both",
                    ));
                }
                let Value::Array(items) = value else {
                    return Err(malformed("[functions] must be an array of objects"));
                };
                functions = Some(
                    items
                        .iter()
                        .map(parse_filter_function)
                        .collect::<Result<_>>()?,
                );
            }
            name if FUNCTIONS.contains(&name) => {
                if functions.is_some() {
                    return Err(Error::parsing(format!(
                        "failed to parse [{QUERY}] query. [you can either define [functions] array or a single function, not both. already found [functions] array, now encountering [{name}].]"
                    )));
                }
                let (weight, function) = single.get_or_insert((None, None));
                if name == "weight" {
                    *weight = Some(as_f32(QUERY, key, value)?);
                } else {
                    if function.is_some() {
                        return Err(malformed(
                            "you can either define [functions] array or a single function, not both",
                        ));
                    }
                    *function = Some(parse_function(name, value)?);
                }
            }
            other => {
                return Err(Error::parsing(format!(
                    "[{QUERY}] query does not support [{other}]"
                )))
            }
        }
    }
    let functions = match (functions, single) {
        (Some(functions), _) => functions,
        (None, Some((weight, function))) => vec![FilterFunction {
            filter: None,
            weight,
            function: function.unwrap_or(ScoreFunction::Weight),
        }],
        (None, None) => Vec::new(),
    };
    Ok(QueryAst::FunctionScore(Box::new(FunctionScoreQuery {
        query: query.unwrap_or_else(QueryAst::match_all),
        functions,
        score_mode,
        boost_mode,
        max_boost,
        min_score,
        boost,
    })))
}

fn malformed(reason: &str) -> Error {
    Error::parsing(format!("failed to parse [{QUERY}] query. [{reason}]"))
}

/// One element of `functions`: `filter`, `weight` and at most one function.
fn parse_filter_function(item: &Value) -> Result<FilterFunction> {
    let Value::Object(map) = item else {
        return Err(malformed("[functions] must be an array of objects"));
    };
    let mut filter = None;
    let mut weight = None;
    let mut function = None;
    for (key, value) in map {
        match key.as_str() {
            "filter" => filter = Some(parse_query(value)?),
            "weight" => weight = Some(as_f32(QUERY, key, value)?),
            name if FUNCTIONS.contains(&name) => {
                if function.is_some() {
                    return Err(malformed(&format!(
                        "failed to parse function_score functions. already found [{}], now encountering [{name}].",
                        function_name(function.as_ref())
                    )));
                }
                function = Some(parse_function(name, value)?);
            }
            other => {
                return Err(Error::parsing(format!(
                    "[{QUERY}] query does not support [{other}] in [functions]"
                )))
            }
        }
    }
    if function.is_none() && weight.is_none() {
        return Err(malformed(
            "an entry in functions list is missing a function.",
        ));
    }
    Ok(FilterFunction {
        filter,
        weight,
        function: function.unwrap_or(ScoreFunction::Weight),
    })
}

fn function_name(function: Option<&ScoreFunction>) -> &'static str {
    match function {
        Some(ScoreFunction::FieldValueFactor { .. }) => "field_value_factor",
        Some(ScoreFunction::Script(_)) => "script_score",
        Some(ScoreFunction::Random { .. }) => "random_score",
        Some(ScoreFunction::Decay(decay)) => match decay.curve {
            DecayCurve::Gauss => "gauss",
            DecayCurve::Exp => "exp",
            DecayCurve::Linear => "linear",
        },
        _ => "weight",
    }
}

fn parse_function(name: &str, body: &Value) -> Result<ScoreFunction> {
    match name {
        "field_value_factor" => parse_field_value_factor(body),
        "gauss" => parse_decay(DecayCurve::Gauss, name, body),
        "exp" => parse_decay(DecayCurve::Exp, name, body),
        "linear" => parse_decay(DecayCurve::Linear, name, body),
        "script_score" => Ok(ScoreFunction::Script(Box::new(
            super::script::parse_script_function(body)?,
        ))),
        "random_score" => parse_random(body),
        other => Err(Error::parsing(format!(
            "[{other}] function of the [{QUERY}] query is not supported by Tessera"
        ))),
    }
}

/// `random_score`: a seed (an int, a long folded as Java's `Long.hashCode`, or a string's
/// `hashCode`) and the field whose values it hashes.
fn parse_random(body: &Value) -> Result<ScoreFunction> {
    const NAME: &str = "random_score";
    let map = function_object(NAME, body)?;
    let mut seed = None;
    let mut field = None;
    for (key, value) in map {
        match (key.as_str(), value) {
            ("seed", Value::Number(n)) => {
                seed = Some(match n.as_i64() {
                    Some(v) => match i32::try_from(v) {
                        Ok(v) => v,
                        Err(_) => tessera_common::java_hash::long_hash(v),
                    },
                    None => {
                        return Err(Error::parsing(format!(
                            "{NAME} seed must be an int, long or string, not 'VALUE_NUMBER'"
                        )))
                    }
                })
            }
            ("seed", Value::String(s)) => seed = Some(tessera_common::java_hash::string_hash(s)),
            ("seed", other) => {
                return Err(Error::parsing(format!(
                    "{NAME} seed must be an int/long or string, not '{}'",
                    super::token(other)
                )))
            }
            ("field", value) if !value.is_object() && !value.is_array() => {
                field = Some(match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
            ("_name", _) => {}
            (other, _) => {
                return Err(Error::parsing(format!(
                    "{NAME} query does not support [{other}]"
                )))
            }
        }
    }
    Ok(ScoreFunction::Random { seed, field })
}

fn parse_field_value_factor(body: &Value) -> Result<ScoreFunction> {
    const NAME: &str = "field_value_factor";
    let map = function_object(NAME, body)?;
    let mut field = None;
    let mut factor = 1.0;
    let mut modifier = FieldValueModifier::None;
    let mut missing = None;
    for (key, value) in map {
        match key.as_str() {
            "field" => field = Some(text(NAME, key, value)?),
            "factor" => factor = number(NAME, key, value)?,
            "missing" => missing = Some(number(NAME, key, value)?),
            "modifier" => modifier = modifier_of(&text(NAME, key, value)?)?,
            other => {
                return Err(Error::parsing(format!(
                    "{NAME} query does not support [{other}]"
                )))
            }
        }
    }
    let field =
        field.ok_or_else(|| Error::parsing(format!("[{NAME}] required field 'field' missing")))?;
    Ok(ScoreFunction::FieldValueFactor {
        field,
        factor,
        modifier,
        missing,
    })
}

fn parse_decay(curve: DecayCurve, name: &str, body: &Value) -> Result<ScoreFunction> {
    let map = function_object(name, body)?;
    let mut target: Option<(&String, &Map<String, Value>)> = None;
    let mut multi_value_mode = MultiValueMode::Min;
    for (key, value) in map {
        match key.as_str() {
            "multi_value_mode" => {
                multi_value_mode = match text(name, key, value)?.to_ascii_lowercase().as_str() {
                    "min" => MultiValueMode::Min,
                    "max" => MultiValueMode::Max,
                    "avg" => MultiValueMode::Avg,
                    "sum" => MultiValueMode::Sum,
                    other => {
                        return Err(Error::illegal_argument(format!(
                            "Unknown MultiValueMode [{other}]"
                        )))
                    }
                }
            }
            _ => {
                let Value::Object(options) = value else {
                    return Err(Error::parsing(format!(
                        "[{name}] malformed score function score parameters."
                    )));
                };
                if target.is_some() {
                    return Err(Error::parsing(format!(
                        "[{name}] query does not support multiple fields"
                    )));
                }
                target = Some((key, options));
            }
        }
    }
    let Some((field, options)) = target else {
        return Err(Error::parsing(format!(
            "[{name}] malformed score function score parameters."
        )));
    };
    let (mut origin, mut scale, mut offset, mut decay) = (None, None, None, 0.5);
    for (key, value) in options {
        match key.as_str() {
            "origin" => origin = Some(value.clone()),
            "scale" => scale = Some(value.clone()),
            "offset" => offset = Some(value.clone()),
            "decay" => decay = number(name, key, value)?,
            other => {
                return Err(Error::parsing(format!(
                    "[{name}] query does not support [{other}]"
                )))
            }
        }
    }
    if !(decay > 0.0 && decay < 1.0) {
        return Err(Error::illegal_argument(format!(
            "decay must be in the range [0..1]. found [{decay}]"
        )));
    }
    Ok(ScoreFunction::Decay(Box::new(DecayFunction {
        curve,
        field: field.clone(),
        origin,
        scale,
        offset,
        decay,
        multi_value_mode,
    })))
}

fn function_object<'a>(name: &str, body: &'a Value) -> Result<&'a Map<String, Value>> {
    body.as_object().ok_or_else(|| {
        Error::parsing(format!(
            "failed to parse [{QUERY}] query. field [{name}] is not supported"
        ))
    })
}

fn text(function: &str, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(Error::parsing(format!(
            "[{function}] failed to parse field [{key}]"
        ))),
    }
}

fn number(function: &str, key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        Error::parsing(format!(
            "[{function}] failed to parse field [{key}]: [{value}] is not a number"
        ))
    })
}

fn modifier_of(name: &str) -> Result<FieldValueModifier> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "none" => FieldValueModifier::None,
        "log" => FieldValueModifier::Log,
        "log1p" => FieldValueModifier::Log1p,
        "log2p" => FieldValueModifier::Log2p,
        "ln" => FieldValueModifier::Ln,
        "ln1p" => FieldValueModifier::Ln1p,
        "ln2p" => FieldValueModifier::Ln2p,
        "square" => FieldValueModifier::Square,
        "sqrt" => FieldValueModifier::Sqrt,
        "reciprocal" => FieldValueModifier::Reciprocal,
        _ => {
            return Err(Error::illegal_argument(format!(
                "No enum constant org.opensearch.common.lucene.search.function.FieldValueFactorFunction.Modifier.{}",
                name.to_ascii_uppercase()
            )))
        }
    })
}

fn enum_text(value: &Value) -> String {
    value
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| value.to_string())
}

fn score_mode_of(value: &Value) -> Result<FunctionScoreMode> {
    let name = enum_text(value);
    Ok(match name.to_ascii_lowercase().as_str() {
        "multiply" => FunctionScoreMode::Multiply,
        "sum" => FunctionScoreMode::Sum,
        "avg" => FunctionScoreMode::Avg,
        "first" => FunctionScoreMode::First,
        "max" => FunctionScoreMode::Max,
        "min" => FunctionScoreMode::Min,
        _ => {
            return Err(Error::illegal_argument(format!(
                "No enum constant org.opensearch.common.lucene.search.function.FunctionScoreQuery.ScoreMode.{}",
                name.to_ascii_uppercase()
            )))
        }
    })
}

fn boost_mode_of(value: &Value) -> Result<FunctionBoostMode> {
    let name = enum_text(value);
    Ok(match name.to_ascii_lowercase().as_str() {
        "multiply" => FunctionBoostMode::Multiply,
        "replace" => FunctionBoostMode::Replace,
        "sum" => FunctionBoostMode::Sum,
        "avg" => FunctionBoostMode::Avg,
        "max" => FunctionBoostMode::Max,
        "min" => FunctionBoostMode::Min,
        _ => {
            return Err(Error::illegal_argument(format!(
                "No enum constant org.opensearch.common.lucene.search.function.CombineFunction.{}",
                name.to_ascii_uppercase()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> FunctionScoreQuery {
        match parse(&body).unwrap() {
            QueryAst::FunctionScore(query) => *query,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_single_function_at_the_top_level_takes_the_weight_beside_it() {
        let query = parsed(json!({
            "field_value_factor": {"field": "n", "factor": 1.2, "modifier": "log1p", "missing": 1},
            "weight": 2, "boost_mode": "sum", "max_boost": 3
        }));
        assert_eq!(query.query, QueryAst::match_all());
        assert_eq!(query.functions.len(), 1);
        assert_eq!(query.functions[0].weight, Some(2.0));
        assert_eq!(
            query.functions[0].function,
            ScoreFunction::FieldValueFactor {
                field: "n".into(),
                factor: 1.2,
                modifier: FieldValueModifier::Log1p,
                missing: Some(1.0)
            }
        );
        assert_eq!(query.boost_mode, FunctionBoostMode::Sum);
        assert_eq!(query.max_boost, 3.0);
    }

    #[test]
    fn random_score_seeds_are_javas_ints() {
        let random = |body: Value| {
            parsed(json!({"random_score": body})).functions[0]
                .function
                .clone()
        };
        assert_eq!(
            random(json!({"seed": 10, "field": "_seq_no"})),
            ScoreFunction::Random {
                seed: Some(10),
                field: Some("_seq_no".into())
            }
        );
        // a long folds its halves, a string is its hashCode
        assert_eq!(
            random(json!({"seed": 1_i64 << 32})),
            ScoreFunction::Random {
                seed: Some(1),
                field: None
            }
        );
        assert_eq!(
            random(json!({"seed": "abc", "_name": "r"})),
            ScoreFunction::Random {
                seed: Some(96354),
                field: None
            }
        );
        let error = |body: Value| {
            parse(&json!({"random_score": body}))
                .unwrap_err()
                .reason()
                .to_string()
        };
        assert_eq!(
            error(json!({"seed": 1.5})),
            "random_score seed must be an int, long or string, not 'VALUE_NUMBER'"
        );
        assert_eq!(
            error(json!({"seed": true})),
            "random_score seed must be an int/long or string, not 'VALUE_BOOLEAN'"
        );
        assert_eq!(
            error(json!({"seed": 1, "x": 1})),
            "random_score query does not support [x]"
        );
    }

    #[test]
    fn functions_take_filters_and_decays() {
        let query = parsed(json!({
            "query": {"match": {"t": "quick"}},
            "functions": [
                {"filter": {"term": {"k": "a"}}, "weight": 3},
                {"gauss": {"d": {"origin": "2024-01-05", "scale": "10d"}, "multi_value_mode": "max"}}
            ],
            "score_mode": "sum", "min_score": 1.5
        }));
        assert_eq!(query.functions[0].function, ScoreFunction::Weight);
        assert!(query.functions[0].filter.is_some());
        let ScoreFunction::Decay(decay) = &query.functions[1].function else {
            panic!()
        };
        assert_eq!(
            (decay.curve, decay.decay, decay.multi_value_mode),
            (DecayCurve::Gauss, 0.5, MultiValueMode::Max)
        );
        assert_eq!(
            (query.score_mode, query.min_score),
            (FunctionScoreMode::Sum, Some(1.5))
        );
    }

    #[test]
    fn malformed_bodies_get_opensearchs_errors() {
        let error = parse(&json!({"functions": [{"weight": 2}], "weight": 3})).unwrap_err();
        assert!(error
            .reason()
            .contains("already found [functions] array, now encountering [weight]"));
        let error = parse(&json!({"score_mode": "bad"})).unwrap_err();
        assert_eq!(error.kind(), "illegal_argument_exception");
        assert!(
            error.reason().ends_with("ScoreMode.BAD"),
            "{}",
            error.reason()
        );
        assert_eq!(
            parse(&json!({"foo": {}})).unwrap_err().kind(),
            "parsing_exception"
        );
        let error = parse(&json!({"random_score": 5})).unwrap_err();
        assert_eq!(
            error.reason(),
            "failed to parse [function_score] query. field [random_score] is not supported"
        );
        assert!(parse(&json!({"functions": [{"filter": {"match_all": {}}}]})).is_err());
        assert!(parse(&json!({"gauss": {"n": {"origin": 0, "scale": 1, "decay": 1.5}}})).is_err());
    }
}
