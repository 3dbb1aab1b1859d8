//! Deduplication across machines: the stages a distributed runner (Spark, Ray, Dask, …) runs over rows, each a
//! pure function of its input, whose composition gives exactly the clusters of [`Dedup`] on one machine.
//!
//! ```text
//! 1 sign      map       document → sketch, exact profile (when verifying exactly), length      Stages::sign
//! 2 group     by key    identical (sketch, profile) → one node, named by its digest          Stages::node_key
//! 3 buckets   map       node → bucket keys: LSH band keys, or the Hamming tables' key prefixes  Stages::buckets
//! 4 pairs     by key    nodes sharing a bucket → candidate pairs (distinct) → judged            pairs_in_buckets (SimHash:
//!                       pairs_within_in_buckets), Stages::judge
//!                       (stage 2's nodes with copies can come out of the same shuffle: copy_bucket)
//!                       a bucket of many nodes kept whole → the judged pairs that connect it    Stages::candidates,
//!                                                                                               Stages::join_run
//! 5 components          connected components of the judged pairs (the runner's, to convergence)
//! 6 clusters  by key    each component (with its identical copies) → Dedup on its documents    Stages::clusters
//! 7 number    sort      clusters numbered in the order of their representatives
//! ```
//!
//! **Why it is exact.** Candidates are a property of two sketches (they share a band key, or lie within k bits,
//! which one of the design's tables always sees), and so is the judgement ([`Dedup`] judges with the same
//! function), so the pairs among a component's documents are the pairs one machine finds among them. Centre
//! clustering takes documents in rank order and a document's choice depends only on its neighbours, which lie
//! in its component; connected components are unions of components. A bucket kept whole adds only some of
//! its judged pairs, but they connect exactly what all of them connect, so the components are the same. So
//! [`Dedup`] run on each component alone
//! gives each document the representative, `duplicate_of` and score it gets on one machine, whatever the
//! number of machines, partitions or the input order; only the cluster numbers are global (step 7: the rank
//! order of the representatives, which [`Representative`] defines: smallest id, or longest then smallest id).
//!
//! Band keys are the 64-bit keys one machine groups bands by ([`neardup_index::lsh::band_key`]), so even a
//! collision of two bands' keys makes the same candidate everywhere. [`Representative::FirstSeen`] has no
//! meaning across machines and is refused.
//!
//! ```
//! use neardup::dedup::distributed::Stages;
//! use neardup::dedup::{Options, VecSink};
//! use neardup::Method;
//!
//! let method = neardup::schemes::lookup("minhash")?.method(&Default::default())?;
//! let stages = Stages::new(method, Options::default(), 3)?;
//! let texts = [("a", "one two three four five six seven eight nine ten"),
//!              ("b", "one two three four five six seven eight nine ten"),
//!              ("c", "a wholly unrelated line of words about something else")];
//! let signed: Vec<_> = texts.iter().map(|(id, t)| (id.to_string(), stages.sign(t).unwrap())).collect();
//! // a and b share every band: one candidate pair, judged a pair.
//! let (a, b) = (&signed[0].1, &signed[1].1);
//! assert_eq!(stages.buckets(&a.sketch)?, stages.buckets(&b.sketch)?);
//! assert!(stages.judge(&a.sketch, a.profile.as_ref(), &b.sketch, b.profile.as_ref())?.is_some());
//! // Their component, clustered as one machine would.
//! let mut sink = VecSink::default();
//! stages.clusters(signed.into_iter().take(2).map(|(id, s)| s.document(id)), &mut sink)?;
//! assert_eq!(sink.clusters, vec![vec![("a".to_string(), None), ("b".to_string(), Some("a".to_string()))]]);
//! # Ok::<(), neardup::Error>(())
//! ```

use super::graph::Listed;
use super::{Dedup, Document, Options, Representative, Score, SimHashCheck, Sink, Summary};
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::profile::Profile;
use crate::sketch::{Method, Sketch};
use neardup_index::hamming::pairs_within;
use neardup_index::hamming::plan::{TableLayout, recommend};
use neardup_index::lsh::{band_key, similarity};
use neardup_index::union_find::UnionFind;
use neardup_sketch::shingle::mix64;
use neardup_sketch::signature::MinHashSignature;

/// A bucket key: the band or table number (big-endian `u16`), then the band's key or the table's key prefix
/// (big-endian `u64`). Nodes sharing one are candidates.
pub type Bucket = [u8; 10];

/// A node's name: the first 16 bytes of the SHA-256 of its sketch and profile ([`Stages::node_key`]).
pub type NodeKey = [u8; 16];

/// A signed document: what stage 1 gives and stage 6 takes.
#[derive(Clone, Debug)]
pub struct Signed {
    /// Its sketch.
    pub sketch: Sketch,
    /// Its exact profile, when the run verifies exactly ([`Stages::keeps_profiles`]).
    pub profile: Option<Profile>,
    /// Its length in tokens (shingles for MinHash with profiles), for [`Representative::Longest`].
    pub length: u64,
}

