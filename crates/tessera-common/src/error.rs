//! One error type for the whole engine, shaped like an OpenSearch exception.
//!
//! OpenSearch clients look at `error.type`, `error.reason` and `status`, so every failure in
//! Tessera carries exactly those, plus the metadata OpenSearch adds (`index`, `index_uuid`,
//! `resource.id`, …) and an optional `caused_by` chain. Library crates build errors with the
//! named constructors below; the REST layer renders them once with [`Error::to_body`].

use std::borrow::Cow;
use std::fmt;

use serde_json::{json, Map, Value};

/// Exception types of the Java platform (and its JSON parser) rather than of OpenSearch:
/// OpenSearch never reports these as a root cause when an OpenSearch exception wraps them.
const JAVA_EXCEPTIONS: &[&str] = &[
    "illegal_argument_exception",
    "illegal_state_exception",
    "number_format_exception",
    "json_parse_exception",
    "json_e_o_f_exception",
    "date_time_parse_exception",
    "date_time_exception",
    "zone_rules_exception",
    "no_such_element_exception",
    "i_o_exception",
    "unsupported_operation_exception",
    "arithmetic_exception",
    "null_pointer_exception",
    "named_object_not_found_exception",
    "x_content_parse_exception",
    "input_coercion_exception",
    "not_x_content_exception",
    "class_cast_exception",
    "concurrent_modification_exception",
    "index_out_of_bounds_exception",
    "array_index_out_of_bounds_exception",
    "string_index_out_of_bounds_exception",
    "negative_array_size_exception",
    "stack_overflow_error",
    "painless_error",
    "no_viable_alt_exception",
    "mustache_exception",
    "mustache_not_found_exception",
];

/// `Result` with Tessera's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An OpenSearch-style exception: a type name, an HTTP status, a reason and metadata.
///
/// Boxed, so that `Result<T>` stays the size of `T` plus a pointer on the hot paths.
#[derive(Clone, PartialEq)]
pub struct Error {
    inner: Box<ErrorInner>,
}

/// The fields of an [`Error`] (reached through its accessors).
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorInner {
    kind: Cow<'static, str>,
    status: u16,
    reason: String,
    metadata: Vec<(String, Value)>,
    caused_by: Option<Box<Error>>,
    root_causes: Option<Vec<Error>>,
    /// The request-body key this error is about, when the reason does not name it; the REST
    /// layer turns it into OpenSearch's `line`/`col`. Never rendered.
    body_key: Option<String>,
}

impl Error {
    /// A new error of OpenSearch type `kind` (e.g. `illegal_argument_exception`).
    pub fn new(kind: impl Into<Cow<'static, str>>, status: u16, reason: impl Into<String>) -> Self {
        Error {
            inner: Box::new(ErrorInner {
                kind: kind.into(),
                status,
                reason: reason.into(),
                metadata: Vec::new(),
                caused_by: None,
                root_causes: None,
                body_key: None,
            }),
        }
    }

