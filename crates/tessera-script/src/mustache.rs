//! Mustache, as OpenSearch's search templates run it (mustache.java with OpenSearch's
//! additions): `{{var}}` (JSON-escaped, as the templates make JSON), `{{{var}}}` and
//! `{{&var}}` (raw), sections `{{#x}}…{{/x}}` over lists, maps and truthy values, inverted
//! sections `{{^x}}…{{/x}}`, comments, delimiter changes `{{=<% %>=}}`, dotted names (`a.b`,
//! `list.0`), standalone tag lines dropped, and OpenSearch's functions `{{#toJson}}name{{/toJson}}`,
//! `{{#join}}name{{/join}}` (with `delimiter='…'`) and `{{#url}}…{{/url}}`. Values render as
//! Java's `toString` would (a top-level list as the index map OpenSearch wraps it in).
//!
//! A template is compiled once into nodes and rendered against JSON `params`; errors carry
//! mustache.java's messages and the line, as `@[query-template:N]`.

use serde_json::Value as Json;

use crate::value::Value;

/// A template error (OpenSearch's `mustache_exception` under a `script_exception`).
#[derive(Debug, Clone, PartialEq)]
pub struct MustacheError {
    /// `mustache_exception` or `mustache_not_found_exception`.
    pub kind: &'static str,
    pub reason: String,
}

impl MustacheError {
    fn at(line: usize, what: impl std::fmt::Display) -> Self {
        MustacheError {
            kind: "mustache_exception",
            reason: format!("{what} @[query-template:{line}]"),
        }
    }

    /// OpenSearch's error for this failure of template `source`.
    pub fn to_exception(&self, source: &str) -> tessera_common::Error {
        use tessera_common::Error;
        Error::new("script_exception", 400, &self.reason)
            .with_meta("script_stack", Json::Array(Vec::new()))
            .with_meta("script", source)
            .with_meta("lang", "mustache")
            .caused_by(Error::new(self.kind, 400, &self.reason))
    }
}

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Var {
        name: String,
        escape: bool,
        line: usize,
    },
    Section {
        name: String,
        inverted: bool,
        body: Vec<Node>,
        line: usize,
    },
}

/// A tag or a run of text, before sections are nested.
#[derive(Debug)]
enum Token {
    Text(String),
    Tag {
        sigil: char,
        name: String,
        line: usize,
    },
}

impl Template {
    pub fn compile(source: &str) -> Result<Template, MustacheError> {
        let tokens = drop_standalone(tokenize(source)?);
        // (open name, its line, the nodes before it)
        let mut stack: Vec<(String, bool, usize, Vec<Node>)> = Vec::new();
        let mut nodes: Vec<Node> = Vec::new();
        for token in tokens {
            match token {
                Token::Text(text) => nodes.push(Node::Text(text)),
                Token::Tag { sigil, name, line } => match sigil {
                    '!' | '=' => {}
                    '>' => {
                        return Err(MustacheError {
                            kind: "mustache_not_found_exception",
                            reason: format!("Template {name} not found"),
                        })
                    }
                    '#' | '^' => {
                        stack.push((name, sigil == '^', line, std::mem::take(&mut nodes)));
                    }
                    '/' => {
                        let Some((open, inverted, open_line, outer)) = stack.pop() else {
                            return Err(MustacheError::at(
                                line,
                                format!("Mismatched start/end tags: null != {name} in query-template:{line}"),
                            ));
                        };
                        if open != name {
                            return Err(MustacheError::at(
                                line,
                                format!("Mismatched start/end tags: {open} != {name} in query-template:{open_line}"),
                            ));
                        }
                        let body = std::mem::replace(&mut nodes, outer);
                        nodes.push(Node::Section {
                            name,
                            inverted,
                            body,
                            line: open_line,
                        });
                    }
                    '{' | '&' => nodes.push(Node::Var {
                        name,
                        escape: false,
                        line,
                    }),
                    _ => nodes.push(Node::Var {
                        name,
                        escape: true,
                        line,
                    }),
                },
            }
        }
        if let Some((name, _, line, _)) = stack.pop() {
            return Err(MustacheError::at(
                line,
                format!("Failed to close '{name}' tag"),
            ));
        }
        Ok(Template { nodes })
    }

    /// Renders the template with `params` as its context.
    pub fn render(&self, params: &Json) -> Result<String, MustacheError> {
        let mut out = String::new();
        let mut scopes = vec![params];
        render(&self.nodes, &mut scopes, &mut out)?;
        Ok(out)
    }
}

