//! HTTPS: the certificate chain and private key (PEM files named by `http.tls.certificate` and
//! `http.tls.key`) loaded into a rustls server configuration (ring provider, TLS 1.2 and 1.3),
//! and a listener that hands axum connections only once their handshake is done.
//!
//! Handshakes run in tasks of their own, with a deadline, so a client that connects and stalls
//! (or speaks plain HTTP to the TLS port, which fails the handshake) never holds up the others.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections whose handshake finished and that axum has not taken yet.
const READY_QUEUE: usize = 128;

/// The server configuration for the certificate chain in `certificate` and the key in `key`.
pub fn server_config(certificate: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(certificate)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| {
            format!(
                "cannot read the TLS certificate [http.tls.certificate] {}: {e}",
                certificate.display()
            )
        })?;
    if chain.is_empty() {
        return Err(format!(
            "no certificate found in [http.tls.certificate] {}",
            certificate.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "cannot read the TLS private key [http.tls.key] {}: {e}",
            key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the TLS certificate and key do not make a valid pair: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A listener of TLS connections for `axum::serve`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` (from a task of the current runtime) and handshakes with `config`.
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (sender, ready) = mpsc::channel(READY_QUEUE);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = sender.closed() => return,
                };
                let (stream, peer) = match accepted {
                    Ok(connection) => connection,
                    // out of file descriptors and the like: wait instead of spinning
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let handshake =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    if let Ok(Ok(tls)) = handshake {
                        let _ = sender.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // the accept task only ends when this listener is dropped
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_a_generated_pair_and_rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        let config = server_config(&cert, &key).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);

        let missing = server_config(&dir.path().join("nope.pem"), &key).unwrap_err();
        assert!(missing.contains("http.tls.certificate"), "{missing}");
        let swapped = server_config(&key, &cert).unwrap_err();
        assert!(swapped.contains("http.tls"), "{swapped}");
        let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let other_key = dir.path().join("other.pem");
        std::fs::write(&other_key, other.signing_key.serialize_pem()).unwrap();
        let mismatch = server_config(&cert, &other_key).unwrap_err();
        assert!(mismatch.contains("valid pair"), "{mismatch}");
    }
}
