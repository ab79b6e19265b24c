//! Bucket order (`order` of terms and histograms): by count, by key, or by a sub-aggregation's
//! value, with OpenSearch's tie-breaks and errors.

use std::cmp::Ordering;

use serde_json::Value;
use tessera_common::{Error, Result};

use crate::internal::InternalAggregations;
use crate::request::{AggRequest, MetricShape};

/// One sort criterion.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderKey {
    Count,
    Key,
    /// A sub-aggregation path: `name`, `name.metric`, or `a>b.metric`.
    Path(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct BucketOrder {
    pub criteria: Vec<(OrderKey, bool)>,
}

impl BucketOrder {
    /// `_count` descending, then `_key` ascending (the terms default).
    pub fn count_desc() -> BucketOrder {
        BucketOrder {
            criteria: vec![(OrderKey::Count, false)],
        }
    }

    /// `_key` ascending (the histogram default).
    pub fn key_asc() -> BucketOrder {
        BucketOrder {
            criteria: vec![(OrderKey::Key, true)],
        }
    }

    /// Parses `{"_count": "desc"}` or a list of such objects.
    pub fn parse(agg: &str, value: &Value) -> Result<BucketOrder> {
        let failed = |cause: Error| {
            Error::x_content_parse(format!("[{agg}] failed to parse field [order]"))
                .caused_by(cause)
        };
        let mut criteria = Vec::new();
        let mut one = |object: &serde_json::Map<String, Value>| -> Result<()> {
            for (key, direction) in object {
                let asc = match direction.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("asc") => true,
                    Some("desc") => false,
                    _ => {
                        let text = direction
                            .as_str()
                            .map(String::from)
                            .unwrap_or_else(|| direction.to_string());
                        return Err(failed(Error::parsing(format!(
                            "Unknown order direction [{text}]"
                        ))));
                    }
                };
                let key = match key.as_str() {
                    "_count" => OrderKey::Count,
                    "_key" | "_term" | "_time" => OrderKey::Key,
                    path => OrderKey::Path(path.to_string()),
                };
                criteria.push((key, asc));
            }
            Ok(())
        };
        match value {
            Value::Object(object) => one(object)?,
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Object(object) => one(object)?,
                        _ => {
                            return Err(failed(Error::parsing(
                                "Order elements must be of type object",
                            )))
                        }
                    }
                }
            }
            _ => {
                return Err(Error::x_content_parse(format!(
                    "[{agg}] order doesn't support values of type: {}",
                    crate::bucket::token(value)
                )))
            }
        }
        Ok(BucketOrder { criteria })
    }

    /// The first criterion is `_key` (key order needs no doc count error).
    pub fn is_key_order(&self) -> bool {
        matches!(self.criteria.first(), Some((OrderKey::Key, _)))
    }

    /// The first criterion is `_count` descending.
    pub fn is_count_desc(&self) -> bool {
        matches!(self.criteria.first(), Some((OrderKey::Count, false)))
    }

    /// Checks sub-aggregation paths against the request's sub-aggregations.
    pub fn validate(&self, subs: &[AggRequest]) -> Result<()> {
        for (key, _) in &self.criteria {
            if let OrderKey::Path(path) = key {
                resolve_path(path, subs)?;
            }
        }
        Ok(())
    }

    /// Sorts buckets by this order; ties fall back to the key (ascending unless the order is
    /// by key). Sub-aggregation values are computed once per bucket.
    pub fn sort<B, K: Ord>(
        &self,
        buckets: &mut Vec<B>,
        requests: &[AggRequest],
        key: impl Fn(&B) -> &K,
        count: impl Fn(&B) -> u64,
        subs: impl Fn(&B) -> &InternalAggregations,
    ) {
        let paths: Vec<&str> = self
            .criteria
            .iter()
            .filter_map(|(k, _)| match k {
                OrderKey::Path(p) => Some(p.as_str()),
                _ => None,
            })
            .collect();
        let mut keyed: Vec<(Vec<f64>, B)> = buckets
            .drain(..)
            .map(|b| {
                let values = paths
                    .iter()
                    .map(|p| path_value(p, subs(&b), requests).unwrap_or(f64::NAN))
                    .collect();
                (values, b)
            })
            .collect();
        let key_order = self.is_key_order();
        keyed.sort_by(|(va, a), (vb, b)| {
            let mut path_index = 0;
            for (criterion, asc) in &self.criteria {
                let ordering = match criterion {
                    OrderKey::Count if *asc => count(a).cmp(&count(b)),
                    OrderKey::Count => count(b).cmp(&count(a)),
                    OrderKey::Key if *asc => key(a).cmp(key(b)),
                    OrderKey::Key => key(b).cmp(key(a)),
                    OrderKey::Path(_) => {
                        path_index += 1;
                        compare_metric(va[path_index - 1], vb[path_index - 1], *asc)
                    }
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            if key_order {
                Ordering::Equal
            } else {
                key(a).cmp(key(b))
            }
        });
        buckets.extend(keyed.into_iter().map(|(_, b)| b));
    }
}

/// Metric values compare with missing values (NaN) last in both directions, as OpenSearch does.
fn compare_metric(a: f64, b: f64, asc: bool) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ if asc => a.total_cmp(&b),
        _ => b.total_cmp(&a),
    }
}

fn invalid_path(path: &str, reason: String) -> Error {
    Error::new(
        "aggregation_execution_exception",
        400,
        format!("Invalid aggregation order path [{path}]. {reason}"),
    )
    .caused_by(Error::illegal_argument(reason))
}

