//! The second pass and the tables: splits round-trip, refusals, no partial files.

mod common;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, RecordBatchReader, StringArray, StructArray,
};
use arrow_schema::{DataType, Field};
use common::{gzip, open, read_all};
use neardup_io::{ClusterRow, DatasetOptions, Decision, IoError, Outputs, TableWriter};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Removes ordinals in `removed` as duplicates of "k<ordinal>", with score ordinal / 10.
fn decide_removing(removed: &[u64]) -> impl Fn(u64) -> Decision + '_ {
    move |ordinal| {
        if removed.contains(&ordinal) {
            Decision::Remove {
                duplicate_of: format!("k{ordinal}"),
                score: ordinal as f64 / 10.0,
            }
        } else {
            Decision::Keep
        }
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn jsonl_split_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f.jsonl");
    let g = dir.path().join("g.jsonl.gz");
    let f_lines = [
        "{\"id\":\"a\", \"text\":\"one\", \"n\": 1.50, \"nested\": {\"x\": [1, 2]}}\n",
        "not json at all\n",
        "{\"id\":\"b\",\"text\":\"two\"}\r\n",
    ];
    let g_lines = [
        "{\"id\":\"c\",\"text\":\"three\",\"u\":\"\\u00e9\"}\n",
        "{\"id\":\"a\",\"text\":\"dup id\"}\n",
        "{\"id\":\"d\",\"text\":\"four\"}",
    ];
    std::fs::write(&f, format!("{}\n{}", f_lines[0], f_lines[1..].concat())).unwrap();
    std::fs::write(&g, gzip(g_lines.concat().as_bytes())).unwrap();
    let (dataset, _) = open(&[&f, &g], DatasetOptions::default());
    let (records, _, _) = read_all(&dataset, 2);
    assert_eq!(records.len(), 6);
    // Ordinals 2 (b) and 5 (d) are removed; 1 (not JSON) and 4 (a duplicate id) are not documents: they are
    // kept even though `decide` would remove them.
    let removed_ordinals = [1, 2, 4, 5];
    let kept = dir.path().join("out/kept.jsonl");
    let removed = dir.path().join("out/removed.jsonl.zst");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let summary = dataset
        .write_split(
            &decide_removing(&removed_ordinals),
            Some(&kept),
            Some(&removed),
        )
        .unwrap();
    assert_eq!((summary.kept, summary.removed), (4, 2));
    assert_eq!(summary.kept + summary.removed, records.len() as u64);
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        [f_lines[0], f_lines[1], g_lines[0], g_lines[1]].concat()
    );
    let removed_text =
        String::from_utf8(zstd::stream::decode_all(&std::fs::read(&removed).unwrap()[..]).unwrap())
            .unwrap();
    assert_eq!(
        removed_text,
        "{\"id\":\"b\",\"text\":\"two\",\"duplicate_of\":\"k2\",\"score\":0.2}\n\
         {\"id\":\"d\",\"text\":\"four\",\"duplicate_of\":\"k5\",\"score\":0.5}\n"
    );
    assert_eq!(
        files_in(&dir.path().join("out")),
        ["kept.jsonl", "removed.jsonl.zst"]
    );

    // Only one output: the other is counted, not written.
    let kept_only = dir.path().join("kept-only.jsonl.gz");
    let summary = dataset
        .write_split(&decide_removing(&removed_ordinals), Some(&kept_only), None)
        .unwrap();
    assert_eq!((summary.kept, summary.removed), (4, 2));
    assert!(kept_only.exists());
}

#[test]
fn jsonl_name_clash_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.jsonl");
    std::fs::write(
        &f,
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"x\",\"score\":7}\n",
    )
    .unwrap();
    let (dataset, _) = open(&[&f], DatasetOptions::default());
    read_all(&dataset, 8);
    let kept = dir.path().join("kept.jsonl");
    let removed = dir.path().join("removed.jsonl");
    let err = dataset
        .write_split(&decide_removing(&[1]), Some(&kept), Some(&removed))
        .unwrap_err();
    assert!(
        matches!(&err, IoError::FieldClash { field, .. } if field == "score"),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!(
            "{}:2: the record already has a field 'score'",
            f.display()
        )),
        "{err}"
    );
    assert_eq!(files_in(dir.path()), ["in.jsonl"]);
    // Kept, the same record is fine: its fields are not touched.
    dataset
        .write_split(&decide_removing(&[]), Some(&kept), Some(&removed))
        .unwrap();
}

