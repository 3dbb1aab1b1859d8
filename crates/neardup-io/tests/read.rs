//! The first pass: resolving operands and streaming records from JSON Lines and Parquet.

mod common;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BinaryArray, DictionaryArray, Int32Array, LargeStringArray, RecordBatch, StringArray,
    StructArray, UInt64Array,
};
use arrow_schema::{DataType, Field};
use common::{gzip, ids, open, read_all, texts_dataset, zstd};
use neardup_io::{Compression, Dataset, DatasetOptions, FieldPath, FieldRole, Format, Position};
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

const DOCS: &str = "{\"id\":\"a\",\"text\":\"alpha\"}\n\n{\"id\":\"b\",\"text\":\"beta\"}\n";

#[test]
fn jsonl_plain_gzip_and_zstd() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("p.jsonl");
    let gz = dir.path().join("g.jsonl.gz");
    let zst = dir.path().join("z.json.zst");
    let sniffed = dir.path().join("s.data");
    std::fs::write(&plain, DOCS).unwrap();
    std::fs::write(&gz, gzip(DOCS.as_bytes())).unwrap();
    std::fs::write(&zst, zstd(DOCS.as_bytes())).unwrap();
    std::fs::write(&sniffed, zstd(DOCS.as_bytes())).unwrap();
    for (path, format) in [
        (&plain, Format::Jsonl(Compression::None)),
        (&gz, Format::Jsonl(Compression::Gzip)),
        (&zst, Format::Jsonl(Compression::Zstd)),
        (&sniffed, Format::Jsonl(Compression::Zstd)),
    ] {
        let (dataset, errors) = open(&[path], DatasetOptions::default());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(dataset.inputs()[0].format(), format);
        let (records, summary, progress) = read_all(&dataset, 1);
        assert_eq!(ids(&records), ["a", "b"]);
        assert_eq!(records[1].text, Ok("beta".to_owned()));
        assert_eq!(records[1].bytes, 4);
        assert_eq!(records[1].ordinal, 1);
        // Blank lines are skipped but counted.
        assert_eq!(records[1].origin.position, Position::Line(3));
        assert_eq!(
            records[1].origin.to_string(),
            format!("{}:3", path.display())
        );
        assert_eq!(
            (summary.records, summary.documents, summary.files),
            (2, 2, 1)
        );
        assert!(summary.errors.is_empty());
        assert_eq!(progress.last(), Some(&dataset.total_bytes()));
        assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    }
}

