//! How an index is laid out in Redis: its keys, and the bytes of its entries, bucket members and log.
//!
//! | key | type | holds | slot |
//! |---|---|---|---|
//! | `nd:{NAME}:meta` | hash | `format`, the layout (`entry_bits`, `table_bits`), `seq` (batches committed), `entries`, `logged`, and the index's settings as `s:KEY` | the index's own |
//! | `nd:{NAME}:log` | list | the newest batches, `SEQ:COUNT:` + the batch's changes | the index's own |
//! | `nd:{NAME/e/G}` | hash | entry group G (the top `entry_bits` bits of the id's xxh3-64): id → the entry's version | spread |
//! | `nd:{NAME/e/G}:v` | hash | entry group G's records: version → id and value; `n`, the last version given in the group | G's |
//! | `nd:{NAME/tT/G}` | sorted set | table T's bucket group G (the top `table_bits` bits of the bucket): members `version << entry_bits \| entry group`, scored by the bucket's next bits (at most 52) | spread |
//!
//! Every key's hash tag (the part in braces) is distinct but for an entry group's two hashes, so the groups
//! spread over a cluster's slots; an entry group's two hashes change together in one script, and so do the two
//! keys of the index's own slot.
//!
//! # Why members are numbers
//!
//! An entry is filed once in every table, so a bucket member is what an index pays most for: a SimHash index
//! at 10^7 entries keeps 10 of them per entry. A member is therefore one integer, written in decimal, which
//! Redis keeps in a sorted set's compact encoding (listpack) as a 4- or 8-byte integer: the entry's version,
//! numbered within its entry group, and the group. From it a query finds the record (one `HMGET` per entry
//! group); the record's presence is the version check, because a swap deletes the record of the version it
//! replaces. Bucket scores are small integers too. The versions and the records' small integers keep the entry
//! groups compact as well.

use neardup_index::store::{Batch, Change};

/// The format written in `nd:{NAME}:meta`.
pub const FORMAT: &str = "neardup-redis-2";
/// The longest a group's bit count may be: 2^20 groups per table.
pub const MAX_GROUP_BITS: u32 = 20;
/// The field of an entry group's records that holds the last version given in the group.
pub const LAST_VERSION: &str = "n";

/// Group bits for about `expected` entries: groups of about 64 members, small enough for Redis's compact
/// encodings (listpack) at the default thresholds of 128 members.
pub fn group_bits(expected: u64) -> u32 {
    let groups = expected.max(1).div_ceil(64);
    (64 - (groups - 1).leading_zeros()).min(MAX_GROUP_BITS)
}

/// The keys of one index.
#[derive(Clone, Debug)]
pub struct Keys {
    name: String,
    /// `nd:{NAME}:meta`.
    pub meta: String,
    /// `nd:{NAME}:log`.
    pub log: String,
}

impl Keys {
    /// The keys of the index `name`.
    pub fn new(name: &str) -> Self {
        Keys {
            name: name.to_owned(),
            meta: format!("nd:{{{name}}}:meta"),
            log: format!("nd:{{{name}}}:log"),
        }
    }

    /// The entry group of an id.
    pub fn entry_group(id: &str, bits: u32) -> u64 {
        top(xxhash_rust::xxh3::xxh3_64(id.as_bytes()), bits)
    }

    /// Entry group `group`'s versions: id → version.
    pub fn entries(&self, group: u64) -> String {
        format!("nd:{{{}/e/{group:x}}}", self.name)
    }

    /// Entry group `group`'s records: version → id and value (same slot as its versions).
    pub fn records(&self, group: u64) -> String {
        format!("nd:{{{}/e/{group:x}}}:v", self.name)
    }

    /// Table `table`'s group `group`'s key.
    pub fn table(&self, table: usize, group: u64) -> String {
        format!("nd:{{{}/t{table}/{group:x}}}", self.name)
    }
}

/// The top `bits` bits of `x`.
pub fn top(x: u64, bits: u32) -> u64 {
    if bits == 0 { 0 } else { x >> (64 - bits) }
}

/// Where a bucket (left-aligned, `bits` significant) lies: its group (top `group_bits`) and its score (the next
/// bits, at most 52 so that a double holds them exactly).
pub fn place(bucket: u64, bits: u32, group_bits: u32) -> (u64, u64) {
    let g = group_bits.min(bits);
    let rest = (bits - g).min(52);
    (top(bucket, g), top(bucket << g, rest))
}

