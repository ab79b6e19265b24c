//! Fuzzy matching scored as OpenSearch scores it: Lucene's `FuzzyQuery` rewrites itself with
//! `TopTermsBlendedFreqScoringRewrite`. The shard's terms within the edit distance are
//! collected (the first `prefix_length` characters matching exactly), the `max_expansions`
//! most similar kept (similarity `1 - edits / min(term length, query length)` in code points,
//! then term order), and each becomes a BM25 term query boosted by its similarity, summed as a
//! boolean `should`. Their statistics are blended: every expansion scores with the largest
//! document frequency among them, so a rare misspelling never outranks the exact term merely
//! for being rare.
//!
//! The expansion is the shard's (its segments' terms dictionaries), as Lucene's is the
//! shard's reader; it is made whether or not scores are needed, so the matches are those of
//! the kept expansions, as in OpenSearch.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, DFA, SINK_STATE};
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, BoostQuery, EmptyQuery, EnableScoring, Occur, Query,
    TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

/// The default `max_expansions` of `fuzzy` and of `match`'s fuzziness.
pub const DEFAULT_MAX_EXPANSIONS: u32 = 50;

/// How a fuzzy term expands: `fuzzy`'s options, and those of `match`'s fuzziness.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expansion {
    /// Leading characters that must match exactly.
    pub prefix_length: u32,
    /// Whether swapping two adjacent characters is one edit.
    pub transpositions: bool,
    pub max_expansions: u32,
}

/// A fuzzy term on one field, expanded on the shard it runs on.
#[derive(Clone, Debug)]
pub struct BlendedFuzzyQuery {
    field: Field,
    text: String,
    distance: u8,
    prefix_length: u32,
    transpositions: bool,
    max_expansions: u32,
}

impl BlendedFuzzyQuery {
    pub fn new(field: Field, text: &str, distance: u8, expansion: Expansion) -> BlendedFuzzyQuery {
        BlendedFuzzyQuery {
            field,
            text: text.to_string(),
            distance,
            prefix_length: expansion.prefix_length,
            transpositions: expansion.transpositions,
            max_expansions: expansion.max_expansions,
        }
    }

    /// The kept expansions: term text and similarity, best first.
    fn expansions(&self, searcher: &Searcher) -> tantivy::Result<Vec<(Vec<u8>, f32)>> {
        let automaton = FuzzyAutomaton {
            text: &self.text,
            distance: self.distance,
            prefix_length: self.prefix_length,
            transpositions: self.transpositions,
        };
        let mut kept: Vec<(Vec<u8>, f32)> = fuzzy_candidates(searcher, self.field, &automaton)?
            .into_iter()
            .map(|c| (c.term, c.similarity))
            .collect();
        // the most similar first, then term order (Lucene's queue of top terms)
        kept.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        kept.truncate(self.max_expansions.max(1) as usize);
        Ok(kept)
    }
}

/// The terms within an edit distance of a text: what Lucene's `FuzzyTermsEnum` enumerates.
#[derive(Clone, Copy, Debug)]
pub struct FuzzyAutomaton<'a> {
    pub text: &'a str,
    /// At most 2 (Lucene's largest supported distance).
    pub distance: u8,
    /// Leading characters (code points) that must match exactly.
    pub prefix_length: u32,
    /// Whether swapping two adjacent characters is one edit.
    pub transpositions: bool,
}

/// A term of the shard within a [`FuzzyAutomaton`]'s distance.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzyCandidate {
    pub term: Vec<u8>,
    /// `1 - edits / min(term length, text length)` in code points (1 for the text itself).
    pub similarity: f32,
    /// The term's document frequency on the shard (its segments' summed, deleted documents
    /// included, as Lucene's `docFreq`).
    pub doc_freq: u64,
}

