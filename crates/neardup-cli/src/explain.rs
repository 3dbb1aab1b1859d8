//! `neardup explain`: why two documents match, or do not. The engine ([`neardup::explain`]) finds the shared
//! and unique features, the exact measures, the SimHash bit attributions and the aligned diff; this module
//! renders them for a terminal, as JSON, or as one self-contained HTML page.

use crate::inputs::{DocArgs, Source};
use anyhow::{Context, Result, bail};
use clap::Args;
use neardup::Sketch;
use neardup::explain::{
    Bit, Estimate, Explanation, Feature, Options, RowTag, explain_sketches, explain_texts,
};
use neardup::index::Index;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Each operand is a file, '-' for stdin (one of the two), or with --index DIR the id of a document
stored in that index. Both documents are read and sketched with --scheme (an index's own scheme
with --index), and the report shows:

  estimate    SimHash: the distance d, the similarity 1 - d/64 and the cosine it estimates,
              cos(pi d/64); MinHash: the estimated similarity
  exact       the cosine of the term frequencies, the Jaccard similarity of word n-grams
              (--ngram, default 3; MinHash: its own shingles) and, for MinHash, the exact value of
              the measure its scheme estimates
  verdict     near-duplicate or not at the scheme's threshold (-k for SimHash, --threshold for
              MinHash, judged by the exact measure)
  features    the shared tokens (SimHash) or shingles (MinHash) and those only in a or only in b,
              most frequent first, with their counts in a / b
  bits        SimHash: every bit where the fingerprints differ, its counter in each document (the
              sum over tokens of count x +1 or -1, by the token hash's bit; the bit is 1 when the
              counter is positive) and the tokens whose change of count pushed it across most
  diff        the extracted texts, aligned line by line: '-' lines only in a, '+' only in b

An index keeps sketches, not text: an operand read from an index shows the estimate, the verdict
and the differing bits only.

--json writes one JSON object with all of it; --html writes one self-contained HTML page (no
scripts, no external references) with the diff side by side.

Examples:
    neardup explain v1/intro.html v2/intro.html
    neardup explain --scheme minhash --shingle 3 a.txt b.txt
    neardup explain --html old.pdf new.html > why.html
    neardup explain --index crawl-idx https://example.org/a https://example.org/b";

#[derive(Args)]
#[command(after_help = AFTER_HELP)]
pub struct ExplainArgs {
    /// The first document: a file, '-', or an id with --index.
    a: String,
    /// The second document.
    b: String,
    /// Look up operands that are not files as ids in this index (`neardup index`).
    #[arg(long, value_name = "DIR")]
    index: Option<PathBuf>,
    /// SimHash: the largest distance (inclusive) of a near-duplicate [default: 3].
    #[arg(short, long)]
    k: Option<u32>,
    /// MinHash: the similarity of a near-duplicate [default: 0.8].
    #[arg(long, value_parser = crate::plan::parse_similarity)]
    threshold: Option<f64>,
    /// SimHash: the word n-gram length of the exact Jaccard similarity shown.
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    ngram: u32,
    /// How many features to list in each list and per differing bit.
    #[arg(long, default_value_t = 10, value_name = "N")]
    top: usize,
    /// Lines of context around each changed span of the diff.
    #[arg(long, default_value_t = 2, value_name = "N")]
    context: usize,
    /// The most diff rows shown (the rest are counted).
    #[arg(long, default_value_t = 200, value_name = "N")]
    max_rows: usize,
    /// Write one JSON object.
    #[arg(long, conflicts_with = "html")]
    json: bool,
    /// Write one self-contained HTML page.
    #[arg(long)]
    html: bool,
    #[command(flatten)]
    doc: DocArgs,
}

/// An operand: a document's text (with its label) or a stored sketch.
enum Operand {
    Text(String),
    Stored(Sketch),
}

