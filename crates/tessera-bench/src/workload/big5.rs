//! big5: cloud logs (syslog lines shipped by filebeat from CloudWatch), the "big five" query
//! shapes: text search, sorting, date histograms, range filters and terms aggregations.
//!
//! A message looks like `<iso ts> <syslog ts> ip-<addr> <process>: <random words>`. Words come
//! from a Zipf-distributed vocabulary that includes animal names (monkey, jackal, bear …), so
//! `query-string-on-message` matches a few percent of the lines; `process.name` is skewed with
//! kernel, systemd and journal on top; `@timestamp` covers 2023-01-01..2023-01-08 with a daily
//! rhythm, so the 2023-01-01..2023-01-03 range holds about two sevenths of the corpus.
//! Host, agent and log-stream pools are fixed (not seeded), so operations can name a value
//! (`term` asks for the most common log file path, the numeric sorts with a match for
//! `solarshark`, a common stream, and the range-field queries for `indigodagger`, a rare one).
//! The public `scroll` operation pages with a scroll id, which `bench run` does not do: it is
//! left out.

use super::fmt;
use super::{op, DocGenerator, Operation, Workload};
use crate::rng::{cumulative, zipf_weights, Rng};
use crate::timefmt::{epoch_seconds, push_iso_millis, push_syslog};

