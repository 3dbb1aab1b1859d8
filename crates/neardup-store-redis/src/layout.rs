//! How an index is laid out in Redis: its keys, and the bytes of its entries, bucket members and log.
//!
//! | key | type | holds | slot |
//! |---|---|---|---|
//! | `nd:{NAME}:meta` | hash | `format`, the layout (`entry_bits`, `table_bits`), `seq` (batches committed), `entries`, `logged`, and the index's settings as `s:KEY` | the index's own |
//! | `nd:{NAME}:log` | list | the newest batches, `SEQ:COUNT:` + the batch's changes | the index's own |
//! | `nd:{NAME}:ver` | string | the last version given to a put | the index's own |
//! | `nd:{NAME/e/G}` | hash | entry group G (the top `entry_bits` bits of the id's xxh3-64): id → version (8 bytes LE) + value | spread |
//! | `nd:{NAME/tT/G}` | sorted set | table T's bucket group G (the top `table_bits` bits of the bucket): members version (8 bytes LE) + id, scored by the bucket's next bits (at most 52) | spread |
//!
//! Every key's hash tag (the part in braces) is distinct, so the groups spread over a cluster's slots; the
//! three keys of the index's own slot change together in one script.

use neardup_index::store::{Batch, Change};

/// The format written in `nd:{NAME}:meta`.
pub const FORMAT: &str = "neardup-redis-1";
/// The longest a group's bit count may be: 2^20 groups per table.
pub const MAX_GROUP_BITS: u32 = 20;

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
    /// `nd:{NAME}:ver`.
    pub version: String,
}

impl Keys {
    /// The keys of the index `name`.
    pub fn new(name: &str) -> Self {
        Keys {
            name: name.to_owned(),
            meta: format!("nd:{{{name}}}:meta"),
            log: format!("nd:{{{name}}}:log"),
            version: format!("nd:{{{name}}}:ver"),
        }
    }

    /// The entry group of an id.
    pub fn entry_group(id: &str, bits: u32) -> u64 {
        top(xxhash_rust::xxh3::xxh3_64(id.as_bytes()), bits)
    }

    /// Entry group `group`'s key.
    pub fn entries(&self, group: u64) -> String {
        format!("nd:{{{}/e/{group:x}}}", self.name)
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

/// A bucket member: the version of the entry it files, then the id.
pub fn member(version: u64, id: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + id.len());
    m.extend_from_slice(&version.to_le_bytes());
    m.extend_from_slice(id.as_bytes());
    m
}

/// A member's (version, id), or `None` for bytes that are not one.
pub fn parse_member(bytes: &[u8]) -> Option<(u64, &str)> {
    let (version, id) = bytes.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*version), std::str::from_utf8(id).ok()?))
}

/// A stored entry: its version, then the value.
pub fn entry(version: u64, value: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(8 + value.len());
    e.extend_from_slice(&version.to_le_bytes());
    e.extend_from_slice(value);
    e
}

/// An entry's (version, value).
pub fn parse_entry(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (version, value) = bytes.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*version), value))
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

/// Applies one entry group's changes in order and returns, per change, the entry it replaced or removed
/// (nil if none). ARGV: per change `p ID ENTRY` or `d ID`.
pub const SWAP: &str = r"
local out = {}
local i = 1
while i <= #ARGV do
  local old = redis.call('HGET', KEYS[1], ARGV[i + 1])
  if ARGV[i] == 'p' then
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  else
    if old then redis.call('HDEL', KEYS[1], ARGV[i + 1]) end
    i = i + 2
  end
  out[#out + 1] = old
end
return out
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
        assert_eq!(parse_member(&member(7, "é/1")), Some((7, "é/1")));
        assert_eq!(parse_member(&[1, 2]), None);
        assert_eq!(parse_entry(&entry(9, b"")), Some((9, &b""[..])));
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
