//! The write-ahead log: every batch committed after the segments, one record each, fsync'd before the batch is
//! acknowledged.
//!
//! ```text
//! header   16 bytes   magic "NDWAL\0\0\x01", base sequence (the last batch in the segments)
//! record              payload length (u32), CRC-32 of the payload (u32), payload:
//!                     sequence (u64), change count (u32), per change: 1 = put | 2 = delete (u8),
//!                     id length (u32), id, and for a put: value length (u32), value
//! ```
//!
//! Records are numbered base + 1, base + 2, … without gaps. Each flush of the delta into a segment starts a new
//! log; older logs stay, read-only, while the change log still keeps some of their batches (for readers that
//! catch up through `changes_since`). A record cut short at the end of the file, or a
//! last record whose checksum fails, is a write that was never acknowledged (the process or the machine died
//! during it): readers stop before it and the writer cuts it off when it opens the log. A damaged record with
//! records after it is damage, not a torn write, and the log is refused with the record's offset.

use crate::store::{Batch, Change};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"NDWAL\0\0\x01";
/// The header's length, and so the offset of the first record.
pub(crate) const HEADER: u64 = 16;

/// One complete record of a log.
#[derive(Debug)]
pub(crate) struct Record {
    /// Its batch's sequence number.
    pub sequence: u64,
    /// How many changes the batch has.
    pub changes: u64,
    /// Where the record starts.
    pub offset: u64,
    /// The batch, when decoding was asked for.
    pub batch: Option<Batch>,
}

/// What reading a log found.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    /// The complete records read, in order.
    pub records: Vec<Record>,
    /// Where the complete records end (the start of a torn record, or the end of the file).
    pub end: u64,
    /// Bytes of a torn last record after `end`.
    pub torn: u64,
}

/// Encodes a batch's record.
fn encode(sequence: u64, changes: &[Change]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&sequence.to_le_bytes());
    payload.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    for change in changes {
        match change {
            Change::Put { id, value } => {
                payload.push(1);
                payload.extend_from_slice(&(id.len() as u32).to_le_bytes());
                payload.extend_from_slice(id.as_bytes());
                payload.extend_from_slice(&(value.len() as u32).to_le_bytes());
                payload.extend_from_slice(value);
            }
            Change::Delete(id) => {
                payload.push(2);
                payload.extend_from_slice(&(id.len() as u32).to_le_bytes());
                payload.extend_from_slice(id.as_bytes());
            }
        }
    }
    let mut record = Vec::with_capacity(8 + payload.len());
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    record.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    record
}

/// Decodes a payload whose checksum matched.
fn decode_payload(payload: &[u8]) -> Option<Batch> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let bytes = payload.get(at..at.checked_add(n)?)?;
        at += n;
        Some(bytes)
    };
    let sequence = u64::from_le_bytes(take(8)?.try_into().ok()?);
    let count = u32::from_le_bytes(take(4)?.try_into().ok()?);
    let mut changes = Vec::with_capacity((count as usize).min(1 << 16));
    for _ in 0..count {
        let tag = take(1)?[0];
        let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let id = String::from_utf8(take(len)?.to_vec()).ok()?;
        changes.push(match tag {
            1 => {
                let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
                Change::Put {
                    id,
                    value: take(len)?.to_vec(),
                }
            }
            2 => Change::Delete(id),
            _ => return None,
        });
    }
    (at == payload.len()).then_some(Batch { sequence, changes })
}

/// Reads the base sequence of a log.
pub(crate) fn base(path: &Path) -> Result<u64, std::io::Error> {
    let mut header = [0u8; HEADER as usize];
    File::open(path)?.read_exact(&mut header)?;
    if &header[..8] != MAGIC {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a neardup write-ahead log (bad magic)",
        ));
    }
    Ok(u64::from_le_bytes(header[8..16].try_into().expect("8")))
}

/// Reads the records from `offset` (a record boundary; [`HEADER`] for the first), expecting the first to be
/// batch `next` (any, for `None`) and the others to follow without gaps; with `decode`, each record's batch
/// too (else only its number and size). Every record's checksum is checked.
pub(crate) fn read(
    path: &Path,
    offset: u64,
    mut next: Option<u64>,
    decode: bool,
) -> Result<Tail, std::io::Error> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let damaged = |reason: String| std::io::Error::new(std::io::ErrorKind::InvalidData, reason);
    let mut tail = Tail {
        end: offset,
        ..Tail::default()
    };
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let torn = |tail: &mut Tail| tail.torn = rest.len() as u64;
        if rest.len() < 8 {
            torn(&mut tail);
            break;
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4"));
        let Some(payload) = rest.get(8..8 + len) else {
            torn(&mut tail);
            break;
        };
        let last = 8 + len == rest.len();
        let record_at = offset + at as u64;
        if crc32fast::hash(payload) != crc {
            if last {
                torn(&mut tail);
                break;
            }
            return Err(damaged(format!(
                "the record at byte {record_at} fails its checksum and records follow it (damaged)"
            )));
        }
        let malformed = || {
            damaged(format!(
                "the record at byte {record_at} is malformed (damaged)"
            ))
        };
        let (sequence, changes, batch) = if decode {
            let batch = decode_payload(payload).ok_or_else(malformed)?;
            (batch.sequence, batch.changes.len() as u64, Some(batch))
        } else {
            let head = payload.get(..12).ok_or_else(malformed)?;
            let sequence = u64::from_le_bytes(head[..8].try_into().expect("8"));
            let changes = u64::from(u32::from_le_bytes(head[8..12].try_into().expect("4")));
            (sequence, changes, None)
        };
        if let Some(expected) = next
            && sequence != expected
        {
            return Err(damaged(format!(
                "the record at byte {record_at} is batch {sequence}, expected {expected} (damaged)"
            )));
        }
        next = Some(sequence + 1);
        tail.records.push(Record {
            sequence,
            changes,
            offset: record_at,
            batch,
        });
        at += 8 + len;
        tail.end = offset + at as u64;
    }
    Ok(tail)
}

/// The writer's handle on the log.
pub(crate) struct Wal {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Wal {
    /// Creates a log whose first record will be batch `base + 1`, durably (the directory entry is the
    /// caller's to sync).
    pub fn create(path: &Path, base: u64) -> std::io::Result<Wal> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..].copy_from_slice(&base.to_le_bytes());
        file.write_all(&header)?;
        file.sync_all()?;
        Ok(Wal {
            path: path.to_path_buf(),
            file,
            len: HEADER,
        })
    }

    /// Opens a log for appending after its last complete record (`end`), cutting off a torn one.
    pub fn open(path: &Path, end: u64) -> std::io::Result<Wal> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        if file.metadata()?.len() != end {
            file.set_len(end)?;
            file.sync_all()?;
        }
        Ok(Wal {
            path: path.to_path_buf(),
            file,
            len: end,
        })
    }

    /// Where its records end.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a batch and makes it durable; on failure the log is cut back to where it was, so a failed
    /// write leaves nothing behind.
    pub fn append(&mut self, sequence: u64, changes: &[Change]) -> std::io::Result<u64> {
        let record = encode(sequence, changes);
        let written = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| self.file.write_all(&record))
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            let _ = self.file.set_len(self.len);
            let _ = self.file.sync_data();
            return Err(e);
        }
        self.len += record.len() as u64;
        Ok(self.len)
    }
}