fn tokenize(source: &str) -> Result<Vec<Token>, MustacheError> {
    let (mut open, mut close) = ("{{".to_string(), "}}".to_string());
    let mut tokens = Vec::new();
    let mut rest = source;
    let line_at = |rest: &str| source[..source.len() - rest.len()].matches('\n').count() + 1;
    while let Some(start) = rest.find(open.as_str()) {
        if start > 0 {
            tokens.push(Token::Text(rest[..start].to_string()));
        }
        let line = line_at(&rest[start..]);
        let after = &rest[start + open.len()..];
        // the triple mustache closes with a brace more
        let triple = open == "{{" && after.starts_with('{');
        let closer = if triple {
            format!("}}{close}")
        } else {
            close.clone()
        };
        let Some(end) = after.find(closer.as_str()) else {
            return Err(MustacheError::at(line, "Improperly closed variable"));
        };
        let inner = &after[..end];
        rest = &after[end + closer.len()..];
        let (sigil, name) = match inner.chars().next() {
            _ if triple => ('{', inner[1..].trim()),
            Some(c @ ('#' | '^' | '/' | '!' | '&' | '>')) => (c, inner[1..].trim()),
            Some('=') => {
                let spec = inner[1..].strip_suffix('=').unwrap_or(&inner[1..]).trim();
                let mut parts = spec.split_whitespace();
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(o), Some(c), None) => {
                        open = o.to_string();
                        close = c.to_string();
                    }
                    _ => return Err(MustacheError::at(line, "Invalid delimiter string")),
                }
                ('=', "")
            }
            _ => (' ', inner.trim()),
        };
        tokens.push(Token::Tag {
            sigil,
            name: name.to_string(),
            line,
        });
    }
    if !rest.is_empty() {
        tokens.push(Token::Text(rest.to_string()));
    }
    Ok(tokens)
}

/// Drops the lines that hold nothing but one section, closing, comment, partial or
/// delimiter tag (and blanks), as the Mustache specification and mustache.java do.
fn drop_standalone(mut tokens: Vec<Token>) -> Vec<Token> {
    let blank = |s: &str| s.chars().all(|c| c == ' ' || c == '\t');
    for i in 0..tokens.len() {
        let Token::Tag { sigil, .. } = &tokens[i] else {
            continue;
        };
        if !matches!(sigil, '#' | '^' | '/' | '!' | '=' | '>') {
            continue;
        }
        // the text before, back to its line start, must be blank (or the template's start)
        let before = match i.checked_sub(1).map(|j| &tokens[j]) {
            None => Some(0),
            Some(Token::Text(t)) => {
                let line_start = t.rfind('\n').map_or(0, |n| n + 1);
                (blank(&t[line_start..]) && (line_start > 0 || i == 1)).then_some(line_start)
            }
            Some(Token::Tag { .. }) => None,
        };
        // and the text after, to its line end (or the template's end)
        let after = match tokens.get(i + 1) {
            None => Some(0),
            Some(Token::Text(t)) => match t.find('\n') {
                Some(n) if blank(t[..n].trim_end_matches('\r')) => Some(n + 1),
                None if blank(t) && i + 2 == tokens.len() => Some(t.len()),
                _ => None,
            },
            Some(Token::Tag { .. }) => None,
        };
        let (Some(cut_before), Some(cut_after)) = (before, after) else {
            continue;
        };
        if let Some(Token::Text(t)) = i.checked_sub(1).and_then(|j| tokens.get_mut(j)) {
            t.truncate(cut_before);
        }
        if let Some(Token::Text(t)) = tokens.get_mut(i + 1) {
            t.drain(..cut_after);
        }
    }
    tokens.retain(|t| !matches!(t, Token::Text(s) if s.is_empty()));
    tokens
}