fn operand(args: &ExplainArgs, index: Option<&Index>, name: &str) -> Result<Operand> {
    if name == "-" || Path::new(name).exists() {
        let source = if name == "-" {
            Source::Stdin
        } else {
            Source::File(name.into())
        };
        let text = args
            .doc
            .extract_text(&source)
            .with_context(|| source.label())?;
        return Ok(Operand::Text(text));
    }
    match index {
        Some(index) => match index.get(name) {
            Some(sketch) => Ok(Operand::Stored(sketch)),
            None => bail!(
                "{name}: no such file, and no such id in {}",
                index.location()
            ),
        },
        None => {
            bail!("{name}: no such file (give --index DIR to explain documents stored in an index)")
        }
    }
}

pub fn run(args: ExplainArgs) -> Result<ExitCode> {
    if args.a == "-" && args.b == "-" {
        bail!("only one operand can be '-' (stdin)");
    }
    let index = match &args.index {
        Some(dir) => Some(Index::open_reader(dir)?),
        None => None,
    };
    if let Some(index) = &index {
        args.doc.method.adopt(index.method(), index.location())?;
    }
    let method = args.doc.method.method()?;
    let options = Options {
        shingle: args.ngram,
        top: args.top,
        context: args.context,
        max_rows: args.max_rows,
        ..Options::judged(method, args.k, args.threshold)
            .map_err(|e| anyhow::anyhow!(e.message(&neardup::dedup::Spelling::FLAGS)))?
    };
    let a = operand(&args, index.as_ref(), &args.a)?;
    let b = operand(&args, index.as_ref(), &args.b)?;
    let sketch = |o: &Operand, label: &str| -> Result<Sketch> {
        match o {
            Operand::Stored(s) => Ok(s.clone()),
            Operand::Text(t) => method.sketch_text(t).with_context(|| label.to_owned()),
        }
    };
    let why = match (&a, &b) {
        (Operand::Text(x), Operand::Text(y)) => {
            // Name the document whose sketch cannot be made (no words), not just the reason.
            sketch(&a, &args.a)?;
            sketch(&b, &args.b)?;
            explain_texts(method, x, y, &options)?
        }
        _ => explain_sketches(&sketch(&a, &args.a)?, &sketch(&b, &args.b)?, &options)?,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", why.to_json(Some(&args.a), Some(&args.b)))?;
    } else if args.html {
        out.write_all(to_html(&why, &args.a, &args.b).as_bytes())?;
    } else {
        out.write_all(to_terminal(&why, &args.a, &args.b).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn estimate_line(e: &Estimate) -> String {
    match *e {
        Estimate::SimHash {
            distance,
            similarity,
            cosine,
        } => {
            format!("distance {distance}, similarity {similarity:.6}, estimated cosine {cosine:.6}")
        }
        Estimate::MinHash {
            measure,
            similarity,
        } => format!("estimated {measure} {similarity:.6}"),
    }
}

fn exact_line(why: &Explanation) -> Option<String> {
    let e = why.exact?;
    let mut line = format!(
        "cosine of term frequencies {:.6}, jaccard of word {}-grams {:.6}",
        e.cosine, e.shingle, e.jaccard
    );
    if let Some((measure, value)) = e.scheme
        && measure != neardup::Measure::Jaccard
    {
        let _ = write!(line, ", {measure} {value:.6}");
    }
    Some(line)
}

fn verdict_line(why: &Explanation) -> String {
    let v = &why.verdict;
    format!(
        "{} ({})",
        if v.near_duplicate {
            "near-duplicate"
        } else {
            "not a near-duplicate"
        },
        v.rule
    )
}

fn feature_list(v: &[Feature], both: bool) -> String {
    if v.is_empty() {
        return "(none)".to_owned();
    }
    v.iter()
        .map(|f| {
            let text = crate::inputs::terminal_safe(&f.text);
            if both {
                format!("{text} {}/{}", f.a, f.b)
            } else {
                format!("{text} {}", f.a + f.b)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn bit_line(bit: &Bit) -> String {
    let counter = |c: Option<i64>| c.map_or(String::new(), |c| format!(" (counter {c:+})"));
    let mut line = format!(
        "bit {:2}: a={}{}, b={}{}",
        bit.bit,
        u8::from(bit.a),
        counter(bit.counter_a),
        u8::from(bit.b),
        counter(bit.counter_b)
    );
    if !bit.pushed.is_empty() {
        let pushes: Vec<String> = bit
            .pushed
            .iter()
            .map(|p| {
                format!(
                    "{} {}→{} ({:+})",
                    crate::inputs::terminal_safe(&p.text),
                    p.a,
                    p.b,
                    p.shift
                )
            })
            .collect();
        let _ = write!(line, "; pushed by {}", pushes.join(", "));
    }
    line
}

fn to_terminal(why: &Explanation, a: &str, b: &str) -> String {
    let mut s = String::new();
    let safe = crate::inputs::terminal_safe;
    let _ = writeln!(s, "scheme\t{}", why.scheme);
    let _ = writeln!(s, "a\t{}\t{}", why.sketch_a, safe(a));
    let _ = writeln!(s, "b\t{}\t{}", why.sketch_b, safe(b));
    let _ = writeln!(s, "estimate\t{}", estimate_line(&why.estimate));
    if let Some(line) = exact_line(why) {
        let _ = writeln!(s, "exact\t{line}");
    }
    let _ = writeln!(s, "verdict\t{}", verdict_line(why));
    if let Some(f) = &why.features {
        let _ = writeln!(
            s,
            "\n{}s: {} distinct in a, {} in b, {} shared",
            f.kind, f.distinct_a, f.distinct_b, f.distinct_shared
        );
        let _ = writeln!(s, "  shared (a/b): {}", feature_list(&f.shared, true));
        let _ = writeln!(s, "  only in a:    {}", feature_list(&f.only_a, false));
        let _ = writeln!(s, "  only in b:    {}", feature_list(&f.only_b, false));
    }
    if !why.bits.is_empty() {
        let _ = writeln!(
            s,
            "\ndiffering bits (bit 0 is the most significant; shift = (count in a - count in b) x sign):"
        );
        for bit in &why.bits {
            let _ = writeln!(s, "  {}", bit_line(bit));
        }
    }
    if let Some(d) = &why.diff {
        let _ = writeln!(
            s,
            "\ndiff: {} lines in a, {} in b, {} equal",
            d.lines_a, d.lines_b, d.equal_lines
        );
        for hunk in &d.hunks {
            let first = |side: fn(&neardup::explain::Row) -> Option<usize>| {
                hunk.rows.iter().find_map(side).unwrap_or(0)
            };
            let _ = writeln!(
                s,
                "@@ a line {}, b line {} @@",
                first(|r| r.a.as_ref().map(|x| x.0)),
                first(|r| r.b.as_ref().map(|x| x.0))
            );
            // Changed rows print as a's line then b's, like a unified diff.
            for row in &hunk.rows {
                match row.tag {
                    RowTag::Equal => {
                        let _ = writeln!(s, "  {}", safe(&row.a.as_ref().expect("equal").1));
                    }
                    _ => {
                        if let Some((_, t)) = &row.a {
                            let _ = writeln!(s, "- {}", safe(t));
                        }
                        if let Some((_, t)) = &row.b {
                            let _ = writeln!(s, "+ {}", safe(t));
                        }
                    }
                }
            }
        }
        if d.omitted_rows > 0 {
            let _ = writeln!(s, "… {} more rows (--max-rows)", d.omitted_rows);
        }
    }
    s
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's style, inline: the page is self-contained.
pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:80em}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}\
.diff td{font-family:monospace;white-space:pre-wrap}.n{color:#888;text-align:right}\
.del{background:#fdd}.ins{background:#dfd}.chg{background:#ffd}.hunk td{background:#eef;color:#555}\
.yes{color:#070;font-weight:bold}.no{color:#a00;font-weight:bold}";

fn html_features(list: &[Feature]) -> String {
    if list.is_empty() {
        return "<i>none</i>".to_owned();
    }
    let mut s = String::from("<table><tr><th>feature</th><th>a</th><th>b</th></tr>");
    for f in list {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.text),
            f.a,
            f.b
        );
    }
    s.push_str("</table>");
    s
}

fn to_html(why: &Explanation, a: &str, b: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>neardup explain: {} / {}</title>\
         <style>{STYLE}</style></head><body>\n<h1>Why these two documents {} near-duplicates</h1>\n",
        escape(a),
        escape(b),
        if why.verdict.near_duplicate {
            "are"
        } else {
            "are not"
        }
    );
    let _ = write!(
        s,
        "<table><tr><th>scheme</th><td>{}</td></tr><tr><th>a</th><td>{}<br><code>{}</code></td></tr>\
         <tr><th>b</th><td>{}<br><code>{}</code></td></tr><tr><th>estimate</th><td>{}</td></tr>",
        escape(&why.scheme),
        escape(a),
        escape(&why.sketch_a),
        escape(b),
        escape(&why.sketch_b),
        escape(&estimate_line(&why.estimate))
    );
    if let Some(line) = exact_line(why) {
        let _ = write!(s, "<tr><th>exact</th><td>{}</td></tr>", escape(&line));
    }
    let _ = writeln!(
        s,
        "<tr><th>verdict</th><td class=\"{}\">{}</td></tr></table>",
        if why.verdict.near_duplicate {
            "yes"
        } else {
            "no"
        },
        escape(&verdict_line(why))
    );
    if let Some(f) = &why.features {
        let _ = writeln!(
            s,
            "<h2>Features ({}s)</h2><p>{} distinct in a, {} in b, {} shared.</p>\
             <h3>Shared</h3>{}<h3>Only in a</h3>{}<h3>Only in b</h3>{}",
            f.kind,
            f.distinct_a,
            f.distinct_b,
            f.distinct_shared,
            html_features(&f.shared),
            html_features(&f.only_a),
            html_features(&f.only_b)
        );
    }
    if !why.bits.is_empty() {
        s.push_str(
            "<h2>Differing bits</h2><p>Bit 0 is the most significant. A bit is 1 when its counter (the sum \
             over tokens of count × ±1, by the token hash's bit) is positive; shift = (count in a − count in \
             b) × sign.</p><table><tr><th>bit</th><th>a</th><th>b</th><th>counter a</th><th>counter b</th>\
             <th>pushed by</th></tr>",
        );
        for bit in &why.bits {
            let pushes: Vec<String> = bit
                .pushed
                .iter()
                .map(|p| format!("{} {}→{} ({:+})", escape(&p.text), p.a, p.b, p.shift))
                .collect();
            let c = |c: Option<i64>| c.map_or(String::new(), |c| format!("{c:+}"));
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                bit.bit,
                u8::from(bit.a),
                u8::from(bit.b),
                c(bit.counter_a),
                c(bit.counter_b),
                pushes.join(", ")
            );
        }
        s.push_str("</table>\n");
    }
    if let Some(d) = &why.diff {
        let _ = write!(
            s,
            "<h2>Diff</h2><p>{} lines in a, {} in b, {} equal.</p><table class=\"diff\">\
             <tr><th></th><th>{}</th><th></th><th>{}</th></tr>",
            d.lines_a,
            d.lines_b,
            d.equal_lines,
            escape(a),
            escape(b)
        );
        for hunk in &d.hunks {
            s.push_str("<tr class=\"hunk\"><td colspan=\"4\">⋯</td></tr>");
            for row in &hunk.rows {
                let class = match row.tag {
                    RowTag::Equal => "",
                    RowTag::Changed => "chg",
                    RowTag::Deleted => "del",
                    RowTag::Inserted => "ins",
                };
                let side = |x: &Option<(usize, String)>| match x {
                    Some((n, t)) => format!(
                        "<td class=\"n\">{n}</td><td class=\"{class}\">{}</td>",
                        escape(t)
                    ),
                    None => "<td class=\"n\"></td><td></td>".to_owned(),
                };
                let _ = write!(s, "<tr>{}{}</tr>", side(&row.a), side(&row.b));
            }
        }
        s.push_str("</table>");
        if d.omitted_rows > 0 {
            let _ = write!(s, "<p>… {} more rows (--max-rows).</p>", d.omitted_rows);
        }
    }
    s.push_str("\n</body></html>\n");
    s
}
