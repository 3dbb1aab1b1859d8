//! Deduplication as a library: documents (or their sketches) in, near-duplicate pairs or clusters out,
//! pushed into a [`Sink`] so that every front door (CLI, server, Python, Spark) streams the same results.
//!
//! ```text
//! documents ─ group identical sketches ─▶ distinct sketches ─ candidates (Hamming tables | LSH bands)
//!           ─ verify (the scheme's exact measure) ─▶ edges ─ cluster (centres | components) ─▶ Sink
//! ```
//!
//! **Clusters are safe to act on by default.** Connected components chain: A near B near C puts A and C
//! together however far apart they are (a k = 3 component over real documentation held 67 files of six
//! manuals). The default [`Clustering::Centres`] processes documents in the representative policy's order;
//! each joins the closest representative it is near (ties: the earlier representative), else becomes a
//! representative itself. So every member is within the threshold of its representative (k bits, or a
//! verified similarity ≥ the threshold), and every member that is not kept says which kept document it
//! duplicates ([`Member::duplicate_of`]) and by how much. [`Clustering::Components`] stays available.
//!
//! **Determinism.** Documents are ranked by the [`Representative`] policy (ids break ties), identical sketches
//! are grouped, and candidate edges are sorted before clustering: pairs, clusters and representatives never
//! depend on input order (except under [`Representative::FirstSeen`], which asks for it) or thread count.
//!
//! **Settings.** Front doors do not decide which settings apply to which method: they fill a [`Settings`] as
//! their users gave it, and [`Settings::options`] gives the run's [`Options`] or a [`SettingsError`] that
//! each words in its own spelling of the settings (`--verify exact`, `verify="exact"`).
//!
//! ```
//! use neardup::dedup::{Dedup, Document, Options, VecSink};
//! use neardup::{Method, Scheme};
//!
//! let method = Method::SimHash(Scheme::SimhashDocV1);
//! let mut dedup = Dedup::new(method, Options::default())?;
//! for (id, text) in [("a", "the quick brown fox jumps over the lazy dog"),
//!                    ("b", "The quick brown fox jumps over the lazy dog!"),
//!                    ("c", "an entirely different sentence about release notes")] {
//!     dedup.push(Document::new(id, method.sketch_text(text)?))?;
//! }
//! let mut sink = VecSink::default();
//! let summary = dedup.clusters(&mut sink)?;
//! assert_eq!(sink.clusters, vec![vec![("a".to_string(), None), ("b".to_string(), Some("a".to_string()))]]);
//! assert_eq!(summary.duplicates, 1);
//! # Ok::<(), neardup::Error>(())
//! ```

mod cluster;
pub mod distributed;
mod graph;
mod settings;
mod sink;
mod stored;

pub use settings::{ExactMeasure, Settings, SettingsError, Spelling};
pub use sink::{Cluster, Member, Sink, VecSink};

/// Where a run is, for progress displays: the stage and the counts so far. Reported at each stage's start and
/// every [`PROGRESS_EVERY`] candidates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// What the run is doing.
    pub stage: Stage,
    /// Candidate pairs examined so far (LSH: pairs sharing a band; SimHash: pairs found within k by the
    /// tables, which check the distance themselves).
    pub candidates: u64,
    /// Candidates verified as pairs so far.
    pub pairs: u64,
    /// Distinct sketches taking part (documents with identical sketches count once).
    pub distinct: u64,
}

/// A stage of [`Dedup::pairs`] and [`Dedup::clusters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stage {
    /// Ranking documents and grouping identical sketches.
    #[default]
    Grouping,
    /// Finding candidate pairs and verifying them (and, forming clusters, judging the pairs of large
    /// candidate runs that clustering needs).
    Candidates,
    /// Writing the clusters (or pairs) to the sink.
    Writing,
}

