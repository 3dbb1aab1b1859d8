//! A `str`'s text as UTF-8, read from the string itself instead of through Python's UTF-8 encoder.
//!
//! A batch call over a list of `str` must turn every string into UTF-8 under the GIL, on one thread, while
//! the pool sketches the pieces already read. Python's encoder takes 0.1–0.22 s for 100 MB of text in
//! European languages (most such strings hold a character above U+00FF, and CPython encodes those one
//! character at a time), and on two cores that CPU time is taken from the sketching: a list cost a quarter
//! more than the same text in an Arrow column. CPython keeps a `str` as 1, 2 or 4 bytes per character (PEP
//! 393); simdutf turns those code units into UTF-8 about four times faster than the encoder, with no
//! `bytes` object made and copied for each string.
//!
//! The stable ABI does not expose that layout, but CPython 3.9 to 3.15 share it (a header of two sizes,
//! before and after 3.12 dropped the `wstr` fields, then the characters). [`init`] checks it at import on
//! strings of every kind, against their known characters and `sys.getsizeof`; where anything differs (a
//! later version, a debug build, a 32-bit or big-endian machine) the reader stays off and every string goes
//! through Python's encoder as before. Strings not in the compact layout (a subclass of `str`; a legacy
//! string of 3.9–3.11's deprecated `Py_UNICODE` API) and strings holding surrogates (which UTF-8 cannot
//! encode; the encoder says what is wrong with them) go through the encoder too. `str_reader_enabled()` says
//! whether the reader is on, so the tests know which path they checked.

use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::OnceLock;

/// Where a compact string's characters start, from the start of the object: the header's two sizes
/// (`PyASCIIObject` for ASCII strings, `PyCompactUnicodeObject` for the others).
#[derive(Clone, Copy)]
struct Layout {
    ascii_header: usize,
    compact_header: usize,
}

/// The checked layout, or `None` when strings go through Python's encoder.
static LAYOUT: OnceLock<Option<Layout>> = OnceLock::new();

/// `length` follows the object header (reference count and type, 8 bytes each on a 64-bit build).
const LENGTH_AT: usize = 16;
/// `state` follows `length` and `hash`: its bits `interned:2, kind:3, compact:1, ascii:1`, from the lowest,
/// as GCC, Clang and MSVC lay out C bit fields on little-endian machines.
const STATE_AT: usize = 32;

/// A compact string's characters, borrowed from the string.
enum CodeUnits<'a> {
    Ascii(&'a [u8]),
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
    Ucs4(&'a [u32]),
}

impl CodeUnits<'_> {
    /// Bytes a character, and whether all are ASCII (for the check at import).
    fn form(&self) -> (usize, bool) {
        match self {
            CodeUnits::Ascii(_) => (1, true),
            CodeUnits::Latin1(_) => (1, false),
            CodeUnits::Ucs2(_) => (2, false),
            CodeUnits::Ucs4(_) => (4, false),
        }
    }

    /// The characters, one `u32` each (for the check at import).
    fn chars(&self) -> Vec<u32> {
        match self {
            CodeUnits::Ascii(units) | CodeUnits::Latin1(units) => {
                units.iter().map(|&u| u32::from(u)).collect()
            }
            CodeUnits::Ucs2(units) => units.iter().map(|&u| u32::from(u)).collect(),
            CodeUnits::Ucs4(units) => units.to_vec(),
        }
    }
}

impl Layout {
    /// The layout CPython `minor` (3.x) is known to have on a 64-bit little-endian build; `None` otherwise.
    fn of_version(major: u8, minor: u8) -> Option<Layout> {
        if !cfg!(all(target_pointer_width = "64", target_endian = "little")) || major != 3 {
            return None;
        }
        match minor {
            // PyASCIIObject ends with the `wstr` pointer; PyCompactUnicodeObject adds `utf8_length`, `utf8`
            // and `wstr_length`.
            9..=11 => Some(Layout {
                ascii_header: 48,
                compact_header: 72,
            }),
            // 3.12 removed `wstr` and `wstr_length`; 3.15 kept 3.14's layout.
            12..=15 => Some(Layout {
                ascii_header: 40,
                compact_header: 56,
            }),
            _ => None,
        }
    }

    /// The characters of `s`, when it is an exact `str` in the compact layout.
    fn code_units<'a>(&self, s: &'a Bound<'_, PyString>) -> Option<CodeUnits<'a>> {
        if !s.is_exact_instance_of::<PyString>() {
            return None;
        }
        let base = s.as_ptr().cast::<u8>();
        // SAFETY: every `str` object starts with the fields of PyASCIIObject, which [`init`] checked this
        // interpreter lays out as `Layout` says; the object lives as long as `s` borrows it.
        let (length, state) = unsafe {
            (
                base.add(LENGTH_AT).cast::<isize>().read(),
                base.add(STATE_AT).cast::<u32>().read(),
            )
        };
        let (kind, compact, ascii) = (
            (state >> 2) & 7,
            (state >> 5) & 1 == 1,
            (state >> 6) & 1 == 1,
        );
        let length = usize::try_from(length).ok()?;
        if !compact {
            return None;
        }
        let data = base.wrapping_add(if ascii {
            self.ascii_header
        } else {
            self.compact_header
        });
        // SAFETY: a compact string's `length` characters of `kind` bytes each follow its header, in the
        // same allocation, aligned (the headers' sizes are multiples of 8); `str` is immutable.
        unsafe {
            Some(match (kind, ascii) {
                (1, true) => CodeUnits::Ascii(std::slice::from_raw_parts(data, length)),
                (1, false) => CodeUnits::Latin1(std::slice::from_raw_parts(data, length)),
                (2, false) => CodeUnits::Ucs2(std::slice::from_raw_parts(data.cast(), length)),
                (4, false) => CodeUnits::Ucs4(std::slice::from_raw_parts(data.cast(), length)),
                _ => return None,
            })
        }
    }
}