    /// Adds a metadata entry rendered beside `type` and `reason`.
    pub fn with_meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.push((key.into(), value.into()));
        self
    }

    /// Sets the cause rendered as `caused_by`.
    pub fn caused_by(mut self, cause: Error) -> Self {
        self.caused_by = Some(Box::new(cause));
        self
    }

    /// Overrides the `root_cause` list (by default the error itself).
    pub fn with_root_causes(mut self, causes: Vec<Error>) -> Self {
        self.root_causes = Some(causes);
        self
    }

    /// Names the request-body key the error is about (see [`Error::body_key`]).
    pub fn at_body_key(mut self, key: impl Into<String>) -> Self {
        self.body_key = Some(key.into());
        self
    }

    /// The request-body key the error is about, when it was named with [`Error::at_body_key`].
    pub fn body_key(&self) -> Option<&str> {
        self.body_key.as_deref()
    }

    /// Changes the reason, keeping everything else.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// Changes the HTTP status, keeping everything else.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn reason(&self) -> &str {
        &self.reason
    }

    pub fn cause(&self) -> Option<&Error> {
        self.caused_by.as_deref()
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// True for failures caused by the request (4xx), false for the engine's own (5xx).
    pub fn is_client_error(&self) -> bool {
        (400..500).contains(&self.status)
    }

    /// The object OpenSearch renders for one exception: type, reason, metadata, caused_by.
    pub fn to_json(&self) -> Value {
        let mut object = self.head_json();
        if let Some(cause) = &self.caused_by {
            object.insert("caused_by".into(), cause.to_json());
        }
        Value::Object(object)
    }

    fn head_json(&self) -> Map<String, Value> {
        let mut object = Map::new();
        object.insert("type".into(), Value::String(self.kind.to_string()));
        object.insert("reason".into(), Value::String(self.reason.clone()));
        for (key, value) in &self.metadata {
            object.insert(key.clone(), value.clone());
        }
        object
    }

    /// The root cause OpenSearch reports: the deepest error of the `caused_by` chain that is
    /// an OpenSearch exception (Java exceptions such as `illegal_argument_exception` inside
    /// one are not unwrapped to).
    ///
    /// Parse errors are the exception: like OpenSearch's `guessRootCauses`, an
    /// `x_content_parse_exception` caused by another parse error reports the inner-most one
    /// (`[range] unknown field [x]` inside `[date_range] failed to parse field [ranges]`).
    pub fn root(&self) -> &Error {
        let parse = |e: &Error| {
            matches!(
                e.kind.as_ref(),
                "x_content_parse_exception" | "named_object_not_found_exception"
            )
        };
        let mut root = self;
        let mut current = self;
        while let Some(cause) = current.caused_by.as_deref() {
            let nested_parse = std::ptr::eq(root, current) && parse(current) && parse(cause);
            if nested_parse || !JAVA_EXCEPTIONS.contains(&cause.kind.as_ref()) {
                root = cause;
            }
            current = cause;
        }
        root
    }

    /// The full response body: `{"error": {root_cause, type, reason, …}, "status": N}`.
    pub fn to_body(&self) -> Value {
        let root_causes: Vec<Value> = match &self.root_causes {
            Some(causes) => causes
                .iter()
                .map(|c| Value::Object(c.head_json()))
                .collect(),
            None => vec![Value::Object(self.root().head_json())],
        };
        let mut error = Map::new();
        error.insert("root_cause".into(), Value::Array(root_causes));
        if let Value::Object(rest) = self.to_json() {
            error.extend(rest);
        }
        json!({ "error": Value::Object(error), "status": self.status })
    }

    // ---- constructors for the exceptions Tessera raises ----

    /// An exception OpenSearch renders with `"reason": null` (a Java exception raised without
    /// a message, such as ANTLR's `no_viable_alt_exception` under a Painless parse error).
    pub fn without_reason(kind: &'static str, status: u16) -> Self {
        Error::new(kind, status, "").with_meta("reason", Value::Null)
    }

    pub fn illegal_argument(reason: impl Into<String>) -> Self {
        Error::new("illegal_argument_exception", 400, reason)
    }

    pub fn illegal_state(reason: impl Into<String>) -> Self {
        Error::new("illegal_state_exception", 500, reason)
    }

    pub fn parsing(reason: impl Into<String>) -> Self {
        Error::new("parsing_exception", 400, reason)
    }

    pub fn x_content_parse(reason: impl Into<String>) -> Self {
        Error::new("x_content_parse_exception", 400, reason)
    }

    pub fn json_parse(reason: impl Into<String>) -> Self {
        Error::new("json_parse_exception", 400, reason)
    }

    pub fn mapper_parsing(reason: impl Into<String>) -> Self {
        Error::new("mapper_parsing_exception", 400, reason)
    }

    pub fn strict_dynamic_mapping(reason: impl Into<String>) -> Self {
        Error::new("strict_dynamic_mapping_exception", 400, reason)
    }

    pub fn action_request_validation(problems: &[String]) -> Self {
        let mut reason = String::from("Validation Failed: ");
        for (i, problem) in problems.iter().enumerate() {
            reason.push_str(&format!("{}: {};", i + 1, problem));
        }
        Error::new("action_request_validation_exception", 400, reason)
    }

    pub fn index_not_found(index: &str) -> Self {
        Error::new(
            "index_not_found_exception",
            404,
            format!("no such index [{index}]"),
        )
        .with_meta("index", index)
        .with_meta("resource.id", index)
        .with_meta("resource.type", "index_or_alias")
        .with_meta("index_uuid", "_na_")
    }

    pub fn resource_already_exists(index: &str, uuid: &str) -> Self {
        Error::new(
            "resource_already_exists_exception",
            400,
            format!("index [{index}/{uuid}] already exists"),
        )
        .with_meta("index", index)
        .with_meta("index_uuid", uuid)
    }

    pub fn invalid_index_name(index: &str, why: &str) -> Self {
        Error::new(
            "invalid_index_name_exception",
            400,
            format!("Invalid index name [{index}], {why}"),
        )
        .with_meta("index", index)
        .with_meta("index_uuid", "_na_")
    }

    pub fn version_conflict(index: &str, shard: u32, id: &str, detail: &str) -> Self {
        Error::new(
            "version_conflict_engine_exception",
            409,
            format!("[{id}]: version conflict, {detail}"),
        )
        .with_meta("index", index)
        .with_meta("shard", shard.to_string())
    }

    pub fn document_missing(index: &str, shard: u32, id: &str) -> Self {
        Error::new(
            "document_missing_exception",
            404,
            format!("[{id}]: document missing"),
        )
        .with_meta("index", index)
        .with_meta("shard", shard.to_string())
    }

    pub fn rejected_execution(reason: impl Into<String>) -> Self {
        Error::new("rejected_execution_exception", 429, reason)
    }

    /// A text field asked for per-document values (aggregated, sorted on, hashed): OpenSearch
    /// keeps no field data for text fields by default.
    pub fn text_fielddata_disabled(field: &str) -> Self {
        Error::illegal_argument(format!(
            "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{field}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
        ))
    }

    pub fn query_shard(index: &str, reason: impl Into<String>) -> Self {
        Error::new("query_shard_exception", 400, reason).with_meta("index", index)
    }

    pub fn search_context_missing(id: u64) -> Self {
        Error::new(
            "search_context_missing_exception",
            404,
            format!("No search context found for id [{id}]"),
        )
    }

    pub fn too_long_content(limit: usize) -> Self {
        Error::new(
            "content_too_long_exception",
            413,
            format!("request body is larger than http.max_content_length [{limit}b]"),
        )
    }

    pub fn not_supported(what: &str) -> Self {
        Error::illegal_argument(format!("{what} is not supported by Tessera"))
    }

    /// A failure of the engine itself (I/O, corrupt data, a bug): status 500.
    pub fn internal(context: impl fmt::Display, cause: impl fmt::Display) -> Self {
        let cause = cause.to_string();
        if let Some(carried) = Error::carried_in(&cause) {
            return carried;
        }
        Error::new("exception", 500, format!("failed to {context}: {cause}"))
    }

    /// This error as text another library's error can carry (a tantivy `Weight` answers with
    /// tantivy's errors only): [`Error::internal`] of that error gives this one back, so a
    /// query that fails the shard for a reason of its own (a function score that cannot score
    /// a document) answers with its own error, not a generic 500.
    pub fn to_carried_text(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{CARRIED_OPEN}{json}{CARRIED_CLOSE}")
    }

    fn carried_in(text: &str) -> Option<Error> {
        let start = text.find(CARRIED_OPEN)? + CARRIED_OPEN.len();
        let end = start + text[start..].find(CARRIED_CLOSE)?;
        serde_json::from_str(&text[start..end]).ok()
    }
}

