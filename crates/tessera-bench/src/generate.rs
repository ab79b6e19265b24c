//! Corpus output: a workload's documents as bulk NDJSON (action line + document line), the same
//! bytes for the same `(workload, docs, seed)` whatever the number of threads.
//!
//! Documents are generated in blocks on all cores and written in order; `load` uses
//! [`bulk_body`] directly, so a corpus never needs to touch the disk.

use crate::workload::{DocGenerator, Workload};
use anyhow::{Context, Result};
use std::io::Write;
use std::ops::Range;

/// Documents per block handed to one thread.
const BLOCK: u64 = 8192;

/// How each document is introduced in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing<'a> {
    /// `{"index":{"_index":"<name>"}}` before each document: postable to `/_bulk` as is.
    BulkWithIndex(&'a str),
    /// `{"index":{}}` before each document: for `/<index>/_bulk`.
    Bulk,
    /// One document per line, no action lines (the OpenSearch Benchmark corpus format).
    DocsOnly,
}

impl Framing<'_> {
    fn action(&self) -> Option<Vec<u8>> {
        match self {
            Framing::BulkWithIndex(name) => {
                let mut a = br#"{"index":{"_index":"#.to_vec();
                a.extend_from_slice(serde_json::to_string(name).expect("string").as_bytes());
                a.extend_from_slice(b"}}\n");
                Some(a)
            }
            Framing::Bulk => Some(b"{\"index\":{}}\n".to_vec()),
            Framing::DocsOnly => None,
        }
    }
}

/// Appends documents `docs` to `out`, framed.
pub fn bulk_body(
    gen: &dyn DocGenerator,
    docs: Range<u64>,
    framing: Framing<'_>,
    out: &mut Vec<u8>,
) {
    let action = framing.action();
    for i in docs {
        if let Some(a) = &action {
            out.extend_from_slice(a);
        }
        gen.write_doc(i, out);
        out.push(b'\n');
    }
}

/// Writes the corpus `(workload, docs, seed)` to `out` using `threads` threads.
pub fn write_corpus(
    workload: &Workload,
    docs: u64,
    seed: u64,
    framing: Framing<'_>,
    threads: usize,
    out: &mut dyn Write,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    let gen = workload.generator(seed, docs);
    let gen: &dyn DocGenerator = gen.as_ref();
    let threads = threads.max(1) as u64;
    let blocks = docs.div_ceil(BLOCK);
    let mut bufs: Vec<Vec<u8>> = (0..threads).map(|_| Vec::new()).collect();
    let mut block = 0;
    while block < blocks {
        let round = (blocks - block).min(threads);
        std::thread::scope(|s| {
            for (t, buf) in bufs.iter_mut().enumerate().take(round as usize) {
                let b = block + t as u64;
                s.spawn(move || {
                    buf.clear();
                    let range = b * BLOCK..((b + 1) * BLOCK).min(docs);
                    bulk_body(gen, range, framing, buf);
                });
            }
        });
        for buf in bufs.iter().take(round as usize) {
            out.write_all(buf).context("write corpus")?;
        }
        block += round;
        progress((block * BLOCK).min(docs));
    }
    out.flush().context("write corpus")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload;

    fn corpus(name: &str, docs: u64, seed: u64, threads: usize) -> Vec<u8> {
        let w = workload::get(name).unwrap();
        let mut out = Vec::new();
        write_corpus(
            &w,
            docs,
            seed,
            Framing::BulkWithIndex(w.default_index),
            threads,
            &mut out,
            |_| {},
        )
        .unwrap();
        out
    }

    #[test]
    fn same_seed_same_bytes_whatever_the_threads() {
        for name in workload::NAMES {
            let a = corpus(name, 20_000, 42, 1);
            let b = corpus(name, 20_000, 42, 3);
            assert_eq!(a, b, "{name}: thread count changed the corpus");
            assert_eq!(a, corpus(name, 20_000, 42, 2), "{name}: not deterministic");
            assert_ne!(a, corpus(name, 20_000, 43, 2), "{name}: seed ignored");
            assert_eq!(a.iter().filter(|&&c| c == b'\n').count(), 40_000);
        }
    }

    #[test]
    fn a_prefix_of_a_larger_corpus_is_the_smaller_corpus() {
        // nyc_taxis and big5 documents depend only on (seed, doc number).
        let small = corpus("nyc_taxis", 1000, 7, 2);
        let large = corpus("nyc_taxis", 3000, 7, 2);
        assert_eq!(&large[..small.len()], &small[..]);
    }

    #[test]
    fn framings() {
        let w = workload::get("nyc_taxis").unwrap();
        let g = w.generator(1, 2);
        let mut out = Vec::new();
        bulk_body(g.as_ref(), 0..2, Framing::Bulk, &mut out);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], r#"{"index":{}}"#);
        let mut out = Vec::new();
        bulk_body(g.as_ref(), 0..2, Framing::BulkWithIndex("t"), &mut out);
        assert!(out.starts_with(br#"{"index":{"_index":"t"}}"#));
        let mut out = Vec::new();
        bulk_body(g.as_ref(), 0..2, Framing::DocsOnly, &mut out);
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
    }
}
