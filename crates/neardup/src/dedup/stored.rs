//! Deduplicating against a persistent index: the stored entries that documents match join the run as
//! nodes ranked before every document (what is stored is already kept), with an edge per match.

use super::{Dedup, Score};
use crate::error::Error;
use crate::index::{Index, Kind, Radius, Store};
use crate::sketch::Sketch;
use std::collections::{BTreeMap, HashSet};

/// The stored entries of a run and their edges to documents.
#[derive(Default)]
pub(super) struct Stored {
    /// (id, sketch), in the order they were first matched.
    pub nodes: Vec<(String, Sketch)>,
    /// (document, stored node, score).
    pub edges: Vec<(u32, u32, Score)>,
}

impl Dedup {
    /// Queries the index with every document pushed so far and adds the stored entries they match (within
    /// k, or at the threshold by the estimate: entries keep no text), so that pairs and clusters include them.
    /// A stored entry whose id is also a document's is that document's old version: it is superseded, not a
    /// match. Returns how many stored entries matched. Refuses an index of another method, a k above the
    /// index's, or other LSH bands.
    pub fn merge_index<S: Store>(&mut self, index: &Index<S>) -> Result<usize, Error> {
        if index.method() != self.method {
            return Err(Error::MethodMismatch {
                left: self.method.name(),
                right: index.method().name(),
            });
        }
        let radius = match (index.kind(), self.bands) {
            (Kind::Lsh { banding, .. }, Some((ours, _))) if *banding != ours => {
                return Err(Error::Unsupported {
                    what: format!(
                        "the index's LSH bands are {banding}, this run's {ours}: build the run with the index's bands"
                    ),
                });
            }
            (_, Some((_, threshold))) => match self.options.verification {
                super::Verification::None => Radius::Similarity(0.0),
                _ => Radius::Similarity(threshold),
            },
            (_, None) => Radius::Distance(self.options.k),
        };
        let new_ids: HashSet<&str> = self.docs.iter().map(|d| d.id.as_str()).collect();
        let mut position: BTreeMap<String, u32> = BTreeMap::new();
        let mut nodes: Vec<(String, Sketch)> = Vec::new();
        let mut edges = Vec::new();
        for (i, doc) in self.docs.iter().enumerate() {
            for m in index.query(&doc.sketch, radius)? {
                if new_ids.contains(m.id.as_str()) {
                    continue;
                }
                let node = match position.get(&m.id) {
                    Some(&node) => node,
                    None => {
                        let Some(sketch) = index.get(&m.id) else {
                            continue;
                        };
                        position.insert(m.id.clone(), nodes.len() as u32);
                        nodes.push((m.id, sketch));
                        nodes.len() as u32 - 1
                    }
                };
                edges.push((i as u32, node, m.score));
            }
        }
        let matched = nodes.len();
        self.stored = Stored { nodes, edges };
        Ok(matched)
    }
}
