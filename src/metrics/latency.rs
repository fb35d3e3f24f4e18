//! The process's latency histograms: push, pop and ack handling, every HTTP route, how long
//! parked long-polls wait for a wake, SQL call time per function, and pool checkout wait.
//!
//! They live in one process-wide registry (not per broker) because what feeds them is
//! process-wide too: the tracing layer that times SQL spans ([`super::sql_spans`]) and the
//! connection pool. The exposition (`/metrics/prometheus`) gathers them beside the broker's
//! counters. Observing is a few atomic adds; nothing here blocks.

use std::sync::OnceLock;

use prometheus::{Histogram, HistogramOpts, HistogramVec, Registry};

/// Bucket bounds in seconds: from half a millisecond (a pop answered from memory) to a
/// minute (a long-poll that waited out its timeout).
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// The SQL functions of the push, pop and ack paths, shown from the start.
const HOT_SQL_FUNCTIONS: [&str; 8] = [
    "log_push_v3",
    "log_ack_v2",
    "log_pop_wildcard_bin_v2",
    "log_pop_list_v2",
    "log_pop_specific_v2",
    "log_pop_discover_wire_v2",
    "log_has_pending_v1",
    "log_pending_partitions_v1",
];

/// Every latency histogram of the process.
pub struct Latency {
    /// Where they are registered (gathered by the exposition).
    pub registry: Registry,
    /// `POST /api/v1/push` handling time.
    pub push: Histogram,
    /// Pop handling time (every pop route; long-polls included).
    pub pop: Histogram,
    /// Ack handling time (`/api/v1/ack` and `/api/v1/ack/batch`).
    pub ack: Histogram,
    /// Handling time of every route, by route pattern and method.
    pub http: HistogramVec,
    /// How long a parked long-poll waited until a wake opened its gate, by wake source.
    pub wake_wait: HistogramVec,
    /// Time of each SQL wrapper call (statement and rows), by SQL function.
    pub sql: HistogramVec,
    /// Wait for a pooled connection.
    pub pool_wait: Histogram,
    /// How long after its deliverAt a timer was fired (claimed), by this node's fire loop.
    pub timer_lateness: Histogram,
}

/// The process's histograms, created on first use.
pub fn latency() -> &'static Latency {
    static LATENCY: OnceLock<Latency> = OnceLock::new();
    LATENCY.get_or_init(Latency::new)
}

impl Latency {
    fn new() -> Self {
        let registry = Registry::new();
        let opts =
            |name: &str, help: &str| HistogramOpts::new(name, help).buckets(BUCKETS.to_vec());
        let plain = |name: &str, help: &str| {
            let h = Histogram::with_opts(opts(name, help)).expect("histogram options are valid");
            registry
                .register(Box::new(h.clone()))
                .expect("histogram names are unique");
            h
        };
        let push = plain("queen_push_duration_seconds", "push request handling time");
        let pop = plain(
            "queen_pop_duration_seconds",
            "pop request handling time, long-polls included",
        );
        let ack = plain("queen_ack_duration_seconds", "ack request handling time");
        let pool_wait = plain(
            "queen_pool_wait_seconds",
            "wait for a pooled PostgreSQL connection",
        );
        let timer_lateness = plain(
            "queen_timer_lateness_seconds",
            "how long after its deliverAt a timer became a message (fired on this node)",
        );
        let labelled = |name: &str, help: &str, labels: &[&str]| {
            let h =
                HistogramVec::new(opts(name, help), labels).expect("histogram options are valid");
            registry
                .register(Box::new(h.clone()))
                .expect("histogram names are unique");
            h
        };
        let http = labelled(
            "queen_http_request_duration_seconds",
            "request handling time by route pattern and method",
            &["route", "method"],
        );
        let wake_wait = labelled(
            "queen_wake_wait_seconds",
            "time a parked long-poll waited until a wake opened its gate, by wake source",
            &["source"],
        );
        let sql = labelled(
            "queen_sql_duration_seconds",
            "time of one SQL wrapper call (statement and rows), by SQL function",
            &["function"],
        );
        // Series that exist from the start, so a dashboard's rate() has something to read
        // before the first wake or call (the SQL histogram grows a series per function).
        for source in ["push", "peer", "ack", "wheel", "returned", "reseed"] {
            wake_wait.with_label_values(&[source]);
        }
        for function in HOT_SQL_FUNCTIONS {
            sql.with_label_values(&[function]);
        }
        Latency {
            registry,
            push,
            pop,
            ack,
            http,
            wake_wait,
            sql,
            pool_wait,
            timer_lateness,
        }
    }
}
