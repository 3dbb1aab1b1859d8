//! Kernel benchmarks: `cargo bench -p neardup-sketch`.
//!
//! * `lookup3`: the pinned token hash on English-like word lengths.
//! * `simhash64`: the bit-sliced accumulator against the textbook loop, per feature. Build once with and once
//!   without `RUSTFLAGS="-C target-cpu=native"` to see that the bit-sliced kernel needs no dispatch.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use neardup_sketch::lookup3::jenkins64;
use neardup_sketch::simhash::{SimHash64, simhash64_naive};
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

criterion_group!(benches, bench_simhash, bench_lookup3);
criterion_main!(benches);