#[test]
fn a_failed_write_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.jsonl");
    std::fs::write(&f, "{\"id\":\"a\",\"text\":\"x\"}\n").unwrap();
    let (dataset, _) = open(&[&f], DatasetOptions::default());
    let kept = dir.path().join("kept.jsonl");
    let removed = dir.path().join("no/such/dir/removed.jsonl");
    let err = dataset
        .write_split(&decide_removing(&[]), Some(&kept), Some(&removed))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(&removed.display().to_string()),
        "{err}"
    );
    assert_eq!(files_in(dir.path()), ["in.jsonl"]);

    // Unknown output extension; unsupported conversion; the same file twice.
    let err = dataset
        .write_split(&decide_removing(&[]), Some(&dir.path().join("k.csv")), None)
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot tell the output format"),
        "{err}"
    );
    let err = dataset
        .write_split(
            &decide_removing(&[]),
            Some(&dir.path().join("k.parquet")),
            None,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is JSONL and this output is Parquet"),
        "{err}"
    );
    let err = dataset
        .write_split(&decide_removing(&[]), Some(&kept), Some(&kept))
        .unwrap_err();
    assert!(err.to_string().contains("same file"), "{err}");
    assert_eq!(files_in(dir.path()), ["in.jsonl"]);
}

#[test]
fn outputs_are_checked_against_the_inputs_and_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let f = shards.join("part-0.jsonl");
    std::fs::write(&f, "{\"id\":\"a\",\"text\":\"x\"}\n").unwrap();
    let (dataset, _) = open(&[&shards], DatasetOptions::default());
    let check = |kept: Option<&Path>, table: Option<&Path>| {
        dataset.check_outputs(Outputs {
            kept,
            removed: None,
            table,
        })
    };
    // The table (any format) may not replace an input, nor be the split's file.
    let err = check(
        None,
        Some(&shards.join("..").join("shards").join("part-0.jsonl")),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("this output is the input"),
        "{err}"
    );
    let err = check(None, Some(&shards)).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    let kept = dir.path().join("kept.jsonl");
    let err = check(Some(&kept), Some(&kept)).unwrap_err();
    assert!(err.to_string().contains("same file"), "{err}");
    // Outside the inputs' directory: nothing to say.
    let checked = check(Some(&kept), Some(&dir.path().join("t.tsv"))).unwrap();
    assert!(checked.notices.is_empty(), "{:?}", checked.notices);
    // Inside it, a shard is read by the next run (named); a hidden one or a .tsv table is not.
    let checked = check(
        Some(&shards.join("kept.jsonl")),
        Some(&shards.join("t.tsv")),
    )
    .unwrap();
    assert_eq!(checked.notices.len(), 1, "{:?}", checked.notices);
    assert!(
        checked.notices[0].contains("kept.jsonl: this output is inside the input directory"),
        "{:?}",
        checked.notices
    );
    let checked = check(Some(&shards.join(".hidden").join("kept.jsonl")), None);
    assert!(checked.is_err(), "the directory does not exist");
    std::fs::create_dir(shards.join(".hidden")).unwrap();
    let checked = check(Some(&shards.join(".hidden").join("kept.jsonl")), None).unwrap();
    assert!(checked.notices.is_empty(), "{:?}", checked.notices);
    assert_eq!(files_in(&shards), [".hidden", "part-0.jsonl"]);
}

#[test]
fn an_input_that_changed_between_passes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.jsonl");
    std::fs::write(&f, "{\"id\":\"a\",\"text\":\"x\"}\n").unwrap();
    let (dataset, _) = open(&[&f], DatasetOptions::default());
    read_all(&dataset, 8);
    std::fs::write(
        &f,
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"y\"}\n",
    )
    .unwrap();
    let kept = dir.path().join("kept.jsonl");
    let err = dataset
        .write_split(&decide_removing(&[]), Some(&kept), None)
        .unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Changed {
                first: 1,
                second: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(!kept.exists());
}

