use super::*;
use crate::{Fingerprint, MinHashScheme, Scheme};
use neardup_sketch::signature::{Scheme as SketchScheme, SketchParams};
use proptest::prelude::*;

fn simhash() -> Method {
    Method::SimHash(Scheme::SimhashDocV1)
}

fn fp(bits: u64) -> Sketch {
    Sketch::Fingerprint(Fingerprint::new(Scheme::SimhashDocV1, bits))
}

/// A SimHash run of fingerprints given by id.
fn simhash_run(fps: impl IntoIterator<Item = (String, u64)>, options: Options) -> Dedup {
    let mut dedup = Dedup::new(simhash(), options).unwrap();
    for (id, bits) in fps {
        dedup.push(Document::new(id, fp(bits))).unwrap();
    }
    dedup
}

fn run_fps(fps: &[(&str, u64)], options: Options) -> VecSink {
    let dedup = simhash_run(fps.iter().map(|&(id, bits)| (id.to_owned(), bits)), options);
    let mut sink = VecSink::default();
    dedup.clusters(&mut sink).unwrap();
    sink
}

fn of(rep: &str) -> Option<String> {
    Some(rep.to_owned())
}

#[test]
fn centres_do_not_chain_and_components_do() {
    // a–b within 3 bits, b–c within 3 bits, a–c 6 bits apart.
    let docs = [("a", 0u64), ("b", 0b111), ("c", 0b111_111)];
    let centres = run_fps(&docs, Options::default());
    assert_eq!(
        centres.clusters,
        vec![vec![("a".into(), None), ("b".into(), of("a"))]]
    );
    let components = run_fps(
        &docs,
        Options {
            clustering: Clustering::Components,
            ..Options::default()
        },
    );
    assert_eq!(
        components.clusters,
        vec![vec![
            ("a".into(), None),
            ("b".into(), of("a")),
            ("c".into(), of("a"))
        ]]
    );
}

#[test]
fn a_member_joins_the_closest_representative() {
    // a and c are representatives (4 bits apart); z is 3 bits from a and 1 bit from c.
    let docs = [("a", 0u64), ("c", 0b1111), ("z", 0b0111)];
    let sink = run_fps(&docs, Options::default());
    assert_eq!(
        sink.clusters,
        vec![vec![("c".into(), None), ("z".into(), of("c"))]]
    );
}

#[test]
fn representative_policies() {
    let lengths = [("a", 0u64, 10u64), ("b", 1, 50), ("c", 3, 50)];
    let run = |representative| {
        let mut dedup = Dedup::new(
            simhash(),
            Options {
                representative,
                ..Options::default()
            },
        )
        .unwrap();
        // Pushed in the order c, a, b.
        for i in [2, 0, 1] {
            let (id, bits, length) = lengths[i];
            dedup
                .push(Document {
                    length,
                    ..Document::new(id, fp(bits))
                })
                .unwrap();
        }
        let mut sink = VecSink::default();
        dedup.clusters(&mut sink).unwrap();
        sink.clusters[0][0].0.clone()
    };
    assert_eq!(run(Representative::SmallestId), "a");
    assert_eq!(run(Representative::FirstSeen), "c");
    assert_eq!(run(Representative::Longest), "b"); // longest, then smallest id
}

#[test]
fn identical_documents_are_grouped_and_every_pair_is_listed() {
    let mut dedup = Dedup::new(simhash(), Options::default()).unwrap();
    for id in ["x", "y", "z"] {
        dedup.push(Document::new(id, fp(42))).unwrap();
    }
    dedup.push(Document::new("w", fp(43))).unwrap();
    let mut sink = VecSink::default();
    let summary = dedup.pairs(&mut sink).unwrap();
    assert_eq!(summary.distinct, 2);
    assert_eq!(summary.pairs, 6);
    let mut clusters = VecSink::default();
    let summary = dedup.clusters(&mut clusters).unwrap();
    assert_eq!(clusters.clusters[0][0], ("w".into(), None));
    assert_eq!(summary.duplicates, 3);
    assert_eq!(summary.sizes, vec![(3, 4, 1)]);
}

#[test]
fn duplicate_ids_and_other_methods_are_refused() {
    let mut dedup = Dedup::new(simhash(), Options::default()).unwrap();
    dedup.push(Document::new("a", fp(1))).unwrap();
    dedup.push(Document::new("a", fp(2))).unwrap();
    assert!(matches!(
        dedup.clusters(&mut VecSink::default()),
        Err(Error::DuplicateId { .. })
    ));
    let sig = Method::MinHash(MinHashScheme::default_oph())
        .sketch_text("some words here")
        .unwrap();
    assert!(dedup.push(Document::new("m", sig)).is_err());
    assert!(
        Dedup::new(
            simhash(),
            Options {
                k: 8,
                ..Options::default()
            }
        )
        .is_err()
    );
}

