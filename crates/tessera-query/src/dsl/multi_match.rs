//! `multi_match`: a `match` over several fields (patterns and boosts allowed).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{
    as_bool, as_f32, as_scalar, as_string, as_u32, object, parse_fuzziness, parse_fuzzy_rewrite,
    parse_minimum_should_match, parse_operator, parse_zero_terms, unknown,
};
use crate::ast::{FieldPattern, MultiMatchQuery, MultiMatchType, QueryAst};

pub fn parse_type(value: &Value) -> Result<MultiMatchType> {
    Ok(
        match value
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase()
            .as_str()
        {
            "best_fields" => MultiMatchType::BestFields,
            "most_fields" => MultiMatchType::MostFields,
            "cross_fields" => MultiMatchType::CrossFields,
            "phrase" => MultiMatchType::Phrase,
            "phrase_prefix" => MultiMatchType::PhrasePrefix,
            "bool_prefix" => MultiMatchType::BoolPrefix,
            other => {
                return Err(Error::parsing(format!(
                    "failed to parse [multi_match] query type [{other}]. unknown type."
                )))
            }
        },
    )
}

/// Field lists: `"title"` or `["title^2", "body"]`.
pub fn parse_fields(query: &str, value: &Value) -> Result<Vec<FieldPattern>> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| {
            let spec = as_string(query, "fields", item)?;
            FieldPattern::parse(&spec).map_err(Error::parsing)
        })
        .collect()
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut query = MultiMatchQuery::new(Vec::new(), MultiMatchType::BestFields);
    let mut text = None;
    // top_terms_blended_freqs_N: N terms, whatever max_expansions says
    let mut rewrite_size = None;
    for (key, v) in object("multi_match", body)? {
        match key.as_str() {
            "query" => text = Some(as_scalar("multi_match", key, v)?),
            "fields" => query.fields = parse_fields("multi_match", v)?,
            "type" => query.kind = parse_type(v)?,
            "operator" => query.operator = parse_operator("multi_match", v)?,
            "minimum_should_match" => {
                query.minimum_should_match = Some(parse_minimum_should_match(v)?)
            }
            "tie_breaker" => query.tie_breaker = Some(as_f32("multi_match", key, v)?),
            "fuzziness" => query.fuzziness = Some(parse_fuzziness(v)?),
            "prefix_length" => query.prefix_length = as_u32("multi_match", key, v)?,
            "slop" => query.slop = as_u32("multi_match", key, v)?,
            "analyzer" => query.analyzer = Some(as_string("multi_match", key, v)?),
            "zero_terms_query" => query.zero_terms_query = parse_zero_terms(v)?,
            "lenient" => query.lenient = as_bool("multi_match", key, v)?,
            "boost" => query.boost = as_f32("multi_match", key, v)?,
            "max_expansions" => {
                query.max_expansions = as_u32("multi_match", key, v)?;
                if query.max_expansions == 0 {
                    return Err(Error::illegal_argument(
                        "[max_expansions] must be greater than 0",
                    ));
                }
            }
            "fuzzy_transpositions" => query.fuzzy_transpositions = as_bool("multi_match", key, v)?,
            "fuzzy_rewrite" => rewrite_size = Some(parse_fuzzy_rewrite("multi_match", key, v)?),
            "auto_generate_synonyms_phrase_query" | "cutoff_frequency" | "_name" => {}
            _ => return Err(unknown("multi_match", key)),
        }
    }
    if let Some(n) = rewrite_size {
        query.max_expansions = n;
    }
    query.query = text.ok_or_else(|| Error::parsing("[multi_match] requires query value"))?;
    if query.fuzziness.is_some()
        && matches!(
            query.kind,
            MultiMatchType::CrossFields | MultiMatchType::Phrase | MultiMatchType::PhrasePrefix
        )
    {
        return Err(Error::parsing(format!(
            "Fuzziness not allowed for type [{}]",
            type_name(query.kind)
        )));
    }
    Ok(QueryAst::MultiMatch(query))
}

fn type_name(kind: MultiMatchType) -> &'static str {
    match kind {
        MultiMatchType::BestFields => "best_fields",
        MultiMatchType::MostFields => "most_fields",
        MultiMatchType::CrossFields => "cross_fields",
        MultiMatchType::Phrase => "phrase",
        MultiMatchType::PhrasePrefix => "phrase_prefix",
        MultiMatchType::BoolPrefix => "bool_prefix",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        let QueryAst::MultiMatch(q) =
            parse(&json!({"query": "x", "fields": ["title^3", "body"], "type": "most_fields"}))
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            q.fields[0],
            FieldPattern {
                pattern: "title".into(),
                boost: 3.0
            }
        );
        assert_eq!(q.kind, MultiMatchType::MostFields);
        assert!(parse(&json!({"query": "x", "type": "bogus"})).is_err());
        assert!(parse(&json!({"fields": ["a"]})).is_err());
        assert!(parse(&json!({"query": "x", "type": "phrase", "fuzziness": 1})).is_err());
    }
}
