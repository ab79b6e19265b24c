//! `tessera serve` options: flags, and an optional config file in the `key: value` form of
//! `opensearch.yml` (`http.port`, `path.data`, `path.repo`, `node.name`, `cluster.name`, `network.host`,
//! `http.max_content_length`, `indexing_pressure.memory.limit`, `thread_pool.search.queue_size`,
//! `thread_pool.write.queue_size`, `indices.query.bool.max_clause_count`,
//! `script.painless.regex.enabled`, and Tessera's
//! `http.max_in_flight_requests`, and `transport.shard_requests: loopback` that sends every shard
//! request through the wire encoding, for tests; `cluster.coordination.etcd`, `transport.host`,
//! `transport.port`, `cluster.coordination.lease_ttl` and `node.roles` for a cluster). Flags win over the file. The security keys (`security.*`, `http.tls.*`, `http.allowed_hosts`, `http.cors.*`)
//! go to `tessera_rest::security`. A dynamic cluster setting (`cluster.routing.allocation.enable`,
//! `search.max_buckets`, …) is the node's default for it, below persistent and transient values.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use tessera_node::cluster_settings::ClusterSettings;
use tessera_node::NodeConfig;
use tessera_rest::security::SecuritySettings;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long)]
    pub host: Option<String>,
    /// HTTP port.
    #[arg(long, short)]
    pub port: Option<u16>,
    /// Data directory.
    #[arg(long, alias = "data-dir")]
    pub data: Option<PathBuf>,
    /// Node name.
    #[arg(long)]
    pub node_name: Option<String>,
    /// Cluster name.
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// etcd endpoints (`http://127.0.0.1:2379[,…]`) of the cluster to join; without them the
    /// node is a single-node cluster.
    #[arg(long, value_delimiter = ',')]
    pub etcd: Vec<String>,
    /// Address other nodes reach this one on (default: the HTTP host).
    #[arg(long)]
    pub transport_host: Option<String>,
    /// Port other nodes reach this one on (default 9300).
    #[arg(long)]
    pub transport_port: Option<u16>,
    /// A config file with `key: value` lines (opensearch.yml style).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
}

/// `node.roles`: `[]` (coordinating only), `[data]`, `cluster_manager, data`, ….
fn parse_roles(value: &str) -> anyhow::Result<Vec<String>> {
    let roles = list_value(value);
    for role in &roles {
        if !tessera_node::node::KNOWN_ROLES.contains(&role.as_str()) {
            bail!(
                "unknown role [{role}] in node.roles (known: {})",
                tessera_node::node::KNOWN_ROLES.join(", ")
            );
        }
    }
    Ok(roles)
}

/// `a,b` or `[a, b]` (the YAML list form) as a list (of endpoints, of roles).
fn list_value(value: &str) -> Vec<String> {
    value
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|endpoint| endpoint.trim().trim_matches('"').to_string())
        .filter(|endpoint| !endpoint.is_empty())
        .collect()
}

fn parse_count(key: &str, value: &str) -> anyhow::Result<usize> {
    value
        .parse()
        .with_context(|| format!("invalid {} [{value}]", key.trim()))
}

fn parse_size(value: &str) -> anyhow::Result<usize> {
    tessera_common_size(value)
}