/// How often (in candidates) the progress observer is called during the candidate stage.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// A progress observer ([`Dedup::on_progress`]): [`ControlFlow::Break`] stops the run.
pub type Observer = Box<dyn Fn(Progress) -> ControlFlow<()> + Send + Sync>;

use crate::error::Error;
use crate::profile::{Measure, Profile};
use crate::sketch::{Method, Sketch};
use neardup_index::lsh::{Banding, Preset, optimize};
use std::fmt;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

/// How close two documents are: a Hamming distance (SimHash) or a similarity (MinHash family).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub enum Score {
    /// Bits that differ: smaller is closer.
    Distance(u32),
    /// A similarity in 0..=1: larger is closer.
    Similarity(f64),
}

impl Score {
    /// Whether `self` is strictly closer than `other` (scores of one run are of one kind).
    pub fn closer_than(self, other: Score) -> bool {
        match (self, other) {
            (Score::Distance(a), Score::Distance(b)) => a < b,
            (Score::Similarity(a), Score::Similarity(b)) => a > b,
            _ => false,
        }
    }

    /// The score as a number (a distance or a similarity).
    pub fn value(self) -> f64 {
        match self {
            Score::Distance(d) => d as f64,
            Score::Similarity(s) => s,
        }
    }

    /// The score of `measure`'s kind whose [`value`](Self::value) is `value`.
    fn of_value(measure: Measure, value: f64) -> Score {
        match measure {
            Measure::Hamming => Score::Distance(value as u32),
            _ => Score::Similarity(value),
        }
    }

    /// The score of two documents with identical sketches (and profiles).
    fn identical(measure: Measure) -> Score {
        match measure {
            Measure::Hamming => Score::Distance(0),
            _ => Score::Similarity(1.0),
        }
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Score::Distance(d) => write!(f, "{d}"),
            Score::Similarity(s) => write!(f, "{s:.4}"),
        }
    }
}

/// How MinHash candidates (pairs sharing an LSH band) are checked against the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Verification {
    /// By the scheme's exact measure over the documents' [`Profile`]s (documents pushed without one, and
    /// stored index entries, are judged by the estimate).
    #[default]
    Exact,
    /// By the similarity estimated from the signatures.
    Estimate,
    /// Not at all: every LSH candidate is a pair (no threshold guarantee).
    None,
}

/// SimHash: the exact measure that checks a candidate pair (two documents within k bits) against the
/// threshold, with [`Verification::Exact`]. The fingerprint summarizes unigram term frequencies, blind to word
/// order; checking candidates exactly buys back precision that a larger k spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimHashCheck {
    /// The cosine of the documents' term-frequency vectors over the doc-v1 tokens (the features the
    /// fingerprint summarizes: what its distance estimates).
    Cosine,
    /// The Jaccard similarity of the sets of word n-grams (the MinHash schemes' tokens, numbers kept).
    Jaccard(u32),
}

impl SimHashCheck {
    /// The measure compared with the threshold.
    pub fn measure(self) -> Measure {
        match self {
            SimHashCheck::Cosine => Measure::Cosine,
            SimHashCheck::Jaccard(_) => Measure::Jaccard,
        }
    }

    /// The document's profile for this check, from its extracted text: token counts for the cosine, the
    /// distinct word n-gram hashes for the Jaccard similarity. Pushed as [`Document::profile`].
    pub fn profile(self, text: &str) -> Profile {
        match self {
            SimHashCheck::Cosine => {
                let mut hashes = Vec::new();
                neardup_text::profile::doc_v1::tokenize(text, |token| {
                    hashes.push(neardup_sketch::lookup3::jenkins64_window(
                        token.window(),
                        token.len(),
                    ))
                });
                Profile::from_hashes(hashes, Measure::Cosine)
            }
            SimHashCheck::Jaccard(n) => Profile::Set(crate::minhash::shingle_set(
                text,
                neardup_sketch::shingle::Features::Words(n.max(1)),
            )),
        }
    }
}

