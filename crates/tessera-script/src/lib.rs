//! Tessera's scripting language: the subset of OpenSearch's Painless that people write in
//! scores, filters, fields, sorts, aggregations and updates.
//!
//! A script is lexed (`lexer`), parsed into an AST with source offsets (`ast`, `parser`),
//! and compiled (`compile`) once into a tree of closures over resolved local-variable slots and
//! `doc['field']` slots, so that running it per document allocates nothing for numeric work.
//! `value` holds the runtime values (Java's toString and HashMap order included), `builtins`
//! the methods of strings, lists, maps, dates, geo points and `Math`, `doc` the interface the
//! search side implements for `doc[...]`, `error` OpenSearch's `script_exception` shape, and
//! `cache` the bounded map of compiled scripts keyed by (lang, source, context), `spec` the
//! `script` object of a request, `source` a stored document read into values and written
//! back with its key order, `regex` the `/pattern/` literals and their matchers.

pub mod ast;
pub mod builtins;
pub mod cache;
pub mod compile;
pub mod doc;
pub mod error;
pub mod lexer;
pub mod mustache;
pub mod parser;
pub mod regex;
pub mod source;
pub mod spec;
pub mod value;

#[cfg(test)]
mod reference;

pub use cache::{ScriptCache, ScriptKey};
pub use compile::{compile, Env, Runner, Script, ScriptContext};
pub use doc::{DocValues, GeoPoint};
pub use error::{ScriptError, ScriptErrorKind};
pub use spec::ScriptSpec;
pub use value::Value;

/// The most loop iterations (weighted by the statements of the loop body) one execution may
/// run: Painless's `script.painless.max_loop_counter` default.
pub const MAX_LOOP_COUNTER: i64 = 1_000_000;
