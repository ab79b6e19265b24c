//! Adaptive replica selection (ARS): each coordinating node sends a shard request to the copy
//! whose node it expects to answer fastest, from what the data nodes report with every query
//! result (queue and service time, `tessera_search::search_load`) and what the coordinator
//! measures itself (response time, requests in flight), ranked by [`rank::rank`].
//!
//! Beyond the C3 rank, three of the peers' known defects are avoided here:
//! - a node without statistics (new, or back after leaving) is probed with at most
//!   [`PROBE_IN_FLIGHT`] requests at a time until its first answer, instead of being ranked
//!   best and sent every request meanwhile (elastic/elasticsearch#147579, "ARS floods new
//!   nodes");
//! - the nodes that lose a ranking move toward the winner by an added sample (the midpoint
//!   of theirs and the winner's), so a node that was slow once gets tried again as the others
//!   load up, and the history it has is kept rather than overwritten. A loser takes such a
//!   sample only while nothing is in flight to it, at most once per its own response time: its statistics age with time, not with
//!   how many shard requests the others answer meanwhile (Elasticsearch adjusts on every
//!   ranking, so under a high request rate a slow node is back in the running within a few
//!   searches, and keeps getting a large share of the requests). Statistics moved that way
//!   are an estimate, not a measure: once they are mostly estimate ([`MOSTLY_ESTIMATED`]
//!   added samples since the node's last answer) the node is probed like a node without
//!   statistics, one request at a time, until it answers — else the estimate, a fast node with
//!   nothing in flight, draws a burst of requests that all wait on the slow node;
//! - a node's statistics are dropped when it leaves the cluster ([`ResponseCollector::retain`]);
//! - a node whose response time grows to [`LAGGING_ENTER`] times the *reference* — the mean
//!   response time of the other nodes not set aside — is set aside (*lagging*): it gets no
//!   search's own shard request while a copy on another node can take it, only **probes** —
//!   copies of a request the winner also gets, sent to it one at a time, at most once per its
//!   own response time, whose answers are measured and dropped. It comes back after
//!   [`REJOIN_PROBES`] probes in a row answer within [`LAGGING_LEAVE`] times the reference,
//!   its averages started afresh. Where every copy of a shard lags, the one with the lowest
//!   response time takes the request. Ranking alone cannot keep a node that stalls (a process
//!   stopped for 90 ms of every 100, a long pause) out of the tail: its service time is work,
//!   which a stopped process does not accrue, its wait only grows its rank linearly, and
//!   with many requests in flight to the fast copies the cube of their queues lets it win a
//!   few percent of the requests — each of which waits for the stall, so p99 ends up worse
//!   than round robin's. A probe measures the node just as well without a search waiting on
//!   it. The reference is a mean over nodes, not the best copy of each shard: under heavy
//!   load healthy nodes' averages drift apart by 2–3× for a while, and a node set aside
//!   against its shard's one other copy would leave shards whose copies all lag.

pub mod rank;
mod tracked;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tessera_search::search_load::ShardLoad;

pub use rank::NodeStats;
pub use tracked::TrackedShard;

/// Shard requests a coordinator has in flight at most to a node it has no statistics for.
pub const PROBE_IN_FLIGHT: usize = 1;

/// Added samples since its last answer after which a node's statistics are mostly estimate:
/// with α 0.3, two samples carry 51% of an average's weight.
pub const MOSTLY_ESTIMATED: u32 = 2;

/// How many times the reference response time (module docs) a node's may reach before the
/// node is set aside as lagging. Above the spread of healthy nodes' averages, which move
/// together with the load they share; a node stopped 90% of the time was 5–20× here.
pub const LAGGING_ENTER: f64 = 3.0;

/// A lagging node's probe is good when it answers within this many times the reference
/// response time (lower than [`LAGGING_ENTER`]: a node at the edge does not flap).
pub const LAGGING_LEAVE: f64 = 1.5;

