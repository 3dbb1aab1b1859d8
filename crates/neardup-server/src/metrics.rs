//! Prometheus metrics (`GET /metrics`, text exposition format): requests by route, method and status,
//! latency histograms by route, index sizes, and errors.

use crate::state::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IndexLabels {
    index: String,
}

/// The service's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    errors: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    entries: Family<IndexLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("neardup");
        let requests = Family::<RequestLabels, Counter>::default();
        let errors = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            // 50 µs to about 6.5 s.
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                50e-6, 2.0, 18,
            ))
        });
        let entries = Family::<IndexLabels, Gauge>::default();
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        registry.register(
            "http_errors",
            "HTTP requests answered with a 4xx or 5xx status",
            errors.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from request to answer",
            latency.clone(),
        );
        registry.register(
            "index_entries",
            "Entries stored in each index",
            entries.clone(),
        );
        Metrics {
            registry,
            requests,
            errors,
            latency,
            entries,
        }
    }
}

impl Metrics {
    /// The text exposition, with the index sizes as they are now.
    pub fn render(&self, state: &AppState) -> String {
        self.entries.clear();
        for (name, index) in state.all() {
            self.entries
                .get_or_create(&IndexLabels { index: name })
                .set(index.read(|i| i.len()) as i64);
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// The middleware: counts every request and times it, by its route pattern (`/v1/indexes/{name}/query`,
/// never the ids or names in it).
pub async fn record(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let metrics = &state.metrics;
    let labels = RequestLabels {
        method,
        route: route.clone(),
        status,
    };
    metrics.requests.get_or_create(&labels).inc();
    if status >= 400 {
        metrics.errors.get_or_create(&labels).inc();
    }
    metrics
        .latency
        .get_or_create(&RouteLabels { route })
        .observe(started.elapsed().as_secs_f64());
    response
}
