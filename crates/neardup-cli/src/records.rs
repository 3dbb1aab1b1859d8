//! Record inputs: JSON Lines (plain, .gz, .zst; directories of shards; stdin) and Parquet, read through
//! `neardup-io`, sketched in parallel batches, with a progress bar by bytes.

use crate::inputs::{DocArgs, MediaChoice, Problem, Tally};
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use neardup::media::Media;
use neardup::{Method, Profile, Sketch};
use neardup_io::{Dataset, DatasetOptions, FieldPath, FieldRole};
use rayon::prelude::*;

/// How records are found in their files.
#[derive(Args, Clone)]
pub struct RecordArgs {
    /// Read the inputs as records, not documents: JSON Lines (.jsonl, .jsonl.gz, .jsonl.zst, or '-') or
    /// Parquet, or directories of such shards (a warning counts a directory's other files, left out).
    /// Without it, files with those extensions, and directories holding nothing else (but markers such as
    /// _SUCCESS), are read as records too; among other documents, they are documents.
    #[arg(long, alias = "records")]
    pub jsonl: bool,
    /// Records: the field holding the id (a dotted path into nested objects or struct columns).
    #[arg(long, default_value = "id", value_name = "FIELD")]
    pub id_field: FieldPath,
    /// Records: the field holding the text.
    #[arg(long, default_value = "text", value_name = "FIELD")]
    pub text_field: FieldPath,
    /// Records: a field naming each record's medium (text, html, xml, ...); overrides --media.
    #[arg(long, value_name = "FIELD")]
    pub media_field: Option<FieldPath>,
}

impl RecordArgs {
    /// Whether the operands are records: asked for; or, with no `--files-from`, every operand a file whose
    /// name says JSON Lines or Parquet, or a directory holding only such files and `_` markers (when
    /// `--glob`, `--exclude` or `--type` choose none of its files: they choose documents).
    pub fn wanted(&self, operands: &[std::ffi::OsString], doc: &DocArgs) -> bool {
        self.jsonl
            || (doc.files_from.is_none()
                && !operands.is_empty()
                && operands.iter().all(|op| {
                    let path = std::path::Path::new(op);
                    if path.is_dir() {
                        !doc.selects_files() && neardup_io::holds_only_shards(path)
                    } else {
                        path.is_file() && neardup_io::is_shard(path)
                    }
                }))
    }

    /// Opens the dataset: the operands and the shards `--files-from` lists; problems with operands are
    /// reported on stderr and counted. `--glob`, `--exclude` and `--type` with a directory are refused:
    /// they choose among the files of directories of documents, and a dataset is every shard of its
    /// directories.
    pub fn open(
        &self,
        operands: &[std::ffi::OsString],
        doc: &DocArgs,
        tally: &mut Tally,
    ) -> Result<Dataset> {
        if doc.selects_files() && operands.iter().any(|op| std::path::Path::new(op).is_dir()) {
            anyhow::bail!(
                "--glob, --exclude and --type choose among the files of directories of documents; with \
                 records, every shard of a directory is read, and only the shards: name the shards to read \
                 (or list them in a file for --files-from)"
            );
        }
        let mut operands = operands.to_vec();
        if let Some(list) = &doc.files_from {
            operands.extend(
                crate::inputs::read_file_list(list)?
                    .into_iter()
                    .map(Into::into),
            );
        }
        let options = DatasetOptions {
            id_field: self.id_field.clone(),
            text_field: self.text_field.clone(),
            media_field: self.media_field.clone(),
            format: None,
        };
        let mut paths = Vec::with_capacity(operands.len());
        for op in &operands {
            match op.to_str() {
                Some(path) => paths.push(path.to_owned()),
                None => {
                    tally.failed += 1;
                    say!(
                        "{}: a dataset's path must be UTF-8 (rename the file, or read it from stdin)",
                        crate::inputs::path_label(std::path::Path::new(op))
                    );
                }
            }
        }
        let (dataset, problems) = Dataset::open(&paths, options);
        for p in problems {
            tally.failed += 1;
            say!("{p}");
        }
        for notice in dataset.notices() {
            say!("warning: {notice}");
        }
        Ok(dataset)
    }
}

/// One record, sketched.
pub struct Sketched {
    /// Its position in the dataset (0, 1, … across all files).
    pub ordinal: u64,
    /// Its id.
    pub id: String,
    /// Where it is: `FILE:LINE` or `FILE:ROW`.
    pub origin: String,
    /// The size of its text in bytes.
    pub bytes: u64,
    /// Its sketch, exact profile (when asked) and length in tokens or shingles; or why it has none.
    pub result: Result<(Sketch, Option<Profile>, u64), Problem>,
}

impl Sketched {
    /// How it is named in messages: `FILE:LINE (ID)`.
    pub fn label(&self) -> String {
        crate::inputs::record_label(&self.origin, &self.id)
    }
}

/// Reads every record of the dataset, sketches the texts in parallel batches (each batch handed to `each`
/// in input order), and draws progress by bytes. Read errors (a damaged file) and records that could not be
/// sketched are reported and counted in `tally`.
pub fn sketch_all(
    dataset: &Dataset,
    doc: &DocArgs,
    method: Method,
    keep_profiles: bool,
    tally: &mut Tally,
    mut each: impl FnMut(Vec<Sketched>) -> Result<()>,
) -> Result<()> {
    let progress = bytes_bar(dataset.total_bytes(), "sketching");
    let mut problems = Tally::default();
    let summary = dataset.for_each_batch(
        4096,
        &mut |bytes| progress.set_position(bytes),
        &mut |batch| -> Result<()> {
            let sketched: Vec<Sketched> = batch
                .into_par_iter()
                .map(|record| {
                    let forced = record
                        .media
                        .as_deref()
                        .and_then(Media::from_name)
                        .map(MediaChoice::Forced);
                    let result = record
                        .text
                        .map_err(Problem::failed)
                        .and_then(|text| doc.sketch_text_as(forced, method, &text, keep_profiles));
                    Sketched {
                        ordinal: record.ordinal,
                        origin: record.origin.to_string(),
                        id: record.id,
                        bytes: record.bytes,
                        result,
                    }
                })
                .collect();
            for record in &sketched {
                if let Err(problem) = &record.result {
                    problems.record(&progress, &record.label(), problem);
                }
            }
            each(sketched)
        },
    )?;
    progress.finish_and_clear();
    tally.failed += problems.failed;
    tally.empty += problems.empty;
    for e in &summary.errors {
        tally.failed += 1;
        say!("{e}");
    }
    for notice in summary.field_notices(dataset.options()) {
        let advice = match notice.field {
            FieldRole::Id => "check --id-field",
            FieldRole::Text => "check --text-field",
            FieldRole::Format => {
                "without --jsonl, a file named other than .jsonl, .json, .ndjson (optionally .gz or \
                 .zst) or .parquet is read as one document (HTML, PDF, text, …)"
            }
        };
        say!("warning: {}; {advice}", notice.message);
    }
    Ok(())
}

/// A progress bar for `total` input bytes, drawn only when stderr is a terminal.
pub fn bytes_bar(total: u64, phase: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {phase} [{{bar:30}}] {{bytes}}/{{total_bytes}} ({{bytes_per_sec}}), {{elapsed}} elapsed, eta {{eta}}"
        ))
        .expect("static template")
        .progress_chars("=> "),
    );
    bar
}

/// A spinner for a phase without a known length (finding pairs, writing), drawn only on a terminal.
pub fn phase(message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}, {elapsed}").expect("static template"),
    );
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
