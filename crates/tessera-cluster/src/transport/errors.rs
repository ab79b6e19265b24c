//! The errors the transport itself raises, named as OpenSearch names them, so that a failure
//! to reach a node reads the same in a Tessera response as in an OpenSearch one.
//!
//! Every failure of the wire (cannot connect, connection lost, no answer in time) is a 500:
//! it says nothing about the request, only about the copy it was sent to, so the coordinator
//! tries the next copy (`Error::is_retryable_on_another_copy`). An error the remote handler
//! returned is not one of these: it crosses as itself.

use std::error::Error as _;
use std::time::Duration;

use tessera_common::Error;
use tonic::{Code, ConnectError, Status};

/// The node could not be connected to (refused, unreachable, the connect timed out).
pub const CONNECT_TRANSPORT_EXCEPTION: &str = "connect_transport_exception";
/// The connection broke while the call was in flight (peer gone, keepalive unanswered).
pub const NODE_DISCONNECTED_EXCEPTION: &str = "node_disconnected_exception";
/// The caller's deadline passed before the answer came.
pub const RECEIVE_TIMEOUT_TRANSPORT_EXCEPTION: &str = "receive_timeout_transport_exception";
/// The receiving node has no handler for the action.
pub const ACTION_NOT_FOUND_TRANSPORT_EXCEPTION: &str = "action_not_found_transport_exception";
/// Any other failure of the transport layer.
pub const TRANSPORT_EXCEPTION: &str = "transport_exception";

/// `address` could not be connected to.
pub fn connect_failed(address: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(
        CONNECT_TRANSPORT_EXCEPTION,
        500,
        format!("[{address}] connect_exception: {detail}"),
    )
}

/// The connection to `address` broke during `action`.
pub fn disconnected(address: &str, action: &str, detail: impl std::fmt::Display) -> Error {
    Error::new(
        NODE_DISCONNECTED_EXCEPTION,
        500,
        format!("[{address}][{action}] disconnected: {detail}"),
    )
}

/// `action` on `address` did not answer within `after`.
pub fn timed_out(address: &str, action: &str, after: Duration) -> Error {
    Error::new(
        RECEIVE_TIMEOUT_TRANSPORT_EXCEPTION,
        500,
        format!(
            "[{address}][{action}] request timed out after [{}ms]",
            after.as_millis()
        ),
    )
}

/// No handler for `action` here (a 400: the caller asked for something this node cannot do).
pub fn action_not_found(action: &str) -> Error {
    Error::new(
        ACTION_NOT_FOUND_TRANSPORT_EXCEPTION,
        400,
        format!("No handler for action [{action}]"),
    )
}

/// A gRPC status the client got instead of an answer. The server answers every call with a
/// frame (a handler's error included), so a status is always the wire's failure, never the
/// handler's.
pub fn from_status(address: &str, action: &str, status: &Status) -> Error {
    let mut source = status.source();
    while let Some(cause) = source {
        if let Some(connect) = cause.downcast_ref::<ConnectError>() {
            let detail = match connect.0.source() {
                Some(inner) => format!("{connect}: {inner}"),
                None => connect.to_string(),
            };
            return connect_failed(address, detail);
        }
        source = cause.source();
    }
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled => {
            disconnected(address, action, status_text(status))
        }
        _ => Error::new(
            TRANSPORT_EXCEPTION,
            500,
            format!("[{address}][{action}] {}", status_text(status)),
        ),
    }
}

/// The status and the chain of errors under it (the cause is often only there: "transport
/// error" says little, "connection reset by peer" says what happened).
fn status_text(status: &Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    let mut source = status.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_failures_are_retried_on_another_copy_and_a_missing_action_is_not() {
        for error in [
            connect_failed("127.0.0.1:1", "refused"),
            disconnected("127.0.0.1:1", "a", "reset"),
            timed_out("127.0.0.1:1", "a", Duration::from_millis(5)),
            from_status("h:1", "a", &Status::resource_exhausted("too big")),
        ] {
            assert_eq!(error.status(), 500);
            assert!(error.is_retryable_on_another_copy(), "{error:?}");
        }
        let missing = action_not_found("indices:nope");
        assert_eq!(
            (missing.kind(), missing.status()),
            (ACTION_NOT_FOUND_TRANSPORT_EXCEPTION, 400)
        );
        assert_eq!(missing.reason(), "No handler for action [indices:nope]");
        assert!(!missing.is_retryable_on_another_copy());
    }

    #[test]
    fn statuses_map_to_the_failure_they_describe() {
        let connect = Status::from_error(Box::new(ConnectError(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        )))));
        let error = from_status("10.0.0.1:9300", "a", &connect);
        assert_eq!(error.kind(), CONNECT_TRANSPORT_EXCEPTION);
        assert!(error
            .reason()
            .starts_with("[10.0.0.1:9300] connect_exception"));

        let lost = from_status("h:1", "act", &Status::unavailable("connection reset"));
        assert_eq!(lost.kind(), NODE_DISCONNECTED_EXCEPTION);
        assert!(lost.reason().contains("[h:1][act] disconnected"));

        let other = from_status("h:1", "act", &Status::unimplemented("no such method"));
        assert_eq!(other.kind(), TRANSPORT_EXCEPTION);
        assert!(other.reason().contains("no such method"));
    }

    #[test]
    fn a_timeout_names_the_budget_it_spent() {
        let error = timed_out("h:1", "act", Duration::from_millis(250));
        assert_eq!(error.kind(), RECEIVE_TIMEOUT_TRANSPORT_EXCEPTION);
        assert_eq!(error.reason(), "[h:1][act] request timed out after [250ms]");
    }
}
