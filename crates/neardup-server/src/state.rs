//! The service's state: the named indexes of the data directory, the limits, the tokens and the metrics.

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::{Config, Limits, ServeError};
use neardup::dedup::Options;
use neardup::index::{Index, IndexSettings, IndexStore, Kind, Shared};
use neardup::schemes::{Family, Params};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// An index of the service.
pub type SharedIndex = Shared<IndexStore>;

/// What `PUT /v1/indexes/{name}` asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSpec {
    /// A scheme name or alias (`simhash-doc-v1`, `minhash`, …).
    pub scheme: String,
    /// SimHash: the largest distance queries may ask for (0 to 7, default 3).
    pub k: Option<u32>,
    /// SimHash: the expected number of entries (chooses the tables; default 1e6).
    pub expected: Option<f64>,
    /// MinHash: the similarity matches must reach (default 0.8).
    pub threshold: Option<f64>,
    /// MinHash: values per signature.
    pub num_perm: Option<u32>,
    /// MinHash: the permutations' seed.
    pub seed: Option<u64>,
    /// MinHash: word n-gram length.
    pub shingle: Option<u32>,
    /// MinHash: character n-gram length.
    pub char_shingle: Option<u32>,
    /// MinHash: a published configuration (fineweb, refinedweb, gopher, the-stack).
    pub preset: Option<String>,
    /// MinHash: weights of false positives and false negatives when choosing the bands.
    pub weights: Option<(f64, f64)>,
}

/// Everything the handlers share.
pub struct AppState {
    data: PathBuf,
    /// Names of the indexes mounted from elsewhere (`--index NAME=LOCATION`): served, never deleted.
    mounted: std::collections::BTreeSet<String>,
    indexes: RwLock<BTreeMap<String, Arc<SharedIndex>>>,
    /// Request limits.
    pub limits: Limits,
    /// Bearer tokens.
    pub tokens: crate::auth::Tokens,
    /// Reads need a token too.
    pub auth_reads: bool,
    /// Documents extracted and sketched at once.
    pub workers: Arc<tokio::sync::Semaphore>,
    /// Counters and histograms.
    pub metrics: Metrics,
}

impl AppState {
    /// Opens (creating it if missing) the data directory and every index in it.
    pub fn open(config: Config) -> Result<AppState, ServeError> {
        let data = config.data;
        std::fs::create_dir_all(&data)
            .map_err(|e| ServeError::Data(format!("{}: {e}", data.display())))?;
        let entries = std::fs::read_dir(&data)
            .map_err(|e| ServeError::Data(format!("{}: {e}", data.display())))?;
        let mut indexes = BTreeMap::new();
        for entry in entries {
            let entry = entry.map_err(|e| ServeError::Data(format!("{}: {e}", data.display())))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.path().is_dir() || check_name(&name).is_err() {
                continue;
            }
            let index = Index::open(&entry.path())
                .map_err(|e| ServeError::Data(format!("cannot open index '{name}': {e}")))?;
            indexes.insert(name, Arc::new(Shared::new(index, Default::default())));
        }
        let mut mounted = std::collections::BTreeSet::new();
        for (name, location) in &config.mounts {
            check_name(name)
                .map_err(|e| ServeError::Data(format!("--index {name}=…: {}", e.message)))?;
            if indexes.contains_key(name) || !mounted.insert(name.clone()) {
                return Err(ServeError::Data(format!(
                    "two indexes are named '{name}' (in the data directory or mounted)"
                )));
            }
            let index = Index::open(location)
                .map_err(|e| ServeError::Data(format!("cannot open index '{name}': {e}")))?;
            indexes.insert(
                name.clone(),
                Arc::new(Shared::new(index, Default::default())),
            );
        }
        let limits = config.limits;
        Ok(AppState {
            data,
            mounted,
            indexes: RwLock::new(indexes),
            limits,
            tokens: crate::auth::Tokens::new(config.tokens),
            auth_reads: config.auth_reads,
            workers: Arc::new(tokio::sync::Semaphore::new(limits.workers.max(1))),
            metrics: Metrics::default(),
        })
    }

