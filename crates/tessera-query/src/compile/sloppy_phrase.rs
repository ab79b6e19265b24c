//! Phrase queries with slop, scored as OpenSearch (Lucene) scores them.
//!
//! tantivy counts every sloppy match as one occurrence; Lucene's `SloppyPhraseMatcher` weighs
//! a match by `1 / (1 + distance)`, so an exact phrase outranks the same words spread apart.
//! This query walks the terms' positions the way Lucene does and feeds that fractional
//! frequency into (legacy) BM25, the formula both engines share.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Terms with their positions in the phrase, matched within `slop` moves.
#[derive(Clone, Debug)]
pub struct SloppyPhraseQuery {
    field: Field,
    terms: Vec<(usize, Term)>,
    slop: u32,
}

impl SloppyPhraseQuery {
    /// `terms` are (position in the phrase, term), all of one field; at least two.
    pub fn new(field: Field, terms: Vec<(usize, Term)>, slop: u32) -> SloppyPhraseQuery {
        SloppyPhraseQuery { field, terms, slop }
    }
}

impl Query for SloppyPhraseQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let scoring = match enable_scoring {
            EnableScoring::Enabled {
                statistics_provider,
                ..
            } => {
                let total_docs = statistics_provider.total_num_docs()?.max(1);
                let mut idf = 0.0f32;
                for (_, term) in &self.terms {
                    let df = statistics_provider.doc_freq(term)?;
                    idf += (1.0 + (total_docs as f32 - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
                }
                let tokens = statistics_provider.total_num_tokens(self.field)?;
                Some(Bm25 {
                    weight: idf * (1.0 + K1),
                    average_length: (tokens as f32 / total_docs as f32).max(f32::MIN_POSITIVE),
                })
            }
            EnableScoring::Disabled { .. } => None,
        };
        Ok(Box::new(SloppyPhraseWeight {
            query: self.clone(),
            scoring,
        }))
    }
}

#[derive(Clone, Copy)]
struct Bm25 {
    weight: f32,
    average_length: f32,
}

impl Bm25 {
    fn score(&self, freq: f32, length: u32) -> f32 {
        self.weight * freq / (freq + K1 * (1.0 - B + B * length as f32 / self.average_length))
    }
}

struct SloppyPhraseWeight {
    query: SloppyPhraseQuery,
    scoring: Option<Bm25>,
}

impl Weight for SloppyPhraseWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let inverted = reader.inverted_index(self.query.field)?;
        let mut postings = Vec::with_capacity(self.query.terms.len());
        for (offset, term) in &self.query.terms {
            match inverted.read_postings(term, IndexRecordOption::WithFreqsAndPositions)? {
                Some(p) => postings.push((*offset as i64, p)),
                None => return Ok(Box::new(EmptyScorer)),
            }
        }
        let norms = reader
            .fieldnorms_readers()
            .get_field(self.query.field)?
            .unwrap_or_else(|| FieldNormReader::constant(reader.max_doc(), 1));
        let mut scorer = SloppyPhraseScorer {
            postings,
            slop: self.query.slop as i64,
            scoring: self.scoring,
            boost,
            norms,
            doc: 0,
            freq: 0.0,
            buffer: Vec::new(),
            positions: Vec::new(),
        };
        scorer.settle();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new(
            "sloppy phrase (Lucene slop factor)",
            score,
        ))
    }
}

struct SloppyPhraseScorer {
    postings: Vec<(i64, SegmentPostings)>,
    slop: i64,
    scoring: Option<Bm25>,
    boost: Score,
    norms: FieldNormReader,
    doc: DocId,
    freq: f32,
    buffer: Vec<u32>,
    positions: Vec<Vec<i64>>,
}

impl SloppyPhraseScorer {
    /// Moves to the first doc ≥ the current one where every term occurs and the phrase
    /// matches within the slop.
    fn settle(&mut self) {
        loop {
            let mut target = self.postings[0].1.doc();
            // leapfrog until all postings agree
            loop {
                let mut agreed = true;
                for (_, p) in self.postings.iter_mut() {
                    let doc = if p.doc() < target {
                        p.seek(target)
                    } else {
                        p.doc()
                    };
                    if doc > target {
                        target = doc;
                        agreed = false;
                    }
                }
                if agreed || target == TERMINATED {
                    break;
                }
            }
            if target == TERMINATED {
                self.doc = TERMINATED;
                return;
            }
            self.doc = target;
            self.freq = self.phrase_freq();
            if self.freq > 0.0 {
                return;
            }
            self.postings[0].1.advance();
        }
    }

