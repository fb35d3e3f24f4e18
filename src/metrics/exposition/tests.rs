//! The exposition's families: types, names, labels and values.

use serde_json::json;

use super::*;

fn snapshot() -> Value {
    json!({
        "pops": {"fromRing": 5, "emptyInMemory": 2, "maintenance": 0, "parked": 3, "minWaitHolds": 1},
        "sql": {"wildcard": 1, "list": 4, "singleClaim": 6, "reseed": 2, "specific": 0, "discover": 0,
                "hasPending": 0},
        "acks": {"wholeLease": 11, "itemized": 1},
        "wakes": {"push": 7, "peer": 1, "ack": 0, "wheel": 0, "returned": 2, "reseed": 3},
        "limiter": {"limit": 16, "inFlight": 1, "acquiredTotal": 30},
        "pool": {"size": 20, "connections": 4, "idle": 1, "inUse": 3, "checkoutsTotal": 40,
                 "backgroundCheckoutsTotal": 6, "quarantined": 0},
        "maintenance": true,
        "hotlist": true,
        "mesh": {"nodeId": "a", "peersConnected": 2, "peers": [{"connected": true}],
                 "hintsSent": 9, "hintsDropped": 0, "hintsReceived": 8, "framesDropped": 0,
                 "handshakesRefused": 0, "connectFailures": 1, "inboundConnections": 2},
    })
}

#[test]
fn counters_and_gauges_are_typed_and_labelled_from_the_snapshot() {
    let text = render(&snapshot(), None, true, true);

    assert!(text.contains("# TYPE queen_pops_total counter\n"), "{text}");
    assert!(
        text.contains("queen_pops_total{result=\"ring\"} 5\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_wakes_total{source=\"push\"} 7\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_wakes_total{source=\"reseed\"} 3\n"),
        "{text}"
    );
    assert!(text.contains("queen_sql_calls_total{function=\"log_pop_list_v2\"} 4\n"));
    assert!(text.contains("queen_sql_calls_total{function=\"pop_single_claim\"} 6\n"));
    assert!(text.contains("queen_acks_total{path=\"whole_lease\"} 11\n"));
    assert!(text.contains("queen_mesh_hints_total{outcome=\"received\"} 8\n"));
    assert!(
        text.contains("# TYPE queen_pool_in_use gauge\nqueen_pool_in_use 3\n"),
        "{text}"
    );
    assert!(text.contains("queen_maintenance 1\n"));
    assert!(text.contains("queen_ready 1\n"));
    assert!(!text.contains("untyped"), "{text}");
    assert!(!text.contains("node_id"), "strings stay in the JSON form");
}

#[test]
fn the_latency_histograms_are_in_every_scrape() {
    latency().push.observe(0.002);

    let text = render(&snapshot(), None, false, true);

    assert!(
        text.contains("# TYPE queen_push_duration_seconds histogram\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_push_duration_seconds_bucket{le=\"0.0025\"}"),
        "{text}"
    );
    assert!(text.contains("# TYPE queen_pool_wait_seconds histogram\n"));
    assert!(text.contains("queen_ready 0\n"));
}

#[test]
fn database_gauges_are_labelled_by_queue_and_group_and_escape_label_values() {
    let db = FromDatabase {
        queues: vec![QueueGauges {
            tenant: String::new(),
            queue: "a\"b".into(),
            depth: 7,
            lag_seconds: 1.5,
            throughput: 3,
        }],
        groups: json!([{"name": "billing", "queueName": "orders", "totalLag": 4, "maxTimeLag": 2.5}]),
        dead_letters: vec![(String::new(), 2)],
    };

    let text = render(&snapshot(), Some(&db), true, true);

    assert!(
        text.contains("queen_queue_depth{queue=\"a\\\"b\"} 7\n"),
        "{text}"
    );
    assert!(text.contains("queen_queue_lag_seconds{queue=\"a\\\"b\"} 1.5\n"));
    assert!(text.contains("# TYPE queen_queue_throughput gauge\n"));
    assert!(
        text.contains("queen_consumer_group_lag_messages{group=\"billing\",queue=\"orders\"} 4\n"),
        "{text}"
    );
    assert!(
        text.contains("queen_consumer_group_lag_seconds{group=\"billing\",queue=\"orders\"} 2.5\n")
    );
    assert!(text.contains("queen_dead_letters 2\n"));
}

#[test]
fn a_snapshot_missing_a_number_leaves_that_family_out_and_keeps_the_rest() {
    let text = render(&json!({"pool": {"inUse": 1}}), None, true, true);

    assert!(text.contains("queen_pool_in_use 1\n"), "{text}");
    assert!(!text.contains("queen_pops_total"), "{text}");
}