impl Signed {
    /// The document with this id, for [`Stages::clusters`].
    pub fn document(self, id: impl Into<String>) -> Document {
        Document {
            id: id.into(),
            sketch: self.sketch,
            profile: self.profile,
            length: self.length,
        }
    }
}

/// The band number of copy buckets ([`copy_bucket`]): no band or table has it.
const COPY_BAND: u16 = u16::MAX;

/// A node's copy bucket: stage 2 folded into stage 4's shuffle. A runner adds one `(copy_bucket(node), node)`
/// row per document to the bucket rows; every document of a node has the same copy bucket, so the task that
/// gathers it sees all the node's documents, and [`pairs_in_buckets`] gives `(node, node)` when there are two
/// or more (identical copies). Nodes that merely share a copy bucket (their first 8 bytes) are no candidates.
pub fn copy_bucket(node: &NodeKey) -> Bucket {
    let mut out = [0u8; 10];
    out[..2].copy_from_slice(&COPY_BAND.to_be_bytes());
    out[2..].copy_from_slice(&node[..8]);
    out
}

/// The part of `parts` a bucket's rows go to, for a runner that packs rows by part before its shuffle: any
/// function of the bucket alone would do (a bucket's rows must meet in one task); this one spreads them
/// evenly even where the keys are not (SimHash's table prefixes of skewed fingerprints).
pub fn bucket_part(bucket: &Bucket, parts: u32) -> u32 {
    let band = u64::from(u16::from_be_bytes([bucket[0], bucket[1]]));
    let key = u64::from_be_bytes(bucket[2..].try_into().expect("8 bytes"));
    let mixed = mix64(key ^ band.rotate_left(48) ^ 0x9e37_79b9_7f4a_7c15);
    ((u128::from(mixed) * u128::from(parts.max(1))) >> 64) as u32
}

/// Stage 4's grouping with large buckets kept whole ([`Stages::candidates`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidates {
    /// The distinct pairs `(a, b)`, `a < b`, of the buckets with few nodes or few candidates, as
    /// [`pairs_in_buckets`] gives them, and `(n, n)` for each node with copies; sorted.
    pub pairs: Vec<(NodeKey, NodeKey)>,
    /// The other buckets, whole: `(bucket, node)` for each of their distinct nodes, sorted. A bucket of n
    /// near-copies holds n(n−1)/2 candidate pairs; [`Stages::join_run`] judges about n of them into the
    /// edges its components need.
    pub runs: Vec<(Bucket, NodeKey)>,
}

/// Stage 4's grouping, for a runner that gathers every row of a bucket in one task: the distinct pairs
/// `(a, b)` with `a < b` of different nodes that share a bucket, among `(bucket, node)` rows (in any order,
/// repeats allowed), and `(n, n)` for each node `n` with two or more rows in its [`copy_bucket`]; sorted. A
/// bucket of n distinct nodes gives its n(n−1)/2 pairs, as on one machine.
pub fn pairs_in_buckets(
    rows: impl IntoIterator<Item = (Bucket, NodeKey)>,
) -> Vec<(NodeKey, NodeKey)> {
    pairs_of(
        rows.into_iter().map(|(bucket, node)| (bucket, node, 0)),
        None,
        usize::MAX,
        false,
    )
    .pairs
}

/// [`pairs_in_buckets`] for SimHash, as Manku's batch method pairs a table's groups: each row carries its
/// node's fingerprint, and only the pairs within `k` bits are given ([`Stages::judge`] drops the others
/// anyway). Fingerprints of similar short documents crowd into a few table prefixes, and a bucket of
/// thousands of nodes gives millions of pairs, nearly all far apart: kept, they filled a worker's memory.
pub fn pairs_within_in_buckets(
    rows: impl IntoIterator<Item = (Bucket, NodeKey, u64)>,
    k: u32,
) -> Vec<(NodeKey, NodeKey)> {
    pairs_of(rows, Some(k), usize::MAX, false).pairs
}