#[test]
fn directory_of_mixed_shards_in_path_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join(".cache")).unwrap();
    std::fs::write(root.join("b.jsonl"), "{\"id\":\"b\",\"text\":\"t\"}\n").unwrap();
    std::fs::write(
        root.join("a/z.jsonl.gz"),
        gzip(b"{\"id\":\"az\",\"text\":\"t\"}\n"),
    )
    .unwrap();
    // '.' sorts before '/': a.x.jsonl.zst comes before a/z.jsonl.gz.
    std::fs::write(
        root.join("a.x.jsonl.zst"),
        zstd(b"{\"id\":\"ax\",\"text\":\"t\"}\n"),
    )
    .unwrap();
    std::fs::write(
        root.join(".hidden.jsonl"),
        "{\"id\":\"h\",\"text\":\"t\"}\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".cache/c.jsonl"),
        "{\"id\":\"c\",\"text\":\"t\"}\n",
    )
    .unwrap();
    std::fs::write(root.join("notes.txt"), "not a shard\n").unwrap();
    std::fs::write(root.join("a/notes.md"), "not a shard either\n").unwrap();
    std::fs::write(root.join("_SUCCESS"), "").unwrap();
    write_parquet(&root.join("c.parquet"), &small_batch());
    let (dataset, errors) = open(&[&root], DatasetOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
    // The files left out are named (hidden ones and the marker aside), the first in path order.
    assert_eq!(
        dataset.notices(),
        [format!(
            "{}: 2 files in this directory are not read (the first: {}): records are read only from .jsonl, \
             .json, .ndjson (optionally .gz or .zst) or .parquet files (name a file to read it whatever its name)",
            root.display(),
            root.join("a/notes.md").display()
        )]
    );
    let labels: Vec<String> = dataset
        .inputs()
        .iter()
        .map(|i| {
            i.label()
                .strip_prefix(&root.display().to_string())
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        labels,
        ["/a.x.jsonl.zst", "/a/z.jsonl.gz", "/b.jsonl", "/c.parquet"]
    );
    let (records, summary, _) = read_all(&dataset, 2);
    assert_eq!(ids(&records), ["ax", "az", "b", "1", "2", "3", "4"]);
    let ordinals: Vec<u64> = records.iter().map(|r| r.ordinal).collect();
    assert_eq!(ordinals, (0..7).collect::<Vec<_>>());
    assert_eq!(summary.files, 4);
}

#[test]
fn stdin_is_spooled_and_read_twice() {
    let mut stdin = Cursor::new(gzip(DOCS.as_bytes()));
    let (dataset, errors) = Dataset::open_with_stdin(
        &["-".to_owned(), "-".to_owned()],
        DatasetOptions::default(),
        &mut stdin,
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].to_string().contains("standard input given twice"));
    assert_eq!(
        dataset.inputs()[0].format(),
        Format::Jsonl(Compression::Gzip)
    );
    assert_eq!(dataset.inputs()[0].label(), "-");
    let (first, _, _) = read_all(&dataset, 10);
    let (second, _, _) = read_all(&dataset, 10);
    assert_eq!(ids(&first), ["a", "b"]);
    assert_eq!(first, second);
    assert_eq!(first[0].origin.to_string(), "-:1");

    let spooled = neardup_io::spool(&mut Cursor::new(b"abc".to_vec())).unwrap();
    assert_eq!(std::fs::read(&spooled).unwrap(), b"abc");
    let path = spooled.to_path_buf();
    drop(spooled);
    assert!(!path.exists(), "the spool file is deleted with its path");
}

#[test]
fn nested_fields_numeric_ids_and_media() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"meta\":{\"id\":12,\"kind\":\"html\"},\"body\":{\"text\":\"<p>x</p>\"}}\n",
            "{\"meta\":{\"id\":1.5},\"body\":{\"text\":\"y\"}}\n",
            "{\"meta\":{\"id\":\"s\"},\"body\":\"flat\"}\n",
        ),
    )
    .unwrap();
    let options = DatasetOptions {
        id_field: FieldPath::new("meta.id").unwrap(),
        text_field: "body.text".parse().unwrap(),
        media_field: Some(FieldPath::new("meta.kind").unwrap()),
        format: None,
    };
    let (dataset, _) = open(&[&path], options);
    let (records, _, _) = read_all(&dataset, 8);
    // An id that is a number but not an integer is refused (a float does not keep the digits it was written
    // with): the record is named by its place.
    let ids = ids(&records);
    assert_eq!([ids[0], ids[2]], ["12", "s"]);
    assert!(ids[1].ends_with("n.jsonl:2"), "{ids:?}");
    assert_eq!(records[0].text, Ok("<p>x</p>".to_owned()));
    assert_eq!(records[0].media.as_deref(), Some("html"));
    assert_eq!(records[1].media, None);
    assert_eq!(records[2].text, Err("no \"body.text\" field".to_owned()));
    assert!(FieldPath::new("a..b").is_err());
}

#[test]
fn bad_lines_are_yielded_as_errors_with_fallback_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(
        &path,
        concat!(
            "{\"id\":\"ok\",\"text\":\"fine\"}\n",
            "not json\n",
            "[1,2]\n",
            "{\"id\":\"nt\"}\n",
            "{\"id\":\"num\",\"text\":5}\n",
            "{\"text\":\"no id\"}\n",
            "{\"id\":{\"x\":1},\"text\":\"t\"}\n",
        ),
    )
    .unwrap();
    let (dataset, _) = open(&[&path], DatasetOptions::default());
    let (records, summary, _) = read_all(&dataset, 3);
    let file = path.display().to_string();
    assert_eq!(
        ids(&records),
        [
            "ok",
            &format!("{file}:2"),
            &format!("{file}:3"),
            "nt",
            "num",
            &format!("{file}:6"),
            &format!("{file}:7")
        ]
    );
    assert!(
        records[1]
            .text
            .as_ref()
            .unwrap_err()
            .starts_with("not a JSON object")
    );
    assert_eq!(
        records[2].text,
        Err("not a JSON object but an array".to_owned())
    );
    assert_eq!(records[3].text, Err("no \"text\" field".to_owned()));
    assert_eq!(
        records[4].text,
        Err("the \"text\" field is not a string".to_owned())
    );
    // An object without an id is a document named by its place.
    assert_eq!(records[5].text, Ok("no id".to_owned()));
    assert_eq!(
        records[6].text,
        Err("the \"id\" field is not a string or a number".to_owned())
    );
    assert_eq!((summary.documents, summary.not_documents), (2, 5));
    assert_eq!(summary.not_objects, 2);
    assert!(summary.field_notices(&DatasetOptions::default()).is_empty());
}

