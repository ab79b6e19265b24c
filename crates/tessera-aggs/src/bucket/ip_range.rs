//! `ip_range`: one bucket per range of ip addresses, given as `from`/`to` addresses or as a
//! CIDR `mask`.
//!
//! Addresses compare as 128-bit IPv6 numbers (IPv4 as IPv4-mapped), as OpenSearch stores
//! them, so a range may mix both families. A mask becomes `[network, network + size)`, its
//! key the mask as written; an open bound prints nothing and `*` in the key. As in OpenSearch
//! the ranges are sorted by `(from, to)` with open lower bounds first, and a document counts
//! once in each range one of its addresses falls in ([`RangeTally`]).

use std::net::{IpAddr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::bucket::histogram::bucket_list;
use crate::bucket::range::{reduce_buckets, RangeBucket, RangeTally};
use crate::bucket::token;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, unknown_field, value_text, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{ip_to_string, Accepts, IpValues, ValueSource};

const AGG: &str = "ip_range";

/// One range with its bounds resolved; `None` is open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpRange {
    pub key: String,
    pub from: Option<Ipv6Addr>,
    pub to: Option<Ipv6Addr>,
}

impl IpRange {
    fn contains(&self, ip: Ipv6Addr) -> bool {
        self.from.is_none_or(|from| ip >= from) && self.to.is_none_or(|to| ip < to)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct IpRangeRequest {
    pub source: ValuesSourceParams,
    /// Sorted by `(from, to)`, open lower bounds first.
    pub ranges: Vec<IpRange>,
    pub keyed: bool,
}

fn ranges_error(cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [ranges]")).caused_by(cause)
}

/// An address as OpenSearch's `InetAddresses.forString` reads it, IPv4 mapped into IPv6.
fn parse_ip(value: &Value) -> Result<Ipv6Addr> {
    let text = value_text(value);
    match text.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => Ok(v4.to_ipv6_mapped()),
        Ok(IpAddr::V6(v6)) => Ok(v6),
        Err(_) => Err(Error::illegal_argument(format!(
            "'{text}' is not an IP string literal."
        ))),
    }
}

/// `ip/prefix` as `[network, network + 2^(bits − prefix))`; the upper bound is open when it
/// passes the last address, the lower one when it is `::`.
fn parse_mask(mask: &str) -> Result<(Option<Ipv6Addr>, Option<Ipv6Addr>)> {
    let Some((ip, prefix)) = mask.split_once('/') else {
        return Err(Error::illegal_argument(format!(
            "Expected [ip/prefix] but was [{mask}]"
        )));
    };
    let address = ip
        .parse::<IpAddr>()
        .map_err(|_| Error::illegal_argument(format!("'{ip}' is not an IP string literal.")))?;
    let (bits, base) = match address {
        IpAddr::V4(v4) => (32u32, v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => (128u32, v6),
    };
    let prefix = prefix.parse::<u32>().ok().filter(|p| *p <= bits).ok_or_else(|| {
        Error::illegal_argument(format!(
            "Illegal prefix length [{prefix}] in [{mask}]. Must be 0-32 for IPv4 ranges, 0-128 for IPv6 ranges"
        ))
    })?;
    let host_bits = bits - prefix;
    let size: u128 = 1u128.checked_shl(host_bits).unwrap_or(0);
    let network = u128::from(base) & !size.wrapping_sub(1);
    // the network of a mapped IPv4 address keeps the `::ffff:0:0/96` prefix
    let network = if bits == 32 {
        network | (0xffffu128 << 32)
    } else {
        network
    };
    let from = (network != 0).then(|| Ipv6Addr::from(network));
    let to = if host_bits == 128 {
        None
    } else {
        network.checked_add(size).map(Ipv6Addr::from)
    };
    Ok((from, to))
}

fn parse_range(item: &Value) -> Result<IpRange> {
    let Value::Object(map) = item else {
        return Err(ranges_error(Error::x_content_parse(format!(
            "[{AGG}] ranges doesn't support values of type: {}",
            token(item)
        ))));
    };
    let (mut key, mut from, mut to, mut mask) = (None, None, None, None);
    let bound = |value: &Value| {
        (!value.is_null())
            .then(|| parse_ip(value))
            .transpose()
            .map_err(ranges_error)
    };
    for (name, value) in map {
        match name.as_str() {
            "key" => key = value.as_str().map(str::to_string),
            "from" => from = bound(value)?,
            "to" => to = bound(value)?,
            "mask" => mask = value.as_str().map(str::to_string),
            _ => {
                return Err(ranges_error(Error::new(
                    "parsing_exception",
                    400,
                    format!("Unexpected ip range parameter: [{name}]"),
                )))
            }
        }
    }
    let (from, to) = match &mask {
        Some(mask) => parse_mask(mask).map_err(ranges_error)?,
        None => (from, to),
    };
    let key = key.or(mask).unwrap_or_else(|| {
        let end = |ip: Option<Ipv6Addr>| ip.map_or_else(|| "*".to_string(), ip_to_string);
        format!("{}-{}", end(from), end(to))
    });
    Ok(IpRange { key, from, to })
}

impl IpRangeRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<IpRangeRequest> {
        let mut request = IpRangeRequest {
            source: ValuesSourceParams::default(),
            ranges: Vec::new(),
            keyed: false,
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "ranges" => {
                    let Value::Array(items) = value else {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] ranges doesn't support values of type: {}",
                            token(value)
                        )));
                    };
                    for item in items {
                        request.ranges.push(parse_range(item)?);
                    }
                }
                "keyed" => request.keyed = bool_param(AGG, key, value)?,
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        // an open lower bound sorts first, an open upper bound last
        request.ranges.sort_by(|a, b| {
            a.from
                .cmp(&b.from)
                .then_with(|| a.to.is_none().cmp(&b.to.is_none()))
                .then_with(|| a.to.cmp(&b.to))
        });
        Ok(request)
    }
}

