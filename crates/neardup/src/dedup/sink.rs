//! Where results go: a [`Sink`] receives pairs or clusters as they are made (ripgrep's `Sink` is the model),
//! so a front door streams them without collecting them twice.

use super::Score;

/// One member of a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Member<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its position in the order documents were pushed (`None` for a stored index entry).
    pub ordinal: Option<u64>,
    /// Whether it is an entry of a stored index rather than a new document.
    pub stored: bool,
    /// The representative it duplicates (`None` for the representative itself).
    pub duplicate_of: Option<&'a str>,
    /// Its score against the representative (`None` for the representative itself).
    pub score: Option<Score>,
}

/// A cluster of two or more documents: the representative (the one to keep) first.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster<'a> {
    /// 1, 2, … in the order of the representatives.
    pub number: usize,
    /// The representative, then the other members in the policy's order.
    pub members: Vec<Member<'a>>,
}

impl Cluster<'_> {
    /// The member that is kept.
    pub fn representative(&self) -> &Member<'_> {
        &self.members[0]
    }
}

/// Receives results. An error stops the run and is returned by it; a sink that must not stop the run (a
/// closed pipe while an index is being updated) records its error and returns `Ok`.
pub trait Sink {
    /// One verified pair, `a < b` in byte order.
    fn pair(&mut self, a: &str, b: &str, score: Score) -> std::io::Result<()>;
    /// One cluster.
    fn cluster(&mut self, cluster: &Cluster<'_>) -> std::io::Result<()>;
}

/// A sink that keeps everything in memory: pairs, and clusters as `(id, duplicate_of)` lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VecSink {
    /// The pairs.
    pub pairs: Vec<(String, String, Score)>,
    /// The clusters: each member's id and the representative it duplicates.
    pub clusters: Vec<Vec<(String, Option<String>)>>,
}

impl Sink for VecSink {
    fn pair(&mut self, a: &str, b: &str, score: Score) -> std::io::Result<()> {
        self.pairs.push((a.to_owned(), b.to_owned(), score));
        Ok(())
    }

    fn cluster(&mut self, cluster: &Cluster<'_>) -> std::io::Result<()> {
        self.clusters.push(
            cluster
                .members
                .iter()
                .map(|m| (m.id.to_owned(), m.duplicate_of.map(str::to_owned)))
                .collect(),
        );
        Ok(())
    }
}
