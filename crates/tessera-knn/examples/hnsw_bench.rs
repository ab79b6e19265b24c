//! Build time, per-query CPU and recall@10 of Tessera's HNSW, in the table
//! `hnswlib_compare.py` prints for hnswlib on the same files (see that script's docstring).
//!
//! Reads `data.npy`, `queries.npy` and `gt_<ip|l2>.npy` (float32 / int32, C order) from `--dir`;
//! without `--dir` it generates `--n` clustered normalized vectors of `--dim` with `--seed` and
//! computes the ground truth by exact search. Builds with M 16, ef_construction 100 on this one
//! thread (`--m`, `--ef-construction`), and times with the thread's CPU clock, so other processes on the machine count less;
//! a query time is the fastest of `--rounds` passes. `--graph-file` loads the graph from there if
//! it exists (to time queries alone), else saves the one it builds.
//!
//! ```text
//! cargo run --release -p tessera-knn --example hnsw_bench -- --dir /tmp/knnbench --space innerproduct
//! ```

use std::collections::HashMap;
use std::time::Duration;

use tessera_knn::hnsw::SliceStore;
use tessera_knn::{
    build_graph, exact_search, HnswGraph, HnswParams, SearchRequest, Space, VectorStore,
};

/// This thread's CPU time (Linux `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanos: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec {
        seconds: 0,
        nanos: 0,
    };
    // SAFETY: a plain libc call writing into the struct we own.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(rc, 0, "clock_gettime failed");
    Duration::new(time.seconds as u64, time.nanos as u32)
}

/// A 2-d .npy array of 4-byte little-endian elements: (rows, cols, raw bytes).
fn read_npy(path: &str) -> (usize, usize, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    assert!(bytes.starts_with(b"\x93NUMPY"), "{path} is not a .npy file");
    let (header_len, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        )
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    assert!(
        header.contains("'<f4'") || header.contains("'<i4'"),
        "{path}: only float32 / int32 arrays are read, not {header}"
    );
    assert!(
        header.contains("'fortran_order': False"),
        "{path}: C order only"
    );
    let shape = &header[header.find("'shape': (").unwrap() + 10..];
    let shape = &shape[..shape.find(')').unwrap()];
    let dims: Vec<usize> = shape
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let (rows, cols) = (dims[0], dims.get(1).copied().unwrap_or(1));
    (rows, cols, bytes[start + header_len..].to_vec())
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn ints(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32)
        .collect()
}

