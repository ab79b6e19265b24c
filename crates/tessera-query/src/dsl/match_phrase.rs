//! `match_phrase` and `match_phrase_prefix`.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_string, as_u32, parse_zero_terms, single_field, unknown};
use crate::ast::{QueryAst, ZeroTermsQuery};

struct Phrase {
    field: String,
    text: String,
    slop: u32,
    analyzer: Option<String>,
    zero_terms: ZeroTermsQuery,
    max_expansions: u32,
    boost: f32,
}

fn parse_common(name: &str, body: &Value, prefix: bool) -> Result<Phrase> {
    let (field, spec, outer_boost) = single_field(name, body)?;
    let mut phrase = Phrase {
        field: field.clone(),
        text: String::new(),
        slop: 0,
        analyzer: None,
        zero_terms: ZeroTermsQuery::None,
        max_expansions: 50,
        boost: outer_boost.unwrap_or(1.0),
    };
    match spec {
        Value::Object(options) => {
            let mut text = None;
            for (key, v) in options {
                match key.as_str() {
                    "query" => text = Some(as_string(name, key, v)?),
                    "slop" => phrase.slop = as_u32(name, key, v)?,
                    "analyzer" => phrase.analyzer = Some(as_string(name, key, v)?),
                    "zero_terms_query" => phrase.zero_terms = parse_zero_terms(v)?,
                    "max_expansions" if prefix => phrase.max_expansions = as_u32(name, key, v)?,
                    "boost" => phrase.boost = as_f32(name, key, v)?,
                    "_name" => {}
                    _ => return Err(unknown(name, key)),
                }
            }
            phrase.text =
                text.ok_or_else(|| Error::parsing(format!("[{name}] requires query value")))?;
        }
        other => phrase.text = as_string(name, field, other)?,
    }
    Ok(phrase)
}

pub fn parse_phrase(body: &Value) -> Result<QueryAst> {
    let p = parse_common("match_phrase", body, false)?;
    Ok(QueryAst::MatchPhrase {
        field: p.field,
        query: p.text,
        slop: p.slop,
        analyzer: p.analyzer,
        zero_terms_query: p.zero_terms,
        boost: p.boost,
    })
}

pub fn parse_phrase_prefix(body: &Value) -> Result<QueryAst> {
    let p = parse_common("match_phrase_prefix", body, true)?;
    Ok(QueryAst::MatchPhrasePrefix {
        field: p.field,
        query: p.text,
        slop: p.slop,
        max_expansions: p.max_expansions,
        analyzer: p.analyzer,
        boost: p.boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        let q = parse_phrase(&json!({"title": {"query": "quick fox", "slop": 2}})).unwrap();
        assert!(matches!(q, QueryAst::MatchPhrase { slop: 2, .. }));
        assert!(parse_phrase(&json!({"title": {"query": "x", "max_expansions": 3}})).is_err());
        assert!(matches!(
            parse_phrase_prefix(&json!({"title": {"query": "qui", "max_expansions": 3}})).unwrap(),
            QueryAst::MatchPhrasePrefix {
                max_expansions: 3,
                ..
            }
        ));
    }
}