fn tessera_common_size(value: &str) -> anyhow::Result<usize> {
    let lower = value.trim().to_ascii_lowercase();
    for (suffix, factor) in [
        ("gb", 1usize << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("b", 1),
        ("", 1),
    ] {
        if let Some(number) = lower.strip_suffix(suffix) {
            if let Ok(n) = number.trim().parse::<usize>() {
                return Ok(n * factor);
            }
        }
    }
    bail!("invalid size [{value}]")
}

impl ServeArgs {
    #[cfg(test)]
    pub fn into_config(self) -> anyhow::Result<NodeConfig> {
        self.into_configs().map(|(config, _)| config)
    }

    /// The node's configuration and the security settings of the config file.
    pub fn into_configs(self) -> anyhow::Result<(NodeConfig, SecuritySettings)> {
        let mut config = NodeConfig::default();
        let mut security = SecuritySettings::default();
        let mut transport_host = None;
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("read config file {}", path.display()))?;
            for (number, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                let Some((key, value)) = line.split_once(':') else {
                    bail!("{}:{}: expected `key: value`", path.display(), number + 1);
                };
                let value = value.trim().trim_matches('"');
                match key.trim() {
                    key if SecuritySettings::is_key(key) => security
                        .set(key, value)
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), number + 1))?,
                    "http.port" => {
                        config.port = value
                            .parse()
                            .with_context(|| format!("invalid http.port [{value}]"))?
                    }
                    "network.host" | "http.host" => config.host = value.to_string(),
                    "path.data" => config.data_path = PathBuf::from(value),
                    "path.repo" => {
                        config.path_repo =
                            list_value(value).into_iter().map(PathBuf::from).collect()
                    }
                    "node.name" => config.name = value.to_string(),
                    "cluster.name" => config.cluster_name = value.to_string(),
                    "http.max_content_length" => config.max_content_length = parse_size(value)?,
                    "indexing_pressure.memory.limit" => {
                        config.indexing_pressure_limit =
                            tessera_node::indexing_pressure::parse_limit(value)
                                .map_err(|e| anyhow::anyhow!("{}", e.reason()))?
                    }
                    "thread_pool.search.queue_size" => {
                        config.search_queue_size = parse_count(key, value)?
                    }
                    "thread_pool.write.queue_size" => {
                        config.write_queue_size = parse_count(key, value)?
                    }
                    "http.max_in_flight_requests" => {
                        config.max_in_flight_requests = parse_count(key, value)?
                    }
                    "transport.shard_requests" => {
                        config.shard_transport = tessera_node::ShardTransport::parse(value)
                            .with_context(|| {
                                format!(
                                "invalid transport.shard_requests [{value}] (local or loopback)"
                            )
                            })?
                    }
                    "cluster.coordination.etcd" => {
                        config.etcd = list_value(value);
                    }
                    "node.roles" => config.roles = parse_roles(value)?,
                    "transport.host" => transport_host = Some(value.to_string()),
                    "transport.port" => {
                        config.transport_port = value
                            .parse()
                            .with_context(|| format!("invalid transport.port [{value}]"))?
                    }
                    "cluster.coordination.lease_ttl" => {
                        let millis = tessera_common::time::parse_time_value(value, key)
                            .map_err(|e| anyhow::anyhow!("{}", e.reason()))?
                            .unwrap_or(5000);
                        config.lease_ttl = std::time::Duration::from_millis(millis.max(1000));
                    }
                    "script.painless.regex.enabled" => {
                        config.painless_regex_enabled = match value {
                            "true" | "limited" => true,
                            "false" => false,
                            _ => bail!(
                                "invalid script.painless.regex.enabled [{value}] (true, false or limited)"
                            ),
                        }
                    }
                    "indices.query.bool.max_clause_count" => {
                        config.max_clause_count = value.parse().with_context(|| {
                            format!("invalid indices.query.bool.max_clause_count [{value}]")
                        })?
                    }
                    // a dynamic cluster setting: the node's default for it
                    key if ClusterSettings::is_setting(key) => {
                        let mut one = tessera_common::settings::Settings::new();
                        one.set(key, value);
                        ClusterSettings::validate_node_defaults(&one).map_err(|e| {
                            anyhow::anyhow!("{}:{}: {}", path.display(), number + 1, e.reason())
                        })?;
                        config.cluster_setting_defaults.set(key, value);
                    }
                    other => bail!(
                        "{}:{}: unknown setting [{other}]",
                        path.display(),
                        number + 1
                    ),
                }
            }
        }
        if let Some(host) = self.host {
            config.host = host;
        }
        if let Some(port) = self.port {
            config.port = port;
        }
        if let Some(data) = self.data {
            config.data_path = data;
        }
        if let Some(name) = self.node_name {
            config.name = name;
        }
        if let Some(name) = self.cluster_name {
            config.cluster_name = name;
        }
        if !self.etcd.is_empty() {
            config.etcd = self
                .etcd
                .iter()
                .flat_map(|value| list_value(value))
                .collect();
        }
        if let Some(host) = self.transport_host {
            transport_host = Some(host);
        }
        if let Some(port) = self.transport_port {
            config.transport_port = port;
        }
        config.transport_host = transport_host.unwrap_or_else(|| config.host.clone());
        if config.etcd.is_empty() && !config.roles.iter().any(|role| role == "data") {
            bail!("a node without the [data] role holds no shards: it needs a cluster to join (cluster.coordination.etcd)");
        }
        Ok((config, security))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments naming only a config file.
    fn file_args(file: PathBuf) -> ServeArgs {
        ServeArgs {
            host: None,
            port: None,
            data: None,
            node_name: None,
            cluster_name: None,
            etcd: Vec::new(),
            transport_host: None,
            transport_port: None,
            config: Some(file),
        }
    }

    #[test]
    fn config_file_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tessera.yml");
        std::fs::write(&file, "# comment\nhttp.port: 9300\nnode.name: n1\npath.data: /tmp/x\npath.repo: [/srv/a, /srv/b]\nhttp.max_content_length: 10mb\nindexing_pressure.memory.limit: 64kb\nthread_pool.search.queue_size: 5\nthread_pool.write.queue_size: 7\nhttp.max_in_flight_requests: 9\ntransport.shard_requests: loopback\nscript.painless.regex.enabled: false\n").unwrap();
        let args = ServeArgs {
            port: Some(9400),
            ..file_args(file)
        };
        let config = args.into_config().unwrap();
        assert_eq!(config.port, 9400, "flags win over the file");
        assert_eq!(config.name, "n1");
        assert!(!config.painless_regex_enabled);
        assert_eq!(config.data_path, PathBuf::from("/tmp/x"));
        assert_eq!(
            config.path_repo,
            vec![PathBuf::from("/srv/a"), PathBuf::from("/srv/b")]
        );
        assert_eq!(config.indexing_pressure_limit, 64 << 10);
        assert_eq!((config.search_queue_size, config.write_queue_size), (5, 7));
        assert_eq!(config.max_in_flight_requests, 9);
        assert_eq!(
            config.shard_transport,
            tessera_node::ShardTransport::Loopback
        );
        assert_eq!(config.max_content_length, 10 << 20);
    }

    #[test]
    fn node_roles() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("roles.yml");
        std::fs::write(
            &file,
            "node.roles: []\ncluster.coordination.etcd: http://127.0.0.1:2379\n",
        )
        .unwrap();
        assert!(file_args(file.clone())
            .into_config()
            .unwrap()
            .roles
            .is_empty());
        std::fs::write(&file, "node.roles: [data, cluster_manager]\n").unwrap();
        let roles = file_args(file.clone()).into_config().unwrap().roles;
        assert_eq!(roles, ["data", "cluster_manager"]);
        // a single node must hold its own shards
        std::fs::write(&file, "node.roles: [cluster_manager]\n").unwrap();
        let error = file_args(file.clone()).into_config().unwrap_err();
        assert!(error.to_string().contains("[data] role"), "{error}");
        std::fs::write(&file, "node.roles: [data, master_of_none]\n").unwrap();
        let error = file_args(file).into_config().unwrap_err();
        assert!(
            error.to_string().contains("unknown role [master_of_none]"),
            "{error}"
        );
    }

    #[test]
    fn bad_config_lines_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.yml");
        std::fs::write(&file, "bogus.key: 1\n").unwrap();
        let args = file_args(file);
        assert!(args.into_config().is_err());
    }

    #[test]
    fn security_keys_go_to_the_security_settings() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secure.yml");
        std::fs::write(&file, "security.users_file: /etc/users.yml\nhttp.tls.certificate: \"/c.pem\"\nhttp.tls.key: /k.pem\nhttp.allowed_hosts: a.example.com\n").unwrap();
        let args = file_args(file.clone());
        let (_, security) = args.into_configs().unwrap();
        assert_eq!(security.users_file, Some(PathBuf::from("/etc/users.yml")));
        assert_eq!(security.tls_certificate, Some(PathBuf::from("/c.pem")));
        assert_eq!(security.tls_key, Some(PathBuf::from("/k.pem")));
        assert_eq!(security.allowed_hosts, vec!["a.example.com"]);
        std::fs::write(&file, "security.allow_insecure_non_loopback: maybe\n").unwrap();
        let args = file_args(file);
        let error = format!("{:#}", args.into_configs().unwrap_err());
        assert!(
            error.contains("secure.yml:1") && error.contains("true or false"),
            "{error}"
        );
    }
}