pub fn factory(
    request: &AggRequest,
    ip_range: &IpRangeRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let field = ip_range.source.require_field(&request.name)?;
    let source = ValueSource::resolve(ctx.table, field, AGG, Accepts::Ip)?;
    if ip_range.ranges.is_empty() {
        return Err(Error::illegal_argument(format!(
            "No [ranges] specified for the [{}] aggregation",
            request.name
        )));
    }
    let missing = ip_range.source.missing.as_ref().map(parse_ip).transpose()?;
    Ok(Box::new(IpRangeFactory {
        source,
        ranges: ip_range.ranges.clone(),
        missing,
    }))
}

struct IpRangeFactory {
    source: ValueSource,
    ranges: Vec<IpRange>,
    missing: Option<Ipv6Addr>,
}

impl Factory for IpRangeFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(IpRangeCollector {
            source: self.source.clone(),
            ranges: self.ranges.clone(),
            missing: self.missing,
            values: None,
            tally: RangeTally::default(),
            subs,
            hits: Vec::new(),
        }))
    }
}

struct IpRangeCollector {
    source: ValueSource,
    ranges: Vec<IpRange>,
    missing: Option<Ipv6Addr>,
    values: Option<IpValues>,
    tally: RangeTally,
    subs: SubCollectors,
    hits: Vec<(u32, u32)>,
}

