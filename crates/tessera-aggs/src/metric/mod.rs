//! Metric aggregations.

pub mod stats;
pub mod sum;