/// Stage 4's grouping: the pairs of each bucket (SimHash: `within` k), and the MinHash buckets of more than
/// `listed_bucket` nodes whole; `spanning`, for SimHash pairs that need no judging, only the pairs that join
/// a bucket's nodes into its connected sets (a spanning forest: at most one pair per node, where a crowded
/// bucket holds millions), which is all the components need.
fn pairs_of(
    rows: impl IntoIterator<Item = (Bucket, NodeKey, u64)>,
    within: Option<u32>,
    listed_bucket: usize,
    spanning: bool,
) -> Candidates {
    // As big-endian integers the keys sort in their byte order, and compare in an instruction or two
    // instead of a call to memcmp.
    let widen = |bucket: Bucket| {
        let mut wide = [0u8; 16];
        wide[6..].copy_from_slice(&bucket);
        u128::from_be_bytes(wide)
    };
    let is_copy_bucket = |wide: u128| (wide >> 64) as u16 == COPY_BAND;
    let mut rows: Vec<(u128, u128, u64)> = rows
        .into_iter()
        .map(|(bucket, node, bits)| (widen(bucket), u128::from_be_bytes(node), bits))
        .collect();
    rows.sort_unstable();
    let mut pairs: Vec<(u128, u128)> = rows
        .chunk_by(|x, y| x == y)
        .filter(|same| same.len() > 1 && is_copy_bucket(same[0].0))
        .map(|same| (same[0].1, same[0].1))
        .collect();
    rows.dedup();
    let mut runs = Vec::new();
    let mut fingerprints = Vec::new();
    for bucket in rows.chunk_by(|x, y| x.0 == y.0) {
        if is_copy_bucket(bucket[0].0) {
            continue;
        }
        // A large MinHash bucket is kept whole (every pair in it is a candidate: more than its nodes); SimHash
        // lists its buckets' pairs within k, as one machine does (they gather fingerprints near without
        // being copies).
        if within.is_none() && bucket.len() > listed_bucket {
            let key = bucket[0].0.to_be_bytes()[6..].try_into().expect("10 bytes");
            runs.extend(bucket.iter().map(|row| (key, row.1.to_be_bytes())));
            continue;
        }
        // The bucket's distinct nodes, in order: each with every later one (SimHash: within k, the
        // fingerprints compared side by side in vector registers).
        match within {
            Some(k) => {
                fingerprints.clear();
                fingerprints.extend(bucket.iter().map(|row| row.2));
                // Spanning: only a pair that joins two of the bucket's sets found so far.
                let mut joined = spanning.then(|| UnionFind::new(bucket.len()));
                pairs_within(&fingerprints, k, |a, b, _| {
                    let joins = joined.as_mut().is_none_or(|sets| {
                        let apart = sets.find(a as u32) != sets.find(b as u32);
                        if apart {
                            sets.union(a as u32, b as u32);
                        }
                        apart
                    });
                    if joins {
                        pairs.push((bucket[a].1, bucket[b].1));
                    }
                });
            }
            None => {
                for (i, a) in bucket.iter().enumerate() {
                    pairs.extend(bucket[i + 1..].iter().map(|b| (a.1, b.1)));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    Candidates {
        pairs: pairs
            .into_iter()
            .map(|(a, b)| (a.to_be_bytes(), b.to_be_bytes()))
            .collect(),
        runs,
    }
}

/// The stages of one distributed run: its method and options, checked once, and what the stages share (the
/// LSH bands, the Hamming tables).
pub struct Stages {
    run: Dedup,
    tables: Vec<TableLayout>,
}

impl Stages {
    /// The stages for `method` and `options`; `distinct` (the number of distinct sketches, or an estimate)
    /// chooses the Hamming tables, which changes the work and never the result. Refuses what [`Dedup::new`]
    /// refuses, and [`Representative::FirstSeen`].
    pub fn new(method: Method, options: Options, distinct: u64) -> Result<Stages, Error> {
        if options.representative == Representative::FirstSeen {
            return Err(Error::Unsupported {
                what:
                    "keeping the first seen: input order has no meaning across machines (keep the \
                       smallest id, or the longest)"
                        .to_owned(),
            });
        }
        let tables = match method {
            Method::SimHash(_) => recommend(options.k, distinct.max(1) as f64).layouts(),
            _ => Vec::new(),
        };
        let mut run = Dedup::new(method, options)?;
        // The bands are chosen once: each component's run (stage 6) takes them instead of choosing again,
        // which costs an optimization over every banding per component.
        if let Some((banding, threshold)) = run.bands() {
            run.options.banding = Some(banding);
            run.options.threshold = Some(threshold);
        }
        let stages = Stages { run, tables };
        // A bucket names its band or table in 16 bits, and the last number is the copy buckets'.
        if stages.buckets_per_node() >= usize::from(COPY_BAND) {
            return Err(Error::Unsupported {
                what: format!(
                    "{} bands or tables: the distributed stages number them in 16 bits (at most {})",
                    stages.buckets_per_node(),
                    COPY_BAND - 1
                ),
            });
        }
        Ok(stages)
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.run.method()
    }

    /// The options.
    pub fn options(&self) -> &Options {
        self.run.options()
    }

    /// MinHash: the bands and threshold in use (the same as one machine's for these options).
    pub fn bands(&self) -> Option<(neardup_index::lsh::Banding, f64)> {
        self.run.bands()
    }

    /// SimHash: the k within which [`Stages::pairs`] keeps a bucket's pairs (its rows carry
    /// [`Stages::pairing_bits`]); `None` for MinHash, whose buckets give every pair.
    pub fn pairs_within(&self) -> Option<u32> {
        matches!(self.run.method(), Method::SimHash(_)).then(|| self.run.options().k)
    }

    /// Whether every candidate [`Stages::pairs`] gives is a pair, so that [`Stages::judge`] would keep them
    /// all: SimHash without a check (its buckets' pairs are those within k already).
    pub fn candidates_are_pairs(&self) -> bool {
        self.pairs_within().is_some() && self.run.simhash_verification().is_none()
    }

    /// What a node's bucket rows carry for [`Stages::pairs`]: its fingerprint's bits in a SimHash run;
    /// `None` otherwise.
    pub fn pairing_bits(&self, sketch: &Sketch) -> Option<u64> {
        match sketch {
            Sketch::Fingerprint(fp) if self.pairs_within().is_some() => Some(fp.bits()),
            _ => None,
        }
    }

    /// Stage 4's grouping for this run, over `(bucket, node, pairing bits)` rows (0 where the run carries
    /// none): [`pairs_in_buckets`], or for SimHash [`pairs_within_in_buckets`] at the run's k.
    pub fn pairs(
        &self,
        rows: impl IntoIterator<Item = (Bucket, NodeKey, u64)>,
    ) -> Vec<(NodeKey, NodeKey)> {
        pairs_of(rows, self.pairs_within(), usize::MAX, false).pairs
    }

    /// [`Stages::pairs`] with large MinHash buckets kept whole ([`Candidates::runs`], for
    /// [`Stages::join_run`]), as one machine keeps its candidate runs: every bucket of more than 8 nodes (all
    /// of its pairs are candidates). SimHash lists the pairs within k, as one machine does; when
    /// [`Stages::candidates_are_pairs`], only those that join each bucket's nodes into its connected sets (a
    /// spanning forest: at most one pair per node of a bucket, where short texts crowd millions of pairs into
    /// a few buckets). Which buckets are kept whole, and which pairs a forest keeps, change the work, never
    /// the components.
    pub fn candidates(&self, rows: impl IntoIterator<Item = (Bucket, NodeKey, u64)>) -> Candidates {
        self.candidates_listing(rows, Listed::CLUSTERING.run)
    }

    /// [`Stages::candidates`] with the MinHash buckets of more than `listed_bucket` nodes kept whole.
    fn candidates_listing(
        &self,
        rows: impl IntoIterator<Item = (Bucket, NodeKey, u64)>,
        listed_bucket: usize,
    ) -> Candidates {
        pairs_of(
            rows,
            self.pairs_within(),
            listed_bucket,
            self.candidates_are_pairs(),
        )
    }

    /// Stage 4 for a bucket kept whole: the judged pairs among its nodes (each a node key, its sketch and
    /// profile) that connect what all of its judged pairs connect, as `(a, b, score)` with `a < b`. Each node
    /// meets the earlier ones part by part (a part: nodes these edges already connect) and is judged against
    /// a part's nodes only until one is its pair, so a bucket of n near-copies costs about n judgements, not
    /// n(n−1)/2. The components of these edges with the other pairs are those of every pair.
    pub fn join_run(
        &self,
        members: &[(NodeKey, Sketch, Option<Profile>)],
    ) -> Result<Vec<(NodeKey, NodeKey, Score)>, Error> {
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_unstable_by_key(|&i| members[i].0);
        let mut edges = Vec::new();
        super::cluster::join_in_parts(&order, |part, b| {
            let (kb, sb, pb) = &members[b];
            for &a in part {
                let (ka, sa, pa) = &members[a];
                if let Some(score) = self.judge(sa, pa.as_ref(), sb, pb.as_ref())? {
                    edges.push((*ka.min(kb), *ka.max(kb), score));
                    return Ok(true);
                }
            }
            Ok::<_, Error>(false)
        })?;
        Ok(edges)
    }

    /// How many bucket keys each node has (bands, or Hamming tables).
    pub fn buckets_per_node(&self) -> usize {
        match self.run.bands() {
            Some((banding, _)) => banding.bands as usize,
            None => self.tables.len(),
        }
    }

    /// Whether documents carry exact profiles: then a profile is part of a node's identity (stage 2) and
    /// travels with candidates to be judged (stage 4).
    pub fn keeps_profiles(&self) -> bool {
        match self.method() {
            Method::SimHash(_) => self.run.simhash_verification().is_some(),
            _ => self.options().verification == super::Verification::Exact,
        }
    }

    fn simhash_check(&self) -> Option<SimHashCheck> {
        self.run.simhash_verification().map(|(check, _)| check)
    }

    /// Stage 1: a text's sketch, profile and length, as one machine makes them for this run.
    pub fn sign(&self, text: &str) -> Result<Signed, Error> {
        let (sketch, length, profile) = self.method().analyze_text_checked(
            text,
            self.keeps_profiles(),
            self.simhash_check(),
        )?;
        Ok(Signed {
            sketch,
            profile,
            length,
        })
    }

    /// Stage 2: the name of a signed document's node. Documents with identical sketches and profiles (one
    /// machine's identical copies) share it, and documents that differ in either do not, except by a collision
    /// of 128 bits of SHA-256 (about 2^-128 for a pair; finding one on purpose takes about 2^64 hashes). A
    /// runner groups and shuffles these 16 bytes instead of the sketches and profiles themselves (hundreds of
    /// bytes a document), which then travel only with the few documents that are candidates.
    pub fn node_key(signed: &Signed) -> NodeKey {
        let profile = signed.profile.as_ref().map(Profile::to_bytes);
        Self::node_key_of(&Self::sketch_bytes(&signed.sketch), profile.as_deref())
    }

    /// [`Stages::node_key`] from the bytes a runner moves already: the sketch's ([`Stages::sketch_bytes`]) and
    /// the profile's ([`Profile::to_bytes`]), if any.
    pub fn node_key_of(sketch: &[u8], profile: Option<&[u8]>) -> NodeKey {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update((sketch.len() as u64).to_le_bytes());
        hasher.update(sketch);
        match profile {
            Some(profile) => {
                hasher.update([1]);
                hasher.update(profile);
            }
            None => hasher.update([0]),
        }
        let digest = hasher.finalize();
        digest[..16].try_into().expect("32 bytes")
    }

    /// Stage 3: a node's bucket keys, [`Stages::buckets_per_node`] of them.
    pub fn buckets(&self, sketch: &Sketch) -> Result<Vec<Bucket>, Error> {
        let key = |n: usize, value: u64| {
            let mut out = [0u8; 10];
            out[..2].copy_from_slice(&(n as u16).to_be_bytes());
            out[2..].copy_from_slice(&value.to_be_bytes());
            out
        };
        match (self.run.bands(), sketch) {
            (Some((banding, _)), Sketch::Signature(sig))
                if sig.values().len() == banding.values as usize =>
            {
                Ok((0..banding.bands)
                    .map(|b| key(b as usize, band_key(&sig.values()[banding.band_range(b)])))
                    .collect())
            }
            (None, Sketch::Fingerprint(fp)) => Ok(self
                .tables
                .iter()
                .enumerate()
                .map(|(t, layout)| key(t, layout.permute(fp.bits()) >> (64 - layout.key_bits)))
                .collect()),
            _ => Err(self.foreign(sketch)),
        }
    }

    /// Stage 4: whether two candidates are a pair, and its score, as one machine judges them (SimHash: within
    /// k bits, and the check when there is one; MinHash: the verification).
    pub fn judge(
        &self,
        a: &Sketch,
        a_profile: Option<&Profile>,
        b: &Sketch,
        b_profile: Option<&Profile>,
    ) -> Result<Option<Score>, Error> {
        let measured = match (a, b) {
            (Sketch::Fingerprint(x), Sketch::Fingerprint(y)) if self.fits(a) => {
                let d = neardup_index::hamming(x.bits(), y.bits());
                if d > self.options().k {
                    return Ok(None);
                }
                Score::Distance(d)
            }
            (Sketch::Signature(x), Sketch::Signature(y)) if self.fits(a) && self.fits(b) => {
                Score::Similarity(similarity(x.values(), y.values()))
            }
            _ => return Err(self.foreign(if self.fits(a) { b } else { a })),
        };
        Ok(self.run.judge(measured, a_profile, b_profile))
    }

    /// Stage 6: the clusters of one component's documents (every document of every node in it), as one
    /// machine makes them; the cluster numbers are local (1, 2, …), step 7 renumbers them.
    pub fn clusters(
        &self,
        documents: impl IntoIterator<Item = Document>,
        sink: &mut dyn Sink,
    ) -> Result<Summary, Error> {
        let mut dedup = Dedup::new(self.method(), self.options().clone())?;
        for doc in documents {
            dedup.push(doc)?;
        }
        dedup.clusters(sink)
    }

    /// A sketch's bytes, as they travel between stages: a fingerprint's 8 bytes (big-endian), or a
    /// signature's values (little-endian `u32`s).
    pub fn sketch_bytes(sketch: &Sketch) -> Vec<u8> {
        match sketch {
            Sketch::Fingerprint(fp) => fp.to_bytes().to_vec(),
            Sketch::Signature(sig) => sig.to_le_bytes(),
            Sketch::BottomK(_) => Vec::new(),
        }
    }

    /// The sketch of this run's method from [`Stages::sketch_bytes`].
    pub fn sketch_from_bytes(&self, bytes: &[u8]) -> Result<Sketch, Error> {
        let bad = |what: String| Error::Unsupported { what };
        match self.method() {
            Method::SimHash(scheme) => {
                let bits: [u8; 8] = bytes.try_into().map_err(|_| {
                    bad(format!(
                        "a fingerprint is 8 bytes, not {} (not made by this run's stages)",
                        bytes.len()
                    ))
                })?;
                Ok(Sketch::Fingerprint(Fingerprint::new(
                    scheme,
                    u64::from_be_bytes(bits),
                )))
            }
            Method::MinHash(scheme) => {
                let k = scheme.values() as usize;
                if bytes.len() != k * 4 {
                    return Err(bad(format!(
                        "a signature of {k} values is {} bytes, not {} (not made by this run's stages)",
                        k * 4,
                        bytes.len()
                    )));
                }
                let values = bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                Ok(Sketch::Signature(MinHashSignature::from_values(
                    *scheme.params(),
                    values,
                )))
            }
            Method::BottomK(_) => Err(bad("bottom-k samples are not deduplicated".to_owned())),
        }
    }

    /// Whether a sketch is of this run's kind: a fingerprint for SimHash, a signature of the bands' length for
    /// MinHash.
    fn fits(&self, sketch: &Sketch) -> bool {
        match (sketch, self.run.bands()) {
            (Sketch::Fingerprint(_), None) => true,
            (Sketch::Signature(sig), Some((banding, _))) => {
                sig.values().len() == banding.values as usize
            }
            _ => false,
        }
    }

    fn foreign(&self, sketch: &Sketch) -> Error {
        let other = sketch
            .method()
            .map(|m| m.name())
            .unwrap_or_else(|_| "an unknown method".to_owned());
        Error::MethodMismatch {
            left: self.method().name(),
            right: other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::{Clustering, VecSink, Verification};

    fn texts() -> Vec<(String, String)> {
        // Planted families: each base text, then edits of it that chain (each edit near the previous one).
        let bases = [
            "the archive keeps every version of the page and the crawler visits it again each week to see what changed",
            "release notes for version two describe the new index format the faster queries and the fixed bugs in detail",
            "a recipe for bread needs flour water salt and yeast mixed kneaded left to rise and baked in a hot oven",
        ];
        let mut out = Vec::new();
        for (f, base) in bases.iter().enumerate() {
            let mut words: Vec<String> = base.split(' ').map(str::to_owned).collect();
            for e in 0..6 {
                out.push((format!("f{f}-e{e}"), words.join(" ")));
                let at = (e * 7 + f) % words.len();
                words[at] = format!("edit{e}");
            }
            out.push((format!("f{f}-copy"), base.to_string()));
        }
        out
    }

    #[test]
    fn node_keys_name_identical_sketches_and_profiles() {
        let stages = Stages::new(method("minhash"), Options::default(), 3).unwrap();
        let docs = texts();
        let signed: Vec<Signed> = docs.iter().map(|(_, t)| stages.sign(t).unwrap()).collect();
        let keys: Vec<NodeKey> = signed.iter().map(Stages::node_key).collect();
        for a in 0..docs.len() {
            for b in 0..docs.len() {
                let same = docs[a].1 == docs[b].1;
                assert_eq!(keys[a] == keys[b], same, "{} and {}", docs[a].0, docs[b].0);
            }
        }
        // The profile is part of the name: the same sketch with another profile is another node.
        let mut other = signed[0].clone();
        other.profile = None;
        assert_ne!(Stages::node_key(&other), keys[0]);
    }

    #[test]
    fn a_spanning_forest_keeps_one_pair_per_node_joined() {
        let node = |n: u8| [n; 16];
        // One bucket: nodes 1–4 within 1 bit of node 1 (six pairs within k = 2), node 5 far from them all.
        let fps = [0b0u64, 0b1, 0b10, 0b100, u64::MAX];
        let rows: Vec<_> = (0..5u8)
            .map(|i| ([7; 10], node(i + 1), fps[i as usize]))
            .collect();
        let all = pairs_of(rows.clone(), Some(2), usize::MAX, false).pairs;
        assert_eq!(all.len(), 6);
        let forest = pairs_of(rows, Some(2), usize::MAX, true).pairs;
        assert_eq!(
            forest,
            [(node(1), node(2)), (node(1), node(3)), (node(1), node(4))]
        );
    }

    #[test]
    fn pairs_in_buckets_are_the_distinct_pairs_of_shared_buckets() {
        let bucket = |b: u8| [b; 10];
        let node = |n: u8| [n; 16];
        let mut rows = vec![
            (bucket(1), node(3)),
            (bucket(1), node(1)),
            (bucket(2), node(9)),
            (bucket(1), node(2)),
            (bucket(1), node(3)), // a copy: the same node again
            (bucket(3), node(2)),
            (bucket(3), node(1)), // (1, 2) again, from another bucket
            (bucket(4), node(5)),
            (bucket(4), node(5)), // one node alone: no pair
        ];
        rows.reverse(); // any order
        assert_eq!(
            pairs_in_buckets(rows),
            [(node(1), node(2)), (node(1), node(3)), (node(2), node(3))]
        );
        assert!(pairs_in_buckets([]).is_empty());
        // Copy buckets: a node with two or more documents pairs with itself; nodes that only share a copy
        // bucket (their first 8 bytes) are not candidates.
        let mut twin = node(4);
        twin[15] = 0;
        assert_eq!(copy_bucket(&node(4)), copy_bucket(&twin));
        assert_eq!(
            pairs_in_buckets([
                (copy_bucket(&node(4)), node(4)),
                (copy_bucket(&twin), twin),
                (copy_bucket(&node(6)), node(6)),
                (copy_bucket(&node(4)), node(4)),
                (bucket(1), node(6)),
                (bucket(1), node(4)),
            ]),
            [(node(4), node(4)), (node(4), node(6))]
        );
        // SimHash: only the pairs within k bits of a bucket; copies still pair with themselves.
        assert_eq!(
            pairs_within_in_buckets(
                [
                    (bucket(1), node(1), 0b0000),
                    (bucket(1), node(2), 0b0111),
                    (bucket(1), node(3), 0b1111),
                    (copy_bucket(&node(3)), node(3), 0b1111),
                    (copy_bucket(&node(3)), node(3), 0b1111),
                ],
                3
            ),
            [(node(1), node(2)), (node(2), node(3)), (node(3), node(3))]
        );
        // Byte order, not integer order of the first byte alone: keys differing only in their last byte.
        let mut late = [7u8; 16];
        late[15] = 1;
        assert_eq!(
            pairs_in_buckets([(bucket(9), node(7)), (bucket(9), late)]),
            [(late, node(7))]
        );
    }

    /// The stages composed by hand (every pair of nodes tried as a candidate when it shares a bucket, one
    /// component per connected set) give exactly one machine's clusters.
    fn method(name: &str) -> Method {
        crate::schemes::lookup(name)
            .unwrap()
            .method(&Default::default())
            .unwrap()
    }

    fn check(name: &str, options: Options) {
        let method = method(name);
        let docs = texts();
        let mut whole = Dedup::new(method, options.clone()).unwrap();
        let stages = Stages::new(method, options, docs.len() as u64).unwrap();
        let signed: Vec<Signed> = docs.iter().map(|(_, t)| stages.sign(t).unwrap()).collect();
        for ((id, _), s) in docs.iter().zip(&signed) {
            whole.push(s.clone().document(id)).unwrap();
        }
        let mut expected = VecSink::default();
        whole.clusters(&mut expected).unwrap();
        assert!(!expected.clusters.is_empty());

        // Stages 3–5: buckets, judged candidates, components (union-find stands in for the runner's).
        let n = docs.len();
        let mut uf = neardup_index::union_find::UnionFind::new(n);
        let buckets: Vec<Vec<Bucket>> = signed
            .iter()
            .map(|s| stages.buckets(&s.sketch).unwrap())
            .collect();
        for a in 0..n {
            for b in a + 1..n {
                let shares = buckets[a].iter().any(|k| buckets[b].contains(k));
                let (sa, sb) = (&signed[a], &signed[b]);
                if shares
                    && stages
                        .judge(
                            &sa.sketch,
                            sa.profile.as_ref(),
                            &sb.sketch,
                            sb.profile.as_ref(),
                        )
                        .unwrap()
                        .is_some()
                {
                    uf.union(a as u32, b as u32);
                }
            }
        }
        // Stage 4 as a runner runs it, over the bucket rows (and the copy buckets), with every bucket listed
        // and with the buckets of more than one or two nodes kept whole: the same components.
        let keys: Vec<NodeKey> = signed.iter().map(Stages::node_key).collect();
        let mut rows = Vec::new();
        for (i, s) in signed.iter().enumerate() {
            let bits = stages.pairing_bits(&s.sketch).unwrap_or(0);
            rows.extend(buckets[i].iter().map(|&b| (b, keys[i], bits)));
            rows.push((copy_bucket(&keys[i]), keys[i], bits));
        }
        let node_of = |key: &NodeKey| keys.iter().position(|k| k == key).unwrap() as u32;
        let partition = |uf: &mut neardup_index::union_find::UnionFind| {
            (0..n as u32).map(|i| uf.find(i)).collect::<Vec<u32>>()
        };
        let mut runs_kept = 0;
        for listed in [usize::MAX, Listed::CLUSTERING.run, 2, 1] {
            let found = stages.candidates_listing(rows.clone(), listed);
            let mut staged = neardup_index::union_find::UnionFind::new(n);
            for (i, j) in (0..n).flat_map(|i| (0..n).map(move |j| (i, j))) {
                if keys[i] == keys[j] {
                    staged.union(i as u32, j as u32);
                }
            }
            for (a, b) in &found.pairs {
                let (a, b) = (node_of(a) as usize, node_of(b) as usize);
                let (sa, sb) = (&signed[a], &signed[b]);
                let judged = stages.judge(
                    &sa.sketch,
                    sa.profile.as_ref(),
                    &sb.sketch,
                    sb.profile.as_ref(),
                );
                let judged = judged.unwrap();
                // A runner that is told every candidate is a pair may skip judging them.
                if a != b && stages.candidates_are_pairs() {
                    assert!(judged.is_some(), "{name}: a candidate that is not a pair");
                }
                if a != b && judged.is_some() {
                    staged.union(a as u32, b as u32);
                }
            }
            for run in found.runs.chunk_by(|x, y| x.0 == y.0) {
                runs_kept += 1;
                let members: Vec<_> = run
                    .iter()
                    .map(|(_, key)| {
                        let s = &signed[node_of(key) as usize];
                        (*key, s.sketch.clone(), s.profile.clone())
                    })
                    .collect();
                let edges = stages.join_run(&members).unwrap();
                assert!(edges.len() < members.len());
                for (a, b, _) in edges {
                    staged.union(node_of(&a), node_of(&b));
                }
            }
            assert_eq!(
                partition(&mut staged),
                partition(&mut uf),
                "{name}, buckets of more than {listed} kept whole"
            );
        }
        // MinHash keeps a bucket whole somewhere in the listings; SimHash lists every pair within k.
        assert_eq!(runs_kept > 0, stages.pairs_within().is_none(), "{name}");

        // Stage 6 per component, in a shuffled order of components and of documents.
        let mut got: Vec<Vec<(String, Option<String>)>> = Vec::new();
        let mut roots: Vec<u32> = (0..n as u32).map(|i| uf.find(i)).collect();
        roots.sort_unstable();
        roots.dedup();
        for &root in roots.iter().rev() {
            let mut members: Vec<usize> = (0..n).filter(|&i| uf.find(i as u32) == root).collect();
            members.reverse();
            let mut sink = VecSink::default();
            stages
                .clusters(
                    members
                        .iter()
                        .map(|&i| signed[i].clone().document(&docs[i].0)),
                    &mut sink,
                )
                .unwrap();
            got.extend(sink.clusters);
        }
        // Stage 7: clusters in the order of their representatives (smallest id).
        got.sort_by(|x, y| x[0].0.cmp(&y[0].0));
        assert_eq!(got, expected.clusters);
    }

    #[test]
    fn composed_stages_give_one_machines_clusters() {
        check("minhash", Options::default());
        check(
            "minhash",
            Options {
                threshold: Some(0.5),
                verification: Verification::Estimate,
                ..Options::default()
            },
        );
        check(
            "simhash",
            Options {
                k: 7,
                ..Options::default()
            },
        );
        check(
            "simhash",
            Options {
                k: 7,
                clustering: Clustering::Components,
                ..Options::default()
            },
        );
        check(
            "simhash",
            Options {
                k: 7,
                verification: Verification::Exact,
                simhash_check: Some(SimHashCheck::Jaccard(2)),
                threshold: Some(0.5),
                ..Options::default()
            },
        );
    }

    #[test]
    fn only_simhash_without_a_check_has_nothing_to_judge() {
        let stages = |name, options| Stages::new(method(name), options, 1).unwrap();
        assert!(stages("simhash", Options::default()).candidates_are_pairs());
        let checked = Options {
            verification: Verification::Exact,
            simhash_check: Some(SimHashCheck::Cosine),
            threshold: Some(0.8),
            ..Options::default()
        };
        assert!(!stages("simhash", checked).candidates_are_pairs());
        assert!(!stages("minhash", Options::default()).candidates_are_pairs());
    }

    #[test]
    fn sketches_travel_as_bytes() {
        for name in ["simhash", "minhash", "datasketch"] {
            let stages = Stages::new(method(name), Options::default(), 1).unwrap();
            let s = stages.sign("some words to sketch here and there").unwrap();
            let bytes = Stages::sketch_bytes(&s.sketch);
            assert_eq!(stages.sketch_from_bytes(&bytes).unwrap(), s.sketch);
            assert!(stages.sketch_from_bytes(&bytes[1..]).is_err());
            assert_eq!(
                stages.buckets(&s.sketch).unwrap().len(),
                stages.buckets_per_node()
            );
        }
    }

    #[test]
    fn refuses_first_seen_and_foreign_sketches() {
        let first = Options {
            representative: Representative::FirstSeen,
            ..Options::default()
        };
        assert!(Stages::new(Method::SimHash(crate::Scheme::SimhashDocV1), first, 1).is_err());
        let simhash = Stages::new(method("simhash"), Options::default(), 1).unwrap();
        let minhash = Stages::new(method("minhash"), Options::default(), 1).unwrap();
        let sig = minhash.sign("some words to sketch here").unwrap().sketch;
        assert!(simhash.buckets(&sig).is_err());
        assert!(simhash.judge(&sig, None, &sig, None).is_err());
    }
}