impl std::ops::Deref for Error {
    type Target = ErrorInner;

    fn deref(&self) -> &ErrorInner {
        &self.inner
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorInner {
        &mut self.inner
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt(f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.kind, self.reason)?;
        if let Some(cause) = &self.caused_by {
            write!(f, "; caused by {cause}")?;
        }
        Ok(())
    }
}

/// The marks around an error carried in another library's error text (see
/// [`Error::to_carried_text`]).
const CARRIED_OPEN: &str = "<<tessera error ";
const CARRIED_CLOSE: &str = " tessera error>>";

impl std::error::Error for Error {}

/// An [`Error`] as it crosses the wire (a shard failure sent back to the coordinating node):
/// plain data in a fixed shape, so that binary formats without self-description (postcard)
/// carry it; metadata values travel as JSON text.
#[derive(serde::Serialize, serde::Deserialize)]
struct WireError {
    kind: String,
    status: u16,
    reason: String,
    metadata: Vec<(String, String)>,
    caused_by: Option<Box<WireError>>,
    root_causes: Option<Vec<WireError>>,
}

impl From<&Error> for WireError {
    fn from(error: &Error) -> WireError {
        WireError {
            kind: error.kind.to_string(),
            status: error.status,
            reason: error.reason.clone(),
            metadata: error
                .metadata
                .iter()
                .map(|(key, value)| (key.clone(), value.to_string()))
                .collect(),
            caused_by: error.caused_by.as_deref().map(|c| Box::new(c.into())),
            root_causes: error
                .root_causes
                .as_ref()
                .map(|causes| causes.iter().map(WireError::from).collect()),
        }
    }
}

impl From<WireError> for Error {
    fn from(wire: WireError) -> Error {
        let mut error = Error::new(wire.kind, wire.status, wire.reason);
        for (key, text) in wire.metadata {
            let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
            error = error.with_meta(key, value);
        }
        if let Some(cause) = wire.caused_by {
            error = error.caused_by((*cause).into());
        }
        if let Some(causes) = wire.root_causes {
            error = error.with_root_causes(causes.into_iter().map(Error::from).collect());
        }
        error
    }
}

impl serde::Serialize for Error {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireError::from(self).serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Error {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Error, D::Error> {
        WireError::deserialize(deserializer).map(Error::from)
    }
}

impl Error {
    /// Whether a shard request that failed with this error may succeed on another copy of the
    /// shard: not when the request itself is wrong (a 4xx, which every copy answers alike),
    /// but when this copy could not serve it (a 5xx, a rejection under load, a shard that is
    /// not active here). The body key is not carried over the wire.
    pub fn is_retryable_on_another_copy(&self) -> bool {
        matches!(self.status, 429 | 500..=599)
            || matches!(
                self.kind.as_ref(),
                "unavailable_shards_exception"
                    | "no_shard_available_action_exception"
                    | "shard_not_found_exception"
            )
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::new("i_o_exception", 500, error.to_string())
    }
}

/// The JSON token OpenSearch's parse errors name for a value (`found [START_ARRAY]`).
pub fn json_token(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Object(_) => "START_OBJECT",
        serde_json::Value::Array(_) => "START_ARRAY",
        serde_json::Value::String(_) => "VALUE_STRING",
        serde_json::Value::Number(_) => "VALUE_NUMBER",
        serde_json::Value::Bool(_) => "VALUE_BOOLEAN",
        serde_json::Value::Null => "VALUE_NULL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_carried_in_another_errors_text_comes_back_whole() {
        let error = Error::illegal_argument("negative score").caused_by(Error::parsing("x"));
        let foreign = format!(
            "An invalid argument was passed: '{}'",
            error.to_carried_text()
        );
        assert_eq!(Error::internal("create a scorer", foreign), error);
        let plain = Error::internal("create a scorer", "disk on fire");
        assert_eq!(
            (plain.status(), plain.reason()),
            (500, "failed to create a scorer: disk on fire")
        );
    }