/// Good probes in a row that bring a lagging node back. A node that stalls now and then
/// answers some probes fast (those that find it running); several in a row are unlikely
/// unless it has recovered.
pub const REJOIN_PROBES: u32 = 4;

/// A node set aside (module docs).
#[derive(Clone, Copy, Debug)]
struct Lagging {
    /// The reference response time (module docs) when the node was last ranked.
    reference_nanos: f64,
    /// Probes (or late answers) in a row within [`LAGGING_LEAVE`] × that.
    good_answers: u32,
}

/// What a ranking of a shard's copies decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    /// Indexes into the copies, in the order to try them.
    pub order: Vec<usize>,
    /// A lagging copy to send a probe (a copy of the first copy's request) to. It is counted
    /// in flight already: hand it to [`TrackedShard::claimed`].
    pub probe: Option<usize>,
}

/// One node as a coordinator sees it.
#[derive(Default)]
struct NodeEntry {
    stats: Option<NodeStats>,
    /// Shard requests sent (or chosen to be sent) and not answered yet.
    outstanding: usize,
    /// When the statistics last took a sample (an answer, or a loss).
    sampled_at: Option<Instant>,
    /// Samples the statistics took toward a winner's since the node's last answer.
    estimated: u32,
    /// Set while the node is set aside (module docs).
    lagging: Option<Lagging>,
}

impl NodeEntry {
    fn response_nanos(&self) -> Option<f64> {
        self.stats.and_then(|stats| stats.response_nanos.get())
    }
}

/// A coordinating node's statistics of the nodes it sends shard requests to.
#[derive(Default)]
pub struct ResponseCollector {
    nodes: Mutex<HashMap<String, NodeEntry>>,
}

/// A node's statistics as `_nodes/stats/adaptive_selection` shows them.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    pub node_id: String,
    pub outgoing_searches: usize,
    pub avg_queue_size: f64,
    pub avg_service_time_nanos: u64,
    pub avg_response_time_nanos: u64,
    /// [`rank::rank`] in nanoseconds; none before the node's first answer.
    pub rank_nanos: Option<f64>,
}

impl ResponseCollector {
    pub fn new() -> ResponseCollector {
        ResponseCollector::default()
    }

    /// A shard request to `node` is on its way.
    pub fn begin(&self, node: &str) {
        let mut nodes = self.nodes.lock().unwrap();
        nodes.entry(node.to_string()).or_default().outstanding += 1;
    }

    /// A shard request to `node` is over (answered, failed or given up).
    pub fn end(&self, node: &str) {
        if let Some(entry) = self.nodes.lock().unwrap().get_mut(node) {
            entry.outstanding = entry.outstanding.saturating_sub(1);
        }
    }

    /// A query result from `node`, `response` after the request was sent.
    pub fn record(&self, node: &str, load: &ShardLoad, response: Duration) {
        let response = response.as_nanos() as f64;
        let mut nodes = self.nodes.lock().unwrap();
        let entry = nodes.entry(node.to_string()).or_default();
        entry.sampled_at = Some(Instant::now());
        entry.estimated = 0;
        if let Some(lagging) = entry.lagging.as_mut() {
            if response <= LAGGING_LEAVE * lagging.reference_nanos {
                lagging.good_answers += 1;
            } else {
                lagging.good_answers = 0;
            }
            if lagging.good_answers >= REJOIN_PROBES {
                entry.lagging = None;
                // its averages still carry the stall: they start again from this answer
                entry.stats = None;
            }
        }
        let stats = entry.stats.get_or_insert_with(NodeStats::default);
        stats.queue.add(load.queue_size as f64);
        stats
            .response_wait_nanos
            .add((response - load.request_service_nanos as f64).max(0.0));
        stats.response_nanos.add(response);
        stats.service_nanos.add(load.service_time_nanos as f64);
        stats.clients = load.clients;
    }

