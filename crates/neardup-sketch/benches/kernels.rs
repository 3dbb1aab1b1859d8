//! Kernel benchmarks: `cargo bench -p neardup-sketch`.
//!
//! * `lookup3`: the pinned token hash of `simhash-doc-v1` on English-like word lengths.
//! * `simhash64`: the bit-sliced accumulator against the textbook loop, per feature. Build once with and once
//!   without `RUSTFLAGS="-C target-cpu=native"` to see that the bit-sliced kernel needs no dispatch.
//! * `shingle`: xxh3 per token plus the rolling word 5-gram, per token.
//! * `minhash`: per feature (pre-hashed shingles), K = 128, one document of 100 or 1,000 features including
//!   `finish`: one permutation hashing (`minhash-oph-v1`), classic K-hash MinHash, the datasketch schemes
//!   (SHA-1 included), bottom-k.
//! * `weighted`: `wminhash-v1` and `pminhash-v1`, per distinct (feature, TF) pair of an English-like document.
//! * `text_to_signature`: English-like text → ASCII whitespace split → word 5-grams → OPH-128, bytes of text
//!   per second (the real tokenizer is measured in `neardup-text`'s benchmarks).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use neardup_sketch::bottomk::BottomKBuilder;
use neardup_sketch::datasketch::{DatasketchMinHasher, Variant};
use neardup_sketch::lookup3::jenkins64;
use neardup_sketch::oph::{ClassicMinHasher, OphMinHasher};
use neardup_sketch::shingle::{Features, WordShingler, token_hash};
use neardup_sketch::simhash::{SimHash64, simhash64_naive};
use neardup_sketch::weighted::{Similarity, WeightedMinHasher, term_frequencies};
use std::hint::black_box;

fn hashes(n: usize) -> Vec<u64> {
    let mut x = 0x1234_5678_9abc_def0_u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// English-like text: words drawn with Zipf-like frequencies from a vocabulary of common English words and
/// generated longer words, mean length close to English's ~4.7 letters.
fn english_like(bytes: usize) -> String {
    const COMMON: &[&str] = &[
        "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with", "be",
        "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
        "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has",
        "there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "system",
        "function", "document", "example", "value", "file",
    ];
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut text = String::with_capacity(bytes + 16);
    while text.len() < bytes {
        let r = next();
        // Half the tokens from the common list (Zipf-like: index ~ 1/u), half rarer generated words.
        if r & 1 == 0 {
            let u = ((r >> 1) % 1000 + 1) as usize;
            text.push_str(COMMON[(COMMON.len() * 7 / u).min(COMMON.len() - 1)]);
        } else {
            let len = 3 + (r >> 8) % 8;
            for i in 0..len {
                text.push((b'a' + ((r >> (16 + 3 * i)) % 26) as u8) as char);
            }
        }
        text.push(if next() % 12 == 0 { '\n' } else { ' ' });
    }
    text
}

fn bench_simhash(c: &mut Criterion) {
    let hs = hashes(4096);
    let mut g = c.benchmark_group("simhash64");
    g.throughput(Throughput::Elements(hs.len() as u64));
    g.bench_function("bitsliced", |b| {
        b.iter(|| {
            let mut acc = SimHash64::new();
            acc.extend(black_box(&hs));
            acc.finish()
        })
    });
    g.bench_function("naive", |b| b.iter(|| simhash64_naive(black_box(&hs))));
    g.finish();
}

fn bench_lookup3(c: &mut Criterion) {
    let mut g = c.benchmark_group("lookup3");
    for len in [3usize, 5, 8, 13, 30] {
        let word: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::from_parameter(len), &word, |b, w| {
            b.iter(|| jenkins64(black_box(w)))
        });
    }
    g.finish();
}

fn bench_shingle(c: &mut Criterion) {
    let text = english_like(64 * 1024);
    let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
    let mut g = c.benchmark_group("shingle");
    g.throughput(Throughput::Elements(tokens.len() as u64));
    g.bench_function("xxh3_token", |b| {
        b.iter(|| {
            tokens
                .iter()
                .fold(0u64, |acc, t| acc ^ token_hash(black_box(t).as_bytes()))
        })
    });
    g.bench_function("word5", |b| {
        let mut shingler = WordShingler::new(5);
        b.iter(|| {
            let mut acc = 0u64;
            for t in &tokens {
                if let Some(h) = shingler.push_token(black_box(t)) {
                    acc ^= h;
                }
            }
            acc ^ shingler.finish().unwrap_or(0)
        })
    });
    g.finish();
}