/// A file that holds no JSON object at all is not JSON Lines, whatever its fields were meant to be; one
/// object without text among such lines is a matter of the text field.
#[test]
fn files_without_a_json_object_are_not_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let (dataset, _) = open(&[&path], DatasetOptions::default());
        let (_, summary, _) = read_all(&dataset, 8);
        let notices = summary.field_notices(&DatasetOptions::default());
        (summary, notices)
    };
    let (summary, notices) = read("page.html", "<html><body>\n<p>words</p>\n[1]\n");
    assert_eq!((summary.records, summary.not_objects), (3, 3));
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].field, FieldRole::Format);
    assert_eq!(
        notices[0].message,
        "not one of the 3 lines read is a JSON object: the input is not JSON Lines"
    );
    let (_, notices) = read("mixed.jsonl", "not json\n{\"body\":\"words\"}\n");
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].field, FieldRole::Text);
}

/// A good file after a damaged one: the damage is reported once, reading ends, the next file is read.
fn damaged_then_good(name: &str, damaged: Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join(name);
    let good = dir.path().join("good.jsonl");
    std::fs::write(&bad, damaged).unwrap();
    std::fs::write(&good, "{\"id\":\"g\",\"text\":\"t\"}\n").unwrap();
    let (dataset, errors) = open(&[&bad, &good], DatasetOptions::default());
    assert!(errors.is_empty());
    let mut batches = 0;
    let mut records = Vec::new();
    let summary = dataset
        .for_each_batch(1, &mut |_| {}, &mut |batch| {
            batches += 1;
            assert!(batches < 10_000, "reading loops");
            records.extend(batch);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(summary.errors.len(), 1, "{:?}", summary.errors);
    let error = &summary.errors[0];
    assert_eq!(error.file, bad.display().to_string());
    assert!(error.to_string().contains(name), "{error}");
    assert_eq!(records.last().unwrap().id, "g");
    assert_eq!(summary.files, 2);
}

#[test]
fn truncated_gzip_is_reported_once() {
    let mut lines = String::new();
    for i in 0..2000 {
        lines.push_str(&format!(
            "{{\"id\":\"{i}\",\"text\":\"text number {i} with some words\"}}\n"
        ));
    }
    let full = gzip(lines.as_bytes());
    damaged_then_good("cut.jsonl.gz", full[..full.len() / 2].to_vec());
}

#[test]
fn corrupt_zstd_is_reported_once() {
    let mut bytes = zstd(DOCS.as_bytes());
    for b in bytes.iter_mut().skip(6) {
        *b ^= 0x5a;
    }
    damaged_then_good("bad.jsonl.zst", bytes);
    // Not zstd at all, though named so.
    damaged_then_good("plain.jsonl.zst", DOCS.as_bytes().to_vec());
    // Cut short.
    let mut lines = String::new();
    for i in 0..2000 {
        lines.push_str(&format!("{{\"id\":\"{i}\",\"text\":\"number {i}\"}}\n"));
    }
    let full = zstd(lines.as_bytes());
    damaged_then_good("cut.jsonl.zst", full[..full.len() / 2].to_vec());
}

#[test]
fn corrupt_parquet_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.parquet");
    write_parquet(&path, &small_batch());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 20);
    damaged_then_good("x.parquet", bytes);
}

