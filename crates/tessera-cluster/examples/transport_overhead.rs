//! The per-request cost of the gRPC transport: sequential echo calls over loopback (one client,
//! one cached HTTP/2 connection, a handler that returns its body), timed one by one, so the
//! numbers are the round trip a shard request pays on top of its own work.
//!
//! `cargo run --release -p tessera-cluster --example transport_overhead [calls]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_cluster::transport::{Handlers, TransportClient, TransportServer};

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank].as_secs_f64() * 1e6
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("calls: a number"))
        .unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut handlers = Handlers::new();
        handlers.register("bench:echo", |body, _| async move { Ok(body) });
        let (bound, server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(handlers))
                .expect("bind");
        let address = bound.to_string();
        let client = TransportClient::new("bench");
        println!("{calls} sequential echo calls over 127.0.0.1 (after 1000 warm-up calls)");
        println!(
            "{:<22} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "body", "p50 µs", "p90 µs", "p99 µs", "max µs", "calls/s"
        );
        for (label, size, with_deadline) in [
            ("empty", 0, false),
            ("4 KiB", 4096, false),
            ("4 KiB, with deadline", 4096, true),
            ("1 MiB", 1 << 20, false),
        ] {
            let calls = if size > 64 << 10 { calls / 20 } else { calls };
            let body = vec![0x5Au8; size];
            let deadline = || with_deadline.then(|| Instant::now() + Duration::from_secs(30));
            for _ in 0..1000.min(calls) {
                let answer = client.call(&address, "bench:echo", body.clone(), deadline());
                assert_eq!(answer.await.expect("echo").len(), size);
            }
            let mut samples = Vec::with_capacity(calls);
            let started = Instant::now();
            for _ in 0..calls {
                let body = body.clone();
                let call_started = Instant::now();
                let answer = client.call(&address, "bench:echo", body, deadline()).await;
                samples.push(call_started.elapsed());
                assert_eq!(answer.expect("echo").len(), size);
            }
            let total = started.elapsed();
            samples.sort_unstable();
            println!(
                "{:<22} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.0}",
                label,
                percentile(&samples, 0.50),
                percentile(&samples, 0.90),
                percentile(&samples, 0.99),
                percentile(&samples, 1.0),
                calls as f64 / total.as_secs_f64()
            );
        }
        drop(client);
        server.shutdown().await.expect("shutdown");
    });
}