fn render<'a>(
    nodes: &'a [Node],
    scopes: &mut Vec<&'a Json>,
    out: &mut String,
) -> Result<(), MustacheError> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Var { name, escape, line } => {
                let Some(value) = lookup(scopes, name, *line)?.filter(|v| !v.is_null()) else {
                    continue;
                };
                let text = java_text(value);
                if *escape {
                    escape_json(&text, out);
                } else {
                    out.push_str(&text);
                }
            }
            Node::Section {
                name,
                inverted,
                body,
                line,
            } => {
                if !inverted {
                    if let Some(done) = function(name, body, scopes, out, *line)? {
                        debug_assert!(done);
                        continue;
                    }
                }
                let value = lookup(scopes, name, *line)?;
                let truthy = value.is_some_and(|v| match v {
                    Json::Null | Json::Bool(false) => false,
                    Json::Array(items) => !items.is_empty(),
                    Json::String(s) => !s.is_empty(),
                    _ => true,
                });
                match (inverted, truthy, value) {
                    (true, false, _) => render(body, scopes, out)?,
                    (false, true, Some(Json::Array(items))) => {
                        for item in items {
                            scopes.push(item);
                            render(body, scopes, out)?;
                            scopes.pop();
                        }
                    }
                    (false, true, Some(value)) => {
                        scopes.push(value);
                        render(body, scopes, out)?;
                        scopes.pop();
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// OpenSearch's template functions; `None` when `name` is not one.
fn function<'a>(
    name: &str,
    body: &'a [Node],
    scopes: &mut Vec<&'a Json>,
    out: &mut String,
    line: usize,
) -> Result<Option<bool>, MustacheError> {
    // the functions read their body as the name of a value
    let key = || match body {
        [Node::Text(text)] => text.as_str(),
        _ => "",
    };
    if name == "toJson" {
        if let Some(value) = lookup(scopes, key(), line)? {
            out.push_str(&Value::from_json(value).to_json().to_string());
        }
        return Ok(Some(true));
    }
    let delimiter = match name {
        "join" => Some(","),
        _ => name
            .strip_prefix("join delimiter='")
            .and_then(|d| d.strip_suffix('\'')),
    };
    if let Some(delimiter) = delimiter {
        match lookup(scopes, key(), line)? {
            Some(Json::Array(items)) => {
                let texts: Vec<String> = items.iter().map(java_text).collect();
                out.push_str(&texts.join(delimiter));
            }
            // not a list: the body as it is
            _ => out.push_str(key()),
        }
        return Ok(Some(true));
    }
    if name == "url" {
        let mut inner = String::new();
        render(body, scopes, &mut inner)?;
        url_encode(&inner, out);
        return Ok(Some(true));
    }
    Ok(None)
}

/// A dotted name in the scopes, innermost first: the first part finds the scope, the rest
/// walks down from it.
fn lookup<'a>(
    scopes: &[&'a Json],
    name: &str,
    line: usize,
) -> Result<Option<&'a Json>, MustacheError> {
    if name == "." {
        return Ok(scopes.last().copied());
    }
    let mut parts = name.split('.');
    let first = parts.next().unwrap_or_default();
    let Some(mut value) = scopes.iter().rev().find_map(|scope| child(scope, first)) else {
        return Ok(None);
    };
    for part in parts {
        value = match (value, child(value, part)) {
            (_, Some(next)) => next,
            (Json::Array(_), None) if part.parse::<usize>().is_ok() => {
                return Err(MustacheError::at(
                    line,
                    format!("Failed to get value for {name}"),
                ))
            }
            _ => return Ok(None),
        };
    }
    Ok(Some(value))
}

fn child<'a>(value: &'a Json, key: &str) -> Option<&'a Json> {
    match value {
        Json::Object(map) => map.get(key),
        Json::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// A value as mustache.java prints it: Java's `toString`, a list as OpenSearch's index map.
fn java_text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Array(items) => {
            let entries: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{i}={}", Value::from_json(v).to_java_string()))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        other => Value::from_json(other).to_java_string(),
    }
}

/// Jackson's string quoting: what JSON needs, nothing more (ingest templates escape so too).
pub fn escape_json(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
}