impl fmt::Display for SimHashCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimHashCheck::Cosine => f.write_str("cosine of term frequencies"),
            SimHashCheck::Jaccard(n) => write!(f, "jaccard of word {n}-grams"),
        }
    }
}

/// How pairs become clusters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Clustering {
    /// Every member is within the threshold of its representative (see the module docs).
    #[default]
    Centres,
    /// Connected components of the pair graph: transitive, so members can be far from the representative.
    Components,
}

/// Which document of a cluster is kept (the representative), as an order over documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Representative {
    /// The smallest id (byte order).
    #[default]
    SmallestId,
    /// The first pushed (input order).
    FirstSeen,
    /// The one with the most tokens (shingles for MinHash); then the smallest id.
    Longest,
}

/// Settings of a run. Entries of a stored index always come before new documents, whatever the policy:
/// what is already kept stays kept.
#[derive(Clone, Debug)]
pub struct Options {
    /// SimHash: the largest Hamming distance (inclusive) of a near-duplicate pair, 0 to 7.
    pub k: u32,
    /// MinHash: the similarity a pair must reach (default 0.8).
    pub threshold: Option<f64>,
    /// MinHash: the LSH bands; `None` chooses them for the threshold with [`Options::weights`].
    pub banding: Option<Banding>,
    /// MinHash: weights of false positives and false negatives for choosing bands (default: 0.05/0.95 when
    /// verifying, which buys recall with candidates that verification drops; 0.5/0.5 without, as datasketch).
    pub weights: Option<(f64, f64)>,
    /// How candidates are checked. MinHash: see [`Verification`]. SimHash: with [`Verification::Exact`] and
    /// a [`Options::simhash_check`], pairs within k must also reach the threshold by that exact measure.
    pub verification: Verification,
    /// SimHash: the exact measure candidates within k are checked with (documents pushed without a profile
    /// are judged by the distance alone); `None`, the default: the distance alone decides.
    pub simhash_check: Option<SimHashCheck>,
    /// Centres (safe) or connected components.
    pub clustering: Clustering,
    /// Which member is kept.
    pub representative: Representative,
    /// Clusters larger than this are named in [`Summary::warnings`].
    pub large_cluster: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            k: 3,
            threshold: None,
            banding: None,
            weights: None,
            verification: Verification::default(),
            simhash_check: None,
            clustering: Clustering::default(),
            representative: Representative::default(),
            large_cluster: 1000,
        }
    }
}

/// The default MinHash similarity threshold.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

impl Options {
    /// The band-choice weights that apply (see [`Options::weights`]).
    pub fn effective_weights(&self) -> (f64, f64) {
        self.weights.unwrap_or(default_weights(self.verification))
    }

    /// The LSH bands and threshold for signatures of `values` values: the given bands, a preset's, or the
    /// optimizer's for the threshold (default 0.8) with the effective weights.
    pub fn choose_bands(
        &self,
        preset: Option<&Preset>,
        values: u32,
    ) -> Result<(Banding, f64), Error> {
        let threshold = self
            .threshold
            .or(preset.map(|p| p.threshold))
            .unwrap_or(DEFAULT_THRESHOLD);
        let banding = match (self.banding, preset) {
            (Some(b), _) => b,
            (None, Some(p)) => p.banding_for(values).map_err(unsupported)?,
            (None, None) => {
                let (fp, fn_) = self.effective_weights();
                optimize(threshold, values, fp, fn_).map_err(unsupported)?
            }
        };
        Ok((banding, threshold))
    }
}

/// The band-choice weights by default: when candidates are verified, a false positive costs one comparison
/// and a false negative a lost pair, so recall is bought.
pub fn default_weights(verification: Verification) -> (f64, f64) {
    match verification {
        Verification::None => (0.5, 0.5),
        _ => (0.05, 0.95),
    }
}