// ---- Parquet ----

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_max_row_group_row_count(Some(3))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

fn read_parquet(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// `n` rows starting at `first`: id, text (null every 4th), a struct meta {url, depth} and a tag list.
fn batch(first: i64, n: usize, extra: Option<&str>) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let texts: Vec<Option<String>> = ids
        .iter()
        .map(|i| (i % 4 != 3).then(|| format!("text {i}")))
        .collect();
    let meta = StructArray::from(vec![
        (
            Arc::new(Field::new("url", DataType::Utf8, true)),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("http://x/{i}")),
            )) as ArrayRef,
        ),
        (
            Arc::new(Field::new("depth", DataType::Int64, true)),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i % 3))) as ArrayRef,
        ),
    ]);
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in &ids {
        for t in 0..(i % 3) {
            tags.values().append_value(format!("t{t}"));
        }
        tags.append(i % 5 != 4);
    }
    let mut columns = vec![
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        ("text", Arc::new(StringArray::from(texts)) as ArrayRef),
        ("meta", Arc::new(meta) as ArrayRef),
        ("tags", Arc::new(tags.finish()) as ArrayRef),
    ];
    if let Some(name) = extra {
        columns.push((
            name,
            Arc::new(StringArray::from_iter_values(ids.iter().map(|_| "x"))) as ArrayRef,
        ));
    }
    RecordBatch::try_from_iter(columns).unwrap()
}

#[test]
fn parquet_split_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.parquet");
    let b = dir.path().join("b.parquet");
    let (batch_a, batch_b) = (batch(0, 10, None), batch(10, 7, None));
    write_parquet(&a, &batch_a);
    write_parquet(&b, &batch_b);
    let (dataset, _) = open(&[&a, &b], DatasetOptions::default());
    let (records, summary, _) = read_all(&dataset, 4);
    assert_eq!(summary.records, 17);
    // 3, 7, 11, 15 have no text: asked to remove 3, the split keeps it.
    let remove = [1, 3, 8, 12, 16];
    let kept = dir.path().join("kept.parquet");
    let removed = dir.path().join("removed.parquet");
    let split = dataset
        .write_split(&decide_removing(&remove), Some(&kept), Some(&removed))
        .unwrap();
    assert_eq!((split.kept, split.removed), (13, 4));
    assert_eq!(split.kept + split.removed, records.len() as u64);

    let input =
        arrow_select::concat::concat_batches(&batch_a.schema(), &[batch_a, batch_b]).unwrap();
    let removed_rows = [1, 8, 12, 16];
    let mask = |keep: bool| {
        BooleanArray::from(
            (0..17)
                .map(|i| removed_rows.contains(&i) != keep)
                .collect::<Vec<_>>(),
        )
    };
    let expect_kept = arrow_select::filter::filter_record_batch(&input, &mask(true)).unwrap();
    let expect_removed = arrow_select::filter::filter_record_batch(&input, &mask(false)).unwrap();

    let got = read_parquet(&kept);
    assert_eq!(got.schema().fields(), input.schema().fields());
    assert_eq!(got.num_rows(), 13);
    for (g, e) in got.columns().iter().zip(expect_kept.columns()) {
        assert_eq!(g.to_data(), e.to_data());
    }

    let got = read_parquet(&removed);
    let schema = got.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["id", "text", "meta", "tags", "duplicate_of", "score"]
    );
    for (g, e) in got.columns().iter().zip(expect_removed.columns()) {
        assert_eq!(g.to_data(), e.to_data());
    }
    let dup: Vec<&str> = got
        .column(4)
        .as_string::<i32>()
        .iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(dup, ["k1", "k8", "k12", "k16"]);
    let scores: Vec<f64> = got
        .column(5)
        .as_primitive::<Float64Type>()
        .values()
        .to_vec();
    assert_eq!(scores, [0.1, 0.8, 1.2, 1.6]);

    // Written with zstd.
    let file = std::fs::File::open(&kept).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .metadata()
        .clone();
    assert!(matches!(
        meta.row_group(0).column(0).compression(),
        parquet::basic::Compression::ZSTD(_)
    ));
}