fn bench_minhash(c: &mut Criterion) {
    for n in [100usize, 1000] {
        let features = hashes(n);
        let mut g = c.benchmark_group(format!("minhash/{n}"));
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function("oph128", |b| {
            let mut h = OphMinHasher::new(128, 0, Features::Words(5));
            let mut out = vec![0u32; 128];
            b.iter(|| {
                h.reset();
                h.extend(black_box(&features));
                h.finish_into(&mut out);
                out[0]
            })
        });
        g.bench_function("classic128", |b| {
            b.iter(|| {
                let mut h = ClassicMinHasher::new(128, 0);
                features.iter().for_each(|&f| h.update(black_box(f)));
                h.finish().map(|v| v[0])
            })
        });
        let tokens: Vec<String> = features.iter().map(|f| format!("{f:x} shingle")).collect();
        for variant in [Variant::Affine32, Variant::Legacy] {
            g.bench_function(format!("datasketch-{}", variant.datasketch_name()), |b| {
                let mut m = DatasketchMinHasher::new(variant, 128, 1, Features::Words(5));
                b.iter(|| {
                    m.reset();
                    tokens
                        .iter()
                        .for_each(|t| m.update(black_box(t).as_bytes()));
                    m.hashvalues()[0]
                })
            });
        }
        g.bench_function("bottomk128", |b| {
            let mut builder = BottomKBuilder::new(128, 0, Features::Words(5));
            b.iter(|| {
                features.iter().for_each(|&f| builder.add(black_box(f)));
                builder.finish().hashes().len()
            })
        });
        g.finish();
    }
}

fn bench_weighted(c: &mut Criterion) {
    let text = english_like(6 * 1024);
    let mut token_hashes: Vec<u64> = text
        .split_ascii_whitespace()
        .map(|t| token_hash(t.as_bytes()))
        .collect();
    let tf = term_frequencies(&mut token_hashes);
    let mut g = c.benchmark_group("weighted");
    g.throughput(Throughput::Elements(tf.len() as u64));
    for similarity in [Similarity::Weighted, Similarity::Probability] {
        g.bench_function(format!("{}-128", similarity.scheme().name()), |b| {
            let mut w = WeightedMinHasher::new(similarity, 128, 0, Features::Words(1));
            b.iter(|| {
                w.extend(black_box(&tf).iter().copied());
                w.finish().map(|s| s.values()[0])
            })
        });
    }
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("text-tf-wminhash-v1-128", |b| {
        let mut w = WeightedMinHasher::new(Similarity::Weighted, 128, 0, Features::Words(1));
        let mut hs = Vec::new();
        b.iter(|| {
            hs.clear();
            hs.extend(
                black_box(&text)
                    .split_ascii_whitespace()
                    .map(|t| token_hash(t.as_bytes())),
            );
            w.extend(term_frequencies(&mut hs));
            w.finish().map(|s| s.values()[0])
        })
    });
    g.finish();
}

fn bench_text_to_signature(c: &mut Criterion) {
    let mut g = c.benchmark_group("text_to_signature");
    for size in [1024usize, 6 * 1024, 64 * 1024] {
        let text = english_like(size);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("oph128-word5", size), &text, |b, text| {
            let mut shingler = WordShingler::new(5);
            let mut h = OphMinHasher::new(128, 0, Features::Words(5));
            let mut out = vec![0u32; 128];
            b.iter(|| {
                h.reset();
                for t in black_box(text).split_ascii_whitespace() {
                    if let Some(s) = shingler.push_token(t) {
                        h.update(s);
                    }
                }
                if let Some(s) = shingler.finish() {
                    h.update(s);
                }
                h.finish_into(&mut out);
                out[0]
            })
        });
    }
    g.finish();
}

/// Exact verification's inner loop: the values two sorted shingle sets of 300 hashes share (a pair's exact
/// Jaccard), against a merge that branches on each comparison, at 30 % and 80 % shared; and the bounded
/// count that rejects a pair below a 0.5 Jaccard threshold part of the way through. 256 different pairs a
/// round, as a run judges them: one pair judged over and over teaches the branch predictor its merge.
fn bench_intersection(c: &mut Criterion) {
    use neardup_sketch::bottomk::{intersection_size, intersection_size_reaching};
    fn branching_merge(a: &[u64], b: &[u64]) -> usize {
        let (mut i, mut j, mut common) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        common
    }
    const PAIRS: usize = 256;
    let mut g = c.benchmark_group("intersection");
    g.throughput(Throughput::Elements(PAIRS as u64));
    for shared_percent in [30u64, 80] {
        let values = hashes(PAIRS * 600);
        let pairs: Vec<(Vec<u64>, Vec<u64>)> = values
            .chunks_exact(600)
            .map(|base| {
                let mut a = base[..300].to_vec();
                let mut b: Vec<u64> = (0..300)
                    .map(|i| match (base[i] >> 7) % 100 < shared_percent {
                        true => base[i],
                        false => base[300 + i],
                    })
                    .collect();
                a.sort_unstable();
                b.sort_unstable();
                (a, b)
            })
            .collect();
        let mut run = |name: &str, count: &dyn Fn(&[u64], &[u64]) -> usize| {
            g.bench_function(
                BenchmarkId::new(name, format!("{shared_percent}%")),
                |bench| {
                    bench.iter(|| {
                        let pairs = black_box(&pairs);
                        pairs.iter().map(|(a, b)| count(a, b)).sum::<usize>()
                    })
                },
            );
        };
        run("blocks", &|a, b| intersection_size(a, b));
        run("branching", &|a, b| branching_merge(a, b));
        // Jaccard 0.5 of two sets of 300 is 200 shared values.
        run("reaching-200", &|a, b| {
            intersection_size_reaching(a, b, 200).unwrap_or_default()
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_intersection,
    bench_simhash,
    bench_lookup3,
    bench_shingle,
    bench_minhash,
    bench_weighted,
    bench_text_to_signature
);
criterion_main!(benches);