/// A bucket member: the entry's version within its group, and the group, as one decimal integer.
pub fn member(version: u64, group: u64, entry_bits: u32) -> String {
    ((version << entry_bits) | group).to_string()
}

/// A version, or a member, as Redis gives it back: a decimal integer.
pub fn parse_version(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// A member's (version, entry group), or `None` for bytes that are not one.
pub fn parse_member(bytes: &[u8], entry_bits: u32) -> Option<(u64, u64)> {
    let m = parse_version(bytes)?;
    let mask = (1u64 << entry_bits) - 1;
    Some((m >> entry_bits, m & mask))
}

/// A record: the id's length (LEB128, one byte below 128), the id, then the value.
pub fn record(id: &str, value: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(2 + id.len() + value.len());
    let mut len = id.len();
    while len >= 0x80 {
        r.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    r.push(len as u8);
    r.extend_from_slice(id.as_bytes());
    r.extend_from_slice(value);
    r
}

/// A record's (id, value), or `None` for bytes that are not one.
pub fn parse_record(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let mut len = 0usize;
    let mut at = 0;
    loop {
        let byte = *bytes.get(at)?;
        len |= usize::from(byte & 0x7f).checked_shl(7 * at as u32)?;
        at += 1;
        if byte < 0x80 {
            break;
        }
        if at == 5 {
            return None;
        }
    }
    let rest = &bytes[at..];
    if rest.len() < len {
        return None;
    }
    let (id, value) = rest.split_at(len);
    Some((std::str::from_utf8(id).ok()?, value))
}

/// A batch's changes as the log holds them: per change `P` or `D`, the id's length (u32 LE) and the id, and
/// for a put the value's length (u32 LE) and the value.
pub fn encode_changes(changes: &[Change]) -> Vec<u8> {
    let mut out = Vec::new();
    for change in changes {
        let (tag, id) = match change {
            Change::Put { id, .. } => (b'P', id),
            Change::Delete(id) => (b'D', id),
        };
        out.push(tag);
        out.extend_from_slice(&(id.len() as u32).to_le_bytes());
        out.extend_from_slice(id.as_bytes());
        if let Change::Put { value, .. } = change {
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
            out.extend_from_slice(value);
        }
    }
    out
}

/// A log element (`SEQ:COUNT:` + changes) as a batch, or what is wrong with it.
pub fn decode_batch(element: &[u8]) -> Result<Batch, String> {
    let mut fields = element.splitn(3, |&b| b == b':');
    let number = |field: Option<&[u8]>, what: &str| -> Result<u64, String> {
        std::str::from_utf8(field.ok_or(format!("no {what}"))?)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(format!("a bad {what}"))
    };
    let sequence = number(fields.next(), "sequence number")?;
    let count = number(fields.next(), "change count")?;
    let mut rest = fields.next().ok_or("no changes")?;
    let mut take = |n: usize| -> Result<&[u8], String> {
        if rest.len() < n {
            return Err(format!("batch {sequence} is cut short"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let mut changes = Vec::new();
    while changes.len() < count as usize {
        let tag = take(1)?[0];
        let len = u32::from_le_bytes(take(4)?.try_into().unwrap_or_default()) as usize;
        let id = std::str::from_utf8(take(len)?)
            .map_err(|_| format!("batch {sequence} has an id that is not UTF-8"))?
            .to_owned();
        changes.push(match tag {
            b'P' => {
                let len = u32::from_le_bytes(take(4)?.try_into().unwrap_or_default()) as usize;
                Change::Put {
                    id,
                    value: take(len)?.to_vec(),
                }
            }
            b'D' => Change::Delete(id),
            other => return Err(format!("batch {sequence} has a change tagged {other}")),
        });
    }
    if !rest.is_empty() {
        return Err(format!("batch {sequence} has bytes past its changes"));
    }
    Ok(Batch { sequence, changes })
}

/// Applies one entry group's changes in order and returns, per change, the version and the record it replaced
/// or removed (two nils if none). KEYS: the group's versions, its records. ARGV: per change `p ID VERSION
/// RECORD` or `d ID`. A record goes with its version: the version a swap replaces loses its record, which is
/// how a query knows that a bucket member is out of date.
pub const SWAP: &str = r"
local out = {}
local i = 1
while i <= #ARGV do
  local old = redis.call('HGET', KEYS[1], ARGV[i + 1])
  local record = false
  if old then
    record = redis.call('HGET', KEYS[2], old)
    redis.call('HDEL', KEYS[2], old)
  end
  if ARGV[i] == 'p' then
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
    redis.call('HSET', KEYS[2], ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  else
    if old then redis.call('HDEL', KEYS[1], ARGV[i + 1]) end
    i = i + 2
  end
  out[#out + 1] = old
  out[#out + 1] = record
end
return out
";

/// The current record of an id. KEYS: its group's versions, its records. ARGV: the id.
pub const GET: &str = r"
local version = redis.call('HGET', KEYS[1], ARGV[1])
if not version then return false end
return redis.call('HGET', KEYS[2], version)
";

/// Commits a batch to the index's own slot: numbers it, counts its entries, logs it and trims the log to the
/// retention. KEYS: meta, log. ARGV: changes, change count, entries delta, min changes, changes per entry.
/// Returns the batch's number.
pub const COMMIT: &str = r"
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local entries = redis.call('HINCRBY', KEYS[1], 'entries', tonumber(ARGV[3]))
local count = tonumber(ARGV[2])
redis.call('RPUSH', KEYS[2], seq .. ':' .. count .. ':' .. ARGV[1])
local logged = redis.call('HINCRBY', KEYS[1], 'logged', count)
local limit = math.max(tonumber(ARGV[4]), math.floor(entries * tonumber(ARGV[5])))
while logged > limit do
  local oldest = redis.call('LPOP', KEYS[2])
  if not oldest then break end
  local n = tonumber(string.match(oldest, '^%d+:(%d+):'))
  logged = redis.call('HINCRBY', KEYS[1], 'logged', -n)
end
return seq
";

/// Creates an index's meta hash unless the index exists. KEYS: meta. ARGV: field, value, … Returns 1, or 0
/// if it existed.
pub const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_bits_keep_groups_near_64() {
        assert_eq!(group_bits(0), 0);
        assert_eq!(group_bits(64), 0);
        assert_eq!(group_bits(65), 1);
        assert_eq!(group_bits(1_000_000), 14);
        assert_eq!(group_bits(u64::MAX), MAX_GROUP_BITS);
    }

    #[test]
    fn places_split_a_bucket() {
        let bucket = 0xabcd_e000_0000_0000u64; // 20 significant bits
        assert_eq!(place(bucket, 20, 8), (0xab, 0xcde));
        assert_eq!(
            place(bucket, 20, 24),
            (0xabcde, 0),
            "groups no wider than the bucket"
        );
        let (_, score) = place(u64::MAX, 64, 4);
        assert_eq!(score, (1 << 52) - 1, "at most 52 bits of score");
    }

    #[test]
    fn members_entries_and_batches_round_trip() {
        assert_eq!(member(7, 5, 4), "117");
        assert_eq!(parse_member(member(7, 5, 4).as_bytes(), 4), Some((7, 5)));
        assert_eq!(parse_member(member(9, 0, 0).as_bytes(), 0), Some((9, 0)));
        assert_eq!(parse_member(b"x1", 4), None);
        assert_eq!(
            parse_record(&record("é/1", b"\x00v")),
            Some(("é/1", &b"\x00v"[..]))
        );
        assert_eq!(parse_record(&record("", b"")), Some(("", &b""[..])));
        assert_eq!(parse_record(&[9, b'a']), None, "an id cut short");
        let long = "x".repeat(300);
        assert_eq!(record(&long, b"v").len(), 2 + 300 + 1);
        assert_eq!(
            parse_record(&record(&long, b"v")),
            Some((long.as_str(), &b"v"[..]))
        );
        assert_eq!(parse_record(&[0x80, 0x80, 0x80, 0x80, 0x80, 0]), None);
        let changes = vec![
            Change::Put {
                id: "a:b".into(),
                value: b":\x00".to_vec(),
            },
            Change::Delete(String::new()),
        ];
        let mut element = b"12:2:".to_vec();
        element.extend(encode_changes(&changes));
        assert_eq!(
            decode_batch(&element),
            Ok(Batch {
                sequence: 12,
                changes
            })
        );
        assert!(decode_batch(b"12:3:").unwrap_err().contains("cut short"));
        assert!(decode_batch(b"x:1:").unwrap_err().contains("sequence"));
    }
}