#[test]
fn parquet_clashes_and_mixed_schemas_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.parquet");
    write_parquet(&a, &batch(0, 4, Some("score")));
    let (dataset, _) = open(&[&a], DatasetOptions::default());
    let kept = dir.path().join("kept.parquet");
    let removed = dir.path().join("removed.parquet");
    let err = dataset
        .write_split(&decide_removing(&[0]), Some(&kept), Some(&removed))
        .unwrap_err();
    assert!(
        matches!(&err, IoError::FieldClash { field, .. } if field == "score"),
        "{err}"
    );
    assert_eq!(files_in(dir.path()), ["a.parquet"]);
    // Kept alone is fine.
    dataset
        .write_split(&decide_removing(&[0]), Some(&kept), None)
        .unwrap();
    std::fs::remove_file(&kept).unwrap();

    let b = dir.path().join("b.parquet");
    write_parquet(&b, &batch(4, 4, None));
    let (dataset, _) = open(&[&a, &b], DatasetOptions::default());
    let err = dataset
        .write_split(&decide_removing(&[]), Some(&kept), None)
        .unwrap_err();
    assert!(err.to_string().contains("columns differ"), "{err}");
    let err = dataset
        .write_split(
            &decide_removing(&[]),
            Some(&dir.path().join("k.jsonl")),
            None,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is Parquet and this output is JSONL"),
        "{err}"
    );
    assert_eq!(files_in(dir.path()), ["a.parquet", "b.parquet"]);
}

// ---- Tables ----

#[test]
fn cluster_tables_in_three_formats() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [
        ClusterRow {
            id: "a",
            cluster: 0,
            representative: "a",
            duplicate_of: None,
            score: None,
        },
        ClusterRow {
            id: "b\tx",
            cluster: 0,
            representative: "a",
            duplicate_of: Some("a"),
            score: Some(0.5),
        },
    ];
    let write = |name: &str, header: bool| {
        let path = dir.path().join(name);
        let mut table = TableWriter::create(&path, header).unwrap();
        for row in &rows {
            table.write(row).unwrap();
        }
        assert_eq!(table.finish().unwrap(), 2);
        path
    };
    let tsv = write("c.tsv", true);
    assert_eq!(
        std::fs::read_to_string(tsv).unwrap(),
        "id\tcluster\trepresentative\tduplicate_of\tscore\na\t0\ta\t\t\nb\\tx\t0\ta\ta\t0.5\n"
    );
    let jsonl = write("c.jsonl", false);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({"id":"a","cluster":0,"representative":"a","duplicate_of":null,"score":null})
    );
    assert_eq!(lines[1]["score"], 0.5);
    let parquet = write("c.parquet", false);
    let got = read_parquet(&parquet);
    assert_eq!(got.num_rows(), 2);
    assert_eq!(got.column(0).as_string::<i32>().value(1), "b\tx");
    assert!(got.column(3).is_null(0));
    assert_eq!(got.column(4).as_primitive::<Float64Type>().value(1), 0.5);

    // Dropped unfinished: nothing is left.
    let path = dir.path().join("dropped.tsv");
    let mut table = TableWriter::create(&path, true).unwrap();
    table.write(&rows[0]).unwrap();
    drop(table);
    assert!(!path.exists());
    assert!(TableWriter::create(&dir.path().join("t.csv"), false).is_err());
    let names: HashMap<String, ()> = files_in(dir.path()).into_iter().map(|n| (n, ())).collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[cfg(unix)]
#[test]
fn outputs_get_the_permissions_of_a_file_made_by_file_create() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.jsonl");
    std::fs::write(&f, "{\"id\":\"a\",\"text\":\"x\"}\n").unwrap();
    let (dataset, _) = open(&[&f], DatasetOptions::default());
    let kept = dir.path().join("kept.jsonl");
    dataset
        .write_split(&decide_removing(&[]), Some(&kept), None)
        .unwrap();
    // 0666 less the umask, as the input written by std::fs::write got (not a temporary file's 0600).
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kept), mode(&f));
}
