//! The calling side: one lazily connected gRPC channel per node address, cached and shared by
//! every call to that node (HTTP/2 multiplexes concurrent calls on the one connection).
//!
//! A call is: wrap the body in the envelope, send it through tonic's unary client with the
//! raw-bytes codec, read the answer frame. The deadline is the call's timeout (dropping the
//! call resets its stream, which cancels the handler on the other side). Failures of the wire
//! become OpenSearch's transport exceptions (see [`super::errors`]): all 500s, so the
//! coordinator moves on to another copy of the shard; a remote handler's error comes back as
//! itself.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tessera_common::Result;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic::Status;

use super::codec::BytesCodec;
use super::envelope::{decode_answer, Envelope, CALL_PATH, MAX_MESSAGE_SIZE};
use super::errors::{connect_failed, from_status, timed_out};
use super::http2::{CONNECTION_WINDOW, MAX_FRAME, STREAM_WINDOW};

/// How a client connects and watches its connections.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// How long a connection attempt may take before the node counts as unreachable.
    pub connect_timeout: Duration,
    /// How long a connection may stay silent before it is pinged (HTTP/2 PING, idle or not,
    /// and TCP keepalive), and how long a ping may go unanswered before the connection and
    /// every call on it fail: a dead peer is noticed even when no answer is due.
    pub keepalive_interval: Duration,
    pub keepalive_timeout: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            connect_timeout: Duration::from_secs(1),
            keepalive_interval: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(20),
        }
    }
}

/// Calls actions on other nodes. Cheap to clone (clones share the channels); create it, and
/// make its calls, on the node's tokio runtime (a channel's connection lives there).
#[derive(Clone)]
pub struct TransportClient {
    inner: Arc<Inner>,
}

struct Inner {
    node_id: Option<String>,
    settings: ClientSettings,
    channels: Mutex<HashMap<String, Channel>>,
}

impl TransportClient {
    /// A client that names itself `node_id` to the nodes it calls.
    pub fn new(node_id: impl Into<String>) -> TransportClient {
        TransportClient::with_settings(Some(node_id.into()), ClientSettings::default())
    }