/// Found by the `parquet` fuzz target: a footer whose column chunk has a negative offset or size made the parquet
/// crate panic (`ColumnChunkMetaData::byte_range`) while the rows were read; it is a corrupt file like any other.
#[test]
fn parquet_column_chunk_with_a_negative_offset_is_reported() {
    let bytes = include_bytes!("../../../fuzz/regressions/parquet-negative-column-chunk.parquet");
    damaged_then_good("negative.parquet", bytes.to_vec());
}

/// Found by the `parquet` fuzz target: a data page that holds bytes but claims no values makes the parquet
/// crate's plain byte-array decoder divide by zero (`parquet-60.1.0/src/arrow/array_reader/byte_array.rs:391`).
/// Decoding runs under a guard, so the panic is this file's error and the next file is read.
#[test]
fn parquet_page_with_bytes_and_no_values_is_reported() {
    let bytes =
        include_bytes!("../../../fuzz/regressions/parquet-plain-byte-array-divide-by-zero.parquet");
    damaged_then_good("zero-values.parquet", bytes.to_vec());
}

/// Found by the `parquet` fuzz target: definition levels that run past their buffer make arrow-buffer panic
/// (`arrow-buffer-60.1.0/src/util/bit_chunk_iterator.rs:235`, from the parquet crate's `read_def_levels`).
/// Caught by the same guard as above.
#[test]
fn parquet_definition_levels_past_their_buffer_are_reported() {
    let bytes = include_bytes!("../../../fuzz/regressions/parquet-bit-chunk-out-of-bounds.parquet");
    damaged_then_good("levels.parquet", bytes.to_vec());
}

/// Found by the `parquet` fuzz target (30-minute run, 2026-11-25): a page header whose unknown field claims a
/// list of 2^31 doubles. The parquet crate skips it element by element with `io::copy`, and at the end of a
/// `File` each copy is an empty read, not an error: the file took 6 minutes of read calls. Read through
/// `StrictFile`, the first read past the end is the file's error.
#[test]
fn parquet_lengths_past_the_end_of_the_file_fail_at_once() {
    let bytes =
        include_bytes!("../../../fuzz/regressions/parquet-thrift-skip-past-the-end.parquet");
    let started = std::time::Instant::now();
    damaged_then_good("skip.parquet", bytes.to_vec());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// Seen by the `parquet` fuzz target as a 1.2 GB step in memory (input not kept): a page header claiming a
/// huge uncompressed size. The parquet crate allocates that size, and its Snappy codec zero-fills it, before
/// decompressing a byte. The page is refused before decoding, and the process's peak memory stays small.
#[test]
fn parquet_page_claiming_gigabytes_is_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let batch = small_batch();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    // One row group, no dictionary: the first column chunk is one data page at offset 4.
    let (start, length) = metadata.row_group(0).column(0).byte_range();
    assert_eq!(start, 4);
    let claimed = 2_000_000_000;
    let damaged = claim_uncompressed_size(&bytes, (start + length) as usize, claimed);
    damaged_then_good("claims.parquet", damaged.clone());
    std::fs::write(&path, &damaged).unwrap();
    let (dataset, _) = open(&[&path], DatasetOptions::default());
    let (_, summary, _) = read_all(&dataset, 8);
    let message = summary.errors[0].to_string();
    assert!(
        message.contains(&format!("the page at offset 4 claims {claimed} bytes")),
        "{message}"
    );
    // Zero-filling the claimed size would raise the process's peak to 2 GB.
    assert_peak_memory_under_1_gib();
}

/// Found by the `parquet` fuzz target (an out-of-memory stop at 1,380 MB): a dictionary page of no bytes
/// whose header gives its compressed size a boolean's type and its uncompressed size as a nine-byte varint.
/// The decoder reads fields by number whatever their type and truncates the varint to 1.4 GB; the walk
/// refuses the header as damaged.
#[test]
fn parquet_page_header_read_two_ways_is_refused() {
    let bytes = include_bytes!(
        "../../../fuzz/regressions/parquet-dictionary-page-claims-gigabytes.parquet"
    );
    damaged_then_good("two-ways.parquet", bytes.to_vec());
    assert_peak_memory_under_1_gib();
}

