//! `fuzzy`: terms within an edit distance.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{
    as_bool, as_f32, as_string, as_u32, parse_fuzziness, parse_fuzzy_rewrite, single_field, unknown,
};
use crate::ast::{Fuzziness, QueryAst};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (field, spec, outer_boost) = single_field("fuzzy", body)?;
    let mut value = None;
    let mut boost = outer_boost.unwrap_or(1.0);
    let mut fuzziness = Fuzziness::Auto { low: 3, high: 6 };
    let mut prefix_length = 0;
    let mut transpositions = true;
    let mut max_expansions = crate::compile::DEFAULT_MAX_EXPANSIONS;
    // top_terms_blended_freqs_N: N terms, whatever max_expansions says
    let mut rewrite_size = None;
    match spec {
        Value::Object(options) => {
            for (key, v) in options {
                match key.as_str() {
                    "value" => value = Some(as_string("fuzzy", key, v)?),
                    "fuzziness" => fuzziness = parse_fuzziness(v)?,
                    "prefix_length" => prefix_length = as_u32("fuzzy", key, v)?,
                    "transpositions" => transpositions = as_bool("fuzzy", key, v)?,
                    "boost" => boost = as_f32("fuzzy", key, v)?,
                    "max_expansions" => {
                        max_expansions = as_u32("fuzzy", key, v)?;
                        if max_expansions == 0 {
                            return Err(Error::illegal_argument(
                                "[max_expansions] must be greater than 0",
                            ));
                        }
                    }
                    "rewrite" => rewrite_size = Some(parse_fuzzy_rewrite("fuzzy", key, v)?),
                    "_name" => {}
                    _ => return Err(unknown("fuzzy", key)),
                }
            }
        }
        other => value = Some(as_string("fuzzy", field, other)?),
    }
    let value = value.ok_or_else(|| Error::parsing("[fuzzy] query requires a [value]"))?;
    let max_expansions = rewrite_size.unwrap_or(max_expansions);
    Ok(QueryAst::Fuzzy {
        field: field.clone(),
        value,
        fuzziness,
        prefix_length,
        transpositions,
        max_expansions,
        boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        let q =
            parse(&json!({"user": {"value": "ki", "fuzziness": 1, "prefix_length": 1}})).unwrap();
        assert!(matches!(
            q,
            QueryAst::Fuzzy {
                fuzziness: Fuzziness::Edits(1),
                prefix_length: 1,
                ..
            }
        ));
        assert!(parse(&json!({"user": {"fuzziness": 1}})).is_err());
    }
}
