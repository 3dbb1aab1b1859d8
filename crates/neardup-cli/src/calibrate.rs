//! `neardup calibrate`: which k or threshold fits the user's corpus. The engine ([`neardup::calibrate`])
//! scores the pairs and sweeps the settings; this module reads the documents, draws the charts, writes
//! `report.html` and `calibration.json`, and prints the recommendation.

use crate::charts::{self, Chart, Series, Style};
use crate::explain::{STYLE, escape};
use crate::inputs::{DocArgs, Tally, operands_holding};
use crate::records::{self, RecordArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use neardup::calibrate::{Calibration, Settings, SweepRow, Truth, calibrate, sample};
use neardup::{Method, Sketch};
use plotters::prelude::SeriesLabelPosition;
use std::fmt::Write as _;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Every document is read and sketched (as `neardup dedup` does; ids are paths as given, or with
--jsonl the records' ids), then every pair of them is scored: its Hamming distance (SimHash) or its
estimated similarity (MinHash). So give a sample: --sample N (default 2000) keeps N documents,
chosen at random by --sample-seed from all of them in id order (the same documents, the same
sample, whatever order they are read in; `neardup.calibrate` in Python draws the same).

What it measures:

  distances     the histogram of the scores of candidate pairs (SimHash: within k = 7; MinHash:
                sharing an LSH band at threshold 0.5) and of random pairs, each as a fraction of
                its own group
  precision     with --truth: precision, recall and F1 of what `neardup dedup --pairs` reports
                at each k from 0 to 7 (SimHash) or each threshold from 0.5 to 0.95 (MinHash,
                --verify estimate), against the truth's pairs at similarity >= --truth-threshold
  s-curve       MinHash: the probability 1 - (1 - s^r)^b that a pair of similarity s shares a
                band of the banding `dedup` uses at --threshold, with the observed fraction of
                pairs (by the truth's similarity, else by the estimate) that do

The truth file has lines id_a<TAB>id_b<TAB>similarity (or a 0/1 label in the third column; more
columns are ignored; a header line is skipped). Pairs it does not list are negatives.

The recommendation: the best F1, or with --target-precision P the best recall at precision >= P,
or with --target-recall R the best precision at recall >= R. Without truth, SimHash recommends
the largest k at which fewer than 0.1% of random pairs fall, MinHash the S-curve's midpoint.

--out DIR receives distances.svg/.png, precision-recall.svg/.png (with --truth), s-curve.svg/.png
(MinHash), calibration.json (every number) and report.html (one self-contained page: the charts
embedded, no external references). It may not lie inside an input directory (the next run would
read those files as documents).

Examples:
    neardup calibrate --sample 1000 --out cal/ corpus/
    neardup calibrate --truth pairs.tsv --target-precision 0.9 --out cal/ docs/
    neardup calibrate --scheme minhash --shingle 3 --truth pairs.tsv --out cal/ docs/
    neardup calibrate --jsonl --truth pairs.tsv --out cal/ corpus.jsonl.zst";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct CalibrateArgs {
    /// Files and directories (recursively) to calibrate on.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<std::ffi::OsString>,
    /// Ground truth: id_a<TAB>id_b<TAB>similarity (or 0/1) per line.
    #[arg(long, value_name = "PAIRS.tsv")]
    truth: Option<PathBuf>,
    /// A truth pair is a near-duplicate when its similarity is at least this.
    #[arg(long, default_value_t = 0.8, value_parser = crate::plan::parse_similarity)]
    truth_threshold: f64,
    /// Recommend the setting with the best recall at this precision or more.
    #[arg(long, value_parser = crate::plan::parse_similarity, conflicts_with = "target_recall")]
    target_precision: Option<f64>,
    /// Recommend the setting with the best precision at this recall or more.
    #[arg(long, value_parser = crate::plan::parse_similarity)]
    target_recall: Option<f64>,
    /// MinHash: the threshold whose LSH banding the S-curve shows (the bands `dedup` uses at it).
    #[arg(long, default_value_t = 0.8, value_parser = crate::plan::parse_similarity)]
    threshold: f64,
    /// Score at most N documents, chosen at random (every pair of them is scored).
    #[arg(long, default_value_t = 2000, value_name = "N")]
    sample: usize,
    /// How many random pairs to score for the background distribution.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    random_pairs: usize,
    /// The seed of the sample and of the random pairs.
    #[arg(long, default_value_t = 0, value_name = "N")]
    sample_seed: u64,
    /// The directory to write the charts, calibration.json and report.html to (created if needed).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    doc: DocArgs,
    #[command(flatten)]
    records: RecordArgs,
}

pub fn run(mut args: CalibrateArgs) -> Result<ExitCode> {
    // Documents' warnings point to --jsonl, which this command has.
    args.doc.takes_records = true;
    let method = args.doc.method.method()?;
    if let Method::BottomK(_) = method {
        bail!("{method} samples are compared pair by pair: calibrate a SimHash or MinHash scheme");
    }
    if args.sample < 2 {
        bail!("--sample must keep at least two documents");
    }
    let truth = match &args.truth {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the truth file {}", path.display()))?;
            let truth = Truth::parse(&text, &path.display().to_string())?;
            if truth.is_empty() {
                bail!("{}: no pairs", path.display());
            }
            Some(truth)
        }
        None => None,
    };
    // Its charts and report inside an input directory would be read as documents by the next calibration
    // over it (and replace documents of the same names now).
    let out = resolved_dir(&args.out);
    if let Some((op, _)) =
        operands_holding(&out, &args.paths).find(|(op, _)| Path::new(op).is_dir())
    {
        bail!(
            "--out {} lies inside the input directory {}: the next run over it would read the charts and \
             report as documents; give a directory outside the inputs",
            args.out.display(),
            Path::new(op).display()
        );
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;

    let mut tally = Tally::default();
    let mut docs: Vec<(String, Sketch)> = Vec::new();
    if args.records.wanted(&args.paths, &args.doc) {
        let dataset = args.records.open(&args.paths, &args.doc, &mut tally)?;
        records::sketch_all(&dataset, &args.doc, method, false, &mut tally, |batch| {
            // Those that could not be sketched are counted by sketch_all.
            docs.extend(
                (batch.into_iter()).filter_map(|record| Some((record.id, record.result.ok()?.0))),
            );
            Ok(())
        })?;
    } else {
        tally.failed += args
            .doc
            .fingerprint_batches(&args.paths, |outcomes, progress| {
                for o in outcomes {
                    match o.result {
                        Ok(a) => docs.push((o.label, a.sketch)),
                        Err(problem) => tally.record(progress, &o.label, &problem),
                    }
                }
                Ok(())
            })?;
    }
    // The same documents whatever the order they were read in: sorted by id, then sampled with the seed.
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    docs.dedup_by(|a, b| a.0 == b.0);
    let read = docs.len();
    let docs = sample(docs, args.sample, args.sample_seed);
    let (ids, sketches): (Vec<String>, Vec<Sketch>) = docs.into_iter().unzip();

    let settings = Settings {
        truth_threshold: args.truth_threshold,
        target_precision: args.target_precision,
        target_recall: args.target_recall,
        random_pairs: args.random_pairs,
        seed: args.sample_seed,
        threshold: args.threshold,
    };
    let bar = crate::inputs::progress_bar(1000);
    bar.set_message("scoring every pair");
    let report = calibrate(method, &ids, &sketches, truth.as_ref(), &settings, |f| {
        bar.set_position((f * 1000.0) as u64);
        ControlFlow::Continue(())
    })?;
    bar.finish_and_clear();

    let charts = make_charts(&report);
    let mut written = Vec::new();
    for (name, chart) in &charts {
        written.push((*name, charts::write(chart, &args.out, name)?));
    }
    let json = report.to_json(read);
    let json_path = args.out.join("calibration.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let html_path = args.out.join("report.html");
    std::fs::write(&html_path, to_html(&report, read, &written))
        .with_context(|| format!("cannot write {}", html_path.display()))?;

    let mut out = std::io::stdout().lock();
    out.write_all(summary(&report, read).as_bytes())?;
    out.flush()?;
    say!(
        "wrote {} charts, calibration.json and report.html to {}; {}",
        written.len() * 2,
        args.out.display(),
        tally.describe()
    );
    Ok(tally.exit_status(args.doc.strict))
}

fn is_simhash(report: &Calibration) -> bool {
    report.score == "distance"
}

fn format_setting(report: &Calibration, s: f64) -> String {
    if is_simhash(report) {
        format!("{s}")
    } else {
        format!("{s:.2}")
    }
}

/// The charts: always the distances; with truth, precision and recall; for MinHash, the S-curve.
pub fn make_charts(report: &Calibration) -> Vec<(&'static str, Chart)> {
    let mut charts = Vec::new();
    let fraction = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let simhash = is_simhash(report);
    // SimHash: distances up to the largest seen among random pairs (and at least 16); bins of width 1.
    let (width, last) = if simhash {
        let seen = report
            .histogram
            .iter()
            .filter(|b| b.random + b.candidates > 0)
            .map(|b| b.lo)
            .fold(0.0, f64::max);
        (1.0, seen.max(16.0))
    } else {
        (0.05, 1.0)
    };
    let bins: Vec<_> = report.histogram.iter().filter(|b| b.lo <= last).collect();
    let candidates: Vec<(f64, f64)> = bins
        .iter()
        .map(|b| (b.lo, fraction(b.candidates, report.candidates)))
        .collect();
    let random: Vec<(f64, f64)> = bins
        .iter()
        .map(|b| (b.lo, fraction(b.random, report.random)))
        .collect();
    let top = candidates
        .iter()
        .chain(&random)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let x_shift = if simhash { -0.45 } else { 0.0 };
    charts.push((
        "distances",
        Chart {
            title: format!("{} of candidate and random pairs", report.score),
            x_label: report.score.to_owned(),
            y_label: "fraction of the group's pairs".to_owned(),
            x: if simhash {
                (-0.5, last + 0.5)
            } else {
                (0.0, 1.0)
            },
            y: (0.0, (top * 1.1).max(0.01)),
            series: vec![
                Series {
                    name: format!("candidate pairs ({})", report.candidates),
                    points: candidates,
                    style: Style::Bars {
                        offset: x_shift,
                        width: width * 0.45,
                    },
                },
                Series {
                    name: format!("random pairs ({})", report.random),
                    points: random,
                    style: Style::Bars {
                        offset: x_shift + width * 0.45,
                        width: width * 0.45,
                    },
                },
            ],
            markers: vec![(
                report.recommendation.setting,
                format!(
                    "recommended {} = {}",
                    report.setting_name(),
                    format_setting(report, report.recommendation.setting)
                ),
            )],
            legend: SeriesLabelPosition::UpperRight,
        },
    ));
    if !report.sweep.is_empty() {
        let series = |name: &str, f: fn(&SweepRow) -> f64| Series {
            name: name.to_owned(),
            points: report.sweep.iter().map(|r| (r.setting, f(r))).collect(),
            style: Style::LinePoints,
        };
        let (lo, hi) = (
            report.sweep.first().map_or(0.0, |r| r.setting),
            report.sweep.last().map_or(1.0, |r| r.setting),
        );
        let pad = (hi - lo) / 20.0;
        charts.push((
            "precision-recall",
            Chart {
                title: format!("precision and recall per {}", report.setting_name()),
                x_label: report.setting_name().to_owned(),
                y_label: "precision, recall, F1".to_owned(),
                x: (lo - pad, hi + pad),
                y: (0.0, 1.05),
                series: vec![
                    series("precision", |r| r.precision),
                    series("recall", |r| r.recall),
                    series("F1", |r| r.f1),
                ],
                markers: vec![(
                    report.recommendation.setting,
                    format!(
                        "recommended {}",
                        format_setting(report, report.recommendation.setting)
                    ),
                )],
                // Recall rises to the upper right and precision falls to the lower right.
                legend: SeriesLabelPosition::MiddleLeft,
            },
        ));
    }
    if let Some(curve) = &report.s_curve {
        let theory: Vec<(f64, f64)> = (0..=100)
            .map(|i| {
                let s = i as f64 / 100.0;
                (s, curve.banding.probability(s))
            })
            .collect();
        charts.push((
            "s-curve",
            Chart {
                title: format!(
                    "S-curve of {} (threshold {})",
                    curve.banding, curve.threshold
                ),
                x_label: if curve.by_truth {
                    "similarity (truth)".to_owned()
                } else {
                    "estimated similarity".to_owned()
                },
                y_label: "probability of sharing a band".to_owned(),
                x: (0.0, 1.0),
                y: (0.0, 1.05),
                series: vec![
                    Series {
                        name: "1 - (1 - s^r)^b".to_owned(),
                        points: theory,
                        style: Style::Line,
                    },
                    Series {
                        name: "observed pairs".to_owned(),
                        points: curve
                            .observed
                            .iter()
                            .map(|&(s, all, shared)| (s, fraction(shared, all)))
                            .collect(),
                        style: Style::Points,
                    },
                ],
                markers: vec![(curve.threshold, format!("threshold {}", curve.threshold))],
                legend: SeriesLabelPosition::UpperLeft,
            },
        ));
    }
    charts
}

/// One sweep row as printed (and as the report's table shows it).
fn sweep_cells(report: &Calibration, r: &SweepRow) -> [String; 6] {
    [
        format_setting(report, r.setting),
        r.detected.to_string(),
        r.true_positives.to_string(),
        format!("{:.4}", r.precision),
        format!("{:.4}", r.recall),
        format!("{:.4}", r.f1),
    ]
}

const SWEEP_HEADER: [&str; 6] = [
    "setting",
    "detected",
    "true_pos",
    "precision",
    "recall",
    "f1",
];

fn recommendation_line(report: &Calibration) -> String {
    let r = &report.recommendation;
    let mut line = format!(
        "recommended {} = {} ({})",
        report.setting_name(),
        format_setting(report, r.setting),
        r.why
    );
    if let Some(row) = &r.row {
        let _ = write!(
            line,
            ": precision {:.4}, recall {:.4}, F1 {:.4}",
            row.precision, row.recall, row.f1
        );
    }
    line
}

fn summary(report: &Calibration, read: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "scheme\t{}", report.method);
    let _ = writeln!(
        s,
        "documents\t{} scored of {read} read; {} pairs, {} candidates, {} random",
        report.documents, report.pairs, report.candidates, report.random
    );
    if let Some(p) = report.positives {
        let _ = writeln!(s, "positives\t{p}");
    }
    if !report.sweep.is_empty() {
        let mut header = SWEEP_HEADER;
        header[0] = report.setting_name();
        let _ = writeln!(s, "{}", header.join("\t"));
        for r in &report.sweep {
            let _ = writeln!(s, "{}", sweep_cells(report, r).join("\t"));
        }
    }
    let _ = writeln!(s, "{}", recommendation_line(report));
    s
}

fn to_html(report: &Calibration, read: usize, charts: &[(&str, charts::Written)]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>neardup calibrate: {}</title>\
         <style>{STYLE} figure{{margin:1em 0}} img{{max-width:100%}}</style></head><body>\n\
         <h1>Calibration of {}</h1>\n<p>{} documents scored of {read} read: {} pairs, {} candidate pairs, {} random \
         pairs.</p>\n<p><b>{}</b></p>\n",
        escape(&report.method),
        escape(&report.method),
        report.documents,
        report.pairs,
        report.candidates,
        report.random,
        escape(&recommendation_line(report))
    );
    if !report.sweep.is_empty() {
        let mut header = SWEEP_HEADER;
        header[0] = report.setting_name();
        let _ = write!(
            s,
            "<h2>Precision and recall</h2><p>Against {} truth pairs at similarity ≥ the truth threshold.</p>\
             <table id=\"sweep\"><tr>{}</tr>",
            report.positives.unwrap_or(0),
            header
                .iter()
                .map(|h| format!("<th>{h}</th>"))
                .collect::<String>()
        );
        for r in &report.sweep {
            let _ = write!(
                s,
                "<tr>{}</tr>",
                sweep_cells(report, r)
                    .iter()
                    .map(|c| format!("<td>{c}</td>"))
                    .collect::<String>()
            );
        }
        s.push_str("</table>\n");
    }
    for (name, w) in charts {
        let what = match *name {
            "distances" => {
                "The scores of candidate pairs (what a run at the loosest setting examines) and of random pairs, \
                 each as a fraction of its group: near-duplicates stand out where the candidates' bars rise \
                 above the random pairs'."
            }
            "precision-recall" => {
                "Precision, recall and F1 of the pairs a run reports at each setting, against the truth."
            }
            _ => {
                "The probability that a pair shares an LSH band (the line) and the fraction of observed pairs \
                 that did (the points), by similarity."
            }
        };
        // The SVG inline, then the PNG as a data URI: the page needs no other file.
        let svg = w
            .svg
            .trim_start_matches(|c: char| c != '<')
            .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
        let _ = writeln!(
            s,
            "<h2>{name}</h2><p>{what}</p><figure>{svg}</figure><details><summary>PNG</summary>\
             <img alt=\"{name}\" src=\"data:image/png;base64,{}\"></details>",
            data_encoding::BASE64.encode(&w.png)
        );
    }
    s.push_str("</body></html>\n");
    s
}

/// A directory's path with links and `..` resolved as far as it exists, and lexically beyond (as
/// `create_dir_all` will make it).
fn resolved_dir(dir: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut resolved = PathBuf::new();
    for component in absolute.components() {
        match component {
            // The prefix is resolved already, so its parent is where `..` leads, as for the kernel.
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            part => {
                resolved.push(part);
                if let Ok(real) = std::fs::canonicalize(&resolved) {
                    resolved = real;
                }
            }
        }
    }
    resolved
}