fn assert_peak_memory_under_1_gib() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) {
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(kib < 1 << 20, "peak {kib} KiB");
    }
}

/// The file with its first page header (at offset 4, the page ending at `page_end`) rewritten to claim
/// `claimed` bytes uncompressed. The longer header takes its extra bytes from the end of the page's data, so
/// every offset after the page holds.
fn claim_uncompressed_size(file: &[u8], page_end: usize, claimed: u64) -> Vec<u8> {
    fn varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = 0;
        for shift in (0..64).step_by(7) {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
        }
        value
    }
    fn put(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push(value as u8 | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    // The writer puts fields 1 to 3 (type, uncompressed and compressed size: i32, zigzag) first.
    let mut at = 4;
    let mut fields = [0u64; 3];
    for (n, field) in fields.iter_mut().enumerate() {
        assert_eq!(file[at], 0x15, "field {} of the first page header", n + 1);
        at += 1;
        *field = varint(file, &mut at);
    }
    let compressed = fields[2] / 2;
    let mut shorter_by = 0;
    loop {
        let mut header = vec![0x15];
        put(&mut header, fields[0]);
        header.push(0x15);
        put(&mut header, claimed * 2);
        header.push(0x15);
        put(&mut header, (compressed - shorter_by) * 2);
        let grown = (4 + header.len() - at) as u64;
        if grown == shorter_by {
            let mut out = file[..4].to_vec();
            out.extend_from_slice(&header);
            out.extend_from_slice(&file[at..page_end - shorter_by as usize]);
            out.extend_from_slice(&file[page_end..]);
            assert_eq!(out.len(), file.len());
            return out;
        }
        shorter_by = grown;
    }
}

#[test]
fn operand_problems_are_reported_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    std::fs::write(empty_dir.join("readme.md"), "x").unwrap();
    std::fs::write(&good, DOCS).unwrap();
    let missing = dir.path().join("missing.jsonl");
    let (dataset, errors) = open(&[&missing, &empty_dir, &good], DatasetOptions::default());
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(
        errors[0].to_string(),
        format!("{}: no such file or directory", missing.display())
    );
    assert!(
        errors[1]
            .to_string()
            .starts_with(&format!("{}: a directory with no", empty_dir.display()))
    );
    let (records, _, _) = read_all(&dataset, 8);
    assert_eq!(ids(&records), ["a", "b"]);
}

#[test]
fn a_directory_where_a_file_is_expected_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.jsonl");
    let other = dir.path().join("g.jsonl");
    std::fs::write(&path, DOCS).unwrap();
    std::fs::write(&other, "{\"id\":\"g\",\"text\":\"t\"}\n").unwrap();
    let (dataset, _) = open(&[&path, &other], DatasetOptions::default());
    // The file becomes a directory between opening the dataset and reading it.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let (records, summary, _) = read_all(&dataset, 4);
    assert_eq!(ids(&records), ["g"]);
    assert_eq!(summary.errors.len(), 1, "{:?}", summary.errors);
    assert!(
        summary.errors[0].to_string().contains("is a directory"),
        "{}",
        summary.errors[0]
    );
}

#[test]
fn duplicate_ids_name_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.jsonl");
    let g = dir.path().join("g.jsonl");
    std::fs::write(
        &f,
        "{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n",
    )
    .unwrap();
    std::fs::write(
        &g,
        "{\"id\":\"c\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"three\"}\n",
    )
    .unwrap();
    let (dataset, _) = open(&[&f, &g], DatasetOptions::default());
    let (records, summary, _) = read_all(&dataset, 8);
    assert_eq!(ids(&records), ["a", "b", "c", "a"]);
    assert_eq!(
        records[3].text,
        Err(format!(
            "duplicate id 'a' at {}:2 (first at {}:1)",
            g.display(),
            f.display()
        ))
    );
    assert_eq!(summary.duplicate_ids, 1);
    assert_eq!(summary.not_documents, 1);
}

