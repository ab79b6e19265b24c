//! The OpenSearch query DSL: wire parsing, the `QueryAst`, query_string syntax and compilation
//! to tantivy queries.

pub mod ast;