fn check_threshold(threshold: Option<f64>) -> Result<(), Error> {
    match threshold {
        Some(t) if !(0.0..=1.0).contains(&t) => Err(Error::Unsupported {
            what: format!("threshold {t} is not a similarity in 0..1"),
        }),
        _ => Ok(()),
    }
}

fn unsupported(e: impl fmt::Display) -> Error {
    Error::Unsupported {
        what: e.to_string(),
    }
}

/// One document to deduplicate.
#[derive(Clone, Debug)]
pub struct Document {
    /// Its id (unique in a run).
    pub id: String,
    /// Its sketch, of the run's method.
    pub sketch: Sketch,
    /// Its exact profile (MinHash with [`Verification::Exact`]); without one, the estimate judges it.
    pub profile: Option<Profile>,
    /// Its length in tokens or shingles, for [`Representative::Longest`].
    pub length: u64,
}

impl Document {
    /// A document with only a sketch.
    pub fn new(id: impl Into<String>, sketch: Sketch) -> Self {
        Document {
            id: id.into(),
            sketch,
            profile: None,
            length: 0,
        }
    }
}

/// What a run found, for the summary line and for warnings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Documents pushed.
    pub documents: usize,
    /// Stored index entries that took part (they matched a document).
    pub stored: usize,
    /// Distinct sketches (documents with identical sketches and profiles are one).
    pub distinct: usize,
    /// Verified pairs of distinct sketches that the run judged (edges of the pair graph). Clustering judges
    /// only the pairs it needs among many near-copies (see [`Dedup::clusters`]; centre clustering counts a
    /// pair there only if it was closer than the member's best so far), so this can be fewer than the pairs
    /// [`Dedup::pairs`] lists (and a pair whose LSH band keys collide in two bands counts twice).
    pub edges: usize,
    /// Pairs written (pairs mode).
    pub pairs: usize,
    /// Clusters of two or more.
    pub clusters: usize,
    /// Members that are not representatives.
    pub duplicates: usize,
    /// The cluster-size distribution: `(smallest size, largest size, clusters)` per power-of-two bucket.
    pub sizes: Vec<(usize, usize, usize)>,
    /// The largest clusters: (representative, size), largest first (up to five).
    pub largest: Vec<(String, usize)>,
    /// Clusters above [`Options::large_cluster`], in words.
    pub warnings: Vec<String>,
}

/// A deduplication run: push documents, then ask for [`pairs`](Dedup::pairs) or
/// [`clusters`](Dedup::clusters).
pub struct Dedup {
    method: Method,
    options: Options,
    /// MinHash: the bands and threshold in use.
    bands: Option<(Banding, f64)>,
    docs: Vec<Document>,
    /// Stored index entries matched by documents, and the edges (document, stored entry, score).
    stored: stored::Stored,
    /// Told where the run is.
    observer: Option<Observer>,
    /// Whether the observer asked the run in progress to stop.
    stop: AtomicBool,
}

impl Dedup {
    /// A run for documents sketched with `method`. Refuses what cannot be deduplicated (bottom-k samples,
    /// k above 7, a threshold outside 0..=1).
    pub fn new(method: Method, options: Options) -> Result<Self, Error> {
        Self::with_preset(method, options, None)
    }

    /// [`Dedup::new`] with a published configuration's bands and threshold.
    pub fn with_preset(
        method: Method,
        options: Options,
        preset: Option<&Preset>,
    ) -> Result<Self, Error> {
        let bands = match method {
            Method::BottomK(params) => {
                return Err(crate::schemes::pair_by_pair(&params, "deduplicated"));
            }
            Method::SimHash(_) => {
                crate::schemes::check_k(options.k)?;
                check_threshold(options.threshold)?;
                None
            }
            Method::MinHash(scheme) => {
                check_threshold(options.threshold)?;
                Some(options.choose_bands(preset, scheme.values())?)
            }
        };
        Ok(Dedup {
            method,
            options,
            bands,
            docs: Vec::new(),
            stored: Default::default(),
            observer: None,
            stop: AtomicBool::new(false),
        })
    }

