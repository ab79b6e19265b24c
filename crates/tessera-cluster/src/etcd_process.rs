//! `EtcdProcess`: a real single-member etcd on loopback ports, for tests.
//!
//! The etcd store is only as good as its agreement with a real etcd, so its tests (and other
//! crates' integration tests, and the cluster test harness) run one rather than a fake: each
//! `EtcdProcess` is its own `/usr/bin/etcd` (or `etcd` on `PATH`; `scripts/system-deps`
//! installs it) with its own data directory under the system temp dir, on two free ports,
//! killed and removed on drop. `kill` and `restart` (same ports, same data) are for fault
//! tests: a store must fail fast while etcd is gone and work again once it is back.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long etcd may take to answer after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Tries with fresh ports when the ones picked were taken before etcd bound them.
const PORT_TRIES: usize = 5;

/// The etcd binary: `/usr/bin/etcd`, else `etcd` on `PATH`.
pub fn etcd_binary() -> Option<PathBuf> {
    let system = PathBuf::from("/usr/bin/etcd");
    if system.is_file() {
        return Some(system);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
}

/// A running etcd; see the module documentation.
pub struct EtcdProcess {
    binary: PathBuf,
    dir: PathBuf,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn unique_dir() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "tessera-etcd-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

impl EtcdProcess {
    /// Starts etcd on two free loopback ports with a new data directory and waits until it
    /// answers.
    pub fn start() -> std::io::Result<EtcdProcess> {
        let binary = etcd_binary().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "etcd is not installed (neither /usr/bin/etcd nor etcd on PATH): run \
                 scripts/system-deps",
            )
        })?;
        let mut last_error = None;
        for _ in 0..PORT_TRIES {
            let dir = unique_dir();
            std::fs::create_dir_all(&dir)?;
            let mut etcd = EtcdProcess {
                binary: binary.clone(),
                dir,
                client_port: free_port()?,
                peer_port: free_port()?,
                child: None,
            };
            if etcd.client_port == etcd.peer_port {
                continue;
            }
            match etcd.spawn_and_wait() {
                Ok(()) => return Ok(etcd),
                // most likely a port taken between picking and binding: try others (the
                // failed one's directory goes with it)
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| std::io::Error::other("no free ports for etcd")))
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The directory of its data and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What etcd wrote to its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    /// Kills etcd with SIGKILL (no clean shutdown) and waits for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data (killing it first if it runs).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        self.spawn_and_wait()
    }

    fn spawn_and_wait(&mut self) -> std::io::Result<()> {
        let client = self.endpoint();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("etcd.log"))?;
        let child = Command::new(&self.binary)
            .arg("--name=tessera-test")
            .arg(format!("--data-dir={}", self.dir.join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=tessera-test={peer}"))
            .arg("--initial-cluster-state=new")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if self.healthy() {
                return Ok(());
            }
            let exited = match self.child.as_mut() {
                Some(child) => child.try_wait()?,
                None => None,
            };
            if let Some(status) = exited {
                self.child = None;
                return Err(std::io::Error::other(format!(
                    "etcd exited ({status}) before it answered; its log:\n{}",
                    tail(&self.log())
                )));
            }
            if started.elapsed() > START_TIMEOUT {
                self.kill();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "etcd did not answer within {START_TIMEOUT:?}; its log:\n{}",
                        tail(&self.log())
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether etcd answers `GET /health` with `"health":"true"` (it has a raft leader).
    fn healthy(&self) -> bool {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.client_port));
        let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        if stream
            .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response.contains("\"health\":\"true\"")
    }
}

fn tail(log: &str) -> &str {
    let mut start = log.len().saturating_sub(4000);
    while !log.is_char_boundary(start) {
        start += 1;
    }
    &log[start..]
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
