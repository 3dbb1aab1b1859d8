//! The kernels under `neardup.datasketch`: datasketch 2.0's permutations, hashing and LSH band tables,
//! bit-exact, in native code. The Python module keeps datasketch's objects and semantics (a `hashvalues`
//! NumPy array, replaced on each update) and calls these for the work.
//!
//! The band tables take an entry's values as bytes (`hashvalues.tobytes()`, cheaper than an address for
//! 128 values). The permutation kernels take NumPy array addresses (`arr.__array_interface__['data'][0]`)
//! because they write in place and the stable ABI has no buffer protocol before Python 3.11. The contract, kept by `neardup/datasketch.py`: each address is of
//! a live, C-contiguous array of the scheme's dtype (`uint32` for "affine32", `uint64` for "affine64" and
//! "legacy") holding at least the given number of values, and a written array is not shared.

use hashbrown::DefaultHashBuilder;
use neardup::datasketch::{
    Variant, fmix32, fmix64, mod_mersenne61, permutations, permutations_affine64, sha1,
};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyType};
use pyo3::{PyTraverseError, PyVisit, intern};
use std::hash::BuildHasher;

mod ahead;
mod heads;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ds_permutations, m)?)?;
    m.add_function(wrap_pyfunction!(ds_update, m)?)?;
    m.add_function(wrap_pyfunction!(ds_update_hashes, m)?)?;
    m.add_class::<BandIndex>()?;
    Ok(())
}

/// Batches at least this large are permuted with the GIL released.
const DETACH_AT: usize = 256;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Affine32,
    Affine64,
    Legacy,
}

impl Scheme {
    fn parse(name: &str) -> PyResult<Scheme> {
        match name {
            "affine32" => Ok(Scheme::Affine32),
            "affine64" => Ok(Scheme::Affine64),
            "legacy" => Ok(Scheme::Legacy),
            _ => Err(PyValueError::new_err(format!(
                "scheme must be one of affine32, affine64, legacy, got '{name}'"
            ))),
        }
    }

    fn wide(self) -> bool {
        self != Scheme::Affine32
    }
}

/// `MinHash(num_perm, seed, scheme).permutations` as little-endian bytes of the scheme's dtype: `(a, b)`.
#[pyfunction]
fn ds_permutations<'py>(
    py: Python<'py>,
    scheme: &str,
    num_perm: usize,
    seed: i64,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let scheme = Scheme::parse(scheme)?;
    let seed = u32::try_from(seed)
        .map_err(|_| PyValueError::new_err("Seed must be between 0 and 2**32 - 1"))?;
    let (a, b) = match scheme {
        Scheme::Affine32 => permutations(Variant::Affine32, num_perm, seed),
        Scheme::Affine64 => permutations_affine64(num_perm, seed),
        Scheme::Legacy => permutations(Variant::Legacy, num_perm, seed),
    };
    // The scheme's dtype: affine32's values fit in 32 bits.
    let bytes = |v: Vec<u64>| -> Vec<u8> {
        if scheme.wide() {
            v.into_iter().flat_map(u64::to_le_bytes).collect()
        } else {
            v.into_iter()
                .flat_map(|x| (x as u32).to_le_bytes())
                .collect()
        }
    };
    Ok((PyBytes::new(py, &bytes(a)), PyBytes::new(py, &bytes(b))))
}

/// The arrays of one update, borrowed from NumPy by address (see the module docs for the contract).
struct Arrays {
    scheme: Scheme,
    a: usize,
    b: usize,
    values: usize,
    num_perm: usize,
}

