//! `tessera bench`: Tessera's benchmark tool, a product feature rather than a test.
//!
//! It generates a workload's corpus (synthetic, with the schema of the public OpenSearch
//! Benchmark workloads nyc_taxis, big5 and noaa), loads it, runs the workload's operations with N
//! closed-loop clients (or at a target throughput) after a warm-up, sweeps clients × concurrent
//! segment search settings, and reports per operation latency and service time percentiles,
//! throughput, error rate, the target's CPU, memory and `index_searcher` activity, and its own
//! CPU share — as Markdown tables in the form of the reference posts, SVG charts and a JSON
//! results file. It speaks only the OpenSearch REST API, so the same command measures Tessera and
//! a reference OpenSearch side by side.
//!
//! `tessera bench vectorsearch` ([`vectorsearch`]) measures k-NN search: synthetic clustered
//! vectors, exact ground truth, latency, throughput and recall.
//!
//! `tessera bench ars` ([`ars`]) runs the adaptive replica selection experiment: it starts a
//! cluster of its own, slows one data node, and compares round robin with ARS.
//!
//! The `tessera` binary embeds [`cli::BenchCommand`] as `tessera bench <command>` and calls
//! [`cli::run`].

pub mod ars;
pub mod chart;
pub mod cli;
pub mod client;
pub mod compare;
pub mod generate;
pub mod interrupt;
pub mod load;
pub mod matrix;
pub mod metrics;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod system;
pub mod timefmt;
pub mod vectorsearch;
pub mod workload;

pub use cli::{run, BenchCommand};