#[test]
fn the_sweepers_counters_per_queue_and_the_table_sizes_are_typed_and_labelled() {
    let mut s = snapshot();
    s["retention"] = json!({
        "runs": 4, "skipped": 2, "errors": 0, "lastRunAt": 1.5e9, "lastDurationMs": 250,
        "lastDurationSeconds": 0.25,
        "removed": {"segments": 7, "bytes": 9000, "dedupRows": 1, "deadLetters": 2,
                    "traces": 3, "partitions": 0, "cursors": 0, "kvKeys": 5},
        "queues": [{"tenant": "", "queue": "orders", "segmentsRemoved": 7, "bytesRemoved": 9000}],
        "tables": {"log_segments": 65536, "queues": 8192},
    });

    let text = render(&s, None, true, true);

    assert!(
        text.contains("queen_retention_runs_total{result=\"ran\"} 4\n"),
        "{text}"
    );
    assert!(text.contains("queen_retention_removed_total{kind=\"segments\"} 7\n"));
    assert!(text.contains("queen_retention_removed_total{kind=\"kv_keys\"} 5\n"));
    assert!(text.contains("queen_retention_removed_bytes_total 9000\n"));
    assert!(text.contains(
        "# TYPE queen_retention_segments_removed_total counter\nqueen_retention_segments_removed_total{queue=\"orders\",tenant=\"\"} 7\n"
    ), "{text}");
    assert!(
        text.contains("queen_retention_bytes_removed_total{queue=\"orders\",tenant=\"\"} 9000\n")
    );
    assert!(text.contains("queen_retention_last_duration_seconds 0.25\n"));
    assert!(text.contains("# TYPE queen_table_size_bytes gauge\n"));
    assert!(text.contains("queen_table_size_bytes{table=\"log_segments\"} 65536\n"));
}

#[test]
fn without_table_sizes_the_table_family_is_left_out() {
    let mut s = snapshot();
    s["retention"] = json!({"queues": [], "tables": null});

    let text = render(&s, None, true, true);

    assert!(!text.contains("queen_table_size_bytes"), "{text}");
}

/// A tenant's scrape (a snapshot without the node's counters, not node-wide) holds its
/// queues' gauges and nothing that counts the whole node's traffic.
#[test]
fn a_tenant_scrape_has_its_queue_gauges_and_no_node_wide_families() {
    let db = FromDatabase {
        queues: vec![QueueGauges {
            tenant: "acme".into(),
            queue: "orders".into(),
            depth: 4,
            lag_seconds: 1.5,
            throughput: 9,
        }],
        groups: json!([{"name": "billing", "queueName": "orders", "tenant": "acme",
                        "totalLag": 4, "maxTimeLag": 2.5}]),
        dead_letters: vec![("acme".to_owned(), 1)],
    };
    let tenant_view = json!({"tenant": "acme", "groups": []});
    let text = render(&tenant_view, Some(&db), true, false);
    assert!(
        text.contains(r#"queen_queue_depth{queue="orders",tenant="acme"} 4"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"queen_consumer_group_lag_messages{group="billing",queue="orders",tenant="acme"} 4"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"queen_dead_letters{tenant="acme"} 1"#),
        "{text}"
    );
    for node_wide in [
        "queen_pops_total",
        "queen_sql_calls_total",
        "queen_http_request_duration_seconds",
        "queen_pool",
    ] {
        assert!(
            !text.contains(node_wide),
            "{node_wide} in a tenant scrape:\n{text}"
        );
    }
}

/// The ephemeral families read the engine's own snapshot (`/metrics`' `ephemeral`), so a
/// renamed field there shows up here as a missing series.
#[test]
fn the_ephemeral_engines_figures_are_typed_counters_and_gauges() {
    use crate::domain::ephemeral::{Call, EphemeralOptions};
    use crate::ephemeral::Ephemeral;

    let engine = Ephemeral::new(1 << 20);
    let options = EphemeralOptions::parse(Some(&json!({"maxLength": 2, "policy": "dropOldest"})))
        .expect("valid options");
    let queue = engine.get_or_insert((String::new(), "live".into()), options, true);
    for k in 0..5 {
        queue
            .lock()
            .push("p", &[k.to_string().into()], &engine.ctx())
            .expect("dropOldest makes room");
    }
    let push = Call::Push {
        queue: "elsewhere".into(),
        partition: None,
        payloads: vec!["1".into()],
    };
    engine.counters.forwarding(&push);
    engine.counters.forwarding(&push);

    let text = render(&json!({"ephemeral": engine.snapshot()}), None, true, true);

    for line in [
        "# TYPE queen_ephemeral_messages_lost_total counter\n",
        "queen_ephemeral_messages_lost_total{cause=\"dropped\"} 3\n",
        "queen_ephemeral_messages_lost_total{cause=\"expired\"} 0\n",
        "# TYPE queen_ephemeral_pushes_refused_total counter\nqueen_ephemeral_pushes_refused_total 0\n",
        "queen_ephemeral_forwarded_total{call=\"push\"} 2\n",
        "queen_ephemeral_forwarded_total{call=\"ack\"} 0\n",
        "# TYPE queen_ephemeral_queues_owned gauge\nqueen_ephemeral_queues_owned 1\n",
        "# TYPE queen_ephemeral_messages gauge\nqueen_ephemeral_messages 2\n",
        // Two one-byte payloads, each in the payload store's smallest block (8 bytes),
        // plus 128 each.
        "queen_ephemeral_bytes_held 272\n",
        "queen_ephemeral_max_bytes 1048576\n",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}