impl Arrays {
    /// Takes the element-wise minimum of the permuted `hashes` into the values.
    fn apply(&self, hashes: &[u64]) {
        // SAFETY: the caller (neardup/datasketch.py) passes addresses of live, C-contiguous arrays of the
        // scheme's dtype with `num_perm` values each, and the values array is a fresh copy no one else holds.
        unsafe fn arrays<'a, T>(x: &Arrays) -> (&'a [T], &'a [T], &'a mut [T]) {
            unsafe {
                (
                    std::slice::from_raw_parts(x.a as *const T, x.num_perm),
                    std::slice::from_raw_parts(x.b as *const T, x.num_perm),
                    std::slice::from_raw_parts_mut(x.values as *mut T, x.num_perm),
                )
            }
        }
        match self.scheme {
            Scheme::Affine32 => {
                let (a, b, v) = unsafe { arrays::<u32>(self) };
                let mixed = hashes.iter().map(|&h| fmix32(h as u32));
                min_into(v, a, b, mixed, |a, b, h| a.wrapping_mul(h).wrapping_add(b));
            }
            Scheme::Affine64 => {
                let (a, b, v) = unsafe { arrays::<u64>(self) };
                let mixed = hashes.iter().map(|&h| fmix64(h));
                min_into(v, a, b, mixed, |a, b, h| a.wrapping_mul(h).wrapping_add(b));
            }
            Scheme::Legacy => {
                let (a, b, v) = unsafe { arrays::<u64>(self) };
                min_into(v, a, b, hashes.iter().copied(), |a, b, h| {
                    mod_mersenne61(a.wrapping_mul(h).wrapping_add(b)) & 0xFFFF_FFFF
                });
            }
        }
    }

    fn apply_maybe_detached(&self, py: Python<'_>, hashes: &[u64]) {
        if hashes.len() >= DETACH_AT {
            py.detach(|| self.apply(hashes));
        } else {
            self.apply(hashes);
        }
    }
}

/// For each (pre-mixed) hash, `values[i] = min(values[i], permute(a[i], b[i], hash))`.
fn min_into<T: Copy + Ord>(
    values: &mut [T],
    a: &[T],
    b: &[T],
    hashes: impl Iterator<Item = T>,
    permute: impl Fn(T, T, T) -> T,
) {
    for h in hashes {
        for ((v, &a), &b) in values.iter_mut().zip(a).zip(b) {
            *v = (*v).min(permute(a, b, h));
        }
    }
}

/// The default hash of one item, as datasketch's `sha1_hash32`/`sha1_hash64` (through hashlib) takes it.
fn default_hash(scheme: Scheme, item: &Bound<'_, PyAny>) -> PyResult<u64> {
    // sha1_hash64 for affine64, sha1_hash32 otherwise: the digest's first 8 or 4 bytes, little-endian.
    let from_digest = |d: &[u8]| {
        if scheme == Scheme::Affine64 {
            u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
        } else {
            u32::from_le_bytes(d[..4].try_into().expect("4 bytes")) as u64
        }
    };
    let hash = |data: &[u8]| from_digest(&sha1(data));
    if let Ok(b) = item.cast::<PyBytes>() {
        return Ok(hash(b.as_bytes()));
    }
    if let Ok(b) = item.cast::<PyByteArray>() {
        return Ok(hash(&b.to_vec()));
    }
    if item.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "Strings must be encoded before hashing",
        ));
    }
    // Other objects go to hashlib itself, so that what it accepts and its errors are datasketch's exactly
    // (a non-contiguous array, an object without the buffer protocol).
    let digest = item
        .py()
        .import("hashlib")?
        .getattr("sha1")?
        .call1((item,))?
        .call_method0("digest")?;
    Ok(from_digest(digest.cast::<PyBytes>()?.as_bytes()))
}

/// `update_batch(items)` with the default hash function.
#[pyfunction]
fn ds_update(
    py: Python<'_>,
    scheme: &str,
    a_ptr: usize,
    b_ptr: usize,
    values_ptr: usize,
    num_perm: usize,
    items: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let scheme = Scheme::parse(scheme)?;
    let hashes = items
        .try_iter()?
        .map(|item| default_hash(scheme, &item?))
        .collect::<PyResult<Vec<u64>>>()?;
    let arrays = Arrays {
        scheme,
        a: a_ptr,
        b: b_ptr,
        values: values_ptr,
        num_perm,
    };
    arrays.apply_maybe_detached(py, &hashes);
    Ok(())
}