/// The shard's terms of `field` within `automaton`'s distance, each once, in term order
/// (the shard's segments' terms dictionaries merged, as Lucene's `MultiTerms`).
pub fn fuzzy_candidates(
    searcher: &Searcher,
    field: Field,
    automaton: &FuzzyAutomaton,
) -> tantivy::Result<Vec<FuzzyCandidate>> {
    let text = automaton.text;
    let split = text
        .char_indices()
        .nth(automaton.prefix_length as usize)
        .map_or(text.len(), |(at, _)| at);
    let (prefix, rest) = text.split_at(split);
    let dfa = builder(automaton.distance, automaton.transpositions).build_dfa(rest);
    let prefixed = PrefixedDfa {
        prefix: prefix.as_bytes(),
        dfa: &dfa,
    };
    let query_length = text.chars().count();
    let mut found: BTreeMap<Vec<u8>, FuzzyCandidate> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let mut stream = inverted.terms().search(&prefixed).into_stream()?;
        while stream.advance() {
            let term = stream.key();
            let doc_freq = u64::from(stream.value().doc_freq);
            if let Some(known) = found.get_mut(term) {
                known.doc_freq += doc_freq;
                continue;
            }
            let Distance::Exact(edits) = dfa.eval(&term[prefix.len()..]) else {
                continue;
            };
            let Ok(candidate) = std::str::from_utf8(term) else {
                continue;
            };
            let similarity = if edits == 0 {
                1.0
            } else {
                let shorter = candidate.chars().count().min(query_length).max(1);
                1.0 - edits as f32 / shorter as f32
            };
            found.insert(
                term.to_vec(),
                FuzzyCandidate {
                    term: term.to_vec(),
                    similarity,
                    doc_freq,
                },
            );
        }
    }
    Ok(found.into_values().collect())
}

impl Query for BlendedFuzzyQuery {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let Some(searcher) = enable_scoring.searcher() else {
            return EmptyQuery.weight(enable_scoring);
        };
        let expansions = self.expansions(searcher)?;
        let terms: Vec<Term> = expansions
            .iter()
            .map(|(bytes, _)| Term::from_field_bytes(self.field, bytes))
            .collect();
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .zip(&expansions)
            .map(|(term, (_, similarity))| {
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
                let query: Box<dyn Query> = if *similarity == 1.0 {
                    query
                } else {
                    Box::new(BoostQuery::new(query, *similarity))
                };
                (Occur::Should, query)
            })
            .collect();
        let union = BooleanQuery::new(clauses);
        match enable_scoring {
            EnableScoring::Enabled {
                searcher,
                statistics_provider,
            } => {
                let mut doc_freq = 0;
                for term in &terms {
                    doc_freq = doc_freq.max(statistics_provider.doc_freq(term)?);
                }
                let blended = BlendedDocFreq {
                    inner: statistics_provider,
                    field: self.field,
                    doc_freq,
                };
                union.weight(EnableScoring::Enabled {
                    searcher,
                    statistics_provider: &blended,
                })
            }
            disabled => union.weight(disabled),
        }
    }
}

/// Statistics where every expansion has the largest document frequency among them.
struct BlendedDocFreq<'a> {
    inner: &'a dyn Bm25StatisticsProvider,
    field: Field,
    doc_freq: u64,
}

impl Bm25StatisticsProvider for BlendedDocFreq<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.inner.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.inner.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if term.field() == self.field {
            Ok(self.doc_freq)
        } else {
            self.inner.doc_freq(term)
        }
    }
}

/// The automaton builder for a distance (its tables take milliseconds to build for distance
/// 2, so each is built once per process).
fn builder(distance: u8, transpositions: bool) -> &'static LevenshteinAutomatonBuilder {
    static BUILDERS: [[OnceLock<LevenshteinAutomatonBuilder>; 2]; 3] = [
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
    ];
    let distance = distance.min(2);
    BUILDERS[distance as usize][transpositions as usize]
        .get_or_init(|| LevenshteinAutomatonBuilder::new(distance, transpositions))
}

/// Terms that start with `prefix` and whose rest `dfa` accepts.
struct PrefixedDfa<'a> {
    prefix: &'a [u8],
    dfa: &'a DFA,
}

/// Bytes of the prefix matched so far (`usize::MAX`: a mismatch), then the DFA's state.
type PrefixedState = (usize, u32);

