//! Metric aggregations.

pub mod stats;