#[test]
fn large_clusters_are_reported() {
    let docs: Vec<(String, u64)> = (0..5).map(|i| (format!("d{i}"), i as u64 & 1)).collect();
    let mut dedup = Dedup::new(
        simhash(),
        Options {
            large_cluster: 4,
            ..Options::default()
        },
    )
    .unwrap();
    for (id, bits) in &docs {
        dedup.push(Document::new(id.clone(), fp(*bits))).unwrap();
    }
    let summary = dedup.clusters(&mut VecSink::default()).unwrap();
    assert_eq!(summary.largest, vec![("d0".to_owned(), 5)]);
    assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
}

/// Two texts whose weighted Jaccard over word counts is high but whose word sets barely overlap.
fn weighted_texts() -> (String, String) {
    let mut a = "alpha ".repeat(300);
    let mut b = "alpha ".repeat(300);
    for i in 0..3 {
        a.push_str(&format!("onlya{i} "));
        b.push_str(&format!("onlyb{i} "));
    }
    (a, b)
}

#[test]
fn weighted_schemes_are_verified_by_their_own_measure() {
    let (a, b) = weighted_texts();
    for (scheme, measure) in [
        (SketchScheme::WeightedJaccard, Measure::WeightedJaccard),
        (
            SketchScheme::ProbabilityJaccard,
            Measure::ProbabilityJaccard,
        ),
    ] {
        let method = Method::MinHash(
            MinHashScheme::new(SketchParams::new(scheme, 128, 0, crate::Features::Words(1)))
                .unwrap(),
        );
        assert_eq!(method.measure(), measure);
        let (sa, pa) = method.sketch_text_with_profile(&a).unwrap();
        let (sb, pb) = method.sketch_text_with_profile(&b).unwrap();
        let (pa, pb) = (pa.unwrap(), pb.unwrap());
        // Brute force over the counts: 300 shared, 3 + 3 unique.
        let brute = match measure {
            Measure::WeightedJaccard => 300.0 / 306.0,
            _ => {
                let (Profile::Counts(x), Profile::Counts(y)) = (&pa, &pb) else {
                    panic!("counts")
                };
                neardup_sketch::weighted::probability_jaccard(x, y)
            }
        };
        assert!((pa.similarity(&pb, measure) - brute).abs() < 1e-9);
        assert!(pa.similarity(&pb, Measure::Jaccard) < 0.2);
        let mut dedup = Dedup::new(method, Options::default()).unwrap();
        for (id, sketch, profile) in [("a", sa, pa), ("b", sb, pb)] {
            dedup
                .push(Document {
                    profile: Some(profile),
                    ..Document::new(id, sketch)
                })
                .unwrap();
        }
        let mut sink = VecSink::default();
        dedup.pairs(&mut sink).unwrap();
        assert_eq!(sink.pairs.len(), 1, "{scheme}");
        assert!((sink.pairs[0].2.value() - brute).abs() < 1e-9, "{scheme}");
    }
}

#[test]
fn minhash_clusters_keep_members_above_the_threshold() {
    let method = Method::MinHash(MinHashScheme::oph(128, 0, 1).unwrap());
    let words: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
    // Each document drops a different window of 4 words: neighbours are close, far ones are not.
    let mut dedup = Dedup::new(
        method,
        Options {
            threshold: Some(0.8),
            ..Options::default()
        },
    )
    .unwrap();
    let mut profiles = std::collections::HashMap::new();
    for d in 0..10 {
        let text: Vec<&str> = words
            .iter()
            .enumerate()
            .filter(|(i, _)| !(d * 3..d * 3 + 4).contains(i))
            .map(|(_, w)| w.as_str())
            .collect();
        let (sketch, profile) = method.sketch_text_with_profile(&text.join(" ")).unwrap();
        let id = format!("doc{d}");
        profiles.insert(id.clone(), profile.clone().unwrap());
        dedup
            .push(Document {
                profile,
                ..Document::new(id, sketch)
            })
            .unwrap();
    }
    let mut sink = VecSink::default();
    dedup.clusters(&mut sink).unwrap();
    assert!(!sink.clusters.is_empty());
    for cluster in &sink.clusters {
        let rep = &profiles[&cluster[0].0];
        for (id, _) in &cluster[1..] {
            assert!(
                profiles[id].similarity(rep, Measure::Jaccard) >= 0.8,
                "{id}"
            );
        }
    }
}

