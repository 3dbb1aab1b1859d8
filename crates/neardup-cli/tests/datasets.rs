//! Datasets through the real binary: Parquet and compressed JSON Lines in, the deduplicated dataset, the
//! removed records and the cluster table out; kept + removed = input, every column kept, order kept.

mod common;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::{neardup, stderr_of_success, temp_dir, text};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::HashSet;
use std::sync::Arc;

/// 60 documents: 20 different originals (60 words drawn from a vocabulary by a seeded generator), each
/// with two reformatted copies, in an interleaved order.
fn rows() -> Vec<(String, String, i64)> {
    let vocabulary: Vec<String> = (0..500)
        .map(|i| format!("w{}x{}", i * 7919 % 1009, i))
        .collect();
    let original = |d: u64| -> String {
        let mut state = d.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..60)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                vocabulary[(state % 500) as usize].as_str()
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut rows = Vec::new();
    for copy in 0..3 {
        for d in 0..20 {
            // The copies are the original reformatted: upper case, or words separated by commas.
            let text = match copy {
                0 => original(d),
                1 => original(d).to_uppercase(),
                _ => original(d).replace(' ', ", "),
            };
            rows.push((
                format!("doc-{d:02}-{copy}"),
                text,
                (copy * 100 + d as usize) as i64,
            ));
        }
    }
    rows
}

