//! A script's compile and runtime errors, and their rendering as OpenSearch's
//! `script_exception`: `script_stack` (the snippet and the `^---- HERE` pointer), `script`,
//! `lang`, `position {offset, start, end}` and the Java exception as `caused_by`.
//!
//! Painless cuts the snippet two ways: a compile error shows 25 characters either side of the
//! offset (with `... ` marks where it cut), a runtime error the statement that failed (from its
//! start to the start of the next statement).

use serde_json::json;
use tessera_common::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptErrorKind {
    Compile,
    Runtime,
    /// A script the node refuses to compile (`script.max_size_in_bytes`,
    /// `script.max_compilations_rate`): not the script's error, so not a `script_exception`.
    Refused,
}

/// A failure to compile or run a script, at a byte offset of its source.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptError {
    pub kind: ScriptErrorKind,
    pub offset: usize,
    /// The Java exception, as OpenSearch names it (`arithmetic_exception`).
    pub cause_type: &'static str,
    pub reason: String,
    /// For a runtime error, the span of the statement that was running (byte offsets).
    pub statement: Option<(usize, usize)>,
}

/// The parse error of a script that ends too early.
pub const UNEXPECTED_END: &str = "unexpected end of script.";

impl ScriptError {
    pub fn compile(offset: usize, cause_type: &'static str, reason: impl Into<String>) -> Self {
        ScriptError {
            kind: ScriptErrorKind::Compile,
            offset,
            cause_type,
            reason: reason.into(),
            statement: None,
        }
    }

    pub fn runtime(offset: usize, cause_type: &'static str, reason: impl Into<String>) -> Self {
        ScriptError {
            kind: ScriptErrorKind::Runtime,
            offset,
            cause_type,
            reason: reason.into(),
            statement: None,
        }
    }

    /// A refusal to compile: `cause_type` is the whole error.
    pub fn refused(cause_type: &'static str, reason: impl Into<String>) -> Self {
        ScriptError {
            kind: ScriptErrorKind::Refused,
            offset: 0,
            cause_type,
            reason: reason.into(),
            statement: None,
        }
    }

    /// OpenSearch's `script_exception` (status 400) for this error in script `source`.
    pub fn to_exception(&self, source: &str) -> Error {
        if self.kind == ScriptErrorKind::Refused {
            return match self.cause_type {
                // a transient breaker: the client may retry later
                "circuit_breaking_exception" => Error::new(self.cause_type, 429, &self.reason)
                    .with_meta("bytes_wanted", 0)
                    .with_meta("bytes_limit", 0)
                    .with_meta("durability", "TRANSIENT"),
                kind => Error::new(kind, 400, &self.reason),
            };
        }
        // Painless counts offsets in (UTF-16) characters
        let chars = |byte: usize| source[..byte.min(source.len())].chars().count();
        let offset = chars(self.offset);
        let total = source.chars().count();
        let (stack, start, end, reason) = match self.kind {
            ScriptErrorKind::Compile => {
                let start = offset.saturating_sub(25);
                let end = (offset + 25).min(total);
                let mut snippet = String::new();
                let mut pointer = String::new();
                if start > 0 {
                    snippet.push_str("... ");
                    pointer.push_str("    ");
                }
                snippet.extend(source.chars().skip(start).take(end - start));
                if end < total {
                    snippet.push_str(" ...");
                }
                pointer.push_str(&" ".repeat(offset - start));
                pointer.push_str("^---- HERE");
                (vec![snippet, pointer], start, end, "compile error")
            }
            ScriptErrorKind::Runtime | ScriptErrorKind::Refused => {
                let (s, e) = self.statement.unwrap_or((self.offset, source.len()));
                let (start, end) = (chars(s), chars(e));
                let snippet: String = source.chars().skip(start).take(end - start).collect();
                let pointer = format!("{}^---- HERE", " ".repeat(offset.saturating_sub(start)));
                (vec![snippet, pointer], start, end, "runtime error")
            }
        };
        let head = Error::new("script_exception", 400, reason)
            .with_meta("script_stack", json!(stack))
            .with_meta("script", source)
            .with_meta("lang", "painless")
            .with_meta(
                "position",
                json!({"offset": offset, "start": start, "end": end}),
            );
        let mut cause = Error::new(self.cause_type, 400, self.reason.clone());
        if self.kind == ScriptErrorKind::Compile && self.reason == UNEXPECTED_END {
            // Painless's parser recovers from ANTLR's exception, which it keeps as the cause
            cause = cause.caused_by(Error::without_reason("no_viable_alt_exception", 400));
        }
        // the root cause is the script_exception itself (its causes are Java exceptions), and
        // stays so with the metadata an owner adds to it (an ingest processor's type)
        head.caused_by(cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_error_shape() {
        let source = "List l = new ArrayList(); l.add(1); l.foo()";
        let err = ScriptError::compile(
            37,
            "illegal_argument_exception",
            "member method [java.util.List, foo/0] not found",
        );
        let body = err.to_exception(source).to_body();
        assert_eq!(
            body["error"]["script_stack"],
            json!([
                "...  ArrayList(); l.add(1); l.foo()",
                "                             ^---- HERE"
            ])
        );
        assert_eq!(
            body["error"]["position"],
            json!({"offset": 37, "start": 12, "end": 43})
        );
        assert_eq!(body["error"]["root_cause"][0]["reason"], "compile error");
        assert_eq!(
            body["error"]["caused_by"]["type"],
            "illegal_argument_exception"
        );
        assert_eq!(body["status"], 400);
    }

    #[test]
    fn runtime_error_shape() {
        let mut err = ScriptError::runtime(
            21,
            "class_cast_exception",
            "cannot implicitly cast def [double] to int",
        );
        err.statement = Some((17, 24));
        let body = err.to_exception("def x = 2.5; int y = x; y").to_body();
        assert_eq!(
            body["error"]["script_stack"],
            json!(["y = x; ", "    ^---- HERE"])
        );
        assert_eq!(
            body["error"]["position"],
            json!({"offset": 21, "start": 17, "end": 24})
        );
        assert_eq!(body["error"]["reason"], "runtime error");
        assert_eq!(body["error"]["lang"], "painless");
    }
}