/// `update_batch` with hash values already made by a custom `hashfunc` (`count` values of the scheme's dtype
/// at `hashes_ptr`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn ds_update_hashes(
    py: Python<'_>,
    scheme: &str,
    a_ptr: usize,
    b_ptr: usize,
    values_ptr: usize,
    num_perm: usize,
    hashes_ptr: usize,
    count: usize,
) -> PyResult<()> {
    let scheme = Scheme::parse(scheme)?;
    // SAFETY: `count` values of the scheme's dtype at `hashes_ptr` (see the module docs).
    let hashes: Vec<u64> = unsafe {
        if scheme.wide() {
            std::slice::from_raw_parts(hashes_ptr as *const u64, count).to_vec()
        } else {
            std::slice::from_raw_parts(hashes_ptr as *const u32, count)
                .iter()
                .map(|&h| h as u64)
                .collect()
        }
    };
    let arrays = Arrays {
        scheme,
        a: a_ptr,
        b: b_ptr,
        values: values_ptr,
        num_perm,
    };
    arrays.apply_maybe_detached(py, &hashes);
    Ok(())
}

/// Asks the CPU to load the cache line that holds `value`, without waiting for it.
#[inline]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, and the address is of a live value.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The band tables of `MinHashLSH`: `b` bands of `r` values of `width` bytes; in each band, entries with
/// equal values are found together. Entries are the caller's integer ids; each entry's `b·r` values are kept
/// once, in an arena. A band's table ([`heads::HeadTable`]) maps a hash of the band's bytes to the first slot
/// of a chain threaded through the slots (`prev`/`next` per slot and band), so inserting allocates nothing
/// per bucket and removing is O(1). Matching stays exact: a query collects the chains' slots of all bands
/// first, then compares one matching band's bytes per distinct slot (two band contents with one hash share a
/// chain but never match each other). Collecting first lets the bands' lookups overlap in memory, and a
/// slot found in every band is compared once, not once per band.
#[pyclass(module = "neardup._native")]
pub struct BandIndex {
    bands: usize,
    rows: usize,
    width: usize,
    /// `b·r·width` bytes per slot, the values as given (native byte order).
    arena: Vec<u8>,
    /// The arena's next pages, mapped ahead of the inserts on another core.
    arena_ahead: ahead::MapAhead,
    id_of_slot: Vec<u32>,
    free: Vec<u32>,
    /// Per id, its slot (`NONE` if absent): the Python side gives dense ids (it reuses freed ones).
    slot_of: Vec<u32>,
    /// Per band: hash of the band's bytes → first slot of its chain.
    heads: Vec<heads::HeadTable>,
    /// Per slot and band (`slot·b + band`): the previous and next slot of its chain.
    links: Vec<[u32; 2]>,
    links_ahead: ahead::MapAhead,
    hasher: DefaultHashBuilder,
    /// `MinHashLSH`'s own key tables, shared with it, for the calls that do a whole insert or query here.
    keyed: Option<Keyed>,
    /// The dtype of the `hashvalues` the fast calls take (others go the Python way).
    #[pyo3(get, set)]
    dtype: Option<Py<PyAny>>,
    /// The MinHash scheme the index has seen (`MinHashLSH._minhash_scheme`).
    #[pyo3(get, set)]
    scheme: Option<Py<PyAny>>,
}

/// The Python objects `MinHashLSH` keeps its keys in (the same objects, not copies): key → id, id → key
/// (with a marker for free ids), the free ids; and what a MinHash must be for the fast calls.
struct Keyed {
    key_to_id: Py<PyDict>,
    id_to_key: Py<PyList>,
    free_ids: Py<PyList>,
    free_marker: Py<PyAny>,
    num_perm: usize,
    ndarray: Py<PyType>,
}

const FREE: u32 = u32::MAX;
const NONE: u32 = u32::MAX;

impl BandIndex {
    fn stride(&self) -> usize {
        self.bands * self.rows * self.width
    }

    fn band_len(&self) -> usize {
        self.rows * self.width
    }