    /// The index of this name, or 404.
    pub fn index(&self, name: &str) -> Result<Arc<SharedIndex>, ApiError> {
        self.indexes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found("no_such_index", format!("there is no index named '{name}'"))
            })
    }

    /// Every index, by name.
    pub fn all(&self) -> Vec<(String, Arc<SharedIndex>)> {
        self.indexes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(n, i)| (n.clone(), Arc::clone(i)))
            .collect()
    }

    /// Creates an index (blocking: it writes its file). 409 if the name is taken.
    pub fn create(&self, name: &str, spec: &IndexSpec) -> Result<Arc<SharedIndex>, ApiError> {
        check_name(name)?;
        let info = neardup::schemes::lookup(&spec.scheme).map_err(ApiError::from)?;
        let params = Params {
            num_perm: spec.num_perm,
            seed: spec.seed,
            shingle: spec.shingle,
            char_shingle: spec.char_shingle,
        };
        let preset = match &spec.preset {
            Some(p) => Some(
                neardup::Preset::named(p)
                    .map_err(|e| ApiError::bad_request("bad_index_settings", e.to_string()))?,
            ),
            None => None,
        };
        let method = match preset {
            Some(p) => info.method_with_defaults(&params, p.values, p.shingle),
            None => info.method(&params),
        }
        .map_err(ApiError::from)?;
        let minhash_only = [
            spec.threshold.map(|_| "threshold"),
            spec.preset.as_ref().map(|_| "preset"),
            spec.weights.map(|_| "weights"),
        ];
        let simhash_only = [spec.k.map(|_| "k"), spec.expected.map(|_| "expected")];
        let misplaced = match info.family {
            Family::SimHash => minhash_only.into_iter().flatten().next(),
            _ => simhash_only.into_iter().flatten().next(),
        };
        if let Some(field) = misplaced {
            return Err(ApiError::bad_request(
                "bad_index_settings",
                format!("'{field}' does not apply to {} indexes", info.name),
            ));
        }
        let defaults = IndexSettings::default();
        let settings = IndexSettings {
            k: spec.k.unwrap_or(defaults.k),
            expected: spec.expected.unwrap_or(defaults.expected),
            dedup: Options {
                threshold: spec.threshold,
                weights: spec.weights,
                ..defaults.dedup
            },
            preset,
            backend: defaults.backend,
        };
        let mut indexes = self.indexes.write().unwrap_or_else(|p| p.into_inner());
        if indexes.contains_key(name) {
            return Err(ApiError::conflict(
                "index_exists",
                format!("an index named '{name}' exists: delete it first to change its settings"),
            ));
        }
        let dir = self.data.join(name);
        if dir.exists() || self.mounted.contains(name) {
            return Err(ApiError::conflict(
                "index_exists",
                format!(
                    "'{name}' exists in the data directory but is not an index the service could open"
                ),
            ));
        }
        let index = Index::create(&dir, method, &settings).map_err(ApiError::from)?;
        let shared = Arc::new(Shared::new(index, Default::default()));
        indexes.insert(name.to_owned(), Arc::clone(&shared));
        Ok(shared)
    }

    /// Deletes an index and its files (blocking). Its queued writes are committed first. A mounted index is
    /// refused: it belongs to whoever mounted it, and other services may be using it.
    pub fn delete(&self, name: &str) -> Result<(), ApiError> {
        if self.mounted.contains(name) {
            return Err(ApiError::conflict(
                "index_mounted",
                format!("'{name}' is mounted with --index: it is not the service's to delete"),
            ));
        }
        let removed = self
            .indexes
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        let Some(index) = removed else {
            return Err(ApiError::not_found(
                "no_such_index",
                format!("there is no index named '{name}'"),
            ));
        };
        index.close();
        drop(index);
        std::fs::remove_dir_all(self.data.join(name)).map_err(|e| {
            ApiError::internal(format!(
                "index '{name}' was closed but its files remain: {e}"
            ))
        })
    }

    /// Commits every queued write of every index and stops their writers.
    pub fn close(&self) {
        for (_, index) in self.all() {
            index.close();
        }
    }
}

/// An index's description, as `GET /v1/indexes/{name}` answers.
pub fn describe(name: &str, index: &SharedIndex) -> Value {
    let (entries, segments) = index.read(|i| (i.len(), i.segments()));
    let mut out = json!({
        "name": name,
        "scheme": index.method().name(),
        "entries": entries,
        "status": "ready",
    });
    if let Some(now) = segments {
        out["segments"] = json!(now.segments);
        out["merging"] = json!(now.merging);
    }
    match index.kind() {
        Kind::Hamming(design) => {
            out["kind"] = json!("hamming");
            out["k"] = json!(design.k);
            out["tables"] = json!(design.tables());
        }
        Kind::Lsh { banding, threshold } => {
            out["kind"] = json!("lsh");
            out["threshold"] = json!(threshold);
            out["bands"] = json!(banding.bands);
            out["rows"] = json!(banding.rows);
            out["num_perm"] = json!(banding.values);
        }
    }
    out
}

/// Names are path segments and directory names: letters, digits, `.`, `_`, `-`, 1 to 64 of them, not
/// starting with a dot.
fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "bad_index_name",
            format!(
                "'{name}' is not an index name: 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
            ),
        ))
    }
}