fn write_parquet(path: &std::path::Path) {
    let rows = rows();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.0.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ],
    )
    .unwrap();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn read_parquet(path: &std::path::Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn strings(batches: &[RecordBatch], column: &str) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name(column).unwrap();
            let c = c.as_any().downcast_ref::<StringArray>().unwrap();
            (0..c.len())
                .map(|i| c.value(i).to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn parquet_round_trip_keeps_every_record_and_column() {
    let dir = temp_dir("parquet");
    let input = dir.join("corpus.parquet");
    write_parquet(&input);
    let (kept, removed, table) = (
        dir.join("kept.parquet"),
        dir.join("removed.parquet"),
        dir.join("clusters.tsv"),
    );
    for scheme in [vec![], vec!["--scheme", "minhash", "--shingle", "3"]] {
        let mut args = vec!["dedup"];
        args.extend(scheme.iter().copied());
        let (i, k, r, t) = (
            input.to_str().unwrap(),
            kept.to_str().unwrap(),
            removed.to_str().unwrap(),
            table.to_str().unwrap(),
        );
        args.extend(["--header", "--output", k, "--removed", r, "--table", t, i]);
        let out = neardup(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "files carry the results");
        let (kept_rows, removed_rows) = (read_parquet(&kept), read_parquet(&removed));
        let kept_ids = strings(&kept_rows, "id");
        let removed_ids = strings(&removed_rows, "id");
        assert_eq!(kept_ids.len() + removed_ids.len(), 60, "{scheme:?}");
        assert_eq!(kept_ids.len(), 20, "{scheme:?}: {kept_ids:?}");
        // Every input column is kept, the removed rows gain duplicate_of and score.
        assert_eq!(kept_rows[0].schema().fields().len(), 3);
        assert_eq!(removed_rows[0].schema().fields().len(), 5);
        let kept_set: HashSet<&String> = kept_ids.iter().collect();
        for of in strings(&removed_rows, "duplicate_of") {
            assert!(kept_set.contains(&of), "{of} is not kept");
        }
        // Input order is kept (ids were written in that order).
        let order: Vec<String> = rows().into_iter().map(|r| r.0).collect();
        let position = |id: &String| order.iter().position(|o| o == id).unwrap();
        assert!(
            kept_ids
                .windows(2)
                .all(|w| position(&w[0]) < position(&w[1]))
        );
        let table_text = std::fs::read_to_string(&table).unwrap();
        assert!(
            table_text.starts_with("id\tcluster\trepresentative\tduplicate_of\tscore\n"),
            "{table_text}"
        );
        assert_eq!(table_text.lines().count(), 61);
    }
}

#[test]
fn compressed_jsonl_in_and_out() {
    let dir = temp_dir("jsonl-zst");
    let lines: String = rows()
        .into_iter()
        .map(|(id, text, n)| format!("{}\n", serde_json::json!({"id": id, "text": text, "n": n})))
        .collect();
    let gz = dir.join("corpus.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    std::io::Write::write_all(&mut encoder, lines.as_bytes()).unwrap();
    encoder.finish().unwrap();
    let kept = dir.join("kept.jsonl");
    let out = neardup(&[
        "dedup",
        "--output",
        kept.to_str().unwrap(),
        gz.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let kept_lines = std::fs::read_to_string(&kept).unwrap();
    assert_eq!(kept_lines.lines().count(), 20);
    // Kept lines are the input's, byte for byte.
    for line in kept_lines.lines() {
        assert!(lines.contains(line));
    }
}

#[test]
fn keep_longest_counts_the_tokens_of_records() {
    // Two records within k bits; the longer has the larger id, so only its token count can make it the
    // representative (a record's count once was 0 for SimHash, and every tie went to the smallest id).
    let dir = temp_dir("keep-longest");
    let base = rows()[0].1.clone();
    let longer = format!("{base} and one more closing remark");
    let input = dir.join("corpus.jsonl");
    std::fs::write(
        &input,
        format!(
            "{}\n{}\n",
            serde_json::json!({"id": "a-short", "text": base}),
            serde_json::json!({"id": "b-long", "text": longer}),
        ),
    )
    .unwrap();
    let simhash: &[&str] = &["--scheme", "simhash", "--k", "7"];
    let minhash: &[&str] = &[
        "--scheme",
        "minhash",
        "--threshold",
        "0.5",
        "--verify",
        "estimate",
    ];
    for scheme in [simhash, minhash] {
        let input = input.to_str().unwrap();
        let args = [&["dedup", "--keep", "longest", "--jsonl", input], scheme].concat();
        let out = neardup(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let first = stdout.lines().next().unwrap_or_default();
        assert!(first.contains("\tb-long\t"), "{scheme:?}: {stdout}");
    }
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_run_and_no_input_is_overwritten() {
    let dir = temp_dir("outputs-refused");
    let input = dir.join("corpus.jsonl");
    let lines: String = rows()
        .into_iter()
        .map(|(id, text, n)| format!("{}\n", serde_json::json!({"id": id, "text": text, "n": n})))
        .collect();
    std::fs::write(&input, &lines).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let kept = dir.join("kept.jsonl");
    let through_a_dot_dot = dir.join("sub").join("..").join("corpus.jsonl");
    std::fs::create_dir(dir.join("sub")).unwrap();
    for (args, message) in [
        (
            vec!["--output".to_owned(), path(&input)],
            "this output is the input",
        ),
        (
            vec![
                "--output".to_owned(),
                path(&kept),
                "--removed".to_owned(),
                path(&through_a_dot_dot),
            ],
            "this output is the input",
        ),
        // The cluster table replaced the input (after the run) before this was refused.
        (
            vec!["--table".to_owned(), path(&through_a_dot_dot)],
            "this output is the input",
        ),
        (
            vec![
                "--output".to_owned(),
                path(&kept),
                "--table".to_owned(),
                path(&dir.join("sub").join("..").join("kept.jsonl")),
            ],
            "are the same file",
        ),
        (
            vec!["--output".to_owned(), path(&dir.join("kept.parquet"))],
            "is JSONL and this output is Parquet",
        ),
        // Found when the output was renamed into place, after the run.
        (
            vec!["--table".to_owned(), path(&dir.join("sub"))],
            "is a directory: an output must name a file",
        ),
        (
            vec![
                "--output".to_owned(),
                path(&dir.join("no").join("kept.jsonl")),
            ],
            "kept.jsonl: its directory",
        ),
    ] {
        let mut all = vec!["dedup".to_owned()];
        all.extend(args);
        all.push(path(&input));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = neardup(&all);
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(message),
            "{all:?}: {stderr}"
        );
        // Refused before the run: no document was read.
        assert!(!stderr.contains("near-duplicate"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), lines);
        assert!(!kept.exists());
    }
}

#[test]
fn a_table_that_is_a_document_is_refused_and_outputs_a_later_run_would_read_are_named() {
    let dir = temp_dir("outputs-among-inputs");
    let docs = dir.join("docs");
    std::fs::create_dir(&docs).unwrap();
    let words = "the same few words in two files, near duplicates of each other";
    std::fs::write(docs.join("a.txt"), words).unwrap();
    std::fs::write(docs.join("b.txt"), words).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    // Documents (not records): the table would have replaced a document, named or found in a directory.
    for (operand, table) in [
        (docs.join("a.txt"), docs.join("a.txt")),
        (docs.clone(), docs.join("b.txt")),
    ] {
        let out = neardup(&[
            "dedup",
            &path(&operand),
            &path(&docs.join("b.txt")),
            "--table",
            &path(&table),
        ]);
        let stderr = text(&out.stderr);
        assert!(
            out.status.code() == Some(2)
                && stderr.contains("writing it would replace that document"),
            "{stderr}"
        );
        assert!(!stderr.contains("near-duplicate"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&table).unwrap(), words);
    }
    // A new table inside the input directory is written, and the user told that the next run reads it.
    let table = docs.join("clusters.tsv");
    let stderr = stderr_of_success(&["dedup", &path(&docs), "--table", &path(&table)]);
    assert!(
        stderr.contains("clusters.tsv: this output is inside the input directory")
            && stderr.contains("a later run over it will read it as a document"),
        "{stderr}"
    );
    assert!(table.exists());
    // Records: a split inside the directory of shards is named; a hidden one is not (the walk skips it).
    let shards = dir.join("shards");
    std::fs::create_dir(&shards).unwrap();
    std::fs::write(
        shards.join("part-0.jsonl"),
        format!("{}\n", serde_json::json!({"id": "a", "text": words})),
    )
    .unwrap();
    for (kept, named) in [("kept.jsonl", true), (".kept.jsonl", false)] {
        let stderr = stderr_of_success(&[
            "dedup",
            "--jsonl",
            &path(&shards),
            "--output",
            &path(&shards.join(kept)),
        ]);
        assert_eq!(
            stderr.contains("will read it as input"),
            named,
            "{kept}: {stderr}"
        );
        std::fs::remove_file(shards.join(kept)).unwrap();
    }
}

#[test]
fn a_file_of_documents_read_as_json_lines_is_told_apart() {
    let dir = temp_dir("documents-as-records");
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "release notes\nfixed a crash on open\n").unwrap();
    let out = neardup(&["dedup", "--jsonl", notes.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "neardup: warning: not one of the 2 lines read is a JSON object: the input is not JSON Lines; \
             without --jsonl, a file named other than .jsonl"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("--text-field"), "{stderr}");
    // Without --jsonl the same file is one document.
    let out = neardup(&["dedup", notes.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_misspelt_id_or_text_field_is_named() {
    let dir = temp_dir("misspelt-fields");
    let parquet = dir.join("corpus.parquet");
    write_parquet(&parquet);
    // A missing id column: the rows are known by their place and still deduplicated (20 clusters of 3),
    // with a warning that names the field; before, every row failed with "no column".
    let out = neardup(&["dedup", "--id-field", "uid", parquet.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "neardup: warning: no record has an id in the field 'uid': each document is known by its \
             place (FILE:LINE or FILE:ROW); check --id-field"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("60 documents, 40 duplicates in 20 clusters"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains(&format!("{}:0\t", parquet.display())));
    // No text anywhere: every record fails (a non-zero exit) and the warning names the field.
    let out = neardup(&["dedup", "--text-field", "body", parquet.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "neardup: warning: not one of the 60 records is a document with text in the field 'body'; \
             check --text-field"
        ),
        "{stderr}"
    );
    // The default id field, absent, is not worth a warning: records without ids are common.
    let out = neardup(&["dedup", "--id-field", "id", parquet.to_str().unwrap()]);
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_directory_of_shards_is_a_dataset_and_shards_among_documents_are_named() {
    let dir = temp_dir("directory-of-shards");
    let shards = dir.join("shards");
    std::fs::create_dir(&shards).unwrap();
    let words = "the same few words in two records, near duplicates of each other";
    let record = |id: &str| format!("{}\n", serde_json::json!({"id": id, "text": words}));
    std::fs::write(shards.join("part-0.jsonl"), record("a")).unwrap();
    std::fs::write(shards.join("part-1.ndjson"), record("b")).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let records = neardup(&["dedup", "--jsonl", &path(&shards)]);
    assert!(records.status.success(), "{}", text(&records.stderr));
    assert!(text(&records.stdout).contains("1\ta\t0\n1\tb\t0\n"));
    // A directory holding only shards is read as records without --jsonl, by dedup and hash alike.
    let found = neardup(&["dedup", &path(&shards)]);
    assert!(found.status.success(), "{}", text(&found.stderr));
    assert_eq!(found.stdout, records.stdout);
    let hashed = text(&neardup(&["hash", &path(&shards)]).stdout);
    assert!(
        hashed.ends_with("\ta\nsimhash-doc-v1:bpbkaqsuxdbks\tb\n"),
        "{hashed}"
    );

    // Spark's `_SUCCESS` marker leaves it a dataset; a table written into it is a file that a later run
    // would read as a document, and the run says so.
    std::fs::write(shards.join("_SUCCESS"), "").unwrap();
    let table = shards.join("clusters.tsv");
    let stderr = stderr_of_success(&["dedup", &path(&shards), "--table", &path(&table)]);
    assert!(
        stderr.contains("clusters.tsv: this table is inside")
            && stderr.contains("a later run over it needs --jsonl"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not read"),
        "a marker is not data: {stderr}"
    );
    let rows = std::fs::read_to_string(&table).unwrap();
    assert!(rows.lines().any(|row| row.starts_with("b\t")), "{rows}");
    std::fs::remove_file(&table).unwrap();
    std::fs::remove_file(shards.join("_SUCCESS")).unwrap();

    // With another file beside them they are documents, and the run says so once, naming the first.
    std::fs::write(shards.join("notes.txt"), words).unwrap();
    let stderr = stderr_of_success(&["dedup", &path(&shards)]);
    assert!(
        stderr.contains(&format!(
            "neardup: warning: {}: this and 1 more file named as JSON Lines or Parquet, among other \
             documents: each read as one document (compressed and Parquet ones fail); --jsonl reads their records \
             instead, and leaves the other files out",
            path(&shards.join("part-0.jsonl"))
        )),
        "{stderr}"
    );
    assert!(stderr.contains("3 documents"), "{stderr}");
    // A command that reads only documents says which ones read records.
    let index = dir.join("index");
    assert!(
        neardup(&["index", "create", &path(&index)])
            .status
            .success()
    );
    let added = neardup(&["index", "add", &path(&index), &path(&shards)]);
    assert!(
        text(&added.stderr).contains(
            "each read as one document (compressed and Parquet ones fail); `neardup hash --jsonl` and `neardup \
             dedup --jsonl` read records (`neardup hash --jsonl DATASET | neardup index add-fingerprints \
             INDEX -` indexes them)"
        ),
        "{}",
        text(&added.stderr)
    );
    // --jsonl leaves the other file out, and says so (it was once silent).
    let asked = neardup(&["dedup", "--jsonl", &path(&shards)]);
    assert_eq!(asked.stdout, records.stdout, "{}", text(&asked.stderr));
    assert!(asked.status.success());
    assert!(
        text(&asked.stderr).contains(&format!(
            "neardup: warning: {}: 1 file in this directory is not read (the first: {}): records are read \
             only from .jsonl, .json, .ndjson (optionally .gz or .zst) or .parquet files",
            path(&shards),
            path(&shards.join("notes.txt"))
        )),
        "{}",
        text(&asked.stderr)
    );

    // Choosing files among a directory's is for documents: refused with records, not ignored.
    let chosen = neardup(&["dedup", "--jsonl", &path(&shards), "-g", "part-0*"]);
    assert_eq!(chosen.status.code(), Some(2));
    assert!(
        text(&chosen.stderr).contains("name the shards to read"),
        "{}",
        text(&chosen.stderr)
    );
    // --files-from adds shards to the operands (it was once left unread with records).
    let list = dir.join("list");
    std::fs::write(&list, format!("{}\n", path(&shards.join("part-1.ndjson")))).unwrap();
    let listed = neardup(&[
        "dedup",
        "--jsonl",
        "--files-from",
        &path(&list),
        &path(&shards.join("part-0.jsonl")),
    ]);
    assert_eq!(listed.stdout, records.stdout, "{}", text(&listed.stderr));
}
