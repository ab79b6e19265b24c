//! The OpenSearch query DSL: wire parsing (`dsl`, one file per query type), the serialisable
//! `QueryAst`, `query_string`/`simple_query_string` syntax, and compilation of the AST into
//! tantivy queries for one shard (`compile`).

pub mod ast;
pub mod compile;
pub mod dfs;
pub mod dsl;
pub mod highlight_terms;
pub mod lookup;
pub mod nested;
pub mod nested_identity;
pub mod query_string;
pub mod script_docs;

pub use ast::QueryAst;
pub use compile::{compile, CompileContext};
pub use dsl::parse_query;
