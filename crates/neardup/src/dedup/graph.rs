//! The pair graph of a run: documents ranked by the representative policy, identical sketches grouped, and
//! verified edges between groups, sorted so that nothing depends on input order or thread count.
//!
//! MinHash candidates come in runs: the groups that share one LSH band's key. A run of n near-copies holds
//! n(n−1)/2 candidate pairs, so such runs are not listed pair by pair: the graph keeps them whole ([`Runs`])
//! and clustering judges the pairs it needs (centres: a new representative against the run's members still
//! to be placed), each pair by the same rule and judgement as a listed one. So the clusters are those of the
//! whole graph, and memory stays linear in the documents ([`Listed`] says which runs are listed). SimHash
//! lists every pair within k: its table keys gather fingerprints that are near without being copies (many
//! representatives in one run), where judging a run piecemeal costs more than listing it. A listed pair costs
//! 24 bytes ([`Edge`] and its place in the other group's list): 35.8 million pairs within 3 bits of a million
//! short documents take 0.9 GB.

use super::{
    Dedup, PROGRESS_EVERY, Progress, Representative, Score, Sink, Stage, Summary, Verification,
};
use crate::error::Error;
use crate::profile::{Measure, Profile};
use crate::sketch::Sketch;
use neardup_index::hamming::all_pairs_while;
use neardup_index::hamming::plan::recommend;
use neardup_index::lsh::{Banding, lsh_pairs_or_runs, shares_earlier_band, similarity};
use std::cell::Cell;
use std::cmp::Ordering;

/// Which candidate runs the graph lists pair by pair; the others are kept whole for clustering. It changes
/// the work, never the clusters.
#[derive(Clone, Copy, Debug)]
pub(super) struct Listed {
    /// Runs of at most this many groups are listed (2 to 8 is what real near-duplicates mostly make: a page
    /// and its few re-crawls).
    pub run: usize,
    /// A larger run of at most [`Listed::scanned_run`] is listed when its candidates (the pairs that share no
    /// earlier band) number at most this many per member, as in a later band of a few documents that already
    /// met; near-copies in their first band make many, and their run is kept whole.
    pub pairs_per_member: usize,
    /// Runs of more than this many groups are kept whole without looking at their pairs (finding that few of
    /// them belong to the run, as in the later bands of near-copies, would cost their square).
    pub scanned_run: usize,
}

impl Listed {
    /// Every pair listed, as `pairs` must write them all.
    pub const ALL: Listed = Listed {
        run: usize::MAX,
        pairs_per_member: usize::MAX,
        scanned_run: usize::MAX,
    };
    /// What clustering lists (and the distributed stages, for their buckets).
    pub const CLUSTERING: Listed = Listed {
        run: 8,
        pairs_per_member: 1,
        scanned_run: 64,
    };
}

/// Nodes are the run's documents (`0..documents`) then the stored entries that matched them.
pub(super) struct Graph {
    /// How many nodes are documents.
    pub documents: usize,
    /// Each node's rank in the policy's order (stored entries first).
    pub rank: Vec<u32>,
    /// Nodes in rank order.
    pub by_rank: Vec<u32>,
    /// Each node's group.
    pub group_of: Vec<u32>,
    /// Each group's nodes, in rank order.
    pub groups: Vec<Vec<u32>>,
    /// Edges between groups (a < b), sorted: the listed pairs, and those with stored entries.
    pub edges: Vec<Edge>,
    /// Each group's edges, both ways, as places in `edges` (see [`Graph::neighbours`]).
    adjacency: Adjacency,
    /// Runs of candidates too large to list, by group of documents.
    pub runs: Runs,
    /// How many groups are groups of documents (the rest are stored entries, one each).
    pub document_groups: usize,
    /// Candidates and pairs judged so far: the candidate stage's, then clustering's.
    progress: Cell<Progress>,
}