pub fn workload() -> Workload {
    let d = (200, 100);
    let p = |name, body| op(name, body, true, d);
    let x = |name, body| op(name, body, false, d);
    let ops: Vec<Operation> = vec![
        p(
            "range-auto-date-histo",
            include_str!("../../workloads/big5/range-auto-date-histo.json"),
        ),
        p(
            "range-auto-date-histo-with-metrics",
            include_str!("../../workloads/big5/range-auto-date-histo-with-metrics.json"),
        ),
        p(
            "query-string-on-message",
            include_str!("../../workloads/big5/query-string-on-message.json"),
        ),
        p(
            "keyword-in-range",
            include_str!("../../workloads/big5/keyword-in-range.json"),
        ),
        x(
            "default",
            include_str!("../../workloads/big5/extra/default.json"),
        ),
        x("term", include_str!("../../workloads/big5/extra/term.json")),
        x(
            "range",
            include_str!("../../workloads/big5/extra/range.json"),
        ),
        x(
            "desc_sort_timestamp",
            include_str!("../../workloads/big5/extra/desc_sort_timestamp.json"),
        ),
        x(
            "keyword-terms",
            include_str!("../../workloads/big5/extra/keyword-terms.json"),
        ),
        x(
            "sort_keyword_can_match_shortcut",
            include_str!("../../workloads/big5/extra/sort_keyword_can_match_shortcut.json"),
        ),
        x(
            "sort_keyword_no_can_match_shortcut",
            include_str!("../../workloads/big5/extra/sort_keyword_no_can_match_shortcut.json"),
        ),
        x(
            "range-agg-1",
            include_str!("../../workloads/big5/extra/range-agg-1.json"),
        ),
        x(
            "range-agg-2",
            include_str!("../../workloads/big5/extra/range-agg-2.json"),
        ),
        x(
            "keyword-terms-low-cardinality",
            include_str!("../../workloads/big5/extra/keyword-terms-low-cardinality.json"),
        ),
        x(
            "composite-date_histogram-daily",
            include_str!("../../workloads/big5/extra/composite-date_histogram-daily.json"),
        ),
        x(
            "term-suggest",
            include_str!("../../workloads/big5/extra/term-suggest.json"),
        ),
        x(
            "range-numeric",
            include_str!("../../workloads/big5/extra/range-numeric.json"),
        ),
        x(
            "date_histogram_hourly_agg",
            include_str!("../../workloads/big5/extra/date_histogram_hourly_agg.json"),
        ),
        x(
            "date_histogram_minute_agg",
            include_str!("../../workloads/big5/extra/date_histogram_minute_agg.json"),
        ),
        x(
            "desc_sort_with_after_timestamp",
            include_str!("../../workloads/big5/extra/desc_sort_with_after_timestamp.json"),
        ),
        x(
            "asc_sort_timestamp",
            include_str!("../../workloads/big5/extra/asc_sort_timestamp.json"),
        ),
        x(
            "asc_sort_with_after_timestamp",
            include_str!("../../workloads/big5/extra/asc_sort_with_after_timestamp.json"),
        ),
        x(
            "desc_sort_timestamp_can_match_shortcut",
            include_str!("../../workloads/big5/extra/desc_sort_timestamp_can_match_shortcut.json"),
        ),
        x(
            "asc_sort_timestamp_can_match_shortcut",
            include_str!("../../workloads/big5/extra/asc_sort_timestamp_can_match_shortcut.json"),
        ),
        x(
            "sort_numeric_desc",
            include_str!("../../workloads/big5/extra/sort_numeric_desc.json"),
        ),
        x(
            "sort_numeric_asc",
            include_str!("../../workloads/big5/extra/sort_numeric_asc.json"),
        ),
        x(
            "sort_numeric_desc_with_match",
            include_str!("../../workloads/big5/extra/sort_numeric_desc_with_match.json"),
        ),
        x(
            "sort_numeric_asc_with_match",
            include_str!("../../workloads/big5/extra/sort_numeric_asc_with_match.json"),
        ),
        x(
            "terms-significant-1",
            include_str!("../../workloads/big5/extra/terms-significant-1.json"),
        ),
        x(
            "terms-significant-2",
            include_str!("../../workloads/big5/extra/terms-significant-2.json"),
        ),
        x(
            "range_field_conjunction_big_range_big_term_query",
            include_str!("../../workloads/big5/extra/range_field_conjunction_big_range_big_term_query.json"),
        ),
        x(
            "range_field_disjunction_big_range_small_term_query",
            include_str!("../../workloads/big5/extra/range_field_disjunction_big_range_small_term_query.json"),
        ),
        x(
            "range_field_conjunction_small_range_small_term_query",
            include_str!("../../workloads/big5/extra/range_field_conjunction_small_range_small_term_query.json"),
        ),
        x(
            "range_field_conjunction_small_range_big_term_query",
            include_str!("../../workloads/big5/extra/range_field_conjunction_small_range_big_term_query.json"),
        ),
        x(
            "multi_terms-keyword",
            include_str!("../../workloads/big5/extra/multi_terms-keyword.json"),
        ),
        x(
            "composite-terms",
            include_str!("../../workloads/big5/extra/composite-terms.json"),
        ),
        x(
            "composite_terms-keyword",
            include_str!("../../workloads/big5/extra/composite_terms-keyword.json"),
        ),
        x(
            "query-string-on-message-filtered",
            include_str!("../../workloads/big5/extra/query-string-on-message-filtered.json"),
        ),
        x(
            "query-string-on-message-filtered-sorted-num",
            include_str!("../../workloads/big5/extra/query-string-on-message-filtered-sorted-num.json"),
        ),
        x(
            "desc_sort_timestamp_no_can_match_shortcut",
            include_str!("../../workloads/big5/extra/desc_sort_timestamp_no_can_match_shortcut.json"),
        ),
        x(
            "asc_sort_timestamp_no_can_match_shortcut",
            include_str!("../../workloads/big5/extra/asc_sort_timestamp_no_can_match_shortcut.json"),
        ),
    ];
    Workload {
        name: "big5",
        default_index: "big5",
        description: "cloud logs: text search, sorting, date histograms, range filters, terms",
        index_body: include_str!("../../workloads/big5/index.json"),
        operations: ops,
        focus_operation: "range-auto-date-histo-with-metrics",
        default_docs: 1_000_000,
        make_generator: |seed, _docs| Box::new(Big5::new(seed)),
    }
}

const PROCESSES: [(&str, f64); 16] = [
    ("kernel", 0.18),
    ("systemd", 0.16),
    ("journal", 0.12),
    ("sshd", 0.08),
    ("cron", 0.07),
    ("dhclient", 0.06),
    ("rsyslogd", 0.05),
    ("dockerd", 0.05),
    ("containerd", 0.04),
    ("kubelet", 0.04),
    ("auditd", 0.03),
    ("NetworkManager", 0.03),
    ("polkitd", 0.02),
    ("chronyd", 0.02),
    ("sudo", 0.02),
    ("snapd", 0.01),
];

