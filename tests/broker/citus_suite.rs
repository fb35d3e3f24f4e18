//! The Citus sub-run of `cargo test`: the tests that must hold on a Citus cluster (the
//! Python client's compat suite, the layout, migrations on a fresh and an existing Citus
//! database, and the tests whose partitions, bundles and pops cross workers), run by this
//! test binary itself in the harness's Citus mode (tests/broker/support/citus.rs), so that
//! README's test command and `.ci/run` cover them whenever a Citus cluster script is there.
//!
//! The cluster script is `QUEEN_CITUS_CLUSTER_SH`, else `../shared/citus/cluster.sh`
//! beside the repository (`tests/install-deps.sh` runs its `build`). Without one the test
//! says so on stderr, past the test harness's capture, and passes.
//!
//! **The list**: [`ON_CITUS`] holds the filters, [`NOT_YET`] the tests under them that do
//! not pass on the layout yet; a test that comes to pass there moves out of [`NOT_YET`] or
//! into [`ON_CITUS`].

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The filters of the sub-run (libtest's: a test runs when its path contains one).
const ON_CITUS: &[&str] = &[
    // The published Python client's suite (tests/compat/).
    "compat_python::",
    // The layout: fresh, existing unsharded, and wildcard pops over sixteen partitions on
    // both workers under concurrent pushes.
    "citus_layout::",
    // Creating a queue and registering a group in one transaction beside another group's
    // registration: Citus's reference-table shard locks taken in one order (part nine).
    "reference_lock_order::",
    // Migrations on a fresh and on an existing database (laid out by the first start).
    "upgrade::",
    // Pushes naming partitions on both workers in one request and in one bundle (2PC).
    "partition_directory::",
    // Bundles: pushes and acks of partitions on both workers in one transaction (2PC),
    // concurrent bundles moving every message once.
    "transaction::",
    // Retention sweeping while pushes, acks and new cursors land on both workers.
    "retention_concurrency::",
    // Tenants: claims and limits, and two tenants on two broker processes.
    "tenants::",
    // The admin routes' listings, status, messages, traces, dead letters, group admin
    // (PL/pgSQL functions the layout plans), and the token and tenant rules over them.
    "admin_",
    "auth::",
    // Acks of leases over partitions on both workers; dead-lettering and its retry.
    "ack_known_lease::",
    "ack_whole_lease::",
    // The ack and the hot-list claim as the bare calls Citus delegates (issue 34).
    "delegated_entry_points::",
    "pop_render::",
    "queue_ttl::",
    // Retention of segments, dead letters and partitions; offset reads of what changed.
    "retention::",
    "reads_changed::",
    // Locks and semaphores (permits in `kv`, distributed by tenant): the ops, the tenants'
    // isolation, a slot won by a concurrent writer.
    "locks::ops::",
    "locks::access::",
    "locks::races::",
    // Failures: maintenance mode on every node (the layout read its switches as always
    // off before get_maintenance_v2 was PL/pgSQL), an exhausted pool, a statement timeout.
    "failures::",
    // Growing the cluster: a third worker added and shards rebalanced under load.
    "citus_grow::",
    // Pushes into thirty new partitions racing first pops of six groups through three
    // nodes (the directory's lock held by a push, docs/scale-out.md part ten).
    "nodes::races::",
    // Part eight's candidates, affordable since the tests copy template databases: the
    // spool, acks' durability on the worker, abandoned pops, offset reads, timers,
    // typed metrics, push caps, paths; the cross-node wakes.
    "spool::",
    "ack_durability::",
    "hotlist_dropped_plans::",
    "reads_fetch::",
    "timers::routes::",
    "metrics_typed::",
    "push_caps::",
    "paths::",
    "nodes::wakes::",
    // The idle sweep: empty partitions on the workers and their directory rows removed,
    // idle groups forgotten, waiting ones kept (part ten).
    "housekeeping::empty_partitions",
    "idle_group_waiting::",
    // Leases: extended and required through another node, and a one-partition claim's
    // cursor update rewritten in place (HOT; a lease naming its partition, part eleven).
    "lease_and_configure::",
    // A kv call and a bundle's commit whose answers are cut (the cut proxy forwards to
    // the coordinator's TCP port here): 409, outcome unknown, applied once.
    "kv::in_doubt::",
];

/// Tests under [`ON_CITUS`] that still fail on the layout (libtest's `--skip`: a test is
/// left out when its path contains one); docs/scale-out.md ("What still fails") has why.
const NOT_YET: &[&str] = &[
    // The 50 ms p99 of a wake across nodes: 62 ms on the layout (p50 15 ms) beside CI's
    // main run, where the push and the woken pop's claim each go through the coordinator
    // to a worker (part ten); alone on a quiet machine it passes, p99 29-44 ms against
    // plain PostgreSQL's 14 ms (part eleven).
    "nodes::wakes::a_push_through_one_node_wakes_a_consumer_parked_on_another_within_50_ms_at_p99",
];

/// How many tests the sub-run runs at once (the main run keeps going beside it).
const THREADS: &str = "2";

/// Where the cluster script is: `QUEEN_CITUS_CLUSTER_SH`, else the one beside the
/// repository, if it is there.
fn cluster_script() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("QUEEN_CITUS_CLUSTER_SH").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return match path.is_file() {
            true => Ok(path),
            false => Err(format!(
                "QUEEN_CITUS_CLUSTER_SH={} is no file",
                path.display()
            )),
        };
    }
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/citus/cluster.sh");
    match beside.is_file() {
        true => Ok(beside),
        false => Err(format!(
            "no Citus cluster script: QUEEN_CITUS_CLUSTER_SH is not set and {} is not there",
            beside.display()
        )),
    }
}