/// Runs of candidate groups kept whole: groups of documents that share one band's key. Run `r`'s
/// members are `members[start[r]..start[r + 1]]`, in increasing order; group `g`'s runs are
/// `of_group[group_start[g]..group_start[g + 1]]`.
pub(super) struct Runs {
    /// The band each run shares.
    band: Vec<u32>,
    members: Vec<u32>,
    start: Vec<usize>,
    of_group: Vec<u32>,
    group_start: Vec<usize>,
}

impl Runs {
    fn new() -> Runs {
        Runs {
            band: Vec::new(),
            members: Vec::new(),
            start: vec![0],
            of_group: Vec::new(),
            group_start: Vec::new(),
        }
    }

    fn push(&mut self, band: u32, members: &[u32]) {
        self.band.push(band);
        self.members.extend_from_slice(members);
        self.start.push(self.members.len());
    }

    /// Indexes the runs by group, once every run is pushed.
    fn index(&mut self, groups: usize) {
        let mut start = vec![0usize; groups + 1];
        for &g in &self.members {
            start[g as usize + 1] += 1;
        }
        for g in 1..start.len() {
            start[g] += start[g - 1];
        }
        let mut fill = start.clone();
        self.of_group = vec![0; self.members.len()];
        for r in 0..self.band.len() {
            for &g in &self.members[self.start[r]..self.start[r + 1]] {
                self.of_group[fill[g as usize]] = r as u32;
                fill[g as usize] += 1;
            }
        }
        self.group_start = start;
    }

    /// How many runs there are.
    pub fn len(&self) -> usize {
        self.band.len()
    }

    /// Run `r`'s members.
    pub fn members(&self, r: usize) -> &[u32] {
        &self.members[self.start[r]..self.start[r + 1]]
    }

    /// The runs group `g` is in.
    pub fn of(&self, g: u32) -> &[u32] {
        match self.group_start.get(g as usize..g as usize + 2) {
            Some(&[a, b]) => &self.of_group[a..b],
            _ => &[],
        }
    }
}

/// How many crowded runs of the SimHash pass go by between two reports of its progress ([`Listing::go_on`]).
const ASKS_PER_REPORT: u64 = 256;

/// The estimated similarity of two signatures of a run of `band`, if the pair belongs to it (a pair belongs
/// to the first band it shares), as the band pass measures a listed pair.
fn measure_in_band(banding: &Banding, band: u32, x: &[u32], y: &[u32]) -> Option<Score> {
    (!shares_earlier_band(banding, band, x, y)).then(|| Score::Similarity(similarity(x, y)))
}

/// Judges a candidate pair of groups as the run does (by their leaders' profiles), and counts it; `bar` as
/// for [`Dedup::judge_above`].
fn judge_counted(
    run: &Dedup,
    groups: &[Vec<u32>],
    (a, b): (u32, u32),
    measured: Score,
    bar: Option<f64>,
    progress: &mut Progress,
) -> Option<Score> {
    let profile = |g: u32| run.docs[groups[g as usize][0] as usize].profile.as_ref();
    let score = run.judge_above(measured, profile(a), profile(b), bar);
    progress.candidates += 1;
    progress.pairs += u64::from(score.is_some());
    if progress.candidates.is_multiple_of(PROGRESS_EVERY) {
        run.report(*progress);
    }
    score
}

/// A verified edge between groups `a < b`. The score is kept as its value: every score of a run is of one
/// kind, the run's measure's ([`Edge::score`] gives it back), so an edge takes 16 bytes where
/// `(u32, u32, Score)` took 24.
#[derive(Clone, Copy, Debug)]
pub(super) struct Edge {
    pub a: u32,
    pub b: u32,
    value: f64,
}

impl Edge {
    fn new(a: u32, b: u32, score: Score, measure: Measure) -> Edge {
        debug_assert_eq!(
            matches!(score, Score::Distance(_)),
            measure == Measure::Hamming
        );
        Edge {
            a,
            b,
            value: score.value(),
        }
    }

    /// The edge's verified score, `measure` being the run's.
    pub fn score(&self, measure: Measure) -> Score {
        Score::of_value(measure, self.value)
    }
}