proptest! {
    /// Centres: every member within k of its representative, every pair within k found, and the same
    /// clusters whatever the input order.
    #[test]
    fn centres_are_within_k_and_independent_of_order(
        fps in proptest::collection::vec(prop_oneof![0u64..64, any::<u64>()], 1..40),
        k in 0u32..5,
        seed in any::<u64>(),
    ) {
        let docs: Vec<(String, u64)> = fps.iter().enumerate().map(|(i, &f)| (format!("{i:03}"), f)).collect();
        let options = Options { k, ..Options::default() };
        let run = |order: &[usize]| {
            let mut dedup = Dedup::new(simhash(), options.clone()).unwrap();
            for &i in order {
                dedup.push(Document::new(docs[i].0.clone(), fp(docs[i].1))).unwrap();
            }
            let mut clusters = VecSink::default();
            dedup.clusters(&mut clusters).unwrap();
            let mut pairs = VecSink::default();
            dedup.pairs(&mut pairs).unwrap();
            let mut pairs = pairs.pairs;
            pairs.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            (clusters.clusters, pairs)
        };
        let forward: Vec<usize> = (0..docs.len()).collect();
        let mut shuffled = forward.clone();
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let (clusters, pairs) = run(&forward);
        prop_assert_eq!(run(&shuffled), (clusters.clone(), pairs.clone()));
        let bits: std::collections::HashMap<&str, u64> = docs.iter().map(|(id, f)| (id.as_str(), *f)).collect();
        for cluster in &clusters {
            for (id, of) in &cluster[1..] {
                prop_assert_eq!(of.as_deref(), Some(cluster[0].0.as_str()));
                prop_assert!((bits[id.as_str()] ^ bits[cluster[0].0.as_str()]).count_ones() <= k);
            }
        }
        let mut brute = 0;
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                if (docs[i].1 ^ docs[j].1).count_ones() <= k { brute += 1; }
            }
        }
        prop_assert_eq!(pairs.len(), brute);
    }
}

