//! What one transport call carries, inside the single gRPC method
//! `/tessera.transport.Transport/Call`.
//!
//! Every action (`indices:data/read/search[phase/query]`, …) goes through the same method: the
//! action name travels in a small header in front of the body rather than in the gRPC path, so
//! no name needs escaping and adding an action never touches the service. The request frame is
//! the postcard-encoded header (action, the deadline as milliseconds left — two nodes'
//! clocks are not comparable, a remaining budget is — and the caller's node id) followed by the
//! body, unchanged. The answer frame is a tag byte and then either the body (`0`) or the
//! postcard-encoded [`tessera_common::Error`] (`1`): a remote error comes back as itself, and a
//! body is never copied into a second serialization.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};

/// The gRPC service name ([`tonic::server::NamedService`]).
pub const SERVICE_NAME: &str = "tessera.transport.Transport";

/// The one method every action is called through.
pub const CALL_PATH: &str = "/tessera.transport.Transport/Call";

/// The largest message either side sends or accepts: aggregation partials of a shard can be
/// large, and a refused message is a failed search.
pub const MAX_MESSAGE_SIZE: usize = 256 << 20;

/// A call as the receiving side reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// The action name (which handler runs it).
    pub action: String,
    /// When the caller stops waiting, on this node's clock.
    pub deadline: Option<Instant>,
    /// The calling node, when it said.
    pub from_node: Option<String>,
    pub body: Bytes,
}

/// The header in front of the body, as written.
#[derive(Serialize)]
struct HeaderOut<'a> {
    action: &'a str,
    deadline_millis: Option<u64>,
    from_node: Option<&'a str>,
}

/// The header in front of the body, as read (the same fields, owned).
#[derive(Deserialize)]
struct Header {
    action: String,
    deadline_millis: Option<u64>,
    from_node: Option<String>,
}

/// The answer tags.
const ANSWER_OK: u8 = 0;
const ANSWER_ERR: u8 = 1;

/// What a frame that cannot be read is (OpenSearch's name for a message it cannot decode).
fn malformed(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(
        "transport_serialization_exception",
        500,
        format!("failed to read the {what}: {detail}"),
    )
}

impl Envelope {
    /// The request frame of a call.
    pub fn encode(
        action: &str,
        deadline: Option<Instant>,
        from_node: Option<&str>,
        body: &[u8],
    ) -> Result<Bytes> {
        let header = HeaderOut {
            action,
            deadline_millis: deadline
                .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64),
            from_node,
        };
        let mut frame = Vec::with_capacity(action.len() + 32 + body.len());
        frame = postcard::to_extend(&header, frame)
            .map_err(|e| Error::internal("encode a transport header", e))?;
        frame.extend_from_slice(body);
        Ok(Bytes::from(frame))
    }

    /// Reads a request frame; the body is a view of `frame`, not a copy.
    pub fn decode(frame: Bytes) -> Result<Envelope> {
        let (header, rest) = postcard::take_from_bytes::<Header>(&frame)
            .map_err(|e| malformed("transport request header", e))?;
        let body = frame.slice(frame.len() - rest.len()..);
        Ok(Envelope {
            action: header.action,
            deadline: header
                .deadline_millis
                .map(|millis| Instant::now() + Duration::from_millis(millis)),
            from_node: header.from_node,
            body,
        })
    }
}

/// The answer frame of a handler's result.
pub fn encode_answer(answer: &Result<Vec<u8>>) -> Bytes {
    match answer {
        Ok(body) => {
            let mut frame = Vec::with_capacity(1 + body.len());
            frame.push(ANSWER_OK);
            frame.extend_from_slice(body);
            Bytes::from(frame)
        }
        Err(error) => {
            let frame = postcard::to_extend(error, vec![ANSWER_ERR]).unwrap_or_else(|e| {
                // an error always encodes (it is strings and JSON text); should it not, the
                // caller still learns that the action failed and why this answer did not cross
                let fallback = Error::internal("encode a transport error", e);
                postcard::to_extend(&fallback, vec![ANSWER_ERR]).expect("a plain error encodes")
            });
            Bytes::from(frame)
        }
    }
}

/// Reads an answer frame: the handler's result, or an error when the frame is not one.
pub fn decode_answer(frame: &[u8]) -> Result<Vec<u8>> {
    match frame.split_first() {
        Some((&ANSWER_OK, body)) => Ok(body.to_vec()),
        Some((&ANSWER_ERR, error)) => Err(postcard::from_bytes::<Error>(error)
            .map_err(|e| malformed("transport error answer", e))?),
        Some((tag, _)) => Err(malformed("transport answer", format!("unknown tag {tag}"))),
        None => Err(malformed("transport answer", "empty frame")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_with_its_budget_and_an_untouched_body() {
        let deadline = Instant::now() + Duration::from_secs(30);
        let body = vec![7u8, 0, 255, 1];
        let frame = Envelope::encode(
            "indices:data/read/search[phase/query]",
            Some(deadline),
            Some("node-a"),
            &body,
        )
        .unwrap();
        let envelope = Envelope::decode(frame).unwrap();
        assert_eq!(envelope.action, "indices:data/read/search[phase/query]");
        assert_eq!(envelope.from_node.as_deref(), Some("node-a"));
        assert_eq!(&envelope.body[..], &body[..]);
        let left = envelope.deadline.unwrap() - Instant::now();
        assert!(left > Duration::from_secs(25) && left <= Duration::from_secs(30));
    }

    #[test]
    fn no_deadline_and_an_empty_body_cross_as_such() {
        let envelope = Envelope::decode(Envelope::encode("a", None, None, &[]).unwrap()).unwrap();
        assert_eq!(
            envelope,
            Envelope {
                action: "a".into(),
                deadline: None,
                from_node: None,
                body: Bytes::new(),
            }
        );
    }

    #[test]
    fn a_past_deadline_arrives_as_already_expired() {
        let past = Instant::now() - Duration::from_secs(1);
        let envelope =
            Envelope::decode(Envelope::encode("a", Some(past), None, b"x").unwrap()).unwrap();
        assert!(envelope.deadline.unwrap() <= Instant::now());
    }

    #[test]
    fn answers_carry_a_body_or_the_error_itself() {
        assert_eq!(
            decode_answer(&encode_answer(&Ok(vec![1, 2, 3]))).unwrap(),
            vec![1, 2, 3]
        );
        assert_eq!(
            decode_answer(&encode_answer(&Ok(Vec::new()))).unwrap(),
            Vec::<u8>::new()
        );
        let error = Error::new("shard_not_found_exception", 404, "no such shard")
            .with_meta("index", "logs")
            .caused_by(Error::illegal_state("closing"));
        let back = decode_answer(&encode_answer(&Err(error.clone()))).unwrap_err();
        assert_eq!(back, error);
    }

    #[test]
    fn a_garbled_frame_is_a_serialization_error_not_a_panic() {
        for frame in [&[][..], &[9, 1, 2][..], &[ANSWER_ERR, 0xff, 0xff][..]] {
            let error = decode_answer(frame).unwrap_err();
            assert_eq!(error.kind(), "transport_serialization_exception");
            assert_eq!(error.status(), 500);
        }
        let error = Envelope::decode(Bytes::from_static(&[0xff, 0xff, 0xff])).unwrap_err();
        assert_eq!(error.kind(), "transport_serialization_exception");
    }
}
