//! The kernels under `neardup.datasketch`: datasketch 2.0's permutations and hashing, bit-exact, in native
//! code, and `BandIndex`, the translation of `MinHashLSH`'s calls to the engine's exact band tables
//! ([`BandTables`]). The Python module keeps datasketch's objects and semantics (a `hashvalues` NumPy array,
//! replaced on each update) and calls these for the work.
//!
//! The band tables take an entry's values as bytes (`hashvalues.tobytes()`, cheaper than an address for
//! 128 values). The permutation kernels take NumPy array addresses (`arr.__array_interface__['data'][0]`)
//! because they write in place and the stable ABI has no buffer protocol before Python 3.11. The contract,
//! kept by `neardup/datasketch.py`: each address is of a live, C-contiguous array of the scheme's dtype
//! (`uint32` for "affine32", `uint64` for "affine64" and "legacy") holding at least the given number of
//! values, and a written array is not shared.

use neardup::datasketch::{
    BandTables, BandTablesError, Variant, fmix32, fmix64, mod_mersenne61, permutations,
    permutations_affine64, sha1,
};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyType};
use pyo3::{PyTraverseError, PyVisit, intern};

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

/// The band tables of `MinHashLSH` ([`BandTables`]), with the Python objects its fast calls share: entries
/// are the caller's integer ids, and `insert_key`/`query_key` do a whole `MinHashLSH.insert`/`query` here for
/// the plain case.
#[pyclass(module = "neardup._native")]
pub struct BandIndex {
    tables: BandTables,
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

/// The library's refusals as datasketch's exceptions.
fn to_py(error: BandTablesError) -> PyErr {
    match error {
        BandTablesError::Absent(id) => PyKeyError::new_err(id),
        BandTablesError::NoBand { .. } => PyIndexError::new_err(error.to_string()),
        _ => PyValueError::new_err(error.to_string()),
    }
}

impl BandIndex {
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
        Ok((bytes.as_bytes().len() == keyed.num_perm * self.tables.width()).then_some(bytes))
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
}

#[pymethods]
impl BandIndex {
    #[new]
    fn new(b: usize, r: usize, width: usize) -> PyResult<Self> {
        Ok(BandIndex {
            tables: BandTables::new(b, r, width).map_err(to_py)?,
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
        self.tables.insert(id, values.as_bytes()).map_err(to_py)?;
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
        let bands = self.tables.bands();
        let ids = self.tables.query(values.as_bytes(), bands).map_err(to_py)?;
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
        self.tables.insert(id, data).map_err(to_py)
    }

    /// The ids sharing at least one of the first `bands` bands exactly (default all), sorted.
    #[pyo3(signature = (data, bands=None))]
    fn query(&self, data: &[u8], bands: Option<usize>) -> PyResult<Vec<u32>> {
        let bands = bands.unwrap_or(self.tables.bands());
        self.tables.query(data, bands).map_err(to_py)
    }

    /// Removes an entry (KeyError if absent).
    fn remove(&mut self, id: u32) -> PyResult<()> {
        self.tables.remove(id).map_err(to_py)
    }

    fn contains(&self, id: u32) -> bool {
        self.tables.contains(id)
    }

    fn __len__(&self) -> usize {
        self.tables.len()
    }

    /// datasketch's meaning: whether any band table is empty.
    fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// datasketch's bucket keys for an entry: each band's values as big-endian bytes.
    fn band_keys<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let keys = self.tables.band_keys(id).map_err(to_py)?;
        Ok(keys.iter().map(|key| PyBytes::new(py, key)).collect())
    }

    /// An entry's b·r values, in native byte order.
    fn values<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let values = self.tables.values(id).map_err(to_py)?;
        Ok(PyBytes::new(py, values))
    }

    /// Per band, bucket key (as in `band_keys`) → number of entries.
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        (0..self.tables.bands())
            .map(|band| self.band_counts(py, band))
            .collect()
    }

    /// One band's bucket key → number of entries (`lsh.hashtables[band]`, without the other bands').
    fn band_counts<'py>(&self, py: Python<'py>, band: usize) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for key in self.tables.band_entries(band).map_err(to_py)? {
            let key = PyBytes::new(py, &key);
            let seen: usize = d.get_item(&key)?.map_or(Ok(0), |c| c.extract())?;
            d.set_item(key, seen + 1)?;
        }
        Ok(d)
    }

    /// The ids in one band's bucket of `key` (as in `band_keys`), found by its hash, not by a scan.
    fn band_members(&self, band: usize, key: &[u8]) -> PyResult<Vec<u32>> {
        self.tables.band_members(band, key).map_err(to_py)
    }

    /// The stored ids, sorted.
    fn ids(&self) -> Vec<u32> {
        self.tables.ids()
    }
}
