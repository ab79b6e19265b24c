//! The receiving side: a registry of action handlers served over gRPC (HTTP/2, tonic's
//! `transport::Server`) on the current tokio runtime.
//!
//! The service is what tonic's code generator would write for one unary method, by hand: a
//! tower `Service` over `http::Request` that hands `/tessera.transport.Transport/Call` to
//! `tonic::server::Grpc::unary` with the raw-bytes codec. Every call is answered with a frame
//! (see [`super::envelope`]), a handler's error and an unknown action included, so a gRPC status
//! on the client always means the wire failed, never the action.
//!
//! Cancellation is hyper's: when the caller drops a call, its stream is reset, and the server
//! drops the service future — with it the handler's future, whose drop guards run. That is how
//! a remote shard learns that nobody waits for its answer any more.

use std::any::Any;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tessera_common::{Error, Result};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::codegen::{http, Service};
use tonic::server::NamedService;
use tonic::transport::server::TcpIncoming;
use tonic::Status;

use super::codec::BytesCodec;
use super::envelope::{encode_answer, Envelope, CALL_PATH, MAX_MESSAGE_SIZE, SERVICE_NAME};
use super::errors::action_not_found;
use super::http2::{CONNECTION_WINDOW, MAX_FRAME, STREAM_WINDOW};

/// What a handler answers: the encoded answer, or the error the caller gets as itself.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>>> + Send + 'static>>;

/// Runs one action: the request body in, a future of the answer body out. The future is
/// dropped, unfinished, when the caller cancels the call.
pub type Handler = Arc<dyn Fn(Vec<u8>, RequestContext) -> HandlerFuture + Send + Sync>;

/// What a handler knows about the call besides its body.
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub action: String,
    /// When the caller stops waiting, on this node's clock.
    pub deadline: Option<Instant>,
    /// The calling node's id, when it sent one.
    pub from_node: Option<String>,
    /// The caller's socket address (one per connection: calls multiplexed on one HTTP/2
    /// connection share it).
    pub peer: Option<SocketAddr>,
}

/// The actions a node serves, by name.
#[derive(Clone, Default)]
pub struct Handlers {
    handlers: HashMap<String, Handler>,
}

impl Handlers {
    pub fn new() -> Handlers {
        Handlers::default()
    }

    /// Installs the handler of `action`. Two handlers for one action is a wiring mistake of
    /// the node, found at startup: it panics.
    pub fn insert(&mut self, action: impl Into<String>, handler: Handler) {
        let action = action.into();
        assert!(
            !self.handlers.contains_key(&action),
            "a transport handler for action [{action}] is already registered"
        );
        self.handlers.insert(action, handler);
    }

    /// [`insert`](Self::insert) for a closure returning any sendable future.
    pub fn register<F, Fut>(&mut self, action: impl Into<String>, handler: F)
    where
        F: Fn(Vec<u8>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<u8>>> + Send + 'static,
    {
        self.insert(
            action,
            Arc::new(move |body, context| Box::pin(handler(body, context)) as HandlerFuture),
        );
    }

    pub fn get(&self, action: &str) -> Option<&Handler> {
        self.handlers.get(action)
    }

    /// The registered action names, sorted.
    pub fn actions(&self) -> Vec<&str> {
        let mut actions: Vec<&str> = self.handlers.keys().map(String::as_str).collect();
        actions.sort_unstable();
        actions
    }
}

/// How long a connection may stay silent before the server pings it, and how long a ping may
/// go unanswered before the connection (and every call on it) is dropped.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves [`Handlers`] over gRPC.
pub struct TransportServer;

impl TransportServer {
    /// Binds `addr` (port 0 picks a free one) and serves `handlers` on the current tokio
    /// runtime until the handle is shut down or dropped. Returns the address bound.
    pub fn bind(
        addr: SocketAddr,
        handlers: Arc<Handlers>,
    ) -> io::Result<(SocketAddr, ServerHandle)> {
        // SO_REUSEADDR, as the HTTP listener has: a node restarted on its port binds it again
        // while the previous process's connections linger in TIME_WAIT
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        let incoming = TcpIncoming::from(socket.listen(1024)?)
            .with_nodelay(Some(true))
            .with_keepalive(Some(KEEPALIVE_INTERVAL));
        let bound = incoming.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let router = tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
            .initial_connection_window_size(CONNECTION_WINDOW)
            .initial_stream_window_size(STREAM_WINDOW)
            .max_frame_size(Some(MAX_FRAME))
            .add_service(TransportService { handlers });
        let task = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async move {
            // a dropped sender stops the server as a sent signal does
            let _ = stopped.await;
        }));
        Ok((
            bound,
            ServerHandle {
                stop: Some(stop),
                task: Some(task),
            },
        ))
    }
}

/// Stops a [`TransportServer`]: explicitly with [`shutdown`](Self::shutdown), or when dropped
/// (without waiting).
pub struct ServerHandle {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::result::Result<(), tonic::transport::Error>>>,
}