    fn band_of_slot(&self, slot: u32, band: usize) -> &[u8] {
        let start = slot as usize * self.stride() + band * self.band_len();
        &self.arena[start..start + self.band_len()]
    }

    /// The previous and next slot of `slot`'s chain in `band`.
    fn link(&self, slot: u32, band: usize) -> &[u32; 2] {
        &self.links[slot as usize * self.bands + band]
    }

    fn link_mut(&mut self, slot: u32, band: usize) -> &mut [u32; 2] {
        &mut self.links[slot as usize * self.bands + band]
    }

    /// The first `b·r` values' bytes of `data` (which may hold more values).
    fn entry_bytes<'a>(&self, data: &'a [u8]) -> PyResult<&'a [u8]> {
        data.get(..self.stride()).ok_or_else(|| {
            PyValueError::new_err(format!(
                "expected at least {} bytes, got {}",
                self.stride(),
                data.len()
            ))
        })
    }

    fn insert_values(&mut self, id: u32, values: &[u8]) -> PyResult<()> {
        if id == FREE {
            return Err(PyValueError::new_err("ids are below 2**32 - 1"));
        }
        if self.contains(id) {
            return Err(PyValueError::new_err("The given key already exists"));
        }
        let stride = self.stride();
        let slot = match self.free.pop() {
            Some(slot) => {
                let start = slot as usize * stride;
                self.arena[start..start + stride].copy_from_slice(values);
                self.id_of_slot[slot as usize] = id;
                slot
            }
            None => {
                self.arena_ahead.reserve(&mut self.arena, stride);
                self.arena.extend_from_slice(values);
                self.id_of_slot.push(id);
                self.links_ahead.reserve(&mut self.links, self.bands);
                self.links
                    .extend(std::iter::repeat_n([NONE, NONE], self.bands));
                (self.id_of_slot.len() - 1) as u32
            }
        };
        let at = id as usize;
        if at >= self.slot_of.len() {
            if at > self.slot_of.len() + (1 << 20) {
                return Err(PyValueError::new_err(
                    "ids are dense: give the next free one",
                ));
            }
            self.slot_of.resize(at + 1, NONE);
        }
        self.slot_of[at] = slot;
        for (band, hash) in self.band_hashes(values, self.bands).into_iter().enumerate() {
            let next = self.heads[band].replace(hash, slot).unwrap_or(NONE);
            *self.link_mut(slot, band) = [NONE, next];
            if next != NONE {
                self.link_mut(next, band)[0] = slot;
            }
        }
        Ok(())
    }

    /// Asks for a chain slot's link and band bytes, which a query reads next.
    fn prefetch_slot(&self, slot: u32, band: usize) {
        prefetch(self.link(slot, band));
        prefetch(&self.band_of_slot(slot, band)[0]);
    }

    fn band_table(&self, band: usize) -> PyResult<&heads::HeadTable> {
        self.heads
            .get(band)
            .ok_or_else(|| PyIndexError::new_err(format!("band {band} of {}", self.bands)))
    }

    fn key_bytes(&self, band_bytes: &[u8]) -> Vec<u8> {
        // datasketch's key: the band's values byte-swapped (big-endian).
        band_bytes
            .chunks_exact(self.width)
            .flat_map(|v| v.iter().rev().copied())
            .collect()
    }

    /// The hashes of the first `bands` bands of `values`, each band's table line asked for as it is
    /// hashed: the lookups that follow find their lines on the way, their misses overlapping.
    fn band_hashes(&self, values: &[u8], bands: usize) -> Vec<u64> {
        let band_len = self.band_len();
        (0..bands)
            .map(|band| {
                let hash = self
                    .hasher
                    .hash_one(&values[band * band_len..(band + 1) * band_len]);
                self.heads[band].prefetch(hash);
                hash
            })
            .collect()
    }

    /// The ids sharing at least one of the first `bands` bands of `values` exactly, sorted.
    ///
    /// Each step asks for the memory of the next before reading any of it (the head table lines in
    /// `band_hashes`, then each chain slot's link and band bytes as the slot is found), so that the cache
    /// misses overlap instead of following one another: each is a miss in an index larger than the
    /// processor's L2 cache.
    fn query_ids(&self, values: &[u8], bands: usize) -> Vec<u32> {
        let band_len = self.band_len();
        let key = |band: usize| &values[band * band_len..(band + 1) * band_len];
        let heads: Vec<u32> = (self.band_hashes(values, bands).into_iter().enumerate())
            .map(|(band, hash)| {
                let head = self.heads[band].get(hash).unwrap_or(NONE);
                if head != NONE {
                    self.prefetch_slot(head, band);
                }
                head
            })
            .collect();
        let mut candidates: Vec<(u32, u32)> = Vec::with_capacity(2 * bands);
        for (band, &head) in heads.iter().enumerate() {
            let mut slot = head;
            while slot != NONE {
                candidates.push((slot, band as u32));
                slot = self.link(slot, band)[1];
                if slot != NONE {
                    self.prefetch_slot(slot, band);
                }
            }
        }
        candidates.sort_unstable();
        // A slot matches if one of its bands found by hash holds exactly the query's bytes.
        let mut found = Vec::new();
        for group in candidates.chunk_by(|a, b| a.0 == b.0) {
            let slot = group[0].0;
            if group
                .iter()
                .any(|&(_, band)| self.band_of_slot(slot, band as usize) == key(band as usize))
            {
                found.push(self.id_of_slot[slot as usize]);
            }
        }
        found.sort_unstable();
        found
    }

    /// A MinHash's values as bytes when they are the plain case: `hashvalues` an exact NumPy array of the
    /// index's dtype, one-dimensional, of `num_perm` values. None otherwise.
    fn plain_values<'py>(
        &self,
        minhash: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let py = minhash.py();
        let (Some(keyed), Some(dtype)) = (&self.keyed, &self.dtype) else {
            return Ok(None);
        };
        let Ok(values) = minhash.getattr(intern!(py, "hashvalues")) else {
            return Ok(None);
        };
        if !values.get_type().is(keyed.ndarray.bind(py))
            || !values.getattr(intern!(py, "dtype"))?.is(dtype.bind(py))
            || values.getattr(intern!(py, "ndim"))?.extract::<usize>()? != 1
        {
            return Ok(None);
        }
        let bytes = values
            .call_method0(intern!(py, "tobytes"))?
            .cast_into::<PyBytes>()?;
        Ok((bytes.as_bytes().len() == keyed.num_perm * self.width).then_some(bytes))
    }

    /// Whether a MinHash's scheme needs nothing of the Python code: it has none, or the one the index has
    /// seen (an insert of a first scheme is the Python code's to record).
    fn scheme_known(&self, minhash: &Bound<'_, PyAny>, inserting: bool) -> PyResult<bool> {
        let py = minhash.py();
        let Ok(scheme) = minhash.getattr(intern!(py, "scheme")) else {
            return Ok(false);
        };
        if scheme.is_none() {
            return Ok(true);
        }
        match &self.scheme {
            Some(known) => known.bind(py).eq(&scheme),
            None => Ok(!inserting),
        }
    }

    fn slot(&self, id: u32) -> PyResult<u32> {
        match self.slot_of.get(id as usize) {
            Some(&slot) if slot != NONE => Ok(slot),
            _ => Err(PyKeyError::new_err(id)),
        }
    }
}