/// Where each group's edges are in the sorted edges: 8 bytes an edge more, where lists of neighbours and
/// scores held 48 (dense near-duplicates make tens of millions of edges).
struct Adjacency {
    /// Group `a`'s edges `(a, b)` (b > a) are `edges[upper[a]..upper[a + 1]]`, since the edges are sorted.
    upper: Vec<usize>,
    /// Group `b`'s edges `(a, b)` (a < b) are `edges[lower[i]]` for `i` in `lower_start[b]..lower_start[b +
    /// 1]`, in increasing `a`.
    lower_start: Vec<usize>,
    lower: Vec<u64>,
}

impl Adjacency {
    /// The adjacency of `edges`, sorted and without repeats, among `groups` groups.
    fn of(edges: &[Edge], groups: usize) -> Adjacency {
        let mut upper = vec![0usize; groups + 1];
        let mut start = vec![0usize; groups + 1];
        for &Edge { a, b, .. } in edges {
            upper[a as usize + 1] += 1;
            start[b as usize + 1] += 1;
        }
        for g in 1..=groups {
            upper[g] += upper[g - 1];
            start[g] += start[g - 1];
        }
        // The edges are sorted by `a`, so each group's lower edges are filled in increasing `a`.
        let mut fill = start.clone();
        let mut lower = vec![0u64; edges.len()];
        for (e, &Edge { b, .. }) in edges.iter().enumerate() {
            lower[fill[b as usize]] = e as u64;
            fill[b as usize] += 1;
        }
        Adjacency {
            upper,
            lower_start: start,
            lower,
        }
    }
}

/// The candidate stage's listing: each candidate judged, counted and kept as an edge if a pair. A large run's
/// candidates are listed too when they are few ([`Listed::pairs_per_member`]); else (near-copies) the run is
/// kept whole for clustering.
struct Listing<'a> {
    run: &'a Dedup,
    groups: &'a [Vec<u32>],
    edges: Vec<Edge>,
    runs: Runs,
    progress: Progress,
    /// A large run's candidates so far, measured.
    found: Vec<(u32, u32, Score)>,
    /// How often the candidate pass asked whether to go on.
    asked: u64,
    /// Which large runs are listed.
    listed: Listed,
}

impl Listing<'_> {
    /// Whether the SimHash pass goes on to its next crowded run of equal key. Its comparisons may find few
    /// pairs, so the observer, otherwise told every [`PROGRESS_EVERY`] candidates, is told here too every
    /// [`ASKS_PER_REPORT`] runs (and may stop the run).
    fn go_on(&mut self) -> bool {
        self.asked += 1;
        if self.asked.is_multiple_of(ASKS_PER_REPORT) {
            self.run.report(self.progress);
        }
        !self.run.stopping()
    }

    fn pair(&mut self, a: u32, b: u32, measured: Score) {
        if self.run.stopping() {
            return; // the run ends after the candidate pass, which stops at its next check
        }
        let judged = judge_counted(
            self.run,
            self.groups,
            (a, b),
            measured,
            None,
            &mut self.progress,
        );
        if let Some(score) = judged {
            self.edges.push(Edge::new(a, b, score, self.run.measure()));
        }
    }

    /// A run of more than the listed size: `measure` gives the candidates that belong to it. Listed if they
    /// are few, else kept whole, before any is judged.
    fn large(&mut self, origin: u32, members: &[u32], measure: impl Fn(u32, u32) -> Option<Score>) {
        self.found.clear();
        if self.run.stopping() {
            return;
        }
        if members.len() > self.listed.scanned_run {
            self.runs.push(origin, members);
            return;
        }
        let most = members.len().saturating_mul(self.listed.pairs_per_member);
        for (x, &a) in members.iter().enumerate() {
            for &b in &members[x + 1..] {
                if let Some(measured) = measure(a, b) {
                    self.found.push((a, b, measured));
                    if self.found.len() > most {
                        self.runs.push(origin, members);
                        return;
                    }
                }
            }
        }
        for (a, b, measured) in std::mem::take(&mut self.found) {
            self.pair(a, b, measured);
        }
    }
}