    /// Calls `observer` with the run's progress while [`pairs`](Dedup::pairs) or
    /// [`clusters`](Dedup::clusters) work (on the calling thread), at each stage's start, every
    /// [`PROGRESS_EVERY`] candidates and as often during clustering. If it returns [`ControlFlow::Break`]
    /// (a user pressed Ctrl-C, a deadline passed), the run stops at its next check (within one crowded
    /// run's comparisons) and returns [`Error::Stopped`] having written nothing more to its sink.
    ///
    /// ```
    /// use neardup::dedup::{Dedup, Document, Options, VecSink};
    /// use neardup::{Error, Fingerprint, Method, Scheme, Sketch};
    /// use std::ops::ControlFlow;
    ///
    /// let mut run = Dedup::new(Method::SimHash(Scheme::SimhashDocV1), Options::default())?;
    /// for (id, bits) in [("a", 0), ("b", 0b111)] {
    ///     let fingerprint = Fingerprint::new(Scheme::SimhashDocV1, bits);
    ///     run.push(Document::new(id, Sketch::Fingerprint(fingerprint)))?;
    /// }
    /// run.on_progress(|_| ControlFlow::Break(()));
    /// let mut sink = VecSink::default();
    /// assert!(matches!(run.clusters(&mut sink), Err(Error::Stopped)));
    /// assert!(sink.clusters.is_empty());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn on_progress(
        &mut self,
        observer: impl Fn(Progress) -> ControlFlow<()> + Send + Sync + 'static,
    ) {
        self.observer = Some(Box::new(observer));
    }

    /// Tells the observer where the run is, and remembers if it asks the run to stop (once it has, it is not
    /// asked again).
    fn report(&self, progress: Progress) {
        if let Some(observer) = &self.observer
            && !self.stopping()
            && observer(progress).is_break()
        {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the observer asked the run in progress to stop.
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// [`Error::Stopped`] if the observer asked the run to stop.
    fn check_stop(&self) -> Result<(), Error> {
        if self.stopping() {
            return Err(Error::Stopped);
        }
        Ok(())
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// MinHash: the bands and the threshold in use.
    pub fn bands(&self) -> Option<(Banding, f64)> {
        self.bands
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The exact measure pairs are scored by.
    pub fn measure(&self) -> Measure {
        self.method.measure()
    }

    /// SimHash: the exact measure and threshold that candidates within k are checked against, when the run
    /// verifies them ([`Verification::Exact`] with a [`Options::simhash_check`]).
    pub fn simhash_verification(&self) -> Option<(SimHashCheck, f64)> {
        match (
            self.method,
            self.options.verification,
            self.options.simhash_check,
        ) {
            (Method::SimHash(_), Verification::Exact, Some(check)) => {
                Some((check, self.options.threshold.unwrap_or(DEFAULT_THRESHOLD)))
            }
            _ => None,
        }
    }

    /// Whether a candidate pair is a pair, and its score. `measured` is what the candidate stage measured
    /// from the sketches: the Hamming distance (SimHash, already within k) or the estimated similarity
    /// (MinHash). SimHash with a check, and MinHash with [`Verification::Exact`], judge by the exact measure
    /// over both profiles when both have one. One machine and the [`distributed`] stages both judge here, so
    /// they cannot disagree.
    pub(crate) fn judge(
        &self,
        measured: Score,
        a: Option<&Profile>,
        b: Option<&Profile>,
    ) -> Option<Score> {
        self.judge_above(measured, a, b, None)
    }

    /// [`judge`](Self::judge), where a MinHash pair that is not at least as close as `bar` is of no use to
    /// the caller (centre clustering, for a member already near a representative): it is judged against
    /// the higher of the threshold and `bar`, so that the exact merge can stop as soon as it cannot reach
    /// it. A pair it returns is one `judge` returns, with the same score.
    pub(crate) fn judge_above(
        &self,
        measured: Score,
        a: Option<&Profile>,
        b: Option<&Profile>,
        bar: Option<f64>,
    ) -> Option<Score> {
        match (measured, self.bands) {
            (Score::Distance(_), _) => match (self.simhash_verification(), a, b) {
                (Some((check, threshold)), Some(pa), Some(pb)) => pa
                    .similarity_reaching(pb, check.measure(), threshold)
                    .map(|_| measured),
                _ => Some(measured),
            },
            (Score::Similarity(estimate), Some((_, threshold))) => {
                let threshold = bar.map_or(threshold, |bar| bar.max(threshold));
                let similarity = match (self.options.verification, a, b) {
                    (Verification::None, _, _) => return Some(measured),
                    (Verification::Exact, Some(pa), Some(pb)) => {
                        pa.similarity_reaching(pb, self.measure(), threshold)
                    }
                    _ => Some(estimate).filter(|&e| e >= threshold),
                };
                similarity.map(Score::Similarity)
            }
            (Score::Similarity(_), None) => None,
        }
    }

    /// Adds a document; refuses a sketch of another method. Documents are numbered in the order pushed
    /// ([`Member::ordinal`]).
    pub fn push(&mut self, doc: Document) -> Result<(), Error> {
        let method = doc.sketch.method()?;
        if method != self.method {
            return Err(Error::MethodMismatch {
                left: self.method.name(),
                right: method.name(),
            });
        }
        self.docs.push(doc);
        Ok(())
    }

    /// The documents pushed.
    pub fn documents(&self) -> &[Document] {
        &self.docs
    }

    /// Every verified pair, once, as (id_a, id_b, score) with id_a < id_b in byte order: pairs of identical
    /// documents too. Returns the summary.
    pub fn pairs(&self, sink: &mut dyn Sink) -> Result<Summary, Error> {
        let graph = graph::Graph::build(self, graph::Listed::ALL)?;
        graph.report_writing(self);
        self.check_stop()?;
        let pairs = graph.write_pairs(self, sink)?;
        Ok(Summary {
            pairs,
            ..graph.summary(self)
        })
    }

    /// The clusters of two or more, by the clustering and representative policy of the options, in the
    /// order of their representatives; each cluster's representative first, then its members in order.
    ///
    /// Memory stays linear in the documents however large the clusters: n near-copies of one document are
    /// n(n−1)/2 candidate pairs, so a MinHash run (sketches sharing an LSH band's key) of more than 64, or of
    /// more than 8 with more candidates than members, is kept whole (4 bytes per member, twice),
    /// and centre clustering judges its pairs only between a new representative and the members still to
    /// be placed (about n pairs when the copies join one representative), a member already near an earlier
    /// representative only for being closer to this one. The clusters are exactly those of
    /// every pair. Connected components judge a run's pairs until its members are joined. SimHash lists every
    /// pair within k, as its runs gather documents that are near without being copies.
    pub fn clusters(&self, sink: &mut dyn Sink) -> Result<Summary, Error> {
        self.clusters_listing(graph::Listed::CLUSTERING, sink)
    }

    /// [`Dedup::clusters`] with the candidate runs that `listed` does not list kept whole (the clusters
    /// never depend on it; tests compare).
    fn clusters_listing(
        &self,
        listed: graph::Listed,
        sink: &mut dyn Sink,
    ) -> Result<Summary, Error> {
        let graph = graph::Graph::build(self, listed)?;
        let clusters = match self.options.clustering {
            Clustering::Centres => cluster::centres(&graph, self),
            Clustering::Components => cluster::components(&graph, self),
        };
        // Clustering stops part of the way when asked: its partial clusters are not written.
        graph.report_writing(self);
        self.check_stop()?;
        cluster::write(self, &graph, clusters, sink)
    }
}

#[cfg(test)]
mod tests;
