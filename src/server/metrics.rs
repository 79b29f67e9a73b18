//! What a running server counts: every tool call (by tool: calls, errors by
//! code, a latency histogram) and the watcher's work (events, index updates,
//! the last update's lag), since the server started.
//!
//! One [`Metrics`] per process, shared by every connection. The handler
//! records each call once it is answered ([`Metrics::record_call`]), the
//! watcher each update it makes ([`Metrics::record_sync`]). Three readers
//! take a [`ServerMetrics`] snapshot: `get_vault_overview {metrics: true}`,
//! `GET /metrics` over HTTP in the Prometheus text format
//! ([`prometheus_text`]), and `kb-index status`, through the snapshot file a
//! server keeps in its index folder (`published.rs`). Latencies are kept in
//! an HDR histogram (microseconds, three significant digits), so the
//! percentiles are exact to 0.1 % however many calls were made, in a few
//! kilobytes per tool.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::types::{IndexActivity, ServerMetrics, ToolMetrics};

/// The longest latency the histogram tells apart: an hour, in microseconds
/// (a longer call counts as an hour).
const LONGEST_US: u64 = 3_600_000_000;

/// The name calls to tools the server does not have are counted under.
pub(crate) const UNKNOWN_TOOL: &str = "(unknown)";

/// A call's count, left by the handler for the HTTP transport, which records
/// it once the answer has been written (so that an HTTP call's latency runs
/// from the request's arrival to the answer's last byte, as its client sees
/// it); when the transport gave up on the request first (a timeout), the
/// handler records it itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingCount(std::sync::Arc<Mutex<Pending>>);

#[derive(Debug, Default)]
enum Pending {
    /// The answer is still being made.
    #[default]
    Open,
    /// The handler's outcome: (tool, outcome).
    Left(String, String),
    /// The transport is done with the request.
    Closed,
}