impl ServerHandle {
    /// Stops accepting connections, lets the calls in flight finish, and waits until every
    /// connection is closed.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await
                .map_err(|e| Error::internal("stop the transport server", e))?
                .map_err(|e| Error::internal("serve the transport", e))?;
        }
        Ok(())
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The gRPC service: one unary method, every action behind it.
#[derive(Clone)]
struct TransportService {
    handlers: Arc<Handlers>,
}

impl NamedService for TransportService {
    const NAME: &'static str = SERVICE_NAME;
}

impl Service<http::Request<tonic::body::Body>> for TransportService {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future =
        Pin<Box<dyn Future<Output = std::result::Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::result::Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        if request.uri().path() != CALL_PATH {
            let status = Status::unimplemented(format!("no method [{}]", request.uri().path()));
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let call = Call {
            handlers: self.handlers.clone(),
        };
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(BytesCodec)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE);
            Ok(grpc.unary(call, request).await)
        })
    }
}

/// The unary method: reads the envelope, runs the action's handler, answers a frame.
struct Call {
    handlers: Arc<Handlers>,
}

impl Service<tonic::Request<Bytes>> for Call {
    type Response = tonic::Response<Bytes>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::result::Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let peer = request.remote_addr();
        let frame = request.into_inner();
        let handlers = self.handlers.clone();
        Box::pin(async move {
            let answer = match Envelope::decode(frame) {
                Ok(envelope) => match handlers.get(&envelope.action).cloned() {
                    Some(handler) => {
                        let context = RequestContext {
                            action: envelope.action.clone(),
                            deadline: envelope.deadline,
                            from_node: envelope.from_node,
                            peer,
                        };
                        let body = envelope.body.to_vec();
                        let started = catch_unwind(AssertUnwindSafe(|| handler(body, context)));
                        match started {
                            Ok(future) => {
                                CatchPanic {
                                    action: envelope.action,
                                    inner: future,
                                }
                                .await
                            }
                            Err(panic) => Err(panicked(&envelope.action, panic)),
                        }
                    }
                    None => Err(action_not_found(&envelope.action)),
                },
                Err(e) => Err(e),
            };
            Ok(tonic::Response::new(encode_answer(&answer)))
        })
    }
}

/// A handler's future, a panic in it answered as an error: the caller learns that the action
/// failed here and why, instead of seeing its stream reset like a lost connection (which it
/// would retry on another copy, to the same panic).
struct CatchPanic {
    action: String,
    inner: HandlerFuture,
}

impl Future for CatchPanic {
    type Output = Result<Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match catch_unwind(AssertUnwindSafe(|| this.inner.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => Poll::Ready(Err(panicked(&this.action, panic))),
        }
    }
}

