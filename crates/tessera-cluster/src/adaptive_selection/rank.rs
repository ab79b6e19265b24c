//! The C3 rank of a node (Suresh et al., "C3: Cutting Tail Latency in Cloud Data Stores via
//! Adaptive Replica Selection", NSDI 2015), as Elasticsearch ships it since it fixed its
//! inverted service-time term (elastic/elasticsearch#65838, #70283). This is the only place
//! the formula lives; lower is better.

use tessera_search::search_load::Ewma;

/// What a coordinator knows of one node, each an EWMA (α 0.3) over the node's shard query
/// results.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodeStats {
    /// The `search` pool queue (queued and running) the node reported.
    pub queue: Ewma,
    /// Response time less the request's own service time: what else it waited for (the
    /// network, the node's queue, a node short of CPU), measured by the coordinator.
    pub response_wait_nanos: Ewma,
    /// Response time as the client of the node sees it (for `_nodes/stats` only).
    pub response_nanos: Ewma,
    /// The node's service time (its work per request over its cores, see
    /// `tessera_search::search_load`), as the node reported it.
    pub service_nanos: Ewma,
    /// The coordinating nodes sending the node requests, as it last reported them.
    pub clients: u32,
}

/// The rank of a node with `stats` to which this coordinator has `outstanding` shard requests
/// in flight; in nanoseconds.
pub fn rank(stats: &NodeStats, outstanding: usize) -> f64 {
    let queue = stats.queue.get().unwrap_or(0.0);
    let wait = stats.response_wait_nanos.get().unwrap_or(0.0);
    let service = stats.service_nanos.get().unwrap_or(0.0);
    // q̂, the queue this request will find: the node's own (as it last reported it) plus what
    // this coordinator sent it and has not had back yet, times the number of clients —
    // C3's concurrency compensation: every other coordinator probably has as many in flight,
    // and the node's report is older than any of them. The clients are those the node itself
    // saw lately, not every node of the cluster (Elasticsearch's count): with one
    // coordinating node, counting every node would multiply the requests in flight by the
    // cluster's size and, cubed, rank a busy fast node below an idle slow one. The 1 is the
    // request itself.
    let clients = stats.clients.max(1) as usize;
    let q_hat = 1.0 + (outstanding * clients) as f64 + queue;
    // What requests waited for besides their service (network, queueing, a node short of CPU:
    // C3's R − 1/μ) plus the expected service: q̂ requests ahead of and including this one,
    // each taking the node's service time. Service time is a time
    // (1/μ) — multiplied, as C3 means it; the inverted form divides by it and so prefers slow
    // nodes (OpenSearch still has it). The cube is C3's: a queue penalised more than linearly
    // keeps coordinators from all herding to the node that looked best a moment ago.
    wait + q_hat.powi(3) * service
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(queue: f64, wait_ms: f64, service_ms: f64) -> NodeStats {
        let mut stats = NodeStats {
            clients: 1,
            ..NodeStats::default()
        };
        stats.queue.add(queue);
        stats.response_wait_nanos.add(wait_ms * 1e6);
        stats.response_nanos.add((wait_ms + service_ms) * 1e6);
        stats.service_nanos.add(service_ms * 1e6);
        stats
    }

    #[test]
    fn an_idle_node_ranks_at_its_response_time() {
        let idle = stats(0.0, 0.5, 4.0);
        assert!((rank(&idle, 0) - 4.5e6).abs() < 1.0);
    }

    #[test]
    fn a_slow_node_loses() {
        let fast = stats(0.0, 0.5, 2.0);
        let slow = stats(0.0, 0.5, 20.0);
        assert!(rank(&slow, 0) > rank(&fast, 0));
    }

    #[test]
    fn a_node_with_a_long_queue_loses_to_a_slower_idle_one() {
        let queued = stats(4.0, 0.5, 2.0);
        let slower = stats(0.0, 0.5, 6.0);
        assert!(rank(&queued, 0) > rank(&slower, 0));
    }

    #[test]
    fn requests_in_flight_count_for_every_client() {
        let node = stats(0.0, 0.5, 2.0);
        assert!(rank(&node, 1) > rank(&node, 0));
        let shared = NodeStats { clients: 3, ..node };
        assert!(rank(&shared, 1) > rank(&node, 1));
        // q̂ = 1 + 1 × 3 = 4: 4³ services
        assert!((rank(&shared, 1) - (0.5e6 + 64.0 * 2e6)).abs() < 1.0);
        // a node that has not said yet counts as one client
        let unsaid = NodeStats { clients: 0, ..node };
        assert_eq!(rank(&unsaid, 1), rank(&node, 1));
    }

    #[test]
    fn service_time_is_a_time_not_a_rate() {
        // the inverted term (queue / service time) would rank the slower node first here
        let fast = stats(2.0, 0.0, 1.0);
        let slow = stats(2.0, 0.0, 10.0);
        assert!(rank(&fast, 0) < rank(&slow, 0));
    }
}