    #[test]
    fn errors_round_trip_through_a_binary_encoding() {
        let error = Error::new("search_phase_execution_exception", 503, "all shards failed")
            .with_meta("phase", "query")
            .with_meta("grouped", true)
            .with_meta("failed_shards", json!([{"shard": 0, "index": "i"}]))
            .caused_by(Error::index_not_found("i").caused_by(Error::illegal_argument("deep")))
            .with_root_causes(vec![Error::parsing("a"), Error::illegal_state("b")]);
        let bytes = postcard::to_allocvec(&error).unwrap();
        let back: Error = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.to_body(), error.to_body());
        assert_eq!(back, error);
        let text = serde_json::to_string(&error).unwrap();
        assert_eq!(serde_json::from_str::<Error>(&text).unwrap(), error);
    }

    #[test]
    fn only_failures_of_the_copy_are_retried_elsewhere() {
        assert!(!Error::parsing("bad query").is_retryable_on_another_copy());
        assert!(!Error::index_not_found("i").is_retryable_on_another_copy());
        assert!(Error::internal("read a segment", "io").is_retryable_on_another_copy());
        assert!(
            Error::new("rejected_execution_exception", 429, "full").is_retryable_on_another_copy()
        );
        assert!(Error::new("unavailable_shards_exception", 503, "x").is_retryable_on_another_copy());
    }

