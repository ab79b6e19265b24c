//! The cluster the ARS benchmark measures when no `--target` is given: one etcd member and
//! `N` data nodes plus one coordinating-only node (`node.roles: []`, the reference post's client
//! node), all `tessera serve` processes on free loopback ports, each with its own data directory
//! and log under one work directory.
//!
//! Why a cluster of our own: the experiment needs a node to slow and a coordinating node that
//! holds no shard, so that every shard request is routed (by round robin or by ARS) to a data
//! node over the transport. No process may outlive the benchmark: children run in their own
//! process group (a Ctrl-C at the terminal reaches only the benchmark, which then tears down in
//! order), die with it when it is killed (`PR_SET_PDEATHSIG`), and are stopped when the
//! [`LocalCluster`] is dropped, on success, error or interruption alike.

use crate::client::Client;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster name the benchmark's nodes join under.
const CLUSTER_NAME: &str = "tessera-ars-bench";
/// How long nodes may take to start and join.
const JOIN_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a node may take to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What to start.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    pub binary: PathBuf,
    pub etcd: PathBuf,
    pub data_nodes: usize,
    pub work_dir: PathBuf,
    /// Keep the work directory (data, configs, logs) after teardown.
    pub keep_work_dir: bool,
}

/// One started process.
pub struct Process {
    pub name: String,
    pub child: Child,
    pub log: PathBuf,
}

impl Process {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// A started node: its process and HTTP endpoint.
pub struct NodeProcess {
    pub process: Process,
    pub http: String,
}

/// etcd and the nodes; dropping it stops them all and removes the work directory.
pub struct LocalCluster {
    etcd: Option<Process>,
    /// The data nodes, `node-1` … `node-N`.
    pub data_nodes: Vec<NodeProcess>,
    /// The coordinating-only node the clients send their searches to.
    pub coordinator: Option<NodeProcess>,
    work_dir: PathBuf,
    keep_work_dir: bool,
}

/// A port free on loopback right now.
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("find a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// `binary` itself when it is a path, else its location on `PATH`.
pub fn find_program(binary: &str) -> Option<PathBuf> {
    if binary.contains('/') {
        let p = PathBuf::from(binary);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(binary))
        .find(|p| p.is_file())
}

/// The `key: value` config file of a node (`coordinating_only`: `node.roles: []`).
pub fn node_config(
    name: &str,
    etcd: &str,
    http_port: u16,
    transport_port: u16,
    data: &Path,
    coordinating_only: bool,
) -> String {
    let mut c = format!(
        "cluster.name: {CLUSTER_NAME}\nnode.name: {name}\ncluster.coordination.etcd: {etcd}\n\
         network.host: 127.0.0.1\nhttp.port: {http_port}\ntransport.port: {transport_port}\n\
         path.data: {}\n\
         # a throwaway cluster in a temp dir: a host disk that is mostly full of other things\n\
         # must not turn its index read-only in the middle of a run\n\
         cluster.routing.allocation.disk.threshold_enabled: false\n",
        data.display()
    );
    if coordinating_only {
        c.push_str("node.roles: []\n");
    }
    c
}

/// Starts `program` with its output in `log`, in its own process group, to die with us.
fn spawn(name: &str, program: &Path, args: &[String], log: PathBuf) -> Result<Process> {
    let out = File::create(&log).with_context(|| format!("create {}", log.display()))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("start {name} ({})", program.display()))?;
    Ok(Process {
        name: name.to_string(),
        child,
        log,
    })
}

impl LocalCluster {
    /// Starts etcd and the nodes and waits until all have joined.
    pub fn start(spec: &ClusterSpec) -> Result<LocalCluster> {
        if spec.data_nodes == 0 {
            bail!("--data-nodes must be at least 1");
        }
        std::fs::create_dir_all(&spec.work_dir)
            .with_context(|| format!("create {}", spec.work_dir.display()))?;
        let mut cluster = LocalCluster {
            etcd: None,
            data_nodes: Vec::new(),
            coordinator: None,
            work_dir: spec.work_dir.clone(),
            keep_work_dir: spec.keep_work_dir,
        };
        let etcd = cluster.start_etcd(&spec.etcd)?;
        for i in 1..=spec.data_nodes {
            let node = cluster.start_node(&spec.binary, &format!("node-{i}"), &etcd, false)?;
            cluster.data_nodes.push(node);
        }
        let coordinator = cluster.start_node(&spec.binary, "client", &etcd, true)?;
        cluster.coordinator = Some(coordinator);
        cluster.wait_for_nodes(spec.data_nodes + 1)?;
        Ok(cluster)
    }