    /// Lucene's sloppy frequency: the sum of `1 / (1 + match length)` over the matches found
    /// while sliding the terms' positions forward.
    fn phrase_freq(&mut self) -> f32 {
        self.positions.clear();
        for (offset, postings) in self.postings.iter_mut() {
            self.buffer.clear();
            postings.positions(&mut self.buffer);
            self.positions
                .push(self.buffer.iter().map(|&p| p as i64 - *offset).collect());
        }
        let n = self.positions.len();
        let mut cursor = vec![0usize; n];
        let mut end = self.positions.iter().map(|p| p[0]).max().unwrap_or(0);
        let current = |i: usize, cursor: &[usize], positions: &[Vec<i64>]| positions[i][cursor[i]];
        let pop_min =
            |active: &mut Vec<usize>, cursor: &[usize], positions: &[Vec<i64>]| -> usize {
                let (index, _) = active
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &i)| (current(i, cursor, positions), i))
                    .expect("at least one term");
                active.swap_remove(index)
            };
        let mut active: Vec<usize> = (0..n).collect();
        let mut pp = pop_min(&mut active, &cursor, &self.positions);
        let mut match_length = end - current(pp, &cursor, &self.positions);
        let mut next = active
            .iter()
            .map(|&i| current(i, &cursor, &self.positions))
            .min()
            .unwrap_or(i64::MAX);
        let mut freq = 0.0f32;
        loop {
            cursor[pp] += 1;
            if cursor[pp] >= self.positions[pp].len() {
                break;
            }
            let position = current(pp, &cursor, &self.positions);
            end = end.max(position);
            if position > next {
                if match_length <= self.slop {
                    freq += 1.0 / (1.0 + match_length as f32);
                }
                active.push(pp);
                pp = pop_min(&mut active, &cursor, &self.positions);
                next = active
                    .iter()
                    .map(|&i| current(i, &cursor, &self.positions))
                    .min()
                    .unwrap_or(i64::MAX);
                match_length = end - current(pp, &cursor, &self.positions);
            } else {
                match_length = match_length.min(end - position);
            }
        }
        if match_length <= self.slop {
            freq += 1.0 / (1.0 + match_length as f32);
        }
        freq
    }
}

impl DocSet for SloppyPhraseScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.postings[0].1.advance();
        self.settle();
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        self.postings[0].1.seek(target);
        self.settle();
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.postings
            .iter()
            .map(|(_, p)| p.size_hint())
            .min()
            .unwrap_or(0)
    }
}

impl Scorer for SloppyPhraseScorer {
    fn score(&mut self) -> Score {
        match self.scoring {
            Some(bm25) => {
                let length = self.norms.fieldnorm(self.doc);
                bm25.score(self.freq, length) * self.boost
            }
            None => self.boost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{doc, Index};

    fn search(docs: &[&str], phrase: &[&str], slop: u32) -> Vec<(u32, f32)> {
        let mut builder = Schema::builder();
        let text = builder.add_text_field("t", TEXT);
        let index = Index::create_in_ram(builder.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for d in docs {
            writer.add_document(doc!(text => *d)).unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let terms = phrase
            .iter()
            .enumerate()
            .map(|(i, t)| (i, Term::from_field_text(text, t)))
            .collect();
        let query = SloppyPhraseQuery::new(text, terms, slop);
        let mut hits: Vec<(u32, f32)> = searcher
            .search(&query, &TopDocs::with_limit(10).order_by_score())
            .unwrap()
            .into_iter()
            .map(|(score, address)| (address.doc_id, score))
            .collect();
        hits.sort_by_key(|(doc, _)| *doc);
        hits
    }

    #[test]
    fn sloppy_matches_weigh_less_than_exact_ones() {
        // the OpenSearch reference: "quick fox"~1 scores doc 3 at 1.4037359 and doc 1 at 1.1844022
        let docs = [
            "The quick brown fox",
            "The lazy brown dog",
            "Quick quick fox jumps over the fence",
            "A slow turtle",
            "Brown bears eat honey",
            "fox and dog are friends",
        ];
        let hits = search(&docs, &["quick", "fox"], 1);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].0, 0);
        assert!((hits[0].1 - 1.1844022).abs() < 1e-4, "{hits:?}");
        assert_eq!(hits[1].0, 2);
        assert!((hits[1].1 - 1.4037359).abs() < 1e-4, "{hits:?}");
    }

    #[test]
    fn slop_limits_the_distance() {
        // "a e" in "a b c d e" needs three moves; reversed ("e a") it needs two, as in Lucene
        let docs = ["a b c d e", "a x x x e", "e a"];
        let matching = |slop| {
            search(&docs, &["a", "e"], slop)
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>()
        };
        assert!(matching(1).is_empty());
        assert_eq!(matching(2), [2]);
        assert_eq!(matching(3), [0, 1, 2]);
        assert!(search(&docs, &["b", "zzz"], 4).is_empty());
    }
}