fn panicked(action: &str, panic: Box<dyn Any + Send>) -> Error {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    Error::internal(
        format!("run action [{action}]"),
        format!("panicked: {message}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> Handlers {
        let mut handlers = Handlers::new();
        handlers.register("echo", |body, _| async move { Ok(body) });
        handlers
    }

    #[test]
    fn handlers_are_found_by_action_name() {
        let mut handlers = echo();
        handlers.register("b", |_, _| async { Err(Error::illegal_state("no")) });
        assert_eq!(handlers.actions(), vec!["b", "echo"]);
        assert!(handlers.get("echo").is_some());
        assert!(handlers.get("ECHO").is_none());
    }

    #[test]
    #[should_panic(expected = "already registered")]
    fn an_action_has_one_handler() {
        let mut handlers = echo();
        handlers.register("echo", |body, _| async move { Ok(body) });
    }

    /// Runs one call through the service as the HTTP/2 server would hand it over.
    async fn serve_one(handlers: Handlers, path: &str, frame: Bytes) -> (String, Option<Bytes>) {
        use std::future::poll_fn;
        use tonic::codegen::Body as _;

        let mut framed = vec![0u8];
        framed.extend((frame.len() as u32).to_be_bytes());
        framed.extend_from_slice(&frame);
        let body = tonic::body::Body::new(http_body_from(framed));
        let request = http::Request::builder()
            .method("POST")
            .uri(path)
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap();
        let mut service = TransportService {
            handlers: Arc::new(handlers),
        };
        let response = service.call(request).await.unwrap();
        let header_status = response
            .headers()
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_string());
        let mut body = response.into_body();
        let mut data = Vec::new();
        let mut status = header_status;
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.unwrap();
            if let Some(trailers) = frame.trailers_ref() {
                status = trailers
                    .get("grpc-status")
                    .map(|v| v.to_str().unwrap().to_string());
            } else if let Ok(chunk) = frame.into_data() {
                data.extend_from_slice(&chunk);
            }
        }
        let message = (data.len() >= 5).then(|| Bytes::from(data[5..].to_vec()));
        (status.unwrap_or_default(), message)
    }

    /// A one-chunk request body (a `String` of the frame's bytes: the frames here are ASCII).
    fn http_body_from(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("test frames are ASCII")
    }

    #[tokio::test]
    async fn the_service_answers_a_frame_for_a_known_and_an_unknown_action() {
        let frame = Envelope::encode("echo", None, None, b"ping").unwrap();
        let (status, answer) = serve_one(echo(), CALL_PATH, frame).await;
        assert_eq!(status, "0");
        assert_eq!(
            super::super::envelope::decode_answer(&answer.unwrap()).unwrap(),
            b"ping"
        );

        let frame = Envelope::encode("nope", None, None, b"").unwrap();
        let (status, answer) = serve_one(echo(), CALL_PATH, frame).await;
        assert_eq!(
            status, "0",
            "an unknown action is an answer, not a gRPC failure"
        );
        let error = super::super::envelope::decode_answer(&answer.unwrap()).unwrap_err();
        assert_eq!(error.kind(), "action_not_found_transport_exception");
        assert_eq!(error.status(), 400);
    }

    #[tokio::test]
    async fn another_method_is_unimplemented() {
        let frame = Envelope::encode("echo", None, None, b"").unwrap();
        let (status, answer) = serve_one(echo(), "/tessera.transport.Transport/Other", frame).await;
        assert_eq!(status, (tonic::Code::Unimplemented as i32).to_string());
        assert!(answer.is_none());
    }

    /// Tells the test when a handler started and when its future was dropped.
    struct DropSignal(tokio::sync::mpsc::UnboundedSender<&'static str>);

    impl Drop for DropSignal {
        fn drop(&mut self) {
            let _ = self.0.send("dropped");
        }
    }

    /// `future`, or an error after 5 s.
    async fn within<T>(
        future: impl Future<Output = T>,
    ) -> std::result::Result<T, tokio::time::error::Elapsed> {
        tokio::time::timeout(Duration::from_secs(5), future).await
    }

    #[tokio::test]
    async fn a_caller_that_goes_away_cancels_the_remote_handler() {
        let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let mut handlers = Handlers::new();
        handlers.register("test:wait", move |_, _| {
            let events = events.clone();
            async move {
                let _signal = DropSignal(events.clone());
                let _ = events.send("started");
                std::future::pending::<Result<Vec<u8>>>().await
            }
        });
        let (address, _server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(handlers)).unwrap();
        let address = address.to_string();
        let client = crate::transport::TransportClient::new("a");

        // the caller drops the call
        let call = tokio::spawn(client.call(&address, "test:wait", Vec::new(), None));
        assert_eq!(within(seen.recv()).await.unwrap(), Some("started"));
        call.abort();
        assert_eq!(
            within(seen.recv())
                .await
                .expect("the remote handler was not dropped"),
            Some("dropped")
        );

        // the caller's deadline passes
        let deadline = Instant::now() + Duration::from_millis(300);
        let call = tokio::spawn(client.call(&address, "test:wait", Vec::new(), Some(deadline)));
        assert_eq!(within(seen.recv()).await.unwrap(), Some("started"));
        assert_eq!(
            within(seen.recv())
                .await
                .expect("the remote handler outlived the deadline"),
            Some("dropped")
        );
        let error = call.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), "receive_timeout_transport_exception");
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_an_error_and_the_connection_lives_on() {
        let mut handlers = echo();
        handlers.register("test:panic", |body, _| async move {
            if body.is_empty() {
                panic!("no body");
            }
            Ok(body)
        });
        handlers.insert(
            "test:panic_early",
            Arc::new(|_, _| panic!("before any future")),
        );
        let (address, _server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(handlers)).unwrap();
        let address = address.to_string();
        let client = crate::transport::TransportClient::new("a");
        for (action, message) in [
            ("test:panic", "no body"),
            ("test:panic_early", "before any future"),
        ] {
            let error = client
                .call(&address, action, Vec::new(), None)
                .await
                .unwrap_err();
            assert_eq!((error.kind(), error.status()), ("exception", 500));
            assert_eq!(
                error.reason(),
                format!("failed to run action [{action}]: panicked: {message}")
            );
        }
        let answer = client
            .call(&address, "echo", b"still here".to_vec(), None)
            .await;
        assert_eq!(answer.unwrap(), b"still here");
    }

    #[tokio::test]
    async fn a_shut_down_server_refuses_new_calls() {
        let (address, server) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(echo())).unwrap();
        let address = address.to_string();
        let client = crate::transport::TransportClient::new("a");
        let answer = client.call(&address, "echo", b"1".to_vec(), None).await;
        assert_eq!(answer.unwrap(), b"1");
        // the client keeps its (idle) connection: the shutdown closes it
        within(server.shutdown())
            .await
            .expect("shutdown waits for an idle connection")
            .unwrap();
        let error = client
            .call(&address, "echo", b"2".to_vec(), None)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "connect_transport_exception", "{error:?}");
    }
}
