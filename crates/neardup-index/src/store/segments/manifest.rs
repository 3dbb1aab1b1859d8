//! The manifest: which segments and which log make up the index now, swapped atomically.
//!
//! A short text file, `MANIFEST`, readable with `cat`:
//!
//! ```text
//! neardup-segments 1
//! generation 7
//! sequence 1234
//! entries 1000000
//! segment seg-0000000000000005.nds
//! segment seg-0000000000000007.nds
//! wal wal-0000000000000006.log
//! wal wal-0000000000000007.log
//! setting 6b696e64 68616d6d696e67
//! crc 1a2b3c4d
//! ```
//!
//! `sequence` is the last batch folded into the segments; `entries` the ids they hold (rows not shadowed by a
//! newer segment). Segments and logs are listed oldest first: the last log is the one written now, its records
//! following `sequence`; older ones are kept for the change log only. Settings are hex, so
//! that any key or value fits on a line; `crc` is the CRC-32 of every line before it. A new manifest is written
//! as `MANIFEST.tmp`, synced, renamed over `MANIFEST`, and the directory synced: a reader sees the old one or
//! the new one, never a mix, and a crash at any moment leaves one of them.

use crate::store::Settings;
use std::io::Write;
use std::path::Path;

/// The manifest's file name.
pub(crate) const FILE: &str = "MANIFEST";
const HEAD: &str = "neardup-segments 1";

/// The live state of a segmented index.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Manifest {
    /// Increases at every merge; names the files of that merge.
    pub generation: u64,
    /// The last batch in the segments.
    pub sequence: u64,
    /// Ids the segments hold.
    pub entries: u64,
    /// The live segment files (names in the directory), oldest first.
    pub segments: Vec<String>,
    /// The logs, oldest first: the last holds the batches after `sequence`.
    pub wals: Vec<String>,
    /// The index's settings.
    pub settings: Settings,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The file names of generation `g`.
pub(crate) fn segment_name(g: u64) -> String {
    format!("seg-{g:016}.nds")
}

/// The log's name for generation `g`.
pub(crate) fn wal_name(g: u64) -> String {
    format!("wal-{g:016}.log")
}

impl Manifest {
    /// Whether a file of the directory is one this manifest names (a segment or a log).
    pub fn names(&self, file: &str) -> bool {
        self.segments.iter().chain(&self.wals).any(|n| n == file)
    }

    fn encode(&self) -> String {
        let mut text = format!(
            "{HEAD}\ngeneration {}\nsequence {}\nentries {}\n",
            self.generation, self.sequence, self.entries
        );
        for s in &self.segments {
            text.push_str(&format!("segment {s}\n"));
        }
        for w in &self.wals {
            text.push_str(&format!("wal {w}\n"));
        }
        for (k, v) in &self.settings {
            text.push_str(&format!(
                "setting {} {}\n",
                hex(k.as_bytes()),
                hex(v.as_bytes())
            ));
        }
        let crc = crc32fast::hash(text.as_bytes());
        text.push_str(&format!("crc {crc:08x}\n"));
        text
    }

    /// Parses a manifest, checking its checksum.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let body_end = text.rfind("crc ").ok_or("no checksum line (truncated?)")?;
        let (body, crc_line) = text.split_at(body_end);
        let crc = u32::from_str_radix(crc_line.trim_start_matches("crc ").trim(), 16)
            .map_err(|_| "the checksum line is malformed (damaged)")?;
        if crc32fast::hash(body.as_bytes()) != crc {
            return Err("the checksum does not match (damaged)".into());
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEAD) {
            return Err(format!("the first line is not '{HEAD}'"));
        }
        let mut m = Manifest {
            generation: 0,
            sequence: 0,
            entries: 0,
            segments: Vec::new(),
            wals: Vec::new(),
            settings: Settings::new(),
        };
        let name = |v: &str| -> Result<String, String> {
            if v.is_empty() || v.contains(['/', '\\']) || v.starts_with('.') {
                Err(format!("the file name '{v}' is not a plain name"))
            } else {
                Ok(v.to_owned())
            }
        };
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| format!("bad line '{line}'"))
            };
            match key {
                "generation" => m.generation = number()?,
                "sequence" => m.sequence = number()?,
                "entries" => m.entries = number()?,
                "segment" => m.segments.push(name(value)?),
                "wal" => m.wals.push(name(value)?),
                "setting" => {
                    let (k, v) = value
                        .split_once(' ')
                        .and_then(|(k, v)| Some((unhex(k)?, unhex(v)?)))
                        .ok_or_else(|| format!("bad line '{line}'"))?;
                    m.settings.insert(k, v);
                }
                _ => return Err(format!("unknown line '{line}'")),
            }
        }
        if m.wals.is_empty() {
            return Err("no 'wal' line".into());
        }
        Ok(m)
    }

    /// Reads `DIR/MANIFEST`.
    pub fn read(dir: &Path) -> Result<Manifest, ReadError> {
        let path = dir.join(FILE);
        let text = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
            Err(e) => return Err(ReadError::Bad(e.to_string())),
        };
        let text =
            String::from_utf8(text).map_err(|_| ReadError::Bad("not UTF-8 (damaged)".into()))?;
        Manifest::parse(&text).map_err(ReadError::Bad)
    }

    /// Replaces `DIR/MANIFEST` atomically and durably.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join(format!("{FILE}.tmp"));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(self.encode().as_bytes())?;
        file.sync_all()?;
        drop(file);
        super::crash::point("manifest-synced");
        std::fs::rename(&tmp, dir.join(FILE))?;
        super::crash::point("manifest-renamed");
        sync_dir(dir)
    }
}

/// Why a manifest could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// There is none.
    Missing,
    /// It is damaged or unreadable.
    Bad(String),
}

/// Makes a directory's entries (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_damage() {
        let m = Manifest {
            generation: 7,
            sequence: 1234,
            entries: 99,
            segments: vec![segment_name(5), segment_name(7)],
            wals: vec![wal_name(6), wal_name(7)],
            settings: [("kind ✓".to_owned(), "a b\nc".to_owned())].into(),
        };
        let text = m.encode();
        assert_eq!(Manifest::parse(&text).unwrap(), m);
        let damaged = text.replace("1234", "1235");
        assert!(Manifest::parse(&damaged).unwrap_err().contains("checksum"));
        assert!(Manifest::parse(&text[..text.len() - 12]).is_err());
    }
}