impl PendingCount {
    fn slot(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handler's part: leaves the outcome for the transport; `false`
    /// when the transport is done already (the caller records it then).
    pub(crate) fn leave(&self, tool: &str, outcome: &str) -> bool {
        let mut slot = self.slot();
        if matches!(*slot, Pending::Closed) {
            return false;
        }
        *slot = Pending::Left(tool.to_owned(), outcome.to_owned());
        true
    }

    /// The transport's part, once the answer is written (or abandoned):
    /// records what the handler left, `took` after the request arrived.
    pub(crate) fn close(&self, metrics: &Metrics, took: Duration) {
        let left = std::mem::replace(&mut *self.slot(), Pending::Closed);
        if let Pending::Left(tool, outcome) = left {
            metrics.record_call(&tool, &outcome, took);
        }
    }
}

/// The counts of one server process.
pub(crate) struct Metrics {
    started: jiff::Timestamp,
    started_at: Instant,
    tools: Mutex<BTreeMap<String, ToolStats>>,
    watcher_events: AtomicU64,
    syncs: AtomicU64,
    /// The last update's lag in microseconds plus one; 0 before any.
    last_lag: AtomicU64,
    /// Bumped by every record: whether a published snapshot is out of date.
    generation: AtomicU64,
}

/// One tool's counts.
struct ToolStats {
    calls: u64,
    errors: BTreeMap<String, u64>,
    latency: Histogram<u64>,
    /// Total latency in seconds (the Prometheus summary's `_sum`).
    seconds: f64,
}

impl ToolStats {
    fn new() -> ToolStats {
        let latency = Histogram::new_with_bounds(1, LONGEST_US, 3).unwrap_or_else(|_| {
            // The bounds above are valid; an auto-resizing one is the fallback all the same.
            Histogram::new(3).unwrap_or_else(|_| unreachable!("three significant digits are valid"))
        });
        ToolStats { calls: 0, errors: BTreeMap::new(), latency, seconds: 0.0 }
    }
}

/// Microseconds as milliseconds, to the microsecond.
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        Metrics {
            started: jiff::Timestamp::now(),
            started_at: Instant::now(),
            tools: Mutex::new(BTreeMap::new()),
            watcher_events: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            last_lag: AtomicU64::new(0),
            generation: AtomicU64::new(0),
        }
    }

    fn tools(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ToolStats>> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One answered call of `tool`: `outcome` is `ok` or the error's code.
    pub(crate) fn record_call(&self, tool: &str, outcome: &str, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).clamp(1, LONGEST_US);
        let mut tools = self.tools();
        let stats = match tools.get_mut(tool) {
            Some(stats) => stats,
            None => tools.entry(tool.to_owned()).or_insert_with(ToolStats::new),
        };
        stats.calls += 1;
        if outcome != "ok" {
            *stats.errors.entry(outcome.to_owned()).or_default() += 1;
        }
        stats.latency.saturating_record(us);
        stats.seconds += took.as_secs_f64();
        drop(tools);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// One index update the watcher made for `events` file events, `lag`
    /// after the first of them happened.
    pub(crate) fn record_sync(&self, events: usize, lag: Duration) {
        self.watcher_events.fetch_add(events as u64, Ordering::Relaxed);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX - 1);
        self.last_lag.store(us.saturating_add(1), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// How many records were made: a snapshot taken at one generation is
    /// current until this changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The counts now; `index` carries the index's own figures (documents,
    /// last update), `watching` whether a watcher runs.
    pub(crate) fn snapshot(&self, index: Option<IndexActivity>, watching: bool) -> ServerMetrics {
        self.read(index, watching).0
    }

    /// The snapshot in the Prometheus text exposition format (version 0.0.4),
    /// its counts and latency sums read under one lock, so they agree.
    pub(crate) fn prometheus_text(&self, index: Option<IndexActivity>, watching: bool) -> String {
        let (snapshot, seconds) = self.read(index, watching);
        prometheus_text(&snapshot, &seconds, self.started.as_second())
    }

    /// [`Metrics::snapshot`] and each tool's latency sum in seconds, taken
    /// together.
    fn read(&self, index: Option<IndexActivity>, watching: bool) -> (ServerMetrics, BTreeMap<String, f64>) {
        let table = self.tools();
        let tools = table
            .iter()
            .map(|(tool, stats)| ToolMetrics {
                tool: tool.clone(),
                calls: stats.calls,
                errors: stats.errors.clone(),
                p50_ms: ms(stats.latency.value_at_quantile(0.50)),
                p95_ms: ms(stats.latency.value_at_quantile(0.95)),
                p99_ms: ms(stats.latency.value_at_quantile(0.99)),
                max_ms: ms(stats.latency.max()),
            })
            .collect();
        let seconds = table.iter().map(|(tool, stats)| (tool.clone(), stats.seconds)).collect();
        drop(table);
        let lag = self.last_lag.load(Ordering::Relaxed);
        let index = IndexActivity {
            watching,
            watcher_events: self.watcher_events.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
            last_sync_lag_ms: (lag > 0).then(|| ms(lag - 1)),
            ..index.unwrap_or_default()
        };
        let snapshot = ServerMetrics {
            since: self.started.to_string(),
            uptime_s: self.started_at.elapsed().as_secs(),
            tools,
            index,
        };
        (snapshot, seconds)
    }
}

/// A label value with `\`, `"` and line feeds escaped, as the format asks.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Writes one metric family's header.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `snapshot` as Prometheus text; `seconds`: each tool's latency sum;
/// `started`: the start time in Unix seconds.
fn prometheus_text(snapshot: &ServerMetrics, seconds: &BTreeMap<String, f64>, started: i64) -> String {
    let mut out = String::new();
    family(&mut out, "kb_mcp_tool_calls_total", "counter", "Tool calls answered since the server started.");
    for tool in &snapshot.tools {
        let _ = writeln!(out, "kb_mcp_tool_calls_total{{tool=\"{}\"}} {}", label(&tool.tool), tool.calls);
    }
    family(
        &mut out,
        "kb_mcp_tool_errors_total",
        "counter",
        "Tool calls answered with an error, by its code.",
    );
    for tool in &snapshot.tools {
        for (code, count) in &tool.errors {
            let _ = writeln!(
                out,
                "kb_mcp_tool_errors_total{{tool=\"{}\",code=\"{}\"}} {count}",
                label(&tool.tool),
                label(code)
            );
        }
    }
    family(&mut out, "kb_mcp_tool_latency_seconds", "summary", "Tool call latency in the server.");
    for tool in &snapshot.tools {
        let name = label(&tool.tool);
        for (quantile, ms) in [("0.5", tool.p50_ms), ("0.95", tool.p95_ms), ("0.99", tool.p99_ms)] {
            let _ = writeln!(
                out,
                "kb_mcp_tool_latency_seconds{{tool=\"{name}\",quantile=\"{quantile}\"}} {}",
                ms / 1000.0
            );
        }
        let sum = seconds.get(&tool.tool).copied().unwrap_or(0.0);
        let _ = writeln!(out, "kb_mcp_tool_latency_seconds_sum{{tool=\"{name}\"}} {sum}");
        let _ = writeln!(out, "kb_mcp_tool_latency_seconds_count{{tool=\"{name}\"}} {}", tool.calls);
    }
    let index = &snapshot.index;
    if let Some(documents) = index.documents {
        family(&mut out, "kb_mcp_index_documents", "gauge", "Documents in the index.");
        let _ = writeln!(out, "kb_mcp_index_documents {documents}");
    }
    if let Some(at) = index.updated_at.as_deref().and_then(|at| at.parse::<jiff::Timestamp>().ok()) {
        family(
            &mut out,
            "kb_mcp_index_updated_timestamp_seconds",
            "gauge",
            "When the index was last updated.",
        );
        let _ = writeln!(out, "kb_mcp_index_updated_timestamp_seconds {}", at.as_second());
    }
    family(&mut out, "kb_mcp_watcher_events_total", "counter", "File events the watcher passed on.");
    let _ = writeln!(out, "kb_mcp_watcher_events_total {}", index.watcher_events);
    family(&mut out, "kb_mcp_index_syncs_total", "counter", "Index updates the watcher made.");
    let _ = writeln!(out, "kb_mcp_index_syncs_total {}", index.syncs);
    if let Some(lag) = index.last_sync_lag_ms {
        family(
            &mut out,
            "kb_mcp_index_sync_lag_seconds",
            "gauge",
            "From a change on disk to the index holding it, for the last update.",
        );
        let _ = writeln!(out, "kb_mcp_index_sync_lag_seconds {}", lag / 1000.0);
    }
    family(&mut out, "kb_mcp_start_time_seconds", "gauge", "When the server started, in Unix seconds.");
    let _ = writeln!(out, "kb_mcp_start_time_seconds {started}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_errors_and_percentiles_are_counted_per_tool() {
        let metrics = Metrics::new();
        for ms in 1..=100u64 {
            metrics.record_call("read_note", "ok", Duration::from_millis(ms));
        }
        metrics.record_call("read_note", "not_found", Duration::from_millis(1));
        metrics.record_call("search_knowledge", "ok", Duration::from_micros(300));
        metrics.record_sync(3, Duration::from_millis(420));
        let snapshot = metrics.snapshot(None, true);
        let read = &snapshot.tools[0];
        assert_eq!((read.tool.as_str(), read.calls), ("read_note", 101));
        assert_eq!(read.errors, BTreeMap::from([("not_found".to_owned(), 1)]));
        // Within the histogram's 0.1 %.
        assert!((read.p50_ms - 50.0).abs() < 0.1, "{}", read.p50_ms);
        assert!((read.p99_ms - 99.0).abs() < 0.1, "{}", read.p99_ms);
        assert!((read.max_ms - 100.0).abs() < 0.1, "{}", read.max_ms);
        assert_eq!(snapshot.tools[1].calls, 1);
        assert_eq!((snapshot.index.watcher_events, snapshot.index.syncs), (3, 1));
        assert!((snapshot.index.last_sync_lag_ms.unwrap() - 420.0).abs() < 0.01);
        assert!(snapshot.index.watching && snapshot.index.documents.is_none());
    }

    #[test]
    fn the_prometheus_text_has_every_family_and_escapes_labels() {
        let metrics = Metrics::new();
        metrics.record_call("read_note", "ok", Duration::from_millis(2));
        metrics.record_call("a\"b\\c\nd", "not_found", Duration::from_millis(4));
        let index = IndexActivity {
            documents: Some(12),
            updated_at: Some("2026-12-06T10:00:00Z".to_owned()),
            ..IndexActivity::default()
        };
        let text = metrics.prometheus_text(Some(index), false);
        for line in [
            "kb_mcp_tool_calls_total{tool=\"read_note\"} 1",
            "kb_mcp_tool_errors_total{tool=\"a\\\"b\\\\c\\nd\",code=\"not_found\"} 1",
            "kb_mcp_tool_latency_seconds_count{tool=\"read_note\"} 1",
            "kb_mcp_index_documents 12",
            "kb_mcp_index_updated_timestamp_seconds 1796551200",
            "kb_mcp_watcher_events_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(text.contains("kb_mcp_tool_latency_seconds{tool=\"read_note\",quantile=\"0.99\"} 0.002"));
        assert!(!text.contains("kb_mcp_index_sync_lag_seconds"), "no lag before any update");
        for line in text.lines() {
            assert!(line.starts_with('#') || line.starts_with("kb_mcp_"), "{line:?}");
        }
    }
}