    /// `base` (indexes into `nodes`, the copies' nodes in their default order) in the order to
    /// try them: nodes without statistics with room for a probe first, then by rank, then
    /// nodes being probed (without statistics, or with estimated ones) that have their probe
    /// in flight, then lagging nodes by response time. Ties keep the `base` order. A lagging
    /// node that is due a probe is named in [`Ranking::probe`] when another copy comes first.
    pub fn choose(&self, nodes: &[&str], base: Vec<usize>) -> Ranking {
        self.choose_at(nodes, base, Instant::now())
    }

    fn choose_at(&self, nodes: &[&str], mut base: Vec<usize>, now: Instant) -> Ranking {
        let mut known = self.nodes.lock().unwrap();
        Self::mark_lagging(&mut known, nodes, &base);
        let key = |i: usize| -> (u8, f64) {
            match known.get(nodes[i]) {
                // among copies that all lag, the measured response time decides: the rank
                // is what let a stalling node win
                Some(
                    entry @ NodeEntry {
                        lagging: Some(_), ..
                    },
                ) => (3, entry.response_nanos().unwrap_or(f64::INFINITY)),
                Some(entry)
                    if entry.outstanding >= PROBE_IN_FLIGHT
                        && entry.estimated >= MOSTLY_ESTIMATED =>
                {
                    (2, 0.0)
                }
                Some(NodeEntry {
                    stats: Some(stats),
                    outstanding,
                    ..
                }) => (1, rank::rank(stats, *outstanding)),
                Some(entry) if entry.outstanding >= PROBE_IN_FLIGHT => (2, 0.0),
                _ => (0, 0.0),
            }
        };
        base.sort_by(|&a, &b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let first_lagging = |i: &usize| known.get(nodes[*i]).is_some_and(|e| e.lagging.is_some());
        let probe = match base.first() {
            Some(first) if !first_lagging(first) => base[1..].iter().copied().find(|&i| {
                known.get(nodes[i]).is_some_and(|entry| {
                    entry.lagging.is_some()
                        && entry.outstanding == 0
                        && entry.sampled_at.is_none_or(|at| {
                            let response = entry.response_nanos().unwrap_or(0.0);
                            now.saturating_duration_since(at)
                                >= Duration::from_nanos(response as u64)
                        })
                })
            }),
            _ => None,
        };
        if let Some(i) = probe {
            known.get_mut(nodes[i]).expect("ranked above").outstanding += 1;
        }
        Ranking { order: base, probe }
    }

    /// Sets aside the nodes among `candidates` whose response time has grown to
    /// [`LAGGING_ENTER`] times the reference (the mean of the other nodes not set aside), and
    /// notes the reference for the lagging ones' next answers.
    fn mark_lagging(known: &mut HashMap<String, NodeEntry>, nodes: &[&str], candidates: &[usize]) {
        for &i in candidates {
            let (sum, count) = known
                .iter()
                .filter(|(node, entry)| node.as_str() != nodes[i] && entry.lagging.is_none())
                .filter_map(|(_, entry)| entry.response_nanos())
                .fold((0.0, 0u32), |(sum, count), response| {
                    (sum + response, count + 1)
                });
            let reference = (count > 0).then(|| sum / f64::from(count));
            let (Some(reference), Some(entry)) = (reference, known.get_mut(nodes[i])) else {
                continue;
            };
            let own = entry.response_nanos();
            match entry.lagging.as_mut() {
                Some(lagging) => lagging.reference_nanos = reference,
                None if own.is_some_and(|own| own > LAGGING_ENTER * reference) => {
                    entry.lagging = Some(Lagging {
                        reference_nanos: reference,
                        good_answers: 0,
                    });
                }
                None => {}
            }
        }
    }

    /// After a ranking chose `winner`: each loser with statistics and nothing in flight takes
    /// a sample halfway between its own and the winner's, so it drifts back into contention —
    /// at most once per its own response time (module docs). A loser with requests in flight
    /// is left alone: its answers will say how it is doing.
    pub fn adjust_losers(&self, winner: &str, losers: &[&str]) {
        self.adjust_losers_at(winner, losers, Instant::now())
    }

    fn adjust_losers_at(&self, winner: &str, losers: &[&str], now: Instant) {
        let mut nodes = self.nodes.lock().unwrap();
        let Some(best) = nodes.get(winner).and_then(|entry| entry.stats) else {
            return;
        };
        for loser in losers {
            let Some(entry) = nodes.get_mut(*loser) else {
                continue;
            };
            let Some(stats) = entry.stats.as_mut() else {
                continue;
            };
            // a node with requests in flight is about to be measured again; a lagging one is
            // measured by its probes
            if entry.outstanding > 0 || entry.lagging.is_some() {
                continue;
            }
            let response = Duration::from_nanos(stats.response_nanos.get().unwrap_or(0.0) as u64);
            if entry
                .sampled_at
                .is_some_and(|at| now.saturating_duration_since(at) < response)
            {
                continue;
            }
            entry.sampled_at = Some(now);
            entry.estimated += 1;
            let midpoint = |own: &tessera_search::search_load::Ewma,
                            theirs: &tessera_search::search_load::Ewma| {
                (own.get().unwrap_or(0.0) + theirs.get().unwrap_or(0.0)) / 2.0
            };
            let queue = midpoint(&stats.queue, &best.queue);
            let wait = midpoint(&stats.response_wait_nanos, &best.response_wait_nanos);
            let response = midpoint(&stats.response_nanos, &best.response_nanos);
            let service = midpoint(&stats.service_nanos, &best.service_nanos);
            stats.queue.add(queue);
            stats.response_wait_nanos.add(wait);
            stats.response_nanos.add(response);
            stats.service_nanos.add(service);
        }
    }

    /// Keeps the statistics of the nodes `keep` accepts (the nodes still in the cluster).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.nodes.lock().unwrap().retain(|node, _| keep(node));
    }