    pub fn with_settings(node_id: Option<String>, settings: ClientSettings) -> TransportClient {
        TransportClient {
            inner: Arc::new(Inner {
                node_id,
                settings,
                channels: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Calls `action` on the node at `address` (`host:port`) with `body`; the answer body, or
    /// the remote handler's error, or a transport error. With a `deadline`, the call fails
    /// with `receive_timeout_transport_exception` once it passes (and the remote handler is
    /// cancelled). The future owns what it needs.
    pub fn call(
        &self,
        address: &str,
        action: &str,
        body: Vec<u8>,
        deadline: Option<Instant>,
    ) -> impl Future<Output = Result<Vec<u8>>> + Send + 'static {
        let client = self.clone();
        let address = address.to_string();
        let action = action.to_string();
        async move {
            let started = Instant::now();
            let frame =
                Envelope::encode(&action, deadline, client.inner.node_id.as_deref(), &body)?;
            drop(body);
            let channel = client.channel(&address)?;
            let exchange = async {
                let mut grpc = tonic::client::Grpc::new(channel)
                    .max_decoding_message_size(MAX_MESSAGE_SIZE)
                    .max_encoding_message_size(MAX_MESSAGE_SIZE);
                grpc.ready()
                    .await
                    .map_err(|e| from_status(&address, &action, &Status::from_error(e.into())))?;
                let answer = grpc
                    .unary(
                        tonic::Request::new(frame),
                        PathAndQuery::from_static(CALL_PATH),
                        BytesCodec,
                    )
                    .await
                    .map_err(|status| from_status(&address, &action, &status))?;
                decode_answer(answer.get_ref())
            };
            match deadline {
                None => exchange.await,
                Some(deadline) => tokio::time::timeout_at(deadline.into(), exchange)
                    .await
                    .unwrap_or_else(|_| {
                        Err(timed_out(
                            &address,
                            &action,
                            deadline.saturating_duration_since(started),
                        ))
                    }),
            }
        }
    }

    /// Forgets the channel to `address` (a node that left the cluster); calls in flight on it
    /// go on. True when there was one.
    pub fn disconnect(&self, address: &str) -> bool {
        self.channels().remove(address).is_some()
    }

    /// How many node addresses this client holds a channel to.
    pub fn channel_count(&self) -> usize {
        self.channels().len()
    }

    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<String, Channel>> {
        // the map is only read and written whole under the lock: a poisoned one is consistent
        self.inner
            .channels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The channel to `address`, made on first use. It connects on the first call and
    /// reconnects by itself after the connection is lost.
    fn channel(&self, address: &str) -> Result<Channel> {
        let mut channels = self.channels();
        if let Some(channel) = channels.get(address) {
            return Ok(channel.clone());
        }
        let settings = &self.inner.settings;
        let endpoint = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| connect_failed(address, format!("invalid address: {e}")))?
            .connect_timeout(settings.connect_timeout)
            .tcp_nodelay(true)
            .tcp_keepalive(Some(settings.keepalive_interval))
            .http2_keep_alive_interval(settings.keepalive_interval)
            .keep_alive_timeout(settings.keepalive_timeout)
            .keep_alive_while_idle(true)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .initial_stream_window_size(STREAM_WINDOW)
            .max_frame_size(MAX_FRAME);
        let channel = endpoint.connect_lazy();
        channels.insert(address.to_string(), channel.clone());
        Ok(channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::errors::{
        CONNECT_TRANSPORT_EXCEPTION, NODE_DISCONNECTED_EXCEPTION,
        RECEIVE_TIMEOUT_TRANSPORT_EXCEPTION,
    };
    use crate::transport::server::{Handlers, TransportServer};
    use std::collections::HashSet;
    use tessera_common::Error;

    fn test_handlers() -> Handlers {
        let mut handlers = Handlers::new();
        handlers.register("test:echo", |body, _| async move { Ok(body) });
        handlers.register("test:who", |_, context| async move {
            Ok(format!(
                "{}|{:?}",
                context.from_node.unwrap_or_default(),
                context
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now()).as_millis())
            )
            .into_bytes())
        });
        handlers.register("test:fail", |_, _| async {
            Err(
                Error::new("shard_not_found_exception", 404, "no such shard [logs][3]")
                    .with_meta("index", "logs")
                    .caused_by(Error::illegal_state("closed")),
            )
        });
        handlers.register("test:sleep", |body, _| async move {
            tokio::time::sleep(Duration::from_millis(u64::from(body[0]) * 10)).await;
            Ok(body)
        });
        handlers.register("test:slow_peer", |body, context| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut answer = context.peer.unwrap().to_string().into_bytes();
            answer.push(b'|');
            answer.extend(body);
            Ok(answer)
        });
        handlers
    }

    async fn start() -> (String, crate::transport::server::ServerHandle) {
        let (bound, handle) =
            TransportServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(test_handlers()))
                .unwrap();
        (bound.to_string(), handle)
    }

    #[tokio::test]
    async fn an_echo_crosses_and_the_channel_is_reused() {
        let (address, _server) = start().await;
        let client = TransportClient::new("node-a");
        for body in [Vec::new(), b"hello".to_vec(), vec![0xAB; 1 << 20]] {
            let answer = client.call(&address, "test:echo", body.clone(), None).await;
            assert_eq!(answer.unwrap(), body);
        }
        assert_eq!(client.channel_count(), 1);
        let who = client.call(&address, "test:who", Vec::new(), None).await;
        assert_eq!(String::from_utf8(who.unwrap()).unwrap(), "node-a|None");
    }

    #[tokio::test]
    async fn the_deadline_arrives_as_the_time_left() {
        let (address, _server) = start().await;
        let client = TransportClient::new("node-a");
        let deadline = Instant::now() + Duration::from_secs(5);
        let who = client.call(&address, "test:who", Vec::new(), Some(deadline));
        let who = String::from_utf8(who.await.unwrap()).unwrap();
        let left: u128 = who
            .strip_prefix("node-a|Some(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap()
            .parse()
            .unwrap();
        assert!(left > 4000 && left <= 5000, "{who}");
    }

    #[tokio::test]
    async fn an_unknown_action_is_a_400() {
        let (address, _server) = start().await;
        let error = TransportClient::new("a")
            .call(&address, "indices:nope", Vec::new(), None)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "action_not_found_transport_exception");
        assert_eq!(error.status(), 400);
        assert_eq!(error.reason(), "No handler for action [indices:nope]");
    }

    #[tokio::test]
    async fn a_remote_error_crosses_as_itself() {
        let (address, _server) = start().await;
        let error = TransportClient::new("a")
            .call(&address, "test:fail", Vec::new(), None)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "shard_not_found_exception");
        assert_eq!(error.status(), 404);
        assert_eq!(error.reason(), "no such shard [logs][3]");
        assert_eq!(error.meta("index").unwrap(), "logs");
        assert_eq!(error.cause().unwrap().kind(), "illegal_state_exception");
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_times_out() {
        let (address, _server) = start().await;
        let client = TransportClient::new("a");
        let started = Instant::now();
        // the handler sleeps 2 s; the caller waits 200 ms
        let error = client
            .call(
                &address,
                "test:sleep",
                vec![200],
                Some(started + Duration::from_millis(200)),
            )
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert_eq!(error.kind(), RECEIVE_TIMEOUT_TRANSPORT_EXCEPTION);
        assert_eq!(error.status(), 500);
        assert!(
            error.reason().contains("[test:sleep]"),
            "{}",
            error.reason()
        );
        assert!(
            waited >= Duration::from_millis(190) && waited < Duration::from_millis(1500),
            "{waited:?}"
        );
        // the channel is still good for the next call
        let answer = client
            .call(&address, "test:echo", b"x".to_vec(), None)
            .await;
        assert_eq!(answer.unwrap(), b"x");
    }

    #[tokio::test]
    async fn an_unreachable_node_fails_fast_with_a_retryable_error() {
        // a port that was just free: nobody listens there
        let address = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().to_string()
        };
        let client = TransportClient::new("a");
        let started = Instant::now();
        let error = client
            .call(&address, "test:echo", b"x".to_vec(), None)
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(error.kind(), CONNECT_TRANSPORT_EXCEPTION, "{error:?}");
        assert_eq!(error.status(), 500);
        assert!(error.reason().contains(&address), "{}", error.reason());
        assert!(error.is_retryable_on_another_copy());
        // and once the node is up there, the same channel connects
        let (bound, _server) =
            TransportServer::bind(address.parse().unwrap(), Arc::new(test_handlers())).unwrap();
        assert_eq!(bound.to_string(), address);
        let answer = client
            .call(&address, "test:echo", b"up".to_vec(), None)
            .await;
        assert_eq!(answer.unwrap(), b"up");
    }