#[pymethods]
impl BandIndex {
    #[new]
    fn new(b: usize, r: usize, width: usize) -> PyResult<Self> {
        if b == 0 || r == 0 || !(width == 4 || width == 8) {
            return Err(PyValueError::new_err(
                "bands and rows are positive; values are 4 or 8 bytes",
            ));
        }
        Ok(BandIndex {
            bands: b,
            rows: r,
            width,
            arena: Vec::new(),
            arena_ahead: Default::default(),
            id_of_slot: Vec::new(),
            free: Vec::new(),
            slot_of: Vec::new(),
            heads: (0..b).map(|_| heads::HeadTable::default()).collect(),
            links: Vec::new(),
            links_ahead: Default::default(),
            hasher: DefaultHashBuilder::default(),
            keyed: None,
            dtype: None,
            scheme: None,
        })
    }

    /// Shares `MinHashLSH`'s key tables, so that `insert_key` and `query_key` do a whole call here.
    #[allow(clippy::too_many_arguments)]
    fn bind_keys(
        &mut self,
        key_to_id: Bound<'_, PyDict>,
        id_to_key: Bound<'_, PyList>,
        free_ids: Bound<'_, PyList>,
        free_marker: Bound<'_, PyAny>,
        num_perm: usize,
        ndarray: Bound<'_, PyType>,
    ) {
        self.keyed = Some(Keyed {
            key_to_id: key_to_id.unbind(),
            id_to_key: id_to_key.unbind(),
            free_ids: free_ids.unbind(),
            free_marker: free_marker.unbind(),
            num_perm,
            ndarray: ndarray.unbind(),
        });
    }

