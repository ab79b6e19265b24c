//! Highlighting: the `highlight` option of a search.
//!
//! Each highlighted field's values (from `_source`) are analyzed the way the field is indexed;
//! tokens the query looks for are wrapped in the pre/post tags. Like OpenSearch's default
//! (unified) highlighter, fragments are the sentences holding matches, in order of appearance;
//! `number_of_fragments: 0` returns whole values. Fields without a match are left out.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_mapping::analysis;
use tessera_mapping::{FieldTable, LeafKind};
use tessera_query::highlight_terms::HighlightTerm;

use crate::source_fields::values_at;

/// Options of one highlighted field (or the global defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldOptions {
    pub pre_tags: Vec<String>,
    pub post_tags: Vec<String>,
    pub number_of_fragments: usize,
    pub fragment_size: usize,
    pub require_field_match: bool,
}

impl Default for FieldOptions {
    fn default() -> Self {
        FieldOptions {
            pre_tags: vec!["<em>".into()],
            post_tags: vec!["</em>".into()],
            number_of_fragments: 5,
            fragment_size: 100,
            require_field_match: true,
        }
    }
}

/// A parsed `highlight` request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HighlightSpec {
    pub fields: Vec<(String, FieldOptions)>,
}

fn strings(value: &Value) -> Result<Vec<String>> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .ok_or_else(|| Error::parsing("[highlight] tags must be strings"))
            })
            .collect(),
        _ => Err(Error::parsing("[highlight] tags must be strings")),
    }
}

fn apply(options: &mut FieldOptions, map: &Map<String, Value>) -> Result<()> {
    for (key, value) in map {
        match key.as_str() {
            "pre_tags" => options.pre_tags = strings(value)?,
            "post_tags" => options.post_tags = strings(value)?,
            "number_of_fragments" => {
                options.number_of_fragments = value.as_u64().ok_or_else(|| {
                    Error::parsing("[highlight] [number_of_fragments] must be a number")
                })? as usize
            }
            "fragment_size" => {
                options.fragment_size = value
                    .as_u64()
                    .ok_or_else(|| Error::parsing("[highlight] [fragment_size] must be a number"))?
                    as usize
            }
            "require_field_match" => options.require_field_match = value.as_bool().unwrap_or(true),
            "tags_schema" if value.as_str() == Some("styled") => {
                options.pre_tags = vec!["<em class=\"hlt\">".into()];
                options.post_tags = vec!["</em>".into()];
            }
            "type"
            | "order"
            | "encoder"
            | "boundary_scanner"
            | "boundary_chars"
            | "boundary_max_scan"
            | "fragmenter"
            | "no_match_size"
            | "phrase_limit"
            | "highlight_query"
            | "matched_fields"
            | "fragment_offset"
            | "force_source"
            | "tags_schema"
            | "boundary_scanner_locale"
            | "max_analyzed_offset" => {}
            "fields" => {}
            other => {
                return Err(Error::parsing(format!(
                    "[highlight] unknown field [{other}]"
                )))
            }
        }
    }
    Ok(())
}

/// Parses the `highlight` object of a search request.
pub fn parse_highlight(value: &Value) -> Result<HighlightSpec> {
    let Value::Object(map) = value else {
        return Err(Error::parsing("[highlight] must be an object"));
    };
    let mut defaults = FieldOptions::default();
    apply(&mut defaults, map)?;
    let mut spec = HighlightSpec::default();
    let entries: Vec<(String, Value)> = match map.get("fields") {
        Some(Value::Object(fields)) => fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| item.as_object())
            .flat_map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect(),
        _ => return Err(Error::parsing("[highlight] requires [fields]")),
    };
    for (field, options) in entries {
        let mut field_options = defaults.clone();
        if let Value::Object(o) = &options {
            apply(&mut field_options, o)?;
        }
        spec.fields.push((field, field_options));
    }
    Ok(spec)
}

/// Sentence boundaries: after `.`, `!` or `?` followed by whitespace.
fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_some_and(|b| b.is_ascii_whitespace())
        {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out
}