/// Walks `a>b.metric` through the sub-aggregation requests; returns the index path and the
/// metric name.
fn resolve_path<'a>(
    path: &'a str,
    subs: &'a [AggRequest],
) -> Result<(Vec<usize>, Option<&'a str>)> {
    let elements: Vec<&str> = path.split('>').collect();
    let mut indexes = Vec::new();
    let mut level = subs;
    let mut metric = None;
    for (i, element) in elements.iter().enumerate() {
        let last = i + 1 == elements.len();
        // as in OpenSearch, the metric name follows the last dot (`p.99` is metric "99" of "p")
        let (name, key) = match element.rsplit_once('.') {
            Some((name, key)) if last => (name, Some(key)),
            _ => match element.split_once('[') {
                Some((name, _)) => (name, None),
                None => (*element, None),
            },
        };
        let Some(position) = level.iter().position(|r| r.name == name) else {
            return Err(invalid_path(
                path,
                format!("The provided aggregation [{element}] either does not exist, or is a pipeline aggregation and cannot be used to sort the buckets."),
            ));
        };
        let request = &level[position];
        indexes.push(position);
        if last {
            match (&request.kind, request.kind.metric_shape()) {
                (kind, Some(MetricShape::Multi)) => match key {
                    None => {
                        return Err(invalid_path(
                            path,
                            "When ordering on a multi-value metrics aggregation a metric name must be specified.".into(),
                        ))
                    }
                    Some(key) if !kind.has_metric(key) => {
                        return Err(invalid_path(
                            path,
                            format!("Unknown metric name [{key}] on multi-value metrics aggregation [{name}]"),
                        ))
                    }
                    Some(key) => metric = Some(key),
                },
                (_, Some(MetricShape::Single)) => metric = key,
                (_, Some(MetricShape::NotNumeric)) => {
                    return Err(invalid_path(
                        path,
                        "Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end.".into(),
                    ))
                }
                (kind, _) if kind.is_single_bucket() && key.is_none() => {}
                _ => {
                    return Err(invalid_path(
                        path,
                        format!("Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end. Sub-path [{name}] points to non single-bucket aggregation"),
                    ))
                }
            }
        } else {
            if !request.kind.is_single_bucket() {
                return Err(invalid_path(
                    path,
                    format!("Buckets can only be sorted on a sub-aggregator path that is built out of zero or more single-bucket aggregations within the path and a final single-bucket or a metrics aggregation at the path end. Sub-path [{name}] points to non single-bucket aggregation"),
                ));
            }
            level = &request.subs;
        }
    }
    Ok((indexes, metric))
}

/// The value a bucket sorts by for a sub-aggregation path.
pub fn path_value(path: &str, subs: &InternalAggregations, requests: &[AggRequest]) -> Result<f64> {
    let (indexes, metric) = resolve_path(path, requests)?;
    let mut level_results = subs;
    let mut level_requests = requests;
    for (depth, &i) in indexes.iter().enumerate() {
        let (_, result) = level_results
            .0
            .get(i)
            .ok_or_else(|| Error::illegal_state("sub-aggregation results out of shape"))?;
        let request = &level_requests[i];
        if depth + 1 == indexes.len() {
            return result.sort_value(metric, request);
        }
        match result {
            crate::internal::InternalAgg::SingleBucket(b) => {
                level_results = &b.subs;
                level_requests = &request.subs;
            }
            _ => {
                return Err(Error::illegal_state(
                    "order path through a multi-bucket result",
                ))
            }
        }
    }
    Err(Error::illegal_state("empty order path"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use serde_json::json;

    #[test]
    fn parses_objects_lists_and_directions() {
        let o = BucketOrder::parse("terms", &json!({"_count": "asc"})).unwrap();
        assert_eq!(o.criteria, vec![(OrderKey::Count, true)]);
        let o = BucketOrder::parse("terms", &json!([{"_term": "desc"}, {"m.max": "asc"}])).unwrap();
        assert_eq!(
            o.criteria,
            vec![
                (OrderKey::Key, false),
                (OrderKey::Path("m.max".into()), true)
            ]
        );
        let e = BucketOrder::parse("terms", &json!({"_count": "up"})).unwrap_err();
        assert_eq!(e.reason(), "[terms] failed to parse field [order]");
        assert_eq!(e.cause().unwrap().reason(), "Unknown order direction [up]");
    }

    #[test]
    fn validates_paths_like_opensearch() {
        let aggs = parse_aggregations(&json!({"x": {"terms": {"field": "k"}, "aggs": {
            "m": {"stats": {"field": "f"}}, "a": {"avg": {"field": "f"}},
            "f": {"filter": {"match_all": {}}, "aggs": {"mx": {"max": {"field": "f"}}}}
        }}}))
        .unwrap();
        let subs = &aggs[0].subs;
        let check = |path: &str| {
            BucketOrder {
                criteria: vec![(OrderKey::Path(path.into()), true)],
            }
            .validate(subs)
        };
        assert!(check("m.max").is_ok());
        assert!(check("a").is_ok());
        assert!(check("f>mx").is_ok());
        assert!(check("f").is_ok());
        assert_eq!(
            check("m").unwrap_err().reason(),
            "Invalid aggregation order path [m]. When ordering on a multi-value metrics aggregation a metric name must be specified."
        );
        assert_eq!(
            check("m.bogus").unwrap_err().reason(),
            "Invalid aggregation order path [m.bogus]. Unknown metric name [bogus] on multi-value metrics aggregation [m]"
        );
        assert!(check("nope")
            .unwrap_err()
            .reason()
            .contains("[nope] either does not exist"));
    }

    #[test]
    fn nan_metrics_sort_last() {
        assert_eq!(compare_metric(f64::NAN, 1.0, true), Ordering::Greater);
        assert_eq!(compare_metric(f64::NAN, 1.0, false), Ordering::Greater);
        assert_eq!(compare_metric(2.0, 1.0, false), Ordering::Less);
    }
}