    #[tokio::test]
    async fn a_node_that_does_not_answer_the_connect_fails_after_the_connect_timeout() {
        // a listener with a full accept queue drops further SYNs, as a dead host does
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let _queued: Vec<std::net::TcpStream> = (0..3)
            .filter_map(|_| {
                std::net::TcpStream::connect_timeout(
                    &address.parse().unwrap(),
                    Duration::from_millis(100),
                )
                .ok()
            })
            .collect();
        let client = TransportClient::with_settings(
            None,
            ClientSettings {
                connect_timeout: Duration::from_millis(300),
                ..ClientSettings::default()
            },
        );
        let started = Instant::now();
        // the deadline only keeps a broken test from hanging
        let deadline = Some(started + Duration::from_secs(3));
        let error = client
            .call(&address, "test:echo", Vec::new(), deadline)
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert_eq!(error.kind(), CONNECT_TRANSPORT_EXCEPTION, "{error:?}");
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(error.is_retryable_on_another_copy());
        drop(listener);
    }

    #[tokio::test]
    async fn a_peer_that_stops_answering_is_noticed_by_keepalive() {
        // accepts connections and never reads nor writes: a hung node
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let client = TransportClient::with_settings(
            None,
            ClientSettings {
                keepalive_interval: Duration::from_millis(200),
                keepalive_timeout: Duration::from_millis(300),
                ..ClientSettings::default()
            },
        );
        let started = Instant::now();
        let deadline = Some(started + Duration::from_secs(5));
        let error = client
            .call(&address, "test:echo", Vec::new(), deadline)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), NODE_DISCONNECTED_EXCEPTION, "{error:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_share_one_connection() {
        let (address, _server) = start().await;
        let client = TransportClient::new("a");
        // one call first, so that the connection exists before the burst
        client
            .call(&address, "test:echo", vec![1], None)
            .await
            .unwrap();
        let started = Instant::now();
        let calls: Vec<_> = (0..200u32)
            .map(|i| {
                let call = client.call(&address, "test:slow_peer", i.to_be_bytes().to_vec(), None);
                tokio::spawn(call)
            })
            .collect();
        let mut peers = HashSet::new();
        for (i, call) in calls.into_iter().enumerate() {
            let answer = call.await.unwrap().unwrap();
            let (peer, body) = answer.split_at(answer.len() - 5);
            assert_eq!(body[1..], (i as u32).to_be_bytes());
            peers.insert(peer.to_vec());
        }
        // 200 calls of 200 ms each, one after the other, would take 40 s
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // and the connection lives on: many more calls, one after the other
        for i in 0..500u32 {
            let body = if i % 2 == 0 {
                Vec::new()
            } else {
                i.to_be_bytes().to_vec()
            };
            let answer = client.call(&address, "test:echo", body.clone(), None).await;
            assert_eq!(answer.unwrap(), body);
        }
        let answer = client
            .call(&address, "test:slow_peer", vec![0; 4], None)
            .await
            .unwrap();
        peers.insert(answer[..answer.len() - 5].to_vec());
        assert_eq!(peers.len(), 1, "every call came over one connection");
        assert_eq!(client.channel_count(), 1);
    }

    #[tokio::test]
    async fn a_connection_lost_mid_call_is_retryable_and_the_next_call_reconnects() {
        let (address, _server) = start().await;
        // a proxy in front of the server that can cut its connections
        let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy_address = proxy.local_addr().unwrap().to_string();
        let (cut, _) = tokio::sync::watch::channel(());
        let cut_tx = cut.clone();
        let upstream = address.clone();
        tokio::spawn(async move {
            loop {
                let (mut inbound, _) = proxy.accept().await.unwrap();
                let mut outbound = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                let mut cut = cut_tx.subscribe();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        let client = TransportClient::new("a");
        let call = tokio::spawn(client.call(&proxy_address, "test:sleep", vec![250], None));
        tokio::time::sleep(Duration::from_millis(300)).await;
        cut.send(()).unwrap();
        let error = call.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), NODE_DISCONNECTED_EXCEPTION, "{error:?}");
        assert!(error.is_retryable_on_another_copy());
        let answer = client
            .call(&proxy_address, "test:echo", b"again".to_vec(), None)
            .await;
        assert_eq!(answer.unwrap(), b"again");
    }
}