// ---- Parquet ----

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_max_row_group_row_count(Some(2))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// Four rows: an Int32 id, a text with a null, a struct `meta {url, lang}` and a list of tags.
fn small_batch() -> RecordBatch {
    let meta = StructArray::from(vec![
        (
            Arc::new(Field::new("url", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec![
                Some("u1"),
                Some("u2"),
                None,
                Some("u4"),
            ])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("lang", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["en", "fr", "de", "en"])) as ArrayRef,
        ),
    ]);
    let mut tags = ListBuilder::new(StringBuilder::new());
    for row in [&["x", "y"][..], &[], &["z"], &["x"]] {
        for t in row {
            tags.values().append_value(t);
        }
        tags.append(true);
    }
    RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        (
            "text",
            Arc::new(StringArray::from(vec![
                Some("one"),
                Some("two"),
                None,
                Some("four"),
            ])) as ArrayRef,
        ),
        ("meta", Arc::new(meta) as ArrayRef),
        ("tags", Arc::new(tags.finish()) as ArrayRef),
    ])
    .unwrap()
}

#[test]
fn parquet_rows_with_integer_ids_and_nested_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.parquet");
    write_parquet(&path, &small_batch());
    let (dataset, errors) = open(&[&path], DatasetOptions::default());
    assert!(errors.is_empty());
    let (records, summary, progress) = read_all(&dataset, 3);
    assert_eq!(ids(&records), ["1", "2", "3", "4"]);
    assert_eq!(records[1].text, Ok("two".to_owned()));
    assert_eq!(records[2].text, Err("the 'text' column is null".to_owned()));
    assert_eq!(records[3].origin.position, Position::Row(3));
    assert_eq!(summary.records, 4);
    assert_eq!(progress.last(), Some(&dataset.total_bytes()));

    // Nested fields: the url is the id (a null url falls back to FILE:ROW), the language the medium.
    let options = DatasetOptions {
        id_field: FieldPath::new("meta.url").unwrap(),
        media_field: Some(FieldPath::new("meta.lang").unwrap()),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options);
    let (records, _, _) = read_all(&dataset, 8);
    let row2 = format!("{}:2", path.display());
    assert_eq!(ids(&records), ["u1", "u2", row2.as_str(), "u4"]);
    assert_eq!(records[1].media.as_deref(), Some("fr"));
    assert_eq!(records[0].text, Ok("one".to_owned()));

    // Missing and mistyped columns: every row says so.
    let options = DatasetOptions {
        text_field: FieldPath::new("meta.nope").unwrap(),
        id_field: FieldPath::new("tags").unwrap(),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options);
    let (records, _, _) = read_all(&dataset, 8);
    assert_eq!(records.len(), 4);
    let message = records[0].text.clone().unwrap_err();
    assert!(
        message.starts_with("the 'tags' column is List("),
        "{message}"
    );
    assert!(
        message.ends_with("not a string or an integer; no column 'meta.nope'"),
        "{message}"
    );
}

#[test]
fn parquet_rows_without_an_id_are_known_by_their_place_as_json_objects_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.parquet");
    write_parquet(&path, &small_batch());
    let place = |row: u64| format!("{}:{row}", path.display());
    // No such column (a misspelt name): every row is still a document, known by its place.
    let options = DatasetOptions {
        id_field: FieldPath::new("uid").unwrap(),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options.clone());
    let (records, summary, _) = read_all(&dataset, 8);
    assert_eq!(ids(&records), [place(0), place(1), place(2), place(3)]);
    assert_eq!(records[0].text, Ok("one".to_owned()));
    assert_eq!((summary.documents, summary.ids_from_field), (3, 0));
    let notices = summary.field_notices(&options);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].field, FieldRole::Id);
    assert!(
        notices[0]
            .message
            .starts_with("no record has an id in the field 'uid'")
    );

    // A null in a nested id column: that row alone is known by its place, and no notice.
    let options = DatasetOptions {
        id_field: FieldPath::new("meta.url").unwrap(),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options.clone());
    let (_, summary, _) = read_all(&dataset, 8);
    assert_eq!((summary.documents, summary.ids_from_field), (3, 3));
    assert!(summary.field_notices(&options).is_empty());

    // No text anywhere: a notice about the text field.
    let options = DatasetOptions {
        text_field: FieldPath::new("body").unwrap(),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options.clone());
    let (_, summary, _) = read_all(&dataset, 8);
    let notices = summary.field_notices(&options);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].field, FieldRole::Text);
    assert_eq!(
        notices[0].message,
        "not one of the 4 records is a document with text in the field 'body'"
    );
}

