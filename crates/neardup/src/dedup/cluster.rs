//! From the pair graph to clusters: centres (every member within the threshold of its representative) or
//! connected components, then the clusters written in the order of their representatives.

use super::graph::{Graph, output};
use super::{Cluster, Dedup, Member, Score, Sink, Summary};
use crate::error::Error;
use neardup_index::union_find::UnionFind;

/// Each node's assignment: `None` for a representative (or a document near nothing), else the
/// representative it joined and its score against it.
pub(super) type Assignment = Vec<Option<(u32, Score)>>;

/// Centre clustering: nodes in rank order; each joins the closest representative it shares an edge with
/// (ties: the earlier representative), else becomes one. A group of identical documents is represented by
/// its first member if that member becomes a representative.
///
/// `best[g]` holds the closest representative among group g's neighbours so far. A new representative offers
/// itself to its neighbours once: along its listed edges, and to the members of its runs still to be placed
/// (others never read their `best` again), judging each such pair as it goes. So the pass costs the nodes,
/// the listed edges, and the sizes of each representative's runs: a run of n near-copies that join one
/// representative costs about n. A member that already has a `best` is judged against the higher of the
/// threshold and that score (ties go to the earlier representative anyway), so an exact merge that cannot
/// beat it stops early.
pub(super) fn centres(graph: &Graph, run: &Dedup) -> Assignment {
    let identical = Score::identical(run.measure());
    let nodes = graph.rank.len();
    let mut assignment: Assignment = vec![None; nodes];
    let mut group_rep: Vec<Option<u32>> = vec![None; graph.groups.len()];
    let mut best: Vec<Option<(u32, Score)>> = vec![None; graph.groups.len()];
    // Members of each group not yet placed.
    let mut unplaced: Vec<u32> = graph.groups.iter().map(|m| m.len() as u32).collect();
    for (step, &node) in graph.by_rank.iter().enumerate() {
        if !graph.check_in(run, step) {
            break; // the caller returns the observer's stop
        }
        let g = graph.group_of[node as usize];
        unplaced[g as usize] -= 1;
        if let Some(rep) = group_rep[g as usize] {
            assignment[node as usize] = Some((rep, identical));
        } else if let Some(joined) = best[g as usize] {
            assignment[node as usize] = Some(joined);
        } else {
            group_rep[g as usize] = Some(node);
            let offer = |best: &mut Vec<Option<(u32, Score)>>, h: u32, score: Score| {
                let slot = &mut best[h as usize];
                if slot.is_none_or(|(_, current)| score.closer_than(current)) {
                    *slot = Some((node, score));
                }
            };
            for (h, score) in graph.neighbours(run, g) {
                offer(&mut best, h, score);
            }
            for &r in graph.runs.of(g) {
                for &h in graph.runs.members(r as usize) {
                    let waiting = group_rep[h as usize].is_none() && unplaced[h as usize] > 0;
                    // A member already near a representative is judged only for being closer.
                    let bar = best[h as usize].map(|(_, score)| score);
                    if h != g
                        && waiting
                        && let Some(score) = graph.judge_in_run_above(run, r as usize, g, h, bar)
                    {
                        offer(&mut best, h, score);
                    }
                }
            }
        }
    }
    assignment
}

/// Connected components of the pair graph; the best-ranked member represents each, and every other member
/// is scored against it directly (it may be farther than the threshold: components chain).
pub(super) fn components(graph: &Graph, run: &Dedup) -> Assignment {
    let mut uf = UnionFind::new(graph.groups.len());
    for edge in &graph.edges {
        uf.union(edge.a, edge.b);
    }
    for r in 0..graph.runs.len() {
        if !graph.check_in(run, r) {
            break;
        }
        join_run(graph, run, r, &mut uf);
    }
    // The representative of a component: its best-ranked node.
    let mut rep_of_root: Vec<Option<u32>> = vec![None; graph.groups.len()];
    let mut assignment: Assignment = vec![None; graph.rank.len()];
    for (step, &node) in graph.by_rank.iter().enumerate() {
        if !graph.check_in(run, step) {
            break;
        }
        let root = uf.find(graph.group_of[node as usize]) as usize;
        match rep_of_root[root] {
            None => rep_of_root[root] = Some(node),
            Some(rep) => assignment[node as usize] = Some((rep, graph.score(run, rep, node))),
        }
    }
    assignment
}