impl Collector for IpRangeCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(IpValues::open(&self.source, segment.reader)?);
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(values) = &mut self.values else {
            return;
        };
        let ranges = &self.ranges;
        let hits = &mut self.hits;
        hits.clear();
        let mut record = |p: usize, ip: Ipv6Addr| {
            for (i, range) in ranges.iter().enumerate() {
                if range.contains(ip) {
                    hits.push((p as u32, i as u32));
                }
            }
        };
        match self.missing {
            None => values.for_each(docs, record),
            Some(missing) => {
                // a doc's values come together, so a doc without values is a gap in positions
                let mut next = 0;
                values.for_each(docs, |p, ip| {
                    (next..p).for_each(|gap| record(gap, missing));
                    next = p + 1;
                    record(p, ip);
                });
                (next..docs.len()).for_each(|gap| record(gap, missing));
            }
        }
        self.tally
            .add(hits, ranges.len() as u32, docs, parents, &mut self.subs);
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let n = self.ranges.len() as u32;
        Ok(InternalAgg::IpRange(InternalIpRange {
            buckets: self.tally.buckets(parent, n, &mut self.subs)?,
            ranges: self.ranges.clone(),
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalIpRange {
    /// One per range, in the sorted order.
    pub buckets: Vec<RangeBucket>,
    pub ranges: Vec<IpRange>,
}

fn request_of(request: &AggRequest) -> Result<&IpRangeRequest> {
    match &request.kind {
        AggKind::IpRange(r) => Ok(r),
        _ => Err(Error::illegal_state("ip_range result for another request")),
    }
}

impl InternalIpRange {
    pub fn empty(ip_range: &IpRangeRequest, subs: &[AggRequest]) -> InternalIpRange {
        InternalIpRange {
            buckets: ip_range
                .ranges
                .iter()
                .map(|_| RangeBucket {
                    doc_count: 0,
                    subs: InternalAggregations::empty(subs),
                })
                .collect(),
            ranges: ip_range.ranges.clone(),
        }
    }

    pub fn reduce(parts: Vec<InternalIpRange>, request: &AggRequest) -> Result<InternalIpRange> {
        let ranges = request_of(request)?.ranges.clone();
        let buckets = reduce_buckets(
            parts.into_iter().map(|p| p.buckets),
            ranges.len(),
            "ip_range",
            request,
        )?;
        Ok(InternalIpRange { buckets, ranges })
    }

    pub fn for_each_subs(
        &mut self,
        mut f: impl FnMut(&mut InternalAggregations) -> Result<()>,
    ) -> Result<()> {
        self.buckets.iter_mut().try_for_each(|b| f(&mut b.subs))
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let keyed = request_of(request)?.keyed;
        ctx.add_buckets(self.buckets.len())?;
        let mut rendered = Vec::with_capacity(self.buckets.len());
        for (bucket, range) in self.buckets.into_iter().zip(self.ranges) {
            let mut out = Map::new();
            if !keyed {
                out.insert("key".into(), json!(range.key));
            }
            if let Some(from) = range.from {
                out.insert("from".into(), json!(ip_to_string(from)));
            }
            if let Some(to) = range.to {
                out.insert("to".into(), json!(ip_to_string(to)));
            }
            out.insert("doc_count".into(), json!(bucket.doc_count));
            render_subs(&mut out, bucket.subs, &request.subs, ctx)?;
            rendered.push((range.key, Value::Object(out)));
        }
        Ok(bucket_list(rendered, keyed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<IpRangeRequest> {
        IpRangeRequest::parse(body.as_object().unwrap())
    }

    fn ip(text: &str) -> Option<Ipv6Addr> {
        Some(parse_ip(&json!(text)).unwrap())
    }

    #[test]
    fn masks_become_network_ranges() {
        assert_eq!(
            parse_mask("10.0.0.1/24").unwrap(),
            (ip("10.0.0.0"), ip("10.0.1.0"))
        );
        assert_eq!(
            parse_mask("10.0.0.0/25").unwrap(),
            (ip("10.0.0.0"), ip("10.0.0.128"))
        );
        assert_eq!(
            parse_mask("0.0.0.0/0").unwrap(),
            (ip("0.0.0.0"), ip("::1:0:0:0"))
        );
        assert_eq!(parse_mask("::/0").unwrap(), (None, None));
        assert_eq!(
            parse_mask("2001:db8::/32").unwrap(),
            (ip("2001:db8::"), ip("2001:db9::"))
        );
        let bad = parse_mask("10.0.0.0/33").unwrap_err();
        assert!(bad
            .to_string()
            .contains("Illegal prefix length [33] in [10.0.0.0/33]"));
        assert!(parse_mask("10.0.0.0")
            .unwrap_err()
            .to_string()
            .contains("Expected [ip/prefix]"));
    }

    #[test]
    fn ranges_sort_and_key_like_opensearch() {
        let request = parse(json!({"field": "ip", "ranges": [
            {"to": "10.0.0.5"}, {"from": "10.0.0.5"}, {"mask": "10.0.0.0/25"},
            {"from": "::1", "to": "::2"}, {"key": "x", "from": "10.0.0.0", "to": "10.0.0.10"}
        ]}))
        .unwrap();
        let keys: Vec<_> = request.ranges.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            ["*-10.0.0.5", "::1-::2", "x", "10.0.0.0/25", "10.0.0.5-*"]
        );
        assert!(request.ranges[0].contains(ip("::1").unwrap()));
        assert!(!request.ranges[0].contains(ip("10.0.0.5").unwrap()));
    }

    #[test]
    fn bad_ranges_are_refused_with_opensearch_s_errors() {
        let bad_ip = parse(json!({"field": "ip", "ranges": [{"from": "10.0.0.300"}]})).unwrap_err();
        assert!(format!("{bad_ip:?}").contains("'10.0.0.300' is not an IP string literal."));
        let number = parse(json!({"field": "ip", "ranges": [{"from": 1}]})).unwrap_err();
        assert!(format!("{number:?}").contains("'1' is not an IP string literal."));
        let unknown = parse(json!({"field": "ip", "ranges": [{"foo": 1}]})).unwrap_err();
        assert!(format!("{unknown:?}").contains("Unexpected ip range parameter: [foo]"));
    }
}