    /// `MinHashLSH.insert` done here when it is the plain case: a MinHash whose `hashvalues` is a 1-D
    /// array of `dtype` with `num_perm` values, of the scheme seen, under a new key. Returns False,
    /// having changed nothing, for anything else (the Python code decides those, with datasketch's
    /// errors); raises datasketch's ValueError for a key that exists when `check_duplication`.
    fn insert_key(
        &mut self,
        key: &Bound<'_, PyAny>,
        minhash: &Bound<'_, PyAny>,
        check_duplication: bool,
    ) -> PyResult<bool> {
        let py = key.py();
        if !self.scheme_known(minhash, true)? {
            return Ok(false);
        }
        let Some(values) = self.plain_values(minhash)? else {
            return Ok(false);
        };
        let Some(keyed) = &self.keyed else {
            return Ok(false);
        };
        let key_to_id = keyed.key_to_id.bind(py).clone();
        if key_to_id.contains(key)? {
            if check_duplication {
                return Err(PyValueError::new_err("The given key already exists"));
            }
            return Ok(false);
        }
        let id_to_key = keyed.id_to_key.bind(py).clone();
        let free_ids = keyed.free_ids.bind(py);
        let id: u32 = if free_ids.is_empty() {
            id_to_key.append(keyed.free_marker.bind(py))?;
            (id_to_key.len() - 1) as u32
        } else {
            free_ids.call_method0(intern!(py, "pop"))?.extract()?
        };
        let stride = self.stride();
        self.insert_values(id, &values.as_bytes()[..stride])?;
        id_to_key.set_item(id as usize, key)?;
        key_to_id.set_item(key, id)?;
        Ok(true)
    }