    /// Every node with statistics or requests in flight, by node id.
    pub fn views(&self) -> Vec<NodeView> {
        let nodes = self.nodes.lock().unwrap();
        let mut views: Vec<NodeView> = nodes
            .iter()
            .map(|(node_id, entry)| {
                let stats = entry.stats.unwrap_or_default();
                let value = |ewma: tessera_search::search_load::Ewma| ewma.get().unwrap_or(0.0);
                NodeView {
                    node_id: node_id.clone(),
                    outgoing_searches: entry.outstanding,
                    avg_queue_size: value(stats.queue),
                    avg_service_time_nanos: value(stats.service_nanos) as u64,
                    avg_response_time_nanos: value(stats.response_nanos) as u64,
                    rank_nanos: entry
                        .stats
                        .map(|stats| rank::rank(&stats, entry.outstanding)),
                }
            })
            .collect();
        views.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        views
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(queue: u32, service_ms: u64) -> ShardLoad {
        ShardLoad {
            queue_size: queue,
            service_time_nanos: service_ms * 1_000_000,
            request_service_nanos: service_ms * 1_000_000,
            clients: 2,
        }
    }

    fn order(collector: &ResponseCollector, nodes: &[&str], base: Vec<usize>) -> Vec<usize> {
        collector.choose(nodes, base).order
    }

    /// `node` answered `times` times with this service time (response = service + 0.5 ms).
    fn answered(collector: &ResponseCollector, node: &str, service_ms: u64, times: usize) {
        queued(collector, node, 0, service_ms, times);
    }

    /// Like [`answered`], the node reporting a queue of `queue`.
    fn queued(
        collector: &ResponseCollector,
        node: &str,
        queue: u32,
        service_ms: u64,
        times: usize,
    ) {
        for _ in 0..times {
            let response = Duration::from_micros(service_ms * 1000 + 500);
            collector.record(node, &load(queue, service_ms), response);
        }
    }

    #[test]
    fn a_slow_node_loses_the_ranking() {
        let collector = ResponseCollector::new();
        answered(&collector, "fast", 2, 3);
        answered(&collector, "slow", 20, 3);
        let nodes = ["slow", "fast"];
        assert_eq!(order(&collector, &nodes, vec![0, 1]), [1, 0]);
    }

    #[test]
    fn a_node_with_a_long_queue_loses_the_ranking() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 1);
        collector.record("b", &load(6, 2), Duration::from_micros(2500));
        assert_eq!(order(&collector, &["b", "a"], vec![0, 1]), [1, 0]);
    }

    #[test]
    fn a_node_without_statistics_is_probed_but_not_flooded() {
        let collector = ResponseCollector::new();
        answered(&collector, "known", 2, 3);
        let nodes = ["known", "new"];
        // first a probe
        assert_eq!(order(&collector, &nodes, vec![0, 1]), [1, 0]);
        collector.begin("new");
        // while the probe is in flight, the known node takes the requests
        for _ in 0..10 {
            assert_eq!(order(&collector, &nodes, vec![0, 1]), [0, 1]);
            collector.begin("known");
        }
        // its answer gives it statistics: it competes on rank from then on
        collector.end("new");
        answered(&collector, "new", 2, 1);
        assert_eq!(
            order(&collector, &nodes, vec![0, 1]),
            [1, 0],
            "ten in flight on known"
        );
    }

    #[test]
    fn copies_on_nodes_never_seen_are_ranked_without_a_probe() {
        let collector = ResponseCollector::new();
        let ranking = collector.choose(&["a", "b", "c"], vec![2, 0, 1]);
        assert_eq!(
            ranking,
            Ranking {
                order: vec![2, 0, 1],
                probe: None
            }
        );
        // and with one known node among them
        answered(&collector, "b", 2, 1);
        let ranking = collector.choose(&["a", "b", "c"], vec![0, 1, 2]);
        assert_eq!(ranking.order, [0, 2, 1]);
        assert_eq!(ranking.probe, None);
    }

    #[test]
    fn requests_in_flight_spread_equal_nodes() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 2);
        answered(&collector, "b", 2, 2);
        let nodes = ["a", "b"];
        let first = order(&collector, &nodes, vec![0, 1])[0];
        collector.begin(nodes[first]);
        let second = order(&collector, &nodes, vec![0, 1])[0];
        assert_ne!(first, second);
    }

    #[test]
    fn losing_brings_a_recovered_node_back() {
        let collector = ResponseCollector::new();
        answered(&collector, "fast", 2, 5);
        // slower, and busy: its rank 4³ × 7 ms (its response time, 3 times the fast node's,
        // does not set it aside)
        queued(&collector, "was-slow", 3, 7, 5);
        // the fast node is busy with a request: q̂ = 1 + 1 × 2 clients, its rank 27 × 2 ms
        collector.begin("fast");
        let nodes = ["was-slow", "fast"];
        // as often as it loses, but no more than once per its response time
        let mut now = Instant::now();
        collector.adjust_losers_at("fast", &["was-slow"], now);
        let after_one = collector.views()[1].avg_service_time_nanos;
        collector.adjust_losers_at("fast", &["was-slow"], now + Duration::from_millis(5));
        assert_eq!(collector.views()[1].avg_service_time_nanos, after_one);
        let mut losses = 0;
        while order(&collector, &nodes, vec![0, 1])[0] == 1 {
            now += Duration::from_millis(8);
            collector.adjust_losers_at("fast", &["was-slow"], now);
            losses += 1;
            assert!(losses < 100, "the slow node never came back");
        }
        // it took several losses: one sample moves an average part of the way only
        assert!(losses > 1, "{losses}");
        let views = collector.views();
        let slow = views.iter().find(|v| v.node_id == "was-slow").unwrap();
        // back once its rank is below the busy node's (27 × 2 ms + 0.5 ms)
        assert!(slow.rank_nanos.unwrap() < 54.5e6, "{slow:?}");
        assert!(slow.avg_service_time_nanos > 2_000_000, "{slow:?}");
    }

    #[test]
    fn a_node_back_in_contention_by_estimate_is_probed_one_request_at_a_time() {
        let collector = ResponseCollector::new();
        answered(&collector, "fast", 2, 5);
        // its rank 6³ × 7 ms
        queued(&collector, "slow", 5, 7, 5);
        // the fast node is busy: q̂ = 1 + 3 × 2, its rank 343 × 2 ms
        for _ in 0..3 {
            collector.begin("fast");
        }
        let nodes = ["slow", "fast"];
        assert_eq!(order(&collector, &nodes, vec![0, 1])[0], 1);
        let mut now = Instant::now();
        // long enough a loser for its estimate to come close to the fast node's statistics
        for _ in 0..60 {
            now += Duration::from_millis(8);
            collector.adjust_losers_at("fast", &["slow"], now);
        }
        assert_eq!(order(&collector, &nodes, vec![0, 1])[0], 0);
        // the slow node wins on its estimate: one request, not a burst (its rank with one
        // in flight, 27 × its estimated service time, would still win)
        collector.begin("slow");
        let estimate = collector.views()[1].clone();
        assert!(estimate.rank_nanos.unwrap() < 686e6, "{estimate:?}");
        for _ in 0..5 {
            assert_eq!(order(&collector, &nodes, vec![0, 1])[0], 1);
        }
        // its answer is a measure again: it competes on rank, with requests in flight too
        collector.end("slow");
        answered(&collector, "slow", 2, 1);
        collector.begin("slow");
        for _ in 0..5 {
            collector.begin("fast");
        }
        assert_eq!(
            order(&collector, &nodes, vec![1, 0])[0],
            0,
            "{:?}",
            collector.views()
        );
    }

    #[test]
    fn a_loser_with_requests_in_flight_keeps_its_measures() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 3);
        answered(&collector, "b", 3, 3);
        collector.begin("b");
        let before = collector.views()[1].clone();
        collector.adjust_losers_at("a", &["b"], Instant::now() + Duration::from_secs(5));
        assert_eq!(collector.views()[1], before);
        // and it is ranked, not held back like a node being probed
        collector.begin("a");
        collector.begin("a");
        assert_eq!(order(&collector, &["a", "b"], vec![0, 1])[0], 1);
    }

    #[test]
    fn one_loss_of_a_near_tie_does_not_hold_a_fast_node_back() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 3);
        answered(&collector, "b", 2, 3);
        answered(&collector, "slow", 200, 3);
        // b lost to a while idle: one added sample, its statistics still mostly measured
        collector.adjust_losers_at("a", &["b"], Instant::now() + Duration::from_secs(1));
        collector.begin("b");
        // with its request in flight, b still beats the slow node
        assert_eq!(order(&collector, &["slow", "b"], vec![0, 1])[0], 1);
    }

    #[test]
    fn a_node_that_leaves_loses_its_statistics() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 1);
        answered(&collector, "b", 2, 1);
        collector.retain(|node| node == "a");
        let views = collector.views();
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].node_id, "a");
        assert_eq!(views[0].outgoing_searches, 0);
        assert!(views[0].rank_nanos.is_some());
        // a request that ends after its node left is forgotten
        collector.end("b");
        assert_eq!(collector.views().len(), 1);
    }
    /// `stalled` answered slower than [`LAGGING_ENTER`] times `fast`, and was ranked once a
    /// second later.
    fn set_aside(collector: &ResponseCollector) -> Ranking {
        answered(collector, "fast", 2, 3);
        answered(collector, "stalled", 20, 3);
        let later = Instant::now() + Duration::from_secs(1);
        collector.choose_at(&["stalled", "fast"], vec![0, 1], later)
    }

    fn in_flight(collector: &ResponseCollector, node: &str) -> usize {
        let views = collector.views();
        views
            .iter()
            .find(|v| v.node_id == node)
            .map_or(0, |v| v.outgoing_searches)
    }

    #[test]
    fn a_node_many_times_slower_gets_probes_not_requests() {
        let collector = ResponseCollector::new();
        let ranking = set_aside(&collector);
        assert_eq!(ranking.order, [1, 0]);
        assert_eq!(ranking.probe, Some(0), "a probe is due");
        assert_eq!(in_flight(&collector, "stalled"), 1, "the probe is counted");
        // however busy the fast node, the stalled one takes no request while it has a copy
        for _ in 0..30 {
            collector.begin("fast");
            let ranking = collector.choose(&["stalled", "fast"], vec![0, 1]);
            assert_eq!(
                ranking,
                Ranking {
                    order: vec![1, 0],
                    probe: None
                }
            );
        }
        // the same with a single copy besides it ranked below it
        let alone = collector.choose(&["stalled"], vec![0]);
        assert_eq!(
            alone,
            Ranking {
                order: vec![0],
                probe: None
            }
        );
    }

    #[test]
    fn probes_are_spaced_by_the_nodes_own_response_time() {
        let collector = ResponseCollector::new();
        set_aside(&collector);
        let nodes = ["stalled", "fast"];
        // the probe answers slowly: the next one waits for the node's response time
        collector.end("stalled");
        answered(&collector, "stalled", 20, 1);
        let now = Instant::now();
        assert_eq!(collector.choose_at(&nodes, vec![0, 1], now).probe, None);
        let later = now + Duration::from_micros(20_500);
        assert_eq!(
            collector.choose_at(&nodes, vec![0, 1], later).probe,
            Some(0)
        );
        assert_eq!(
            collector.choose_at(&nodes, vec![0, 1], later).probe,
            None,
            "one at a time"
        );
    }

    #[test]
    fn good_probes_in_a_row_bring_a_node_back() {
        let collector = ResponseCollector::new();
        set_aside(&collector);
        let nodes = ["stalled", "fast"];
        for _ in 0..5 {
            collector.begin("fast");
        }
        // good answers, then a slow one: the count starts again
        answered(&collector, "stalled", 2, REJOIN_PROBES as usize - 1);
        answered(&collector, "stalled", 20, 1);
        answered(&collector, "stalled", 2, REJOIN_PROBES as usize - 1);
        assert_eq!(order(&collector, &nodes, vec![0, 1])[0], 1);
        // one more in a row: back, ranked on its new answers (the fast node is busy)
        answered(&collector, "stalled", 2, 1);
        let ranking = collector.choose(&nodes, vec![0, 1]);
        assert_eq!(
            ranking,
            Ranking {
                order: vec![0, 1],
                probe: None
            }
        );
        let back = collector.views()[1].clone();
        assert_eq!(
            back.avg_response_time_nanos, 2_500_000,
            "the stall is forgotten"
        );
    }

    #[test]
    fn where_every_copy_lags_the_lower_response_time_takes_the_request() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 3);
        answered(&collector, "b", 100, 3);
        // c answers faster than b but reports a long queue: by rank alone, b would win
        queued(&collector, "c", 5, 40, 3);
        // b lags behind the mean of a and c, then c behind a
        collector.choose(&["a", "b", "c"], vec![0, 1, 2]);
        let ranking = collector.choose(&["b", "c"], vec![0, 1]);
        assert_eq!(
            ranking,
            Ranking {
                order: vec![1, 0],
                probe: None
            }
        );
    }

    #[test]
    fn a_node_within_the_margin_is_not_set_aside() {
        let collector = ResponseCollector::new();
        answered(&collector, "a", 2, 3);
        answered(&collector, "b", 6, 3);
        // 6.5 ms against 2.5 ms: under 3 times
        for _ in 0..3 {
            collector.begin("a");
        }
        let ranking = collector.choose(&["a", "b"], vec![0, 1]);
        assert_eq!(
            ranking,
            Ranking {
                order: vec![1, 0],
                probe: None
            }
        );
    }
}