#[test]
fn progress_reports_every_stage_with_the_final_counts() {
    use std::sync::{Arc, Mutex};
    let mut dedup = Dedup::new(simhash(), Options::default()).unwrap();
    // 0 and 0b111 are a pair; 0 twice is one distinct sketch; u64::MAX is far from both.
    for (id, bits) in [("a", 0u64), ("b", 0), ("c", 0b111), ("d", u64::MAX)] {
        dedup.push(Document::new(id, fp(bits))).unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    dedup.on_progress(move |p| {
        log.lock().unwrap().push(p);
        ControlFlow::Continue(())
    });
    let summary = dedup.clusters(&mut VecSink::default()).unwrap();
    let seen = seen.lock().unwrap();
    let mut stages: Vec<Stage> = seen.iter().map(|p| p.stage).collect();
    // Grouping is reported at its start and between its sorts, each a chance to stop.
    assert_eq!(stages.iter().filter(|&&s| s == Stage::Grouping).count(), 4);
    stages.dedup();
    assert_eq!(stages, [Stage::Grouping, Stage::Candidates, Stage::Writing]);
    let last = seen.last().unwrap();
    assert_eq!(last.distinct, 3);
    assert_eq!(last.pairs as usize, summary.edges);
    assert_eq!(last.candidates, 1);
}

#[test]
fn simhash_candidates_are_verified_by_the_exact_measure() {
    // Same words, other order: one fingerprint (unigram term frequencies), different word 3-grams.
    let texts = [
        (
            "a",
            "the cat sat on the mat while the dog slept by the door",
        ),
        (
            "b",
            "the dog sat on the door while the cat slept by the mat",
        ),
        (
            "c",
            "the cat sat on the mat while the dog slept by the door today",
        ),
    ];
    let pairs = |check: Option<SimHashCheck>, verification: Verification| {
        let options = Options {
            simhash_check: check,
            verification,
            threshold: Some(0.7),
            ..Options::default()
        };
        let mut dedup = Dedup::new(simhash(), options).unwrap();
        for (id, text) in texts {
            let mut doc = Document::new(id, simhash().sketch_text(text).unwrap());
            doc.profile = check.map(|c| c.profile(text));
            dedup.push(doc).unwrap();
        }
        let mut sink = VecSink::default();
        dedup.pairs(&mut sink).unwrap();
        sink.pairs
            .iter()
            .map(|(a, b, _)| format!("{a}-{b}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(pairs(None, Verification::Exact), ["a-b", "a-c", "b-c"]);
    // Word order decides the 3-grams: only a and c share most of them.
    assert_eq!(
        pairs(Some(SimHashCheck::Jaccard(3)), Verification::Exact),
        ["a-c"]
    );
    // The cosine of term frequencies is blind to order, as the fingerprint is.
    assert_eq!(
        pairs(Some(SimHashCheck::Cosine), Verification::Exact),
        ["a-b", "a-c", "b-c"]
    );
    // Without exact verification the check is not applied.
    assert_eq!(
        pairs(Some(SimHashCheck::Jaccard(3)), Verification::Estimate),
        ["a-b", "a-c", "b-c"]
    );
    let bad = Options {
        threshold: Some(1.5),
        ..Options::default()
    };
    assert!(Dedup::new(simhash(), bad).is_err());
}

/// Every member as the sink sees it: (cluster, id, duplicate_of, score).
#[derive(Default)]
struct Members(Vec<(usize, String, Option<String>, Option<String>)>);

impl Sink for Members {
    fn pair(&mut self, _: &str, _: &str, _: Score) -> std::io::Result<()> {
        Ok(())
    }

    fn cluster(&mut self, cluster: &Cluster<'_>) -> std::io::Result<()> {
        for m in &cluster.members {
            self.0.push((
                cluster.number,
                m.id.to_owned(),
                m.duplicate_of.map(str::to_owned),
                m.score.map(|s| format!("{s:?}")),
            ));
        }
        Ok(())
    }
}

/// Runs `dedup` with every candidate pair listed, and with runs of more than `listed_run` kept whole (always,
/// when their candidates outnumber their members, or when they are larger still): the members,
/// representatives and scores must be the same, under both clusterings.
fn same_clusters_whatever_is_listed(
    dedup: &mut Dedup,
    listed_run: usize,
) -> Result<(), TestCaseError> {
    for clustering in [Clustering::Centres, Clustering::Components] {
        dedup.options.clustering = clustering;
        let mut all = Members::default();
        let listed = dedup
            .clusters_listing(graph::Listed::ALL, &mut all)
            .unwrap();
        for (pairs_per_member, scanned_run) in [(0, 64), (1, 64), (1, listed_run + 2)] {
            let mut runs = Members::default();
            let only = graph::Listed {
                run: listed_run,
                pairs_per_member,
                scanned_run,
            };
            let kept = dedup.clusters_listing(only, &mut runs).unwrap();
            prop_assert_eq!(&all.0, &runs.0, "{:?} {:?}", clustering, only);
            prop_assert_eq!(
                (listed.clusters, listed.duplicates),
                (kept.clusters, kept.duplicates)
            );
            prop_assert!(kept.edges <= listed.edges);
        }
    }
    Ok(())
}

proptest! {
    /// MinHash with exact verification: texts that drop a few words of one of a few bases.
    #[test]
    fn minhash_clusters_do_not_depend_on_which_runs_are_listed(
        drops in proptest::collection::vec((0usize..3, proptest::collection::vec(0usize..30, 0..6)), 2..40),
        threshold in 0.5f64..0.95,
        listed_run in 1usize..5,
        exact: bool,
    ) {
        let method = Method::MinHash(MinHashScheme::oph(64, 0, 1).unwrap());
        let mut dedup = Dedup::new(method, Options {
            threshold: Some(threshold),
            verification: if exact { Verification::Exact } else { Verification::Estimate },
            ..Options::default()
        }).unwrap();
        for (i, (base, dropped)) in drops.iter().enumerate() {
            let text: Vec<String> = (0..30)
                .filter(|w| !dropped.contains(w))
                .map(|w| format!("b{base}w{w}"))
                .collect();
            let (sketch, profile) = method.sketch_text_with_profile(&text.join(" ")).unwrap();
            dedup.push(Document { profile, ..Document::new(format!("{i:02}"), sketch) }).unwrap();
        }
        same_clusters_whatever_is_listed(&mut dedup, listed_run)?;
    }
}

#[test]
fn many_near_copies_are_clustered_without_listing_their_pairs() {
    // 3,000 near-copies of one text (each replaces one word by its own): 4.5 million candidate pairs if
    // listed; clustering judges about one per copy.
    let method = Method::MinHash(MinHashScheme::oph(128, 0, 1).unwrap());
    let mut dedup = Dedup::new(
        method,
        Options {
            threshold: Some(0.5),
            ..Options::default()
        },
    )
    .unwrap();
    let words: Vec<String> = (0..20).map(|w| format!("w{w}")).collect();
    for i in 0..3000 {
        let mut text = words.clone();
        text[i % 20] = format!("own{i}");
        let (sketch, profile) = method.sketch_text_with_profile(&text.join(" ")).unwrap();
        dedup
            .push(Document {
                profile,
                ..Document::new(format!("{i:04}"), sketch)
            })
            .unwrap();
    }
    let summary = dedup.clusters(&mut VecSink::default()).unwrap();
    assert_eq!(summary.duplicates + summary.clusters, 3000, "{summary:?}");
    assert!(summary.edges < 3 * 3000, "{} pairs judged", summary.edges);
}

/// Stops `dedup` at each of its observer's calls in turn: each run returns [`Error::Stopped`] having
/// written nothing, and a run afterwards (the observer letting it go on) gives what a run never stopped
/// gives. Returns how many calls a whole run makes.
fn stops_at_every_report(dedup: &mut Dedup) -> usize {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let (calls, stop_at) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (counted, limit) = (Arc::clone(&calls), Arc::clone(&stop_at));
    dedup.on_progress(move |_| {
        if counted.fetch_add(1, Relaxed) + 1 == limit.load(Relaxed) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let mut whole = VecSink::default();
    dedup.clusters(&mut whole).unwrap();
    let reports = calls.swap(0, Relaxed);
    for at in 1..=reports {
        stop_at.store(at, Relaxed);
        let mut sink = VecSink::default();
        assert!(
            matches!(dedup.clusters(&mut sink), Err(Error::Stopped)),
            "{at}"
        );
        assert!(sink.clusters.is_empty() && sink.pairs.is_empty(), "{at}");
        assert_eq!(calls.swap(0, Relaxed), at, "asked again after it stopped");
    }
    stop_at.store(0, Relaxed);
    let mut again = VecSink::default();
    dedup.clusters(&mut again).unwrap();
    assert_eq!(again.clusters, whole.clusters);
    reports
}

#[test]
fn an_observer_stops_a_run_at_any_report() {
    // 4,096 fingerprints that differ in their low 12 bits: about 610,000 pairs within 3 bits, reported
    // every PROGRESS_EVERY, in crowded runs.
    for clustering in [Clustering::Centres, Clustering::Components] {
        let fps = (0..4096u64).map(|bits| (format!("{bits:04}"), bits << 7));
        let options = Options {
            clustering,
            ..Options::default()
        };
        let mut dedup = simhash_run(fps, options);
        assert!(stops_at_every_report(&mut dedup) > 9);
    }
    // MinHash near-copies: a run kept whole and judged while clustering.
    let method = Method::MinHash(MinHashScheme::oph(128, 0, 1).unwrap());
    let mut dedup = Dedup::new(method, Options::default()).unwrap();
    for i in 0..200 {
        let mut words: Vec<String> = (0..20).map(|w| format!("w{w}")).collect();
        words[i % 20] = format!("own{i}");
        let sketch = method.sketch_text(&words.join(" ")).unwrap();
        dedup
            .push(Document::new(format!("{i:03}"), sketch))
            .unwrap();
    }
    assert!(stops_at_every_report(&mut dedup) >= 3);
}

#[test]
fn clusters_do_not_depend_on_the_thread_count() {
    // 30,000 fingerprints (long enough for the sorts to split across threads): copies and near-copies of
    // 3,000 bases, ids scrambled against the order pushed, under each representative policy.
    let fps: Vec<(String, u64)> = (0..30_000u64)
        .map(|n| {
            let base = (n % 3_000).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let id = format!("{:08x}", n.wrapping_mul(0x2545_F491) % 1_000_003);
            (id, base ^ (1 << (n % 5)) ^ u64::from(n % 7 == 0))
        })
        .collect();
    for representative in [
        Representative::SmallestId,
        Representative::FirstSeen,
        Representative::Longest,
    ] {
        let options = Options {
            representative,
            ..Options::default()
        };
        let dedup = simhash_run(fps.iter().cloned(), options);
        let clusters_with = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut sink = VecSink::default();
            pool.install(|| dedup.clusters(&mut sink).unwrap());
            sink.clusters
        };
        let one = clusters_with(1);
        assert!(one.len() > 1_000, "{}", one.len());
        assert_eq!(one, clusters_with(4), "{representative:?}");
    }
}