/// Checks the string layout of this interpreter, once, at import (see the module's documentation).
fn init(py: Python<'_>) -> PyResult<()> {
    let version = py.version_info();
    let layout = match Layout::of_version(version.major, version.minor) {
        Some(layout) if layout_holds(py, layout)? => Some(layout),
        _ => None,
    };
    let _ = LAYOUT.set(layout);
    Ok(())
}

/// Whether strings of every kind, made here, read back in the form their widest character calls for, as
/// the characters they were made from, with the sizes `sys.getsizeof` gives them.
fn layout_holds(py: Python<'_>, layout: Layout) -> PyResult<bool> {
    let getsizeof = py.import("sys")?.getattr("getsizeof")?;
    // None one character long: CPython shares those, and one may hold a UTF-8 copy that `getsizeof` counts.
    let probes = [
        "neardup reads text",
        "",
        "déjà vu, naïve café",
        "naïve – ℵ₀ Ελληνικά",
        "𝔸 ok 🙂 déjà",
    ];
    for text in probes {
        let s = PyString::new(py, text);
        let chars: Vec<u32> = text.chars().map(u32::from).collect();
        // CPython stores a string in the narrowest form its widest character fits.
        let (kind, ascii) = match chars.iter().max().copied().unwrap_or(0) {
            0..=0x7f => (1, true),
            0x80..=0xff => (1, false),
            0x100..=0xffff => (2, false),
            _ => (4, false),
        };
        let Some(units) = layout.code_units(&s) else {
            return Ok(false);
        };
        let header = if ascii {
            layout.ascii_header
        } else {
            layout.compact_header
        };
        let size: usize = getsizeof.call1((&s,))?.extract()?;
        if units.form() != (kind, ascii)
            || units.chars() != chars
            || size != header + (chars.len() + 1) * kind
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `str` values are read by this module rather than by Python's encoder (for the tests).
#[pyfunction]
fn str_reader_enabled() -> bool {
    matches!(LAYOUT.get(), Some(Some(_)))
}

/// Appends the UTF-8 of `s` to `out` and returns true; or returns false, `out` unchanged, when `s` must go
/// through Python's encoder (the reader is off, `s` is not a compact `str`, or it holds a surrogate).
pub fn append_utf8(s: &Bound<'_, PyString>, out: &mut Vec<u8>) -> bool {
    let Some(Some(layout)) = LAYOUT.get() else {
        return false;
    };
    let Some(units) = layout.code_units(s) else {
        return false;
    };
    // SAFETY (each conversion): simdutf writes at most 2, 3 or 4 bytes a character of Latin-1, of UTF-16
    // below U+10000 and of UTF-32, the room given; it returns the count written, or 0 (having written
    // nothing of use) where a unit is a surrogate or above U+10FFFF.
    match units {
        CodeUnits::Ascii(bytes) => {
            out.extend_from_slice(bytes);
            true
        }
        CodeUnits::Latin1(chars) => unsafe {
            write_into(out, chars.len() * 2, |to| {
                simdutf::convert_latin1_to_utf8(chars.as_ptr(), chars.len(), to)
            })
        },
        // In a 2-byte string every surrogate stands alone, even two in a row, which UTF-16 would read as
        // one character: Python's encoder refuses them, so they are left to it.
        CodeUnits::Ucs2(units) if has_surrogate(units) => false,
        CodeUnits::Ucs2(units) => unsafe {
            write_into(out, units.len() * 3, |to| {
                simdutf::convert_utf16_to_utf8(units.as_ptr(), units.len(), to)
            })
        },
        CodeUnits::Ucs4(units) => unsafe {
            write_into(out, units.len() * 4, |to| {
                simdutf::convert_utf32_to_utf8(units.as_ptr(), units.len(), to)
            })
        },
    }
}

/// Makes `room` bytes of room after `out`'s end, has `convert` write there, and keeps the bytes it says it
/// wrote; returns false, `out` unchanged, where it wrote none of a conversion that had input.
///
/// # Safety
///
/// `convert` must write at most `room` bytes at the pointer it is given, and return how many it wrote.
unsafe fn write_into(
    out: &mut Vec<u8>,
    room: usize,
    convert: impl FnOnce(*mut u8) -> usize,
) -> bool {
    if room == 0 {
        return true;
    }
    out.reserve(room);
    let start = out.len();
    let written = convert(out.spare_capacity_mut().as_mut_ptr().cast());
    // SAFETY: `convert` initialized `written` bytes after `start`, within the room reserved.
    unsafe { out.set_len(start + written) };
    written > 0
}

/// Whether any of `units` is a surrogate (U+D800–U+DFFF), a block at a time so that it vectorizes.
fn has_surrogate(units: &[u16]) -> bool {
    units.chunks(64).any(|block| {
        block.iter().fold(0u16, |any, &u| {
            any | u16::from(u.wrapping_sub(0xD800) < 0x800)
        }) != 0
    })
}

/// Registers `str_reader_enabled` and checks the layout.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init(m.py())?;
    m.add_function(wrap_pyfunction!(str_reader_enabled, m)?)
}