impl tantivy_fst::Automaton for PrefixedDfa<'_> {
    type State = PrefixedState;

    fn start(&self) -> PrefixedState {
        (0, self.dfa.initial_state())
    }

    fn is_match(&self, state: &PrefixedState) -> bool {
        state.0 == self.prefix.len() && matches!(self.dfa.distance(state.1), Distance::Exact(_))
    }

    fn can_match(&self, state: &PrefixedState) -> bool {
        state.0 < self.prefix.len() || state.0 == self.prefix.len() && state.1 != SINK_STATE
    }

    fn accept(&self, state: &PrefixedState, byte: u8) -> PrefixedState {
        let (matched, dfa_state) = *state;
        if matched < self.prefix.len() {
            if self.prefix[matched] == byte {
                (matched + 1, dfa_state)
            } else {
                (usize::MAX, SINK_STATE)
            }
        } else if matched == self.prefix.len() {
            (matched, self.dfa.transition(dfa_state, byte))
        } else {
            *state
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::TopDocs;
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{doc, Index, IndexWriter};

    /// The index of the reference comparison: five short texts.
    fn index() -> (Index, Field) {
        let mut schema = Schema::builder();
        let t = schema.add_text_field("t", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut writer: IndexWriter = index.writer(15_000_000).unwrap();
        for text in [
            "quick brown fox",
            "quack quack",
            "quick quick quick fix",
            "the quirk of a fox",
            "quickly",
        ] {
            writer.add_document(doc!(t => text)).unwrap();
        }
        writer.commit().unwrap();
        (index, t)
    }

    fn exp(prefix_length: u32, max_expansions: u32) -> Expansion {
        Expansion {
            prefix_length,
            transpositions: true,
            max_expansions,
        }
    }

    #[test]
    fn expansions_keep_the_most_similar_terms_first() {
        let (index, t) = index();
        let searcher = index.reader().unwrap().searcher();
        let query = BlendedFuzzyQuery::new(t, "quick", 1, exp(0, 50));
        let found = query.expansions(&searcher).unwrap();
        let text: Vec<(&str, f32)> = found
            .iter()
            .map(|(b, s)| (std::str::from_utf8(b).unwrap(), *s))
            .collect();
        assert_eq!(text, [("quick", 1.0), ("quack", 0.8), ("quirk", 0.8)]);
        let two = BlendedFuzzyQuery::new(t, "quick", 1, exp(0, 2));
        assert_eq!(two.expansions(&searcher).unwrap().len(), 2);
        // the prefix must match exactly: "qua" is not "qui"
        let prefixed = BlendedFuzzyQuery::new(t, "quick", 1, exp(3, 50));
        let terms: Vec<Vec<u8>> = prefixed
            .expansions(&searcher)
            .unwrap()
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        assert_eq!(terms, [b"quick".to_vec(), b"quirk".to_vec()]);
    }

    #[test]
    fn expansions_score_with_the_blended_document_frequency() {
        // tantivy's BM25 (this test's index has plain tantivy statistics); the scores relate
        // as OpenSearch's do: quack and quirk share quick's idf, scaled by their similarity
        let (index, t) = index();
        let searcher = index.reader().unwrap().searcher();
        let query = BlendedFuzzyQuery::new(t, "quick", 1, exp(0, 50));
        let hits = searcher
            .search(&query, &TopDocs::with_limit(10).order_by_score())
            .unwrap();
        let ids: Vec<u32> = hits.iter().map(|(_, a)| a.doc_id).collect();
        assert_eq!(ids, [2, 1, 0, 3]);
        let exact = BooleanQuery::new(vec![(
            Occur::Should,
            Box::new(TermQuery::new(
                Term::from_field_text(t, "quick"),
                IndexRecordOption::WithFreqs,
            )) as Box<dyn Query>,
        )]);
        let exact_hits = searcher
            .search(&exact, &TopDocs::with_limit(10).order_by_score())
            .unwrap();
        let score_of = |hits: &[(f32, tantivy::DocAddress)], doc: u32| {
            hits.iter().find(|(_, a)| a.doc_id == doc).unwrap().0
        };
        // doc 0 matches only "quick": the same score as the exact term
        assert!((score_of(&hits, 0) - score_of(&exact_hits, 0)).abs() < 1e-6);
        let none = BlendedFuzzyQuery::new(t, "zzzzz", 1, exp(0, 50));
        assert!(searcher
            .search(&none, &TopDocs::with_limit(10).order_by_score())
            .unwrap()
            .is_empty());
    }
}