    #[test]
    fn index_not_found_renders_like_opensearch() {
        let body = Error::index_not_found("logs").to_body();
        assert_eq!(body["status"], 404);
        assert_eq!(body["error"]["type"], "index_not_found_exception");
        assert_eq!(body["error"]["reason"], "no such index [logs]");
        assert_eq!(body["error"]["index"], "logs");
        assert_eq!(
            body["error"]["root_cause"][0]["type"],
            "index_not_found_exception"
        );
        assert_eq!(
            body["error"]["root_cause"][0]["resource.type"],
            "index_or_alias"
        );
    }

    #[test]
    fn caused_by_is_nested_and_root_cause_is_the_outer_error() {
        let error = Error::mapper_parsing("failed to parse field [n] of type [long]")
            .caused_by(Error::illegal_argument("For input string: \"x\""));
        let body = error.to_body();
        assert_eq!(
            body["error"]["caused_by"]["type"],
            "illegal_argument_exception"
        );
        assert_eq!(
            body["error"]["root_cause"][0]["type"],
            "mapper_parsing_exception"
        );
        assert!(body["error"]["root_cause"][0].get("caused_by").is_none());
    }

    #[test]
    fn root_cause_is_the_deepest_opensearch_exception() {
        let inner = Error::mapper_parsing("No handler for type [x] declared on field [f]")
            .caused_by(Error::illegal_argument("java detail"));
        let outer =
            Error::mapper_parsing("Failed to parse mapping [_doc]: No handler").caused_by(inner);
        assert_eq!(
            outer.to_body()["error"]["root_cause"][0]["reason"],
            "No handler for type [x] declared on field [f]"
        );
    }

    #[test]
    fn nested_parse_errors_report_the_innermost() {
        let error = Error::x_content_parse("[date_range] failed to parse field [ranges]")
            .caused_by(Error::x_content_parse("[range] unknown field [bogus]"));
        assert_eq!(
            error.to_body()["error"]["root_cause"][0]["reason"],
            "[range] unknown field [bogus]"
        );
        let error = Error::x_content_parse("[terms] failed to parse field [size]").caused_by(
            Error::new("number_format_exception", 400, "For input string"),
        );
        assert_eq!(
            error.to_body()["error"]["root_cause"][0]["type"],
            "x_content_parse_exception"
        );
    }

    #[test]
    fn explicit_root_causes_replace_the_default() {
        let shard = Error::query_shard("logs", "bad");
        let outer = Error::new("search_phase_execution_exception", 400, "all shards failed")
            .with_root_causes(vec![shard.clone()]);
        assert_eq!(
            outer.to_body()["error"]["root_cause"][0]["type"],
            "query_shard_exception"
        );
        assert!(outer.is_client_error());
    }

    #[test]
    fn validation_reason_numbers_each_problem() {
        let e = Error::action_request_validation(&["a".into(), "b".into()]);
        assert_eq!(e.reason(), "Validation Failed: 1: a;2: b;");
    }
}