/// Joins the components that run `r`'s pairs connect: a pair is judged only across parts not yet in one
/// component, so a run of near-copies that form one component costs about one judgement per member.
fn join_run(graph: &Graph, run: &Dedup, r: usize, uf: &mut UnionFind) {
    join_in_parts(graph.runs.members(r), |part, b| {
        let joined = uf.find(part[0]) == uf.find(b)
            || part
                .iter()
                .any(|&a| graph.judge_in_run(run, r, a, b).is_some());
        if joined {
            uf.union(part[0], b);
        }
        Ok::<_, std::convert::Infallible>(joined)
    })
    .unwrap_or_else(|never| match never {});
}

/// Walks `members` in order, each meeting the earlier ones part by part (a part: members already joined);
/// `joins(part, member)` says whether the member joins that part (judging it against the part's members
/// until one is its pair, say). Joined parts merge. So n near-copies that form one part cost about n calls,
/// where their pairs are n(n−1)/2.
pub(super) fn join_in_parts<T: Copy, E>(
    members: &[T],
    mut joins: impl FnMut(&[T], T) -> Result<bool, E>,
) -> Result<(), E> {
    let mut parts: Vec<Vec<T>> = Vec::new();
    let mut apart = Vec::new();
    for &b in members {
        let mut own = vec![b];
        for part in parts.drain(..) {
            if joins(&part, b)? {
                let (mut larger, smaller) = if part.len() > own.len() {
                    (part, own)
                } else {
                    (own, part)
                };
                larger.extend(smaller);
                own = larger;
            } else {
                apart.push(part);
            }
        }
        apart.push(own);
        std::mem::swap(&mut parts, &mut apart);
    }
    Ok(())
}

fn member<'a>(
    run: &'a Dedup,
    graph: &Graph,
    node: u32,
    of: Option<(&'a str, Score)>,
) -> Member<'a> {
    Member {
        id: graph.id(run, node),
        ordinal: ((node as usize) < graph.documents).then_some(node as u64),
        stored: node as usize >= graph.documents,
        duplicate_of: of.map(|o| o.0),
        score: of.map(|o| o.1),
    }
}

/// Writes the clusters of two or more in the order of their representatives and returns the summary.
pub(super) fn write(
    run: &Dedup,
    graph: &Graph,
    assignment: Assignment,
    sink: &mut dyn Sink,
) -> Result<Summary, Error> {
    // Members of each representative, in rank order (by_rank is that order).
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); graph.rank.len()];
    for &node in &graph.by_rank {
        if let Some((rep, _)) = assignment[node as usize] {
            members[rep as usize].push(node);
        }
    }
    let mut summary = graph.summary(run);
    let mut sizes: std::collections::BTreeMap<u32, usize> = Default::default();
    let mut largest: Vec<(usize, u32)> = Vec::new();
    for &rep in &graph.by_rank {
        let others = &members[rep as usize];
        if others.is_empty() {
            continue;
        }
        summary.clusters += 1;
        summary.duplicates += others.len();
        let size = others.len() + 1;
        // Buckets 2, 3–4, 5–8, …: the bucket of a size is the bit length of size − 1.
        *sizes
            .entry(usize::BITS - (size - 1).leading_zeros())
            .or_default() += 1;
        largest.push((size, rep));
        let rep_id = graph.id(run, rep);
        let mut list = Vec::with_capacity(size);
        list.push(member(run, graph, rep, None));
        for &m in others {
            let score = assignment[m as usize].expect("a member").1;
            list.push(member(run, graph, m, Some((rep_id, score))));
        }
        if size > run.options.large_cluster {
            summary.warnings.push(format!(
                "cluster {} has {size} members (representative {rep_id}): check it before acting on it",
                summary.clusters
            ));
        }
        sink.cluster(&Cluster {
            number: summary.clusters,
            members: list,
        })
        .map_err(output)?;
    }
    summary.sizes = sizes
        .into_iter()
        .map(|(bits, n)| {
            let high = 1usize << bits;
            ((high >> 1) + 1, high, n)
        })
        .map(|(lo, hi, n)| (lo.max(2), hi, n))
        .collect();
    largest.sort_by_key(|&(size, rep)| (std::cmp::Reverse(size), graph.rank[rep as usize]));
    summary.largest = largest
        .into_iter()
        .take(5)
        .map(|(size, rep)| (graph.id(run, rep).to_owned(), size))
        .collect();
    Ok(summary)
}
