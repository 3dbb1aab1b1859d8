//! Renders the golden vectors of simhash-doc-v1 from `testdata/vectors/simhash-doc-v1/cases.tsv`.
//!
//! Run it only when the spec changes on purpose (which means a new scheme version, see the spec's
//! "Versioning"): `cargo run -p neardup --example make-vectors`. The test `golden_vectors` never writes.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/vectors/simhash-doc-v1");
    let manifest = std::fs::read_to_string(dir.join("cases.tsv"))?;
    let mut n = 0;
    for line in manifest.lines().skip(1) {
        let mut cols = line.splitn(3, '\t');
        let (Some(name), Some(input), Some(description)) = (cols.next(), cols.next(), cols.next())
        else {
            return Err(format!("bad line in cases.tsv: {line}").into());
        };
        let bytes = std::fs::read(dir.join(input.split('#').next().unwrap_or(input)))?;
        let rendered = neardup::vectors::render_simhash_doc_v1(name, description, input, &bytes);
        std::fs::write(dir.join(format!("{name}.json")), rendered)?;
        n += 1;
    }
    println!("wrote {n} vectors to {}", dir.display());
    Ok(())
}