    /// `MinHashLSH.query` done here for the plain case (see `insert_key`): the keys found, or None for the
    /// Python code to answer.
    fn query_key<'py>(&self, minhash: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
        let py = minhash.py();
        if !self.scheme_known(minhash, false)? {
            return Ok(None);
        }
        let (Some(values), Some(keyed)) = (self.plain_values(minhash)?, &self.keyed) else {
            return Ok(None);
        };
        let ids = self.query_ids(values.as_bytes(), self.bands);
        let id_to_key = keyed.id_to_key.bind(py);
        let keys = ids
            .iter()
            .map(|&i| id_to_key.get_item(i as usize))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Some(PyList::new(py, keys)?))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(k) = &self.keyed {
            visit.call(&k.key_to_id)?;
            visit.call(&k.id_to_key)?;
            visit.call(&k.free_ids)?;
            visit.call(&k.free_marker)?;
            visit.call(&k.ndarray)?;
        }
        visit.call(&self.dtype)?;
        visit.call(&self.scheme)?;
        Ok(())
    }

    fn __clear__(&mut self) {
        self.keyed = None;
        self.dtype = None;
        self.scheme = None;
    }

    /// Stores an entry from the bytes of its values (native order; the first b·r values are kept).
    fn insert(&mut self, id: u32, data: &[u8]) -> PyResult<()> {
        let values = self.entry_bytes(data)?;
        self.insert_values(id, values)
    }

    /// The ids sharing at least one of the first `bands` bands exactly (default all), sorted.
    #[pyo3(signature = (data, bands=None))]
    fn query(&self, data: &[u8], bands: Option<usize>) -> PyResult<Vec<u32>> {
        let values = self.entry_bytes(data)?;
        Ok(self.query_ids(values, bands.unwrap_or(self.bands).min(self.bands)))
    }

    /// Removes an entry (KeyError if absent).
    fn remove(&mut self, id: u32) -> PyResult<()> {
        let slot = self.slot(id)?;
        for band in 0..self.bands {
            let [prev, next] = *self.link(slot, band);
            if prev != NONE {
                self.link_mut(prev, band)[1] = next;
            } else {
                let hash = self.hasher.hash_one(self.band_of_slot(slot, band));
                if next != NONE {
                    self.heads[band].replace(hash, next);
                } else {
                    self.heads[band].remove(hash);
                }
            }
            if next != NONE {
                self.link_mut(next, band)[0] = prev;
            }
            *self.link_mut(slot, band) = [NONE, NONE];
        }
        self.slot_of[id as usize] = NONE;
        self.id_of_slot[slot as usize] = FREE;
        self.free.push(slot);
        Ok(())
    }

    fn contains(&self, id: u32) -> bool {
        self.slot_of.get(id as usize).is_some_and(|&s| s != NONE)
    }

    fn __len__(&self) -> usize {
        // Slots in use: every slot ever made, less the free ones.
        self.id_of_slot.len() - self.free.len()
    }

    /// datasketch's meaning: whether any band table is empty.
    fn is_empty(&self) -> bool {
        self.heads.iter().any(|t| t.is_empty())
    }

    /// datasketch's bucket keys for an entry: each band's values as big-endian bytes.
    fn band_keys<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let slot = self.slot(id)?;
        Ok((0..self.bands)
            .map(|band| PyBytes::new(py, &self.key_bytes(self.band_of_slot(slot, band))))
            .collect())
    }

    /// An entry's b·r values, in native byte order.
    fn values<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let slot = self.slot(id)? as usize;
        let stride = self.stride();
        Ok(PyBytes::new(
            py,
            &self.arena[slot * stride..(slot + 1) * stride],
        ))
    }

    /// Per band, bucket key (as in `band_keys`) → number of entries.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        (0..self.bands)
            .map(|band| self.band_counts(py, band))
            .collect()
    }

    /// One band's bucket key → number of entries (`lsh.hashtables[band]`, without the other bands').
    fn band_counts<'py>(&self, py: Python<'py>, band: usize) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for head in self.band_table(band)?.heads() {
            let mut slot = head;
            while slot != NONE {
                let key = PyBytes::new(py, &self.key_bytes(self.band_of_slot(slot, band)));
                // A chain normally holds one content; counting by key also splits a shared hash.
                let seen: usize = d.get_item(&key)?.map_or(Ok(0), |c| c.extract())?;
                d.set_item(key, seen + 1)?;
                slot = self.link(slot, band)[1];
            }
        }
        Ok(d)
    }

    /// The ids in one band's bucket of `key` (as in `band_keys`), found by its hash, not by a scan.
    fn band_members(&self, band: usize, key: &[u8]) -> PyResult<Vec<u32>> {
        let table = self.band_table(band)?;
        if key.len() != self.band_len() {
            return Ok(Vec::new());
        }
        // The key is the band's values byte-swapped; swapping again gives the stored bytes.
        let values = self.key_bytes(key);
        let mut slot = table
            .get(self.hasher.hash_one(values.as_slice()))
            .unwrap_or(NONE);
        let mut ids = Vec::new();
        while slot != NONE {
            if self.band_of_slot(slot, band) == values.as_slice() {
                ids.push(self.id_of_slot[slot as usize]);
            }
            slot = self.link(slot, band)[1];
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// The stored ids, sorted.
    fn ids(&self) -> Vec<u32> {
        (0..self.slot_of.len() as u32)
            .filter(|&id| self.slot_of[id as usize] != NONE)
            .collect()
    }
}