const REGIONS: [(&str, f64); 10] = [
    ("us-east-1", 0.30),
    ("us-west-2", 0.18),
    ("eu-central-1", 0.12),
    ("eu-west-1", 0.10),
    ("us-east-2", 0.08),
    ("ap-southeast-1", 0.06),
    ("ap-northeast-1", 0.06),
    ("us-west-1", 0.04),
    ("ap-south-1", 0.04),
    ("sa-east-1", 0.02),
];

const FIRST: [&str; 32] = [
    "fuschia", "sunset", "luck", "fancy", "thorn", "storm", "ember", "frost", "silver", "shadow",
    "amber", "iron", "velvet", "copper", "misty", "lunar", "crimson", "golden", "hollow", "quick",
    "brave", "quiet", "wild", "bright", "dusk", "river", "stone", "cloud", "spring", "winter",
    "maple", "ocean",
];
const SECOND: [&str; 32] = [
    "shoulder", "mark", "crafter", "dancer", "falcon", "glazer", "whip", "servant", "runner",
    "keeper", "weaver", "singer", "walker", "maker", "breaker", "rider", "seeker", "smith",
    "warden", "hunter", "binder", "caller", "jumper", "spinner", "striker", "trader", "finder",
    "dreamer", "builder", "tender", "herald", "sparrow",
];

/// The vocabulary of the free-text part of messages, roughly most frequent first.
const WORDS: [&str; 120] = [
    "error",
    "connection",
    "started",
    "session",
    "user",
    "failed",
    "request",
    "service",
    "reload",
    "timeout",
    "process",
    "network",
    "update",
    "config",
    "warning",
    "accepted",
    "closed",
    "opened",
    "device",
    "interface",
    "memory",
    "disk",
    "mount",
    "unit",
    "socket",
    "link",
    "packet",
    "route",
    "daemon",
    "signal",
    "cache",
    "client",
    "server",
    "token",
    "queue",
    "worker",
    "thread",
    "lock",
    "retry",
    "backoff",
    "donkey",
    "fly",
    "shark",
    "whip",
    "servant",
    "glazer",
    "thorn",
    "falcon",
    "monkey",
    "jackal",
    "bear",
    "tiger",
    "eagle",
    "otter",
    "badger",
    "heron",
    "lynx",
    "moose",
    "raven",
    "wolf",
    "fox",
    "owl",
    "viper",
    "cobra",
    "bison",
    "gecko",
    "koala",
    "lemur",
    "llama",
    "panda",
    "yak",
    "zebra",
    "hyena",
    "walrus",
    "beaver",
    "ferret",
    "marten",
    "weasel",
    "stoat",
    "mink",
    "puma",
    "ocelot",
    "jaguar",
    "cheetah",
    "leopard",
    "gazelle",
    "antelope",
    "ibex",
    "camel",
    "alpaca",
    "crane",
    "stork",
    "pelican",
    "gull",
    "tern",
    "puffin",
    "swan",
    "goose",
    "duck",
    "robin",
    "finch",
    "wren",
    "lark",
    "thrush",
    "magpie",
    "crow",
    "jay",
    "dove",
    "pigeon",
    "parrot",
    "macaw",
    "toucan",
    "kiwi",
    "emu",
    "ostrich",
    "penguin",
    "seal",
    "dolphin",
    "whale",
    "squid",
];

struct Big5 {
    seed: u64,
    start: i64,
    span_secs: i64,
    hours: Vec<f64>,
    processes: Vec<f64>,
    regions: Vec<f64>,
    words: Vec<f64>,
    streams: Vec<String>,
    stream_weights: Vec<f64>,
    hosts: Vec<String>,
    host_weights: Vec<f64>,
    agents: Vec<(String, String)>,
}