/// Says something on the test run's stderr even while libtest captures the test's output
/// (it captures the print macros, not writes to the stream itself).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The names of the tests a libtest run's output reports as failed.
fn failed_tests(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .collect()
}

/// The line `test result: …` of a libtest run's output.
fn summary(output: &str) -> Option<&str> {
    output.lines().find(|l| l.starts_with("test result:"))
}

#[test]
fn the_citus_subset_passes_on_a_citus_cluster() {
    if crate::support::citus::script().is_some() {
        eprintln!("already in the Citus test mode: the sub-run is this run's caller");
        return;
    }
    let script = match cluster_script() {
        Ok(script) => script,
        Err(why) => {
            say(&format!(
                "citus_suite: SKIPPED, the Citus sub-run did not run: {why} \
                 (set QUEEN_CITUS_CLUSTER_SH to the cluster script to run it)"
            ));
            return;
        }
    };
    let exe = std::env::current_exe().expect("the test binary's own path");
    let mut command = Command::new(exe);
    command
        .env("QUEEN_TEST_CITUS", &script)
        .args(["--test-threads", THREADS])
        .args(ON_CITUS);
    for skip in NOT_YET {
        command.args(["--skip", skip]);
    }
    say(&format!(
        "citus_suite: running {} on Citus ({}), {THREADS} at a time",
        ON_CITUS.join(" "),
        script.display()
    ));
    let started = Instant::now();
    let out = command
        .stdin(Stdio::null())
        .output()
        .expect("running the test binary in the Citus test mode");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    say(&format!(
        "citus_suite: {} in {:.0} s",
        summary(&stdout).unwrap_or("no summary"),
        started.elapsed().as_secs_f64()
    ));
    let failed = failed_tests(&stdout);
    assert!(
        out.status.success() && summary(&stdout).is_some(),
        "on Citus ({}), {} failed: {}\n\n--- the sub-run's stdout (tail) ---\n{}\n\
         --- its stderr (tail) ---\n{}",
        script.display(),
        failed.len(),
        failed.join(", "),
        tail(&stdout, 300),
        tail(&stderr, 100),
    );
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