    fn start_etcd(&mut self, etcd: &Path) -> Result<String> {
        let (client_port, peer_port) = (free_port()?, free_port()?);
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let args = vec![
            "--name=tessera-ars-bench".to_string(),
            format!("--data-dir={}", self.work_dir.join("etcd").display()),
            format!("--listen-client-urls={client}"),
            format!("--advertise-client-urls={client}"),
            format!("--listen-peer-urls={peer}"),
            format!("--initial-advertise-peer-urls={peer}"),
            format!("--initial-cluster=tessera-ars-bench={peer}"),
            "--initial-cluster-state=new".to_string(),
        ];
        let log = self.work_dir.join("etcd.log");
        self.etcd = Some(spawn("etcd", etcd, &args, log)?);
        let health = Client::new(&client, Duration::from_secs(2))?;
        let started = Instant::now();
        loop {
            if let Ok(r) = health.request("GET", "/health", None) {
                if String::from_utf8_lossy(&r.body).contains("\"health\":\"true\"") {
                    return Ok(client);
                }
            }
            self.check_alive()?;
            if started.elapsed() > JOIN_TIMEOUT {
                bail!(
                    "etcd did not become healthy; see {}",
                    self.work_dir.join("etcd.log").display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn start_node(
        &self,
        binary: &Path,
        name: &str,
        etcd: &str,
        coordinating_only: bool,
    ) -> Result<NodeProcess> {
        let (http_port, transport_port) = (free_port()?, free_port()?);
        let data = self.work_dir.join(name);
        let config = self.work_dir.join(format!("{name}.yml"));
        let text = node_config(
            name,
            etcd,
            http_port,
            transport_port,
            &data,
            coordinating_only,
        );
        std::fs::write(&config, text).with_context(|| format!("write {}", config.display()))?;
        let args = vec![
            "serve".to_string(),
            "--config".to_string(),
            config.display().to_string(),
        ];
        let log = self.work_dir.join(format!("{name}.log"));
        Ok(NodeProcess {
            process: spawn(name, binary, &args, log)?,
            http: format!("http://127.0.0.1:{http_port}"),
        })
    }

    /// The coordinating node's endpoint.
    pub fn coordinator_url(&self) -> &str {
        &self.coordinator.as_ref().expect("started").http
    }

    /// Fails when a process has exited, naming its log.
    pub fn check_alive(&mut self) -> Result<()> {
        let nodes = self.data_nodes.iter_mut().chain(self.coordinator.as_mut());
        let all = self.etcd.iter_mut().chain(nodes.map(|n| &mut n.process));
        for p in all {
            if let Some(status) = p.child.try_wait()? {
                bail!("{} exited ({status}); its log: {}", p.name, p.log.display());
            }
        }
        Ok(())
    }

    /// Waits until the coordinating node answers and sees `count` nodes.
    fn wait_for_nodes(&mut self, count: usize) -> Result<()> {
        let client = Client::new(self.coordinator_url(), Duration::from_secs(5))?;
        let started = Instant::now();
        let path = format!("/_cluster/health?wait_for_nodes={count}&timeout=5s");
        loop {
            self.check_alive()?;
            if let Ok(h) = client.get_json(&path) {
                if h["number_of_nodes"].as_u64() == Some(count as u64) {
                    return Ok(());
                }
            }
            if started.elapsed() > JOIN_TIMEOUT {
                bail!(
                    "the cluster did not reach {count} nodes within {JOIN_TIMEOUT:?}; logs in {}",
                    self.work_dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Stops every process (SIGTERM, then SIGKILL after a grace period), etcd last.
    fn stop_all(&mut self) {
        let mut procs: Vec<Process> = self
            .coordinator
            .take()
            .into_iter()
            .chain(self.data_nodes.drain(..))
            .map(|n| n.process)
            .collect();
        for p in &procs {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(p.child.id() as libc::pid_t, libc::SIGTERM) };
        }
        for p in &mut procs {
            reap(p);
        }
        if let Some(mut etcd) = self.etcd.take() {
            let _ = etcd.child.kill();
            let _ = etcd.child.wait();
        }
    }
}

/// Waits for a process to exit, killing it after [`STOP_GRACE`].
fn reap(p: &mut Process) {
    let started = Instant::now();
    while started.elapsed() < STOP_GRACE {
        if let Ok(Some(_)) = p.child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = p.child.kill();
    let _ = p.child.wait();
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop_all();
        if self.keep_work_dir {
            eprintln!("cluster work directory kept: {}", self.work_dir.display());
        } else if let Err(e) = std::fs::remove_dir_all(&self.work_dir) {
            eprintln!("warning: remove {}: {e}", self.work_dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinating_node_config_has_no_roles() {
        let c = node_config(
            "client",
            "http://127.0.0.1:1",
            2,
            3,
            Path::new("/d/client"),
            true,
        );
        assert!(c.contains("node.roles: []\n"), "{c}");
        assert!(c.contains("http.port: 2\ntransport.port: 3\n"), "{c}");
        assert!(
            c.contains("cluster.coordination.etcd: http://127.0.0.1:1\n"),
            "{c}"
        );
        assert!(c.contains("path.data: /d/client\n"), "{c}");
        let d = node_config("node-1", "e", 2, 3, Path::new("/d"), false);
        assert!(!d.contains("node.roles"), "{d}");
    }

    #[test]
    fn programs_are_found_on_the_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("/bin/sh").is_some());
        assert!(find_program("no-such-program-here").is_none());
        assert!(free_port().unwrap() > 0);
    }
}