impl Graph {
    /// The graph of a run's documents, with the candidate runs that `listed` does not list kept whole.
    pub fn build(run: &Dedup, listed: Listed) -> Result<Graph, Error> {
        // A stop asked of an earlier run does not stop this one.
        run.stop.store(false, std::sync::atomic::Ordering::Relaxed);
        run.report(Progress::default());
        run.check_stop()?;
        let docs = &run.docs;
        let stored = &run.stored.nodes;
        let documents = docs.len();
        let nodes = documents + stored.len();
        if nodes >= u32::MAX as usize {
            return Err(Error::Unsupported {
                what: "at most 2^32 - 2 documents in one run".to_owned(),
            });
        }
        check_unique_ids(docs.iter().map(|d| d.id.as_str()))?;
        // Each of this stage's sorts may take seconds at 10^7 documents and cannot stop part of the way: the
        // observer is asked between them, so that Ctrl-C waits for one sort, not for the stage.
        let checkpoint = || {
            run.report(Progress::default());
            run.check_stop()
        };
        checkpoint()?;
        let id = |n: u32| -> &str {
            let n = n as usize;
            if n < documents {
                &docs[n].id
            } else {
                &stored[n - documents].0
            }
        };
        // Rank: stored entries first (already kept), then the policy; ids break ties. The sorts of a run are
        // of total orders (ids are unique, and ranks are), so an unstable sort on all cores gives the one
        // order there is.
        let mut by_rank: Vec<u32> = (0..nodes as u32).collect();
        let policy = run.options.representative;
        sort_on_all_cores(&mut by_rank, |&a, &b| {
            let stored_first = (a as usize >= documents)
                .cmp(&(b as usize >= documents))
                .reverse();
            let by_policy = || match policy {
                Representative::SmallestId => Ordering::Equal,
                Representative::FirstSeen => a.cmp(&b),
                Representative::Longest => {
                    let len = |n: u32| docs.get(n as usize).map_or(0, |d| d.length);
                    len(b).cmp(&len(a))
                }
            };
            stored_first
                .then_with(by_policy)
                .then_with(|| id(a).cmp(id(b)))
        });
        let mut rank = vec![0u32; nodes];
        for (r, &n) in by_rank.iter().enumerate() {
            rank[n as usize] = r as u32;
        }
        checkpoint()?;

        // Groups of documents with identical sketches (and identical profiles, when those judge pairs).
        let by_profile = run.options.verification == Verification::Exact;
        let mut order: Vec<u32> = (0..documents as u32).collect();
        sort_on_all_cores(&mut order, |&a, &b| {
            let (da, db) = (&docs[a as usize], &docs[b as usize]);
            compare_sketches(&da.sketch, &db.sketch)
                .then_with(|| {
                    if by_profile {
                        compare_profiles(da.profile.as_ref(), db.profile.as_ref())
                    } else {
                        Ordering::Equal
                    }
                })
                .then(rank[a as usize].cmp(&rank[b as usize]))
        });
        checkpoint()?;
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for (w, &n) in order.iter().enumerate() {
            let same = w > 0 && {
                let (prev, cur) = (&docs[order[w - 1] as usize], &docs[n as usize]);
                compare_sketches(&prev.sketch, &cur.sketch).is_eq()
                    && (!by_profile
                        || compare_profiles(prev.profile.as_ref(), cur.profile.as_ref()).is_eq())
            };
            if same {
                groups.last_mut().expect("a group").push(n);
            } else {
                groups.push(vec![n]);
            }
        }
        // Groups in the order of their leaders (their best-ranked member).
        sort_on_all_cores(&mut groups, |g, h| {
            rank[g[0] as usize].cmp(&rank[h[0] as usize])
        });
        let document_groups = groups.len();
        groups.extend((documents..nodes).map(|n| vec![n as u32]));
        let mut group_of = vec![0u32; nodes];
        for (g, members) in groups.iter().enumerate() {
            for &n in members {
                group_of[n as usize] = g as u32;
            }
        }

        // Verified edges between groups of documents, then between documents and stored entries.
        let leader = |g: usize| &docs[groups[g][0] as usize];
        let progress = Progress {
            stage: Stage::Candidates,
            distinct: document_groups as u64,
            ..Progress::default()
        };
        run.report(progress);
        run.check_stop()?;
        // Both passes hand their candidates to one listing, small runs pair by pair, large runs whole.
        let listing = std::cell::RefCell::new(Listing {
            run,
            groups: &groups,
            edges: Vec::new(),
            runs: Runs::new(),
            progress,
            found: Vec::new(),
            asked: 0,
            listed,
        });
        match run.bands {
            None => {
                let fps: Vec<u64> = (0..document_groups)
                    .map(|g| leader(g).sketch.fingerprint().map_or(0, |f| f.bits()))
                    .collect();
                let design = recommend(run.options.k, fps.len().max(1) as f64);
                // Every pair within k is listed: SimHash's runs (fingerprints sharing a table's key) crowd
                // with documents that are near without being copies (short texts: a third of a million
                // representatives in runs of thousands, 36 pairs a document), where judging a run piecemeal for
                // each representative cost ten times listing it.
                all_pairs_while(
                    &fps,
                    &design,
                    || listing.borrow_mut().go_on(),
                    |a, b, d| listing.borrow_mut().pair(a, b, Score::Distance(d)),
                );
            }
            Some((banding, _)) => {
                let k = banding.values as usize;
                let mut signatures = Vec::with_capacity(document_groups * k);
                for g in 0..document_groups {
                    match leader(g).sketch.signature() {
                        Some(s) if s.values().len() == k => {
                            signatures.extend_from_slice(s.values())
                        }
                        _ => {
                            return Err(Error::Unsupported {
                                what: format!(
                                    "document '{}' has no signature of {k} values",
                                    leader(g).id
                                ),
                            });
                        }
                    }
                }
                let sig = |g: u32| &signatures[g as usize * k..(g as usize + 1) * k];
                lsh_pairs_or_runs(
                    &signatures,
                    &banding,
                    listed.run,
                    |a, b, estimate| listing.borrow_mut().pair(a, b, Score::Similarity(estimate)),
                    |band, members| {
                        listing.borrow_mut().large(band, members, |a, b| {
                            measure_in_band(&banding, band, sig(a), sig(b))
                        })
                    },
                );
            }
        }
        let Listing {
            mut edges,
            mut runs,
            progress,
            ..
        } = listing.into_inner();
        run.check_stop()?;
        runs.index(document_groups);
        let measure = run.measure();
        for &(doc, entry, score) in &run.stored.edges {
            let (a, b) = (group_of[doc as usize], group_of[documents + entry as usize]);
            edges.push(Edge::new(a.min(b), a.max(b), score, measure));
        }
        // Sorted in place (a stable sort would take half the edges' memory again): a pair repeated by stored
        // entries keeps one score whatever the input order, the lowest (scores are not negative, so their
        // bits order them).
        sort_on_all_cores(&mut edges, |e, f| {
            (e.a, e.b, e.value.to_bits()).cmp(&(f.a, f.b, f.value.to_bits()))
        });
        edges.dedup_by(|x, y| (x.a, x.b) == (y.a, y.b));
        edges.shrink_to_fit();
        let adjacency = Adjacency::of(&edges, groups.len());
        Ok(Graph {
            documents,
            rank,
            by_rank,
            group_of,
            groups,
            edges,
            adjacency,
            runs,
            document_groups,
            progress: Cell::new(progress),
        })
    }