/// Java's `URLEncoder` (form encoding, UTF-8).
fn url_encode(text: &str, out: &mut String) {
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(source: &str, params: Json) -> String {
        Template::compile(source).unwrap().render(&params).unwrap()
    }

    fn error(source: &str) -> String {
        Template::compile(source).unwrap_err().reason
    }

    /// Each expectation recorded from OpenSearch 2.19.6's `_render/template`.
    #[test]
    fn renders_as_opensearch() {
        assert_eq!(
            render(
                r#"{"k":"{{q}}","size":{{n}}}"#,
                json!({"q": "a\"b\\c", "n": 5})
            ),
            r#"{"k":"a\"b\\c","size":5}"#
        );
        assert_eq!(
            render("{{a}}", json!({"a": "<b>&é\n\t\u{1}"})),
            "<b>&é\\n\\t\\u0001"
        );
        assert_eq!(
            render(
                "{{#join}}ks{{/join}} | {{#url}}a b&c{{/url}} | {{#ks}}[{{.}}]{{/ks}} | {{^none}}no{{/none}} | {{m.x}} {{m}} {{l}} {{d}} {{b}} {{{raw}}} {{&raw}} {{! comment }}",
                json!({"ks": ["a", "b"], "m": {"x": 1, "y": [1, 2]}, "l": [1, 2.5], "d": 1.5, "b": true, "raw": "x\"y"})
            ),
            "a,b | a+b%26c | [a][b] | no | 1 {x=1, y=[1, 2]} {0=1, 1=2.5} 1.5 true x\"y x\"y "
        );
        assert_eq!(
            render(
                "{{#m}}{{x}}-{{/m}}{{#f}}yes{{/f}}{{^f}}no{{/f}}{{#e}}E{{/e}}{{^e}}empty{{/e}} {{l.0}} {{l.1}}",
                json!({"m": {"x": 7}, "f": false, "e": [], "l": ["p", "q"]})
            ),
            "7-noempty p q"
        );
        assert_eq!(render("{{=<% %>=}}<% a %>", json!({"a": 1})), "1");
        assert_eq!(
            render(
                "{{#join delimiter='||'}}ks{{/join delimiter='||'}} {{#toJson}}m{{/toJson}} {{big}} {{neg}} {{e}} {{n}}|{{missing}}|{{#items}}<{{name}}:{{k}}>{{/items}} {{#join}}nums{{/join}}",
                json!({"ks": ["a", "b"], "m": {"x": 1}, "big": 5000000000i64, "neg": -1.0e20, "e": 1e-7, "n": null,
                       "items": [{"name": "i1"}, {"name": "i2", "k": 2}], "k": "outer", "nums": [1, 2.5]})
            ),
            r#"a||b {"x":1} 5000000000 -1.0E20 1.0E-7 ||<i1:outer><i2:2> 1,2.5"#
        );
        assert_eq!(
            render(
                "[{{#toJson}}nope{{/toJson}}] [{{#join}}s{{/join}}] [{{#join}}nope{{/join}}] [{{#toJson}} ks {{/toJson}}] [{{#url}}{{v}}/é{{/url}}] [{{#toJson}}m.x{{/toJson}}]",
                json!({"s": "str", "ks": [1], "v": "a b", "m": {"x": [1, {"y": 2}]}})
            ),
            r#"[] [s] [nope] [] [a+b%2F%C3%A9] [[1,{"y":2}]]"#
        );
        assert_eq!(
            render(
                "{{#m}}{{.}}{{/m}}|{{#t}}{{.}}{{/t}}|{{#z}}Z{{/z}}|{{#s}}S{{/s}}|{{#es}}E{{/es}}",
                json!({"m": {"x": 1}, "t": true, "z": 0, "s": "str", "es": ""})
            ),
            "{x=1}|true|Z|S|"
        );
        assert_eq!(
            render(
                "{{x.y.z}} {{#m}}{{#n}}{{v}}{{/n}}{{/m}} {{ a }}",
                json!({"x": {"y": {"z": "deep"}}, "m": {"n": {"v": "nested"}}, "a": "sp"})
            ),
            "deep nested sp"
        );
        assert_eq!(
            render("a\n  {{#s}}\n  x\n  {{/s}}\nb", json!({"s": true})),
            "a\n  x\nb"
        );
    }

    #[test]
    fn errors_as_opensearch() {
        assert_eq!(
            error("{{#a}}x"),
            "Failed to close 'a' tag @[query-template:1]"
        );
        assert_eq!(
            error("{{#a}}x{{/b}}"),
            "Mismatched start/end tags: a != b in query-template:1 @[query-template:1]"
        );
        assert_eq!(
            error("x{{/b}}"),
            "Mismatched start/end tags: null != b in query-template:1 @[query-template:1]"
        );
        assert_eq!(
            error("x\n{{#a}}\n{{y"),
            "Improperly closed variable @[query-template:3]"
        );
        let partial = Template::compile("{{> p}}").unwrap_err();
        assert_eq!(
            (partial.kind, partial.reason.as_str()),
            ("mustache_not_found_exception", "Template p not found")
        );
        let out_of_range = Template::compile("{{l.5}}")
            .unwrap()
            .render(&json!({"l": [1]}))
            .unwrap_err();
        assert_eq!(
            out_of_range.reason,
            "Failed to get value for l.5 @[query-template:1]"
        );
        let e = partial.to_exception("{{> p}}").to_json();
        assert_eq!(e["type"], "script_exception");
        assert_eq!(e["lang"], "mustache");
        assert_eq!(e["caused_by"]["type"], "mustache_not_found_exception");
    }
}
