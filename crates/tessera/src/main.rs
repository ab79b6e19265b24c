//! The `tessera` command: `serve` runs a node, `bench` measures one (or any OpenSearch-compatible
//! endpoint), `hash-password` makes a password hash for the users file.

mod config;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator: indexing allocates and frees small buffers per
/// document on several threads, where glibc's malloc spent about an eighth of a bulk load's CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tessera",
    version,
    about = "An OpenSearch-compatible search engine on tantivy"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a node (single node, data in a local directory).
    Serve(config::ServeArgs),
    /// Benchmark Tessera or any OpenSearch-compatible endpoint.
    #[command(subcommand)]
    Bench(Box<tessera_bench::BenchCommand>),
    /// Read a password from standard input (its first line) and print its bcrypt hash, for the
    /// `hash:` of a user in the users file (`security.users_file`).
    HashPassword {
        /// bcrypt cost: each step doubles the work of every login check (4 to 31).
        #[arg(long, default_value_t = 12)]
        cost: u32,
    },
}

/// Hands the calling thread's free memory cached by mimalloc back to the operating system.
fn release_cached_memory() {
    // SAFETY: mi_collect only walks the calling thread's heap and the shared arenas
    unsafe { libmimalloc_sys::mi_collect(true) }
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Serve(args) => match serve(args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e:#}");
                1
            }
        },
        Command::HashPassword { cost } => match hash_password(cost) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e:#}");
                1
            }
        },
        Command::Bench(command) => match tessera_bench::run(*command) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                1
            }
        },
    };
    std::process::exit(code);
}

fn hash_password(cost: u32) -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("read the password from standard input")?;
    let password = line.strip_suffix('\n').unwrap_or(&line);
    let password = password.strip_suffix('\r').unwrap_or(password);
    anyhow::ensure!(!password.is_empty(), "the password is empty");
    let hash =
        tessera_rest::security::users::hash_password(password, cost).map_err(anyhow::Error::msg)?;
    println!("{hash}");
    Ok(())
}

fn serve(args: config::ServeArgs) -> anyhow::Result<()> {
    tessera_common::threadpool::set_idle_hook(release_cached_memory);
    let (config, security) = args.into_configs()?;
    let ip: std::net::IpAddr = config
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .with_context(|| format!("invalid listen address {}:{}", config.host, config.port))?;
    let address = SocketAddr::new(ip, config.port);
    // before the node starts or anything listens: refuses an exposed node without security
    let security = std::sync::Arc::new(
        tessera_rest::security::Security::load(&security, address).map_err(anyhow::Error::msg)?,
    );
    let data: PathBuf = config.data_path.clone();
    let node = tessera_node::Node::start(config)
        .with_context(|| format!("start the node on data directory {}", data.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("http")
        .build()
        .context("start the HTTP runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listen on {address}"))?;
        eprintln!(
            "[tessera] node [{}] started on {}://{} (data: {})",
            node.config.name,
            security.scheme(),
            listener.local_addr()?,
            data.display()
        );
        let shutdown = async {
            let ctrl_c = tokio::signal::ctrl_c();
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("install SIGTERM handler");
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        };
        tessera_rest::security::serve(node.clone(), listener, security, shutdown)
            .await
            .context("serve HTTP")?;
        eprintln!("[tessera] shutting down");
        node.shutdown();
        Ok(())
    })
}
