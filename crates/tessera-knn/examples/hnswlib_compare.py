#!/usr/bin/env python3
"""hnswlib's figures on the vectors hnsw_bench.rs reads, to compare Tessera's HNSW against.

Writes (once, seeded) clustered normalized vectors, queries and each space's exact top-10 as .npy
files under --out, then builds hnswlib (M 16, ef_construction 100, one thread) and prints build
CPU seconds, per-query CPU µs (the fastest of --rounds passes over the queries, since other
processes share the machine) and recall@10 for each ef, in the table hnsw_bench prints.

    python3 -m venv /tmp/hnswvenv && /tmp/hnswvenv/bin/pip install hnswlib numpy
    /tmp/hnswvenv/bin/python crates/tessera-knn/examples/hnswlib_compare.py --out /tmp/knnbench --space ip
    cargo run --release -p tessera-knn --example hnsw_bench -- --dir /tmp/knnbench --space innerproduct
"""
import argparse
import os
import time

import numpy as np


def generate(out, n, dim, nq, clusters, spread, seed):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32)

    def draw(count):
        which = rng.integers(0, clusters, count)
        # Gaussian clusters on the unit sphere (the spread sets how hard the data is).
        points = centres[which] + spread * rng.standard_normal((count, dim), dtype=np.float32)
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        return points.astype(np.float32)

    data = draw(n)
    queries = draw(nq)
    np.save(os.path.join(out, "data.npy"), data)
    np.save(os.path.join(out, "queries.npy"), queries)


def ground_truth(out, space, k=10):
    path = os.path.join(out, f"gt_{space}.npy")
    if os.path.exists(path):
        return np.load(path)
    data = np.load(os.path.join(out, "data.npy"))
    queries = np.load(os.path.join(out, "queries.npy"))
    norms = (data * data).sum(axis=1)
    result = np.empty((len(queries), k), dtype=np.int32)
    for start in range(0, len(queries), 100):
        q = queries[start:start + 100]
        dots = q @ data.T
        # smaller is closer: -dot for ip, |x|^2 - 2 x.q (+|q|^2, constant) for l2
        dist = -dots if space == "ip" else norms[None, :] - 2.0 * dots
        part = np.argpartition(dist, k, axis=1)[:, :k]
        order = np.take_along_axis(dist, part, axis=1).argsort(axis=1)
        result[start:start + 100] = np.take_along_axis(part, order, axis=1)
    np.save(path, result)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/knnbench")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--nq", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--spread", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--space", choices=["ip", "l2"], default="ip")
    parser.add_argument("--efs", default="10,16,24,32,48,64,96,128,192,256")
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="query rounds per ef; the fastest counts")
    parser.add_argument("--index-file", help="load the index from here if it exists, else save it there")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    if not os.path.exists(os.path.join(args.out, "data.npy")):
        generate(args.out, args.n, args.dim, args.nq, args.clusters, args.spread, args.seed)
    gt = ground_truth(args.out, args.space)
    if args.generate_only:
        return

    import hnswlib

    data = np.load(os.path.join(args.out, "data.npy"))
    queries = np.load(os.path.join(args.out, "queries.npy"))
    index = hnswlib.Index(space=args.space, dim=data.shape[1])
    index_file = args.index_file
    if index_file and os.path.exists(index_file):
        index.load_index(index_file, max_elements=len(data))
        print(f"hnswlib space {args.space} n {len(data)} dim {data.shape[1]}: loaded {index_file}")
    else:
        index.init_index(max_elements=len(data), M=16, ef_construction=100, random_seed=100)
        index.set_num_threads(1)
        start = time.thread_time()
        index.add_items(data, np.arange(len(data)), num_threads=1)
        build = time.thread_time() - start
        print(f"hnswlib space {args.space} n {len(data)} dim {data.shape[1]}: "
              f"build {build:.2f} s CPU (one thread)", flush=True)
        if index_file:
            index.save_index(index_file)
    index.set_num_threads(1)
    print(f"{'ef':>6} {'us/query':>10} {'recall@10':>10}")
    for ef in [int(e) for e in args.efs.split(",")]:
        index.set_ef(max(ef, 10))
        index.knn_query(queries[:50], k=10, num_threads=1)  # warm
        best = float("inf")
        for _ in range(args.rounds):
            start = time.thread_time()
            labels, _ = index.knn_query(queries, k=10, num_threads=1)
            best = min(best, time.thread_time() - start)
        recall = np.mean([len(set(labels[i]) & set(gt[i])) / 10.0 for i in range(len(queries))])
        print(f"{ef:>6} {best / len(queries) * 1e6:>10.1f} {recall:>10.4f}", flush=True)


if __name__ == "__main__":
    main()
