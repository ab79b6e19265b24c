//! `percentile_ranks`: for each of the given `values`, the percentage of values at or below it.
//!
//! It is `percentiles` read the other way round, so it shares that aggregation's request type,
//! collector and intermediate result ([`super::percentiles`]); what differs is the key list
//! (`values`, required, any number) and the reading: OpenSearch's t-digest `cdf`, clamped to
//! [0, 1] and shown in percent. As in OpenSearch, a date field's format is applied to the rank.

use serde_json::{Map, Value};
use tessera_common::Result;

use crate::metric::percentiles::{PercentilesKind, PercentilesRequest};

/// Parses a `percentile_ranks` body.
pub fn parse(name: &str, body: &Map<String, Value>) -> Result<PercentilesRequest> {
    PercentilesRequest::parse(PercentilesKind::Ranks, name, body)
}

#[cfg(test)]
mod tests {
    use crate::format::ValueFormat;
    use crate::metric::percentiles::InternalPercentiles;
    use crate::metric::quantiles::QuantileSketch;
    use crate::metric::test_support::{mapping, random_docs, TestShard};
    use crate::request::{parse_aggregations, AggRequest};
    use serde_json::{json, Value};

    fn request(body: Value) -> AggRequest {
        parse_aggregations(&json!({"r": {"percentile_ranks": body}}))
            .unwrap()
            .remove(0)
    }

    fn parse_err(body: Value) -> tessera_common::Error {
        parse_aggregations(&json!({"r": {"percentile_ranks": body}})).unwrap_err()
    }

    fn internal(values: &[f64], format: ValueFormat) -> InternalPercentiles {
        let mut sketch = QuantileSketch::new(5000);
        sketch.add_all(&mut values.to_vec());
        InternalPercentiles { sketch, format }
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let e = parse_err(json!({"field": "n"}));
        assert_eq!(
            e.reason(),
            "Failed to build [percentile_ranks] after last required field arrived"
        );
        assert_eq!(
            e.cause().unwrap().reason(),
            "[values] must not be null: [r]"
        );
        let e = parse_err(json!({"field": "n", "values": []}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[values] must not be an empty array: [r]"
        );
        let e = parse_err(json!({"field": "d", "values": ["2015-07-05"]}));
        assert_eq!(
            e.reason(),
            "[percentile_ranks] failed to parse field [values]"
        );
        assert_eq!(e.cause().unwrap().kind(), "number_format_exception");
        assert_eq!(
            parse_err(json!({"field": "n", "values": [1], "percents": [5]})).reason(),
            "[percentile_ranks] unknown field [percents]"
        );
    }

    /// Keys print like Java doubles and come sorted; ranks clamp to [0, 100]; a date field's
    /// format is applied to the rank (all as OpenSearch 2.19.6 does).
    #[test]
    fn renders_like_opensearch() {
        let r = request(json!({"field": "n", "values": [230.3, 1e9, -1e9, 12345678, 0]}));
        let out = internal(&[1.0, 2.0, 3.0, 4.0, 5.0], ValueFormat::Raw)
            .render(&r)
            .unwrap();
        let keys: Vec<&String> = out["values"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["-1.0E9", "0.0", "230.3", "1.2345678E7", "1.0E9"]);
        assert_eq!(out["values"]["-1.0E9"], json!(0.0));
        assert_eq!(out["values"]["1.0E9"], json!(100.0));
        let out = internal(&[], ValueFormat::Raw)
            .render(&request(json!({"field": "n", "values": [1]})))
            .unwrap();
        assert_eq!(Value::Object(out), json!({"values": {"1.0": null}}));
        let date = ValueFormat::Date {
            format: "strict_date_optional_time||epoch_millis".into(),
            zone: None,
        };
        let out = internal(&[1.0, 2.0, 3.0, 4.0], date)
            .render(&request(
                json!({"field": "d", "values": [2.5], "keyed": false}),
            ))
            .unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"values": [{"key": 2.5, "value": 50.0,
                "value_as_string": "1970-01-01T00:00:00.050Z"}]})
        );
    }

    #[test]
    fn slices_give_identical_responses() {
        let shard = TestShard::build(&mapping(), &random_docs(41, 5, 90));
        shard.check_slices(
            &json!({
                "n": {"percentile_ranks": {"field": "n", "values": [-100, 0, 100, 230.3, 1000]}},
                "f": {"percentile_ranks": {"field": "f", "values": [50], "tdigest": {"compression": 1}}},
                "by": {"terms": {"field": "g", "order": {"r.100": "desc"}},
                    "aggs": {"r": {"percentile_ranks": {"field": "n", "values": [100]}}}}
            }),
            25,
        );
    }
}