    /// Group `g`'s neighbours along the listed edges, with the verified scores, in increasing order.
    pub fn neighbours<'g>(
        &'g self,
        run: &Dedup,
        g: u32,
    ) -> impl Iterator<Item = (u32, Score)> + 'g {
        let (g, measure) = (g as usize, run.measure());
        let Adjacency {
            upper,
            lower_start,
            lower,
        } = &self.adjacency;
        let below = lower[lower_start[g]..lower_start[g + 1]]
            .iter()
            .map(move |&e| {
                let edge = &self.edges[e as usize];
                (edge.a, edge.score(measure))
            });
        let above = self.edges[upper[g]..upper[g + 1]]
            .iter()
            .map(move |edge| (edge.b, edge.score(measure)));
        below.chain(above)
    }

    /// Judges groups `a` and `b` of run `r` if they are a candidate pair that belongs to the run, as the
    /// candidate stage judges a listed pair: the pair and its score, or `None`.
    pub fn judge_in_run(&self, run: &Dedup, r: usize, a: u32, b: u32) -> Option<Score> {
        self.judge_in_run_above(run, r, a, b, None)
    }

    /// [`judge_in_run`](Self::judge_in_run), returning only a pair at least as close as `bar` (see
    /// [`Dedup::judge_above`]); a pair below it counts as no pair in the progress and the summary.
    pub fn judge_in_run_above(
        &self,
        run: &Dedup,
        r: usize,
        a: u32,
        b: u32,
        bar: Option<Score>,
    ) -> Option<Score> {
        if run.stopping() {
            return None;
        }
        let (a, b) = (a.min(b), a.max(b));
        let signature = |g: u32| {
            run.docs[self.groups[g as usize][0] as usize]
                .sketch
                .signature()
        };
        let ((banding, _), Some(x), Some(y)) = (run.bands?, signature(a), signature(b)) else {
            return None;
        };
        let measured = measure_in_band(&banding, self.runs.band[r], x.values(), y.values())?;
        let mut progress = self.progress.get();
        let bar = bar.map(Score::value);
        let score = judge_counted(run, &self.groups, (a, b), measured, bar, &mut progress);
        self.progress.set(progress);
        score
    }

    /// Tells the observer where the run is, every [`PROGRESS_EVERY`]th `step` of a clustering pass (whose
    /// judgements are counted as candidates, but whose other work would not report): whether to go on.
    pub fn check_in(&self, run: &Dedup, step: usize) -> bool {
        if (step + 1).is_multiple_of(PROGRESS_EVERY as usize) {
            run.report(self.progress.get());
        }
        !run.stopping()
    }

    /// Tells the observer that the run is writing, with the final counts.
    pub fn report_writing(&self, run: &Dedup) {
        run.report(Progress {
            stage: Stage::Writing,
            ..self.progress.get()
        });
    }

    /// The id of a node.
    pub fn id<'a>(&self, run: &'a Dedup, node: u32) -> &'a str {
        let n = node as usize;
        if n < self.documents {
            &run.docs[n].id
        } else {
            &run.stored.nodes[n - self.documents].0
        }
    }

    fn sketch<'a>(&self, run: &'a Dedup, node: u32) -> &'a Sketch {
        let n = node as usize;
        if n < self.documents {
            &run.docs[n].sketch
        } else {
            &run.stored.nodes[n - self.documents].1
        }
    }

    /// The score of two nodes measured directly (for connected components, whose members need not share an
    /// edge with their representative).
    pub fn score(&self, run: &Dedup, a: u32, b: u32) -> Score {
        if self.group_of[a as usize] == self.group_of[b as usize] {
            return Score::identical(run.measure());
        }
        let profile = |n: u32| {
            run.docs
                .get(n as usize)
                .and_then(|d| d.profile.as_ref())
                .filter(|_| run.options.verification == Verification::Exact)
        };
        match (self.sketch(run, a), self.sketch(run, b)) {
            (Sketch::Fingerprint(x), Sketch::Fingerprint(y)) => {
                Score::Distance(neardup_index::hamming(x.bits(), y.bits()))
            }
            (Sketch::Signature(x), Sketch::Signature(y)) => match (profile(a), profile(b)) {
                (Some(pa), Some(pb)) => Score::Similarity(pa.similarity(pb, run.measure())),
                _ => Score::Similarity(similarity(x.values(), y.values())),
            },
            _ => Score::Similarity(0.0),
        }
    }

    /// Writes every pair: within groups of identical documents, then across each edge. Returns the count.
    pub fn write_pairs(&self, run: &Dedup, sink: &mut dyn Sink) -> Result<usize, Error> {
        let mut count = 0;
        let mut emit = |a: u32, b: u32, score: Score| -> Result<(), Error> {
            let (x, y) = (self.id(run, a), self.id(run, b));
            let (x, y) = if x <= y { (x, y) } else { (y, x) };
            count += 1;
            sink.pair(x, y, score).map_err(output)
        };
        let identical = Score::identical(run.measure());
        for members in &self.groups[..self.document_groups] {
            for (i, &a) in members.iter().enumerate() {
                for &b in &members[i + 1..] {
                    emit(a, b, identical)?;
                }
            }
        }
        for edge in &self.edges {
            let score = edge.score(run.measure());
            for &a in &self.groups[edge.a as usize] {
                for &b in &self.groups[edge.b as usize] {
                    emit(a, b, score)?;
                }
            }
        }
        Ok(count)
    }

    /// The counts every summary has.
    pub fn summary(&self, run: &Dedup) -> Summary {
        Summary {
            documents: self.documents,
            stored: run.stored.nodes.len(),
            distinct: self.document_groups,
            // Pairs judged among documents, and the edges with stored entries.
            edges: self.progress.get().pairs as usize
                + (self.edges.iter())
                    .filter(|e| e.b as usize >= self.document_groups)
                    .count(),
            ..Summary::default()
        }
    }
}