fn uuid(r: &mut Rng) -> String {
    let a = r.next_u64();
    let b = r.next_u64();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

impl Big5 {
    fn new(seed: u64) -> Big5 {
        // Fixed pools (independent of the corpus seed) so that operations can name values.
        let mut pool = Rng::new(0xB165);
        let mut streams: Vec<String> = (0..FIRST.len() * SECOND.len())
            .map(|i| {
                format!(
                    "{}{}",
                    FIRST[i % FIRST.len()],
                    SECOND[(i / FIRST.len() + i) % SECOND.len()]
                )
            })
            .collect();
        // two values the public operations name: a common stream (the numeric sorts with a
        // match) and a rare one (the "small term" of the range-field queries)
        streams[30] = "solarshark".to_string();
        streams[700] = "indigodagger".to_string();
        let hosts: Vec<String> = (0..2000)
            .map(|_| {
                let ip = pool.next_u64();
                format!(
                    "ip-{}-{}-{}-{}",
                    10 + (ip & 0x7f),
                    (ip >> 8) & 0xff,
                    (ip >> 16) & 0xff,
                    1 + (ip >> 24) % 254
                )
            })
            .collect();
        let agents = (0..64)
            .map(|i| {
                let name = format!("{}{}", FIRST[(i * 7) % 32], SECOND[(i * 11 + 3) % 32]);
                (uuid(&mut pool), name)
            })
            .collect();
        let per_hour = [
            0.6, 0.5, 0.5, 0.4, 0.4, 0.5, 0.7, 0.9, 1.1, 1.3, 1.4, 1.4, 1.3, 1.4, 1.4, 1.3, 1.2,
            1.1, 1.0, 0.9, 0.9, 0.8, 0.7, 0.7,
        ];
        Big5 {
            seed,
            start: epoch_seconds(2023, 1, 1, 0, 0, 0),
            span_secs: 7 * 86_400,
            hours: cumulative(per_hour),
            processes: cumulative(PROCESSES.iter().map(|p| p.1)),
            regions: cumulative(REGIONS.iter().map(|p| p.1)),
            words: cumulative(zipf_weights(WORDS.len(), 0.8)),
            stream_weights: cumulative(zipf_weights(streams.len(), 1.0)),
            streams,
            host_weights: cumulative(zipf_weights(hosts.len(), 0.7)),
            hosts,
            agents,
        }
    }
}

impl DocGenerator for Big5 {
    fn write_doc(&self, doc: u64, out: &mut Vec<u8>) {
        let r = &mut Rng::for_doc(self.seed, doc);
        let day = r.below((self.span_secs / 86_400) as u64) as i64;
        let hour = r.pick_cumulative(&self.hours) as i64;
        let ts_ms = (self.start + day * 86_400 + hour * 3600) * 1000 + r.below(3_600_000) as i64;
        let ts = ts_ms / 1000;
        let process = PROCESSES[r.pick_cumulative(&self.processes)].0;
        let host = &self.hosts[r.pick_cumulative(&self.host_weights)];
        let stream = &self.streams[r.pick_cumulative(&self.stream_weights)];
        let (agent_id, agent_name) = &self.agents[r.below(self.agents.len() as u64) as usize];
        let region = REGIONS[r.pick_cumulative(&self.regions)].0;

        out.extend_from_slice(b"{\"message\":\"");
        push_iso_millis(out, ts_ms);
        out.push(b' ');
        push_syslog(out, ts);
        out.push(b' ');
        out.extend_from_slice(host.as_bytes());
        out.push(b' ');
        out.extend_from_slice(process.as_bytes());
        out.extend_from_slice(b": ");
        let n = 4 + r.below(11);
        for i in 0..n {
            if i > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(WORDS[r.pick_cumulative(&self.words)].as_bytes());
        }
        out.extend_from_slice(b"\",");
        fmt::key(out, "process");
        out.extend_from_slice(b"{\"name\":");
        fmt::str(out, process);
        out.extend_from_slice(b"},\"aws\":{\"cloudwatch\":{\"ingestion_time\":\"");
        push_iso_millis(out, ts_ms + 500 + r.below(30_000) as i64);
        out.extend_from_slice(b"\",\"log_group\":\"/var/log/messages\",\"log_stream\":");
        fmt::str(out, stream);
        out.extend_from_slice(b"}},\"tags\":[\"preserve_original_event\"],\"meta\":{\"file\":\"");
        let mut date = Vec::with_capacity(24);
        push_iso_millis(&mut date, ts_ms);
        out.extend_from_slice(&date[..10]);
        out.push(b'/');
        fmt::int(out, ts / 3600 * 3600); // the hour the file was cut
        out.extend_from_slice(b"-gotext.ndjson.gz\"},\"cloud\":{\"region\":");
        fmt::str(out, region);
        out.extend_from_slice(b"},\"@timestamp\":\"");
        push_iso_millis(out, ts_ms);
        out.extend_from_slice(b"\",\"input\":{\"type\":\"aws-cloudwatch\"},\"metrics\":{\"tmin\":");
        fmt::int(out, r.lognormal(300.0, 1.0).round() as i64);
        out.extend_from_slice(b",\"size\":");
        fmt::int(out, r.lognormal(900.0, 1.2).round() as i64);
        out.extend_from_slice(b"},\"log\":{\"file\":{\"path\":\"/var/log/messages/");
        out.extend_from_slice(stream.as_bytes());
        out.extend_from_slice(b"\"}},\"event\":{\"id\":\"");
        out.extend_from_slice(FIRST[r.below(32) as usize].as_bytes());
        out.extend_from_slice(SECOND[r.below(32) as usize].as_bytes());
        out.extend_from_slice(b"\",\"dataset\":\"generic\",\"ingested\":\"");
        push_iso_millis(out, ts_ms + (r.lognormal(300.0, 1.0) * 1000.0) as i64);
        out.extend_from_slice(b"\"},\"agent\":{\"id\":");
        fmt::str(out, agent_id);
        out.extend_from_slice(b",\"name\":");
        fmt::str(out, agent_name);
        out.extend_from_slice(b",\"ephemeral_id\":");
        fmt::str(out, agent_id);
        out.extend_from_slice(
            b",\"type\":\"filebeat\",\"version\":\"8.8.0\"},\"ecs\":{\"version\":\"8.0.0\"},\
              \"data_stream\":{\"dataset\":\"generic\",\"namespace\":\"default\",\"type\":\"logs\"}}",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_mapped, docs, share};
    use super::*;

    #[test]
    fn documents_match_the_mapping_and_operations_select_realistic_shares() {
        let w = workload();
        let props = w.index_json()["mappings"]["properties"].clone();
        let docs = docs(&w, 3, 30_000);
        for d in docs.iter().take(500) {
            assert_mapped(d, &props, "");
        }
        let in_range = |d: &serde_json::Value| {
            let t = d["@timestamp"].as_str().unwrap();
            ("2023-01-01".."2023-01-03").contains(&t)
        };
        let range = share(&docs, in_range);
        assert!((0.25..0.33).contains(&range), "range share {range}");
        let kernel = share(&docs, |d| in_range(d) && d["process"]["name"] == "kernel");
        assert!(
            (0.03..0.08).contains(&kernel),
            "keyword-in-range share {kernel}"
        );
        let animals = share(&docs, |d| {
            let m = d["message"].as_str().unwrap();
            m.split(' ')
                .any(|w| matches!(w, "monkey" | "jackal" | "bear"))
        });
        assert!(
            (0.02..0.30).contains(&animals),
            "query-string share {animals}"
        );
        let top_path = share(&docs, |d| {
            d["log"]["file"]["path"] == "/var/log/messages/fuschiashoulder"
        });
        assert!(top_path > 0.05, "term share {top_path}");
        let stream = |name: &'static str| {
            move |d: &serde_json::Value| d["aws"]["cloudwatch"]["log_stream"] == name
        };
        let common = share(&docs, stream("solarshark"));
        assert!((0.001..0.01).contains(&common), "solarshark share {common}");
        let rare = share(&docs, stream("indigodagger"));
        assert!(
            (0.00003..0.001).contains(&rare),
            "indigodagger share {rare}"
        );
        let m = docs[0]["message"].as_str().unwrap();
        assert!(m.starts_with("2023-01-0") && m.contains(" ip-"), "{m}");
    }
}
