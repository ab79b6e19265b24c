//! Bucket aggregations.

pub mod adjacency_matrix;
pub mod auto_date_histogram;
pub mod composite;
pub mod date_histogram;
pub mod date_range;
pub mod filter;
pub mod geo_distance;
pub mod geo_grid;
pub mod histogram;
pub mod ip_range;
pub mod missing;
pub mod multi_terms;
pub mod nested;
pub mod order;
pub mod range;
pub mod range_histogram;
pub mod rare_terms;
pub mod sampler;
mod script_terms;
pub mod significant_terms;
pub mod significant_text;
pub mod terms;

pub(crate) use tessera_common::error::json_token as token;