pub(super) fn output(e: std::io::Error) -> Error {
    Error::Output {
        reason: e.to_string(),
    }
}

/// Sorts in place, on all cores, by an order in which no two items are equal (so the result is that order's,
/// whatever the thread count). In place: a run's edges can be tens of millions. On one thread, the standard
/// library's sort, which is faster there than rayon's.
fn sort_on_all_cores<T: Send>(items: &mut [T], order: impl Fn(&T, &T) -> Ordering + Sync + Send) {
    use rayon::slice::ParallelSliceMut;
    crate::parallel::install(|| {
        if rayon::current_num_threads() > 1 {
            items.par_sort_unstable_by(order);
        } else {
            items.sort_unstable_by(order);
        }
    });
}

/// Refuses a run in which two documents share an id: their pairs and clusters could not be told apart.
fn check_unique_ids<'a>(ids: impl Iterator<Item = &'a str>) -> Result<(), Error> {
    let mut sorted: Vec<&str> = ids.collect();
    sort_on_all_cores(&mut sorted, |a, b| a.cmp(b));
    match sorted.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(Error::DuplicateId {
            id: w[0].to_owned(),
        }),
        None => Ok(()),
    }
}

fn compare_sketches(a: &Sketch, b: &Sketch) -> Ordering {
    match (a, b) {
        (Sketch::Fingerprint(x), Sketch::Fingerprint(y)) => x.bits().cmp(&y.bits()),
        (Sketch::Signature(x), Sketch::Signature(y)) => x.values().cmp(y.values()),
        _ => Ordering::Equal,
    }
}

fn compare_profiles(a: Option<&Profile>, b: Option<&Profile>) -> Ordering {
    match (a, b) {
        (Some(Profile::Set(x)), Some(Profile::Set(y))) => x.cmp(y),
        (Some(Profile::Counts(x)), Some(Profile::Counts(y))) => {
            let key = |p: &(u64, f64)| (p.0, p.1.to_bits());
            x.iter().map(key).cmp(y.iter().map(key))
        }
        (Some(Profile::Set(_)), Some(Profile::Counts(_))) => Ordering::Less,
        (Some(Profile::Counts(_)), Some(Profile::Set(_))) => Ordering::Greater,
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}