#[test]
fn parquet_nested_id_and_text_from_one_struct() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.parquet");
    write_parquet(&path, &small_batch());
    let options = DatasetOptions {
        id_field: FieldPath::new("meta.lang").unwrap(),
        text_field: FieldPath::new("meta.url").unwrap(),
        ..DatasetOptions::default()
    };
    let (dataset, _) = open(&[&path], options);
    let (records, _, _) = read_all(&dataset, 8);
    assert_eq!(ids(&records), ["en", "fr", "de", "en"]);
    assert_eq!(
        records[2].text,
        Err("the 'meta.url' column is null".to_owned())
    );
    assert!(
        records[3]
            .text
            .as_ref()
            .unwrap_err()
            .starts_with("duplicate id 'en'")
    );
}

#[test]
fn parquet_large_string_dictionary_and_binary_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("types.parquet");
    let batch = RecordBatch::try_from_iter(vec![
        (
            "sid",
            Arc::new(LargeStringArray::from(vec!["x", "y"])) as ArrayRef,
        ),
        (
            "uid",
            Arc::new(UInt64Array::from(vec![u64::MAX, 0])) as ArrayRef,
        ),
        (
            "bin",
            Arc::new(BinaryArray::from(vec![&b"ok"[..], &b"bad \xff"[..]])) as ArrayRef,
        ),
        (
            "dict",
            Arc::new(DictionaryArray::<Int32Type>::from_iter(["same", "same"])) as ArrayRef,
        ),
    ])
    .unwrap();
    write_parquet(&path, &batch);
    let read = |id: &str, text: &str| {
        let options = DatasetOptions {
            id_field: FieldPath::new(id).unwrap(),
            text_field: FieldPath::new(text).unwrap(),
            ..DatasetOptions::default()
        };
        let (dataset, _) = open(&[&path], options);
        read_all(&dataset, 8).0
    };
    let records = read("sid", "bin");
    assert_eq!(ids(&records), ["x", "y"]);
    assert_eq!(records[0].text, Ok("ok".to_owned()));
    assert_eq!(records[1].text, Ok("bad \u{fffd}".to_owned()));
    let records = read("uid", "dict");
    assert_eq!(ids(&records), ["18446744073709551615", "0"]);
    assert_eq!(records[1].text, Ok("same".to_owned()));
}

#[test]
fn an_error_of_on_batch_stops_the_read_and_is_returned() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = texts_dataset(
        dir.path(),
        "many.jsonl",
        (0..10_000).map(|i| format!("text {i}")),
    );
    let mut seen = Vec::new();
    let result = dataset.for_each_batch(100, &mut |_| {}, &mut |batch| {
        seen.push(batch[0].ordinal);
        if seen.len() == 3 {
            return Err("stop here");
        }
        Ok(())
    });
    assert_eq!(result, Err("stop here"));
    // The batches came in order and none after the error; the reader (a batch ahead) stopped with it.
    assert_eq!(seen, [0, 100, 200]);
    // The dataset is still readable whole.
    let (records, summary, progress) = read_all(&dataset, 4096);
    assert_eq!((records.len(), summary.records), (10_000, 10_000));
    assert_eq!(*progress.last().unwrap(), dataset.total_bytes());
}

#[test]
fn a_batch_ends_at_its_text_budget() {
    let dir = tempfile::tempdir().unwrap();
    let half = "w ".repeat((neardup_io::BATCH_TEXT_BYTES / 4 + 1) as usize);
    let dataset = texts_dataset(dir.path(), "large.jsonl", (0..3).map(|_| half.clone()));
    let mut sizes = Vec::new();
    dataset
        .for_each_batch(4096, &mut |_| {}, &mut |batch| {
            sizes.push(batch.len());
            Ok::<(), ()>(())
        })
        .unwrap();
    // Two texts of just over half the budget fill a batch; the third starts the next.
    assert_eq!(sizes, [2, 1]);
}