/// Clustered vectors on the unit sphere, as `hnswlib_compare.py` draws them (not the same ones):
/// Gaussian centres plus `sigma` per coordinate. With `unit_centres` the centres are normalised
/// first, as `tessera bench vectorsearch` draws its corpus (there `sigma` is 0.6/√dim).
fn generate(
    n: usize,
    dim: usize,
    clusters: usize,
    sigma: f32,
    unit_centres: bool,
    zipf: f64,
    seed: u64,
) -> Vec<f32> {
    let state = std::cell::Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let uniform = || {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let normal = || {
        let (u, v) = (uniform(), uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    };
    let mut centres: Vec<f32> = (0..clusters * dim).map(|_| normal()).collect();
    if unit_centres {
        for centre in centres.chunks_exact_mut(dim) {
            let norm = centre.iter().map(|x| x * x).sum::<f32>().sqrt();
            centre.iter_mut().for_each(|x| *x /= norm);
        }
    }
    // Cluster sizes: equal without `zipf`, else the rank-r cluster drawn with weight r^-zipf.
    let mut cumulative: Vec<f64> = (1..=clusters).map(|r| (r as f64).powf(-zipf)).collect();
    for r in 1..clusters {
        cumulative[r] += cumulative[r - 1];
    }
    let mut out = Vec::with_capacity(n * dim);
    for i in 0..n {
        let c = if zipf > 0.0 {
            let target = uniform() * cumulative[clusters - 1];
            cumulative
                .partition_point(|&w| w < target)
                .min(clusters - 1)
        } else {
            (i * 7919 + (normal().abs() * 1000.0) as usize) % clusters
        };
        let start = out.len();
        for d in 0..dim {
            out.push(centres[c * dim + d] + sigma * normal());
        }
        let norm = out[start..].iter().map(|x| x * x).sum::<f32>().sqrt();
        out[start..].iter_mut().for_each(|x| *x /= norm);
    }
    out
}

fn main() {
    let mut args: HashMap<String, String> = HashMap::new();
    let mut argv = std::env::args().skip(1);
    while let Some(key) = argv.next() {
        let key = key.trim_start_matches("--").to_string();
        args.insert(key, argv.next().expect("every flag takes a value"));
    }
    let get = |key: &str, default: &str| args.get(key).cloned().unwrap_or(default.to_string());
    let space = Space::parse(&get("space", "innerproduct")).expect("a space: l2, innerproduct…");
    let efs: Vec<usize> = get("efs", "10,16,24,32,48,64,96,128,192,256")
        .split(',')
        .map(|e| e.parse().unwrap())
        .collect();
    let k: usize = get("k", "10").parse().unwrap();
    let rounds: usize = get("rounds", "3").parse().unwrap();

    let (data, dim, queries, truth) = if let Some(dir) = args.get("dir") {
        let (n, dim, raw) = read_npy(&format!("{dir}/data.npy"));
        let (nq, qdim, raw_queries) = read_npy(&format!("{dir}/queries.npy"));
        assert_eq!(dim, qdim);
        let gt_name = if space == Space::L2 { "l2" } else { "ip" };
        let (gt_rows, gt_k, raw_gt) = read_npy(&format!("{dir}/gt_{gt_name}.npy"));
        assert!(gt_rows == nq && gt_k >= k);
        let gt = ints(&raw_gt);
        let truth: Vec<Vec<u32>> = gt.chunks_exact(gt_k).map(|r| r[..k].to_vec()).collect();
        let _ = n;
        (floats(&raw), dim, floats(&raw_queries), truth)
    } else {
        let n: usize = get("n", "100000").parse().unwrap();
        let dim: usize = get("dim", "256").parse().unwrap();
        let nq: usize = get("nq", "1000").parse().unwrap();
        let seed: u64 = get("seed", "7").parse().unwrap();
        let clusters: usize = get("clusters", "500").parse().unwrap();
        // `--noise` is the noise's norm around unit centres (vectorsearch's corpus: 0.6).
        let all = match args.get("noise") {
            Some(noise) => {
                let noise: f32 = noise.parse().unwrap();
                let zipf: f64 = get("zipf", "0").parse().unwrap();
                let sigma = noise / (dim as f32).sqrt();
                generate(n + nq, dim, clusters, sigma, true, zipf, seed)
            }
            None => generate(n + nq, dim, clusters, 0.8, false, 0.0, seed),
        };
        let (data, queries) = all.split_at(n * dim);
        let store = SliceStore::new(data, dim);
        let truth = queries
            .chunks_exact(dim)
            .map(|q| {
                exact_search(space, &store, q, k, None)
                    .iter()
                    .map(|h| h.0)
                    .collect()
            })
            .collect();
        (data.to_vec(), dim, queries.to_vec(), truth)
    };
    let store = SliceStore::new(&data, dim);
    // Spot-check the ground truth file against our exact search.
    for (q, want) in queries.chunks_exact(dim).zip(&truth).take(5) {
        let got: Vec<u32> = exact_search(space, &store, q, k, None)
            .iter()
            .map(|h| h.0)
            .collect();
        let same = got.iter().filter(|o| want.contains(o)).count();
        assert!(
            same >= k - 1,
            "ground truth disagrees with exact search: {got:?} {want:?}"
        );
    }

    let params = HnswParams {
        m: get("m", "16").parse().unwrap(),
        ef_construction: get("ef-construction", "100").parse().unwrap(),
        seed: 42,
    };
    let graph_file = args.get("graph-file");
    let (bytes, build) = match graph_file.map(std::fs::read) {
        Some(Ok(bytes)) => (bytes, None),
        _ => {
            let start = thread_cpu();
            let bytes = build_graph(space, &store, &params);
            let build = thread_cpu() - start;
            if let Some(path) = graph_file {
                std::fs::write(path, &bytes).unwrap_or_else(|e| panic!("write {path}: {e}"));
            }
            (bytes, Some(build))
        }
    };
    let graph = HnswGraph::open(&bytes).unwrap();
    println!(
        "tessera-knn ({}) space {} n {} dim {dim}: {}, graph {:.1} MiB",
        tessera_knn::distance::kernel_isa(),
        space.name(),
        store.len(),
        match build {
            Some(build) => format!("build {:.2} s CPU (one thread)", build.as_secs_f64()),
            None => format!("loaded {}", graph_file.unwrap()),
        },
        bytes.len() as f64 / (1 << 20) as f64
    );
    println!(
        "{:>6} {:>10} {:>10} {:>10}",
        "ef",
        "us/query",
        format!("recall@{k}"),
        "visited"
    );
    for &ef in &efs {
        for q in queries.chunks_exact(dim).take(50) {
            graph.search(&store, &SearchRequest::new(q, k, ef));
        }
        let mut found = 0;
        let mut visited = 0;
        let mut elapsed = Duration::MAX;
        for _ in 0..rounds {
            found = 0;
            visited = 0;
            let start = thread_cpu();
            for (q, want) in queries.chunks_exact(dim).zip(&truth) {
                let outcome = graph.search(&store, &SearchRequest::new(q, k, ef));
                visited += outcome.visited;
                found += outcome
                    .hits
                    .iter()
                    .filter(|(o, _)| want.contains(o))
                    .count();
            }
            elapsed = elapsed.min(thread_cpu() - start);
        }
        let nq = truth.len();
        println!(
            "{ef:>6} {:>10.1} {:>10.4} {:>10}",
            elapsed.as_secs_f64() / nq as f64 * 1e6,
            found as f64 / (nq * k) as f64,
            visited / nq
        );
    }
}