fn highlight_value(
    text: &str,
    analyzer: &str,
    terms: &[&HighlightTerm],
    options: &FieldOptions,
) -> Vec<String> {
    let mut matches: Vec<(usize, usize)> = Vec::new();
    let mut tokenizer = analysis::analyzer(analyzer)
        .unwrap_or_else(|| analysis::analyzer("standard").expect("standard"));
    let mut stream = tokenizer.token_stream(text);
    while let Some(token) = stream.next() {
        if terms.iter().any(|t| t.matcher.matches(&token.text)) {
            matches.push((token.offset_from, token.offset_to));
        }
    }
    if matches.is_empty() {
        return Vec::new();
    }
    let pre = &options.pre_tags[0];
    let post = &options.post_tags[0];
    let mark = |from: usize, to: usize| -> String {
        let mut out = String::new();
        let mut cursor = from;
        for &(start, end) in matches.iter().filter(|(s, e)| *s >= from && *e <= to) {
            out.push_str(&text[cursor..start]);
            out.push_str(pre);
            out.push_str(&text[start..end]);
            out.push_str(post);
            cursor = end;
        }
        out.push_str(&text[cursor..to]);
        out.trim().to_string()
    };
    if options.number_of_fragments == 0 {
        return vec![mark(0, text.len())];
    }
    sentences(text)
        .into_iter()
        .filter(|(from, to)| matches.iter().any(|(s, e)| s >= from && e <= to))
        .take(options.number_of_fragments)
        .map(|(from, to)| mark(from, to))
        .collect()
}

/// The `highlight` section of one hit.
pub fn highlight(
    table: &FieldTable,
    source: &Value,
    spec: &HighlightSpec,
    terms: &[HighlightTerm],
) -> Map<String, Value> {
    let mut out = Map::new();
    for (pattern, options) in &spec.fields {
        for path in table.expand(pattern) {
            let Some(leaf) = table.leaf(&path) else {
                continue;
            };
            let analyzer = match &leaf.kind {
                LeafKind::Text { analyzer, .. } => analyzer.as_str(),
                LeafKind::Keyword { .. } => "keyword",
                _ => continue,
            };
            let field_terms: Vec<&HighlightTerm> = terms
                .iter()
                .filter(|t| !options.require_field_match || t.field == path)
                .collect();
            if field_terms.is_empty() {
                continue;
            }
            // a multi-field highlights its parent's value
            let mut values = Vec::new();
            values_at(source, &path, &mut values);
            if values.is_empty() {
                if let Some((parent, _)) = path.rsplit_once('.') {
                    values_at(source, parent, &mut values);
                }
            }
            let mut fragments = Vec::new();
            for value in values {
                if let Some(text) = tessera_mapping::values::to_text(value) {
                    fragments.extend(highlight_value(&text, analyzer, &field_terms, options));
                }
            }
            fragments.truncate(if options.number_of_fragments == 0 {
                usize::MAX
            } else {
                options.number_of_fragments
            });
            if !fragments.is_empty() {
                out.insert(
                    path,
                    Value::Array(fragments.into_iter().map(Value::String).collect()),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tessera_mapping::Mapping;
    use tessera_query::highlight_terms::TermMatcher;

    fn term(field: &str, t: &str) -> HighlightTerm {
        HighlightTerm {
            field: field.into(),
            matcher: TermMatcher::Exact(t.into()),
        }
    }

    #[test]
    fn wraps_matching_tokens_in_sentences() {
        let mapping = Mapping::parse(
            &json!({"properties": {"title": {"type": "text"}, "tag": {"type": "keyword"}}}),
        )
        .unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let spec = parse_highlight(&json!({"fields": {"title": {}, "tag": {}}})).unwrap();
        let source =
            json!({"title": "The quick brown Fox. Nothing here! A fox again.", "tag": "fox"});
        let out = highlight(&table, &source, &spec, &[term("title", "fox")]);
        assert_eq!(
            out["title"],
            json!(["The quick brown <em>Fox</em>.", "A <em>fox</em> again."])
        );
        assert!(
            !out.contains_key("tag"),
            "fields without a match are left out"
        );
        let whole = parse_highlight(&json!({"pre_tags": "[", "post_tags": "]", "fields": {"title": {"number_of_fragments": 0}}})).unwrap();
        let out = highlight(&table, &source, &whole, &[term("title", "fox")]);
        assert_eq!(
            out["title"],
            json!(["The quick brown [Fox]. Nothing here! A [fox] again."])
        );
        assert!(parse_highlight(&json!({"fields": {"title": {}}, "bogus": 1})).is_err());
    }
}
