//! The counter and gauge families read from the `/metrics` JSON snapshot: their names,
//! help texts, labels, and where each sample's number sits in the snapshot.

/// A family read from the snapshot: name, help, label (empty: none), and its samples as
/// (label value, JSON pointer into the snapshot).
pub type Family = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Counters: numbers that only grow while the process lives.
pub const COUNTERS: &[Family] = &[
    (
        "queen_ephemeral_messages_lost_total",
        "ephemeral messages this node's queues lost other than by an ack: dropped (dropOldest \
         made room, a reset, a delete or an ownership move), expired (TTL), retries exhausted",
        "cause",
        &[
            ("dropped", "/ephemeral/dropped"),
            ("expired", "/ephemeral/expired"),
            ("retries_exhausted", "/ephemeral/retriesExhausted"),
        ],
    ),
    (
        "queen_ephemeral_pushes_refused_total",
        "ephemeral pushes this node refused with nothing stored (429 queue_full or broker_full, \
         413 too_large)",
        "",
        &[("", "/ephemeral/refused")],
    ),
    (
        "queen_ephemeral_forwarded_total",
        "ephemeral calls this node forwarded over the mesh to the queue's owner",
        "call",
        &[
            ("push", "/ephemeral/forwarded/push"),
            ("pop", "/ephemeral/forwarded/pop"),
            ("ack", "/ephemeral/forwarded/ack"),
        ],
    ),
    (
        "queen_timers_fired_total",
        "timers this node's fire loop turned into messages",
        "",
        &[("", "/timers/fired")],
    ),
    (
        "queen_timers_failed_fires_total",
        "fires of this node that could not push and rolled back (their timers backed off)",
        "",
        &[("", "/timers/failedFires")],
    ),
    (
        "queen_spool_buffered_messages_total",
        "messages this node answered buffered (written to its push spool)",
        "",
        &[("", "/spool/bufferedMessages")],
    ),
    (
        "queen_spool_replayed_total",
        "spooled messages the replay handled: stored, found stored already (duplicate), or rejected",
        "result",
        &[
            ("stored", "/spool/replayedMessages"),
            ("duplicate", "/spool/replayedDuplicates"),
            ("rejected", "/spool/replayRejected"),
        ],
    ),
    (
        "queen_spool_refused_total",
        "pushes answered 503 because the push spool was full",
        "",
        &[("", "/spool/refusedFull")],
    ),
    (
        "queen_retention_runs_total",
        "retention sweeps of this node: ran (it held the lease), skipped (another node did), failed",
        "result",
        &[
            ("ran", "/retention/runs"),
            ("skipped", "/retention/skipped"),
            ("failed", "/retention/errors"),
        ],
    ),
    (
        "queen_retention_removed_total",
        "what this node's retention sweeps deleted, by kind",
        "kind",
        &[
            ("segments", "/retention/removed/segments"),
            ("dedup_rows", "/retention/removed/dedupRows"),
            ("dead_letters", "/retention/removed/deadLetters"),
            ("traces", "/retention/removed/traces"),
            ("partitions", "/retention/removed/partitions"),
            ("cursors", "/retention/removed/cursors"),
            ("kv_keys", "/retention/removed/kvKeys"),
        ],
    ),
    (
        "queen_retention_removed_bytes_total",
        "stored bytes of the segments this node's retention sweeps deleted",
        "",
        &[("", "/retention/removed/bytes")],
    ),
    (
        "queen_pops_total",
        "pops answered, by how",
        "result",
        &[
            ("ring", "/pops/fromRing"),
            ("empty_in_memory", "/pops/emptyInMemory"),
            ("maintenance", "/pops/maintenance"),
        ],
    ),
    (
        "queen_pop_min_wait_holds_total",
        "under-full claims held by the minimum pop wait",
        "",
        &[("", "/pops/minWaitHolds")],
    ),
    (
        "queen_sql_calls_total",
        "calls of the pop path's SQL functions",
        "function",
        &[
            ("log_pop_wildcard_bin_v2", "/sql/wildcard"),
            ("log_pop_list_v2", "/sql/list"),
            ("pop_single_claim", "/sql/singleClaim"),
            ("log_pending_partitions_v1", "/sql/reseed"),
            ("log_pop_specific_v2", "/sql/specific"),
            ("log_pop_discover_wire_v2", "/sql/discover"),
            ("log_has_pending_v1", "/sql/hasPending"),
        ],
    ),
    (
        "queen_push_appends_total",
        "partition appends, by how SQL made them",
        "path",
        &[
            ("single_statement", "/push/singleStatementAppends"),
            ("log_push_v3", "/push/functionAppends"),
        ],
    ),
    (
        "queen_acks_total",
        "acks of one partition and lease, by how SQL settled them",
        "path",
        &[
            ("whole_lease", "/acks/wholeLease"),
            ("itemized", "/acks/itemized"),
        ],
    ),
    (
        "queen_wakes_total",
        "wakes of parked long-polls, by source",
        "source",
        &[
            ("push", "/wakes/push"),
            ("peer", "/wakes/peer"),
            ("ack", "/wakes/ack"),
            ("wheel", "/wakes/wheel"),
            ("returned", "/wakes/returned"),
            ("reseed", "/wakes/reseed"),
        ],
    ),
    (
        "queen_limiter_acquired_total",
        "permits the limiter handed out",
        "",
        &[("", "/limiter/acquiredTotal")],
    ),
    (
        "queen_pool_checkouts_total",
        "pooled connections checked out, by who",
        "kind",
        &[
            ("request", "/pool/checkoutsTotal"),
            ("background", "/pool/backgroundCheckoutsTotal"),
        ],
    ),
    (
        "queen_pool_quarantined_total",
        "connections dropped after a timeout or a lost connection",
        "",
        &[("", "/pool/quarantined")],
    ),
    (
        "queen_mesh_hints_total",
        "mesh hints, by outcome",
        "outcome",
        &[
            ("sent", "/mesh/hintsSent"),
            ("dropped", "/mesh/hintsDropped"),
            ("received", "/mesh/hintsReceived"),
        ],
    ),
    (
        "queen_mesh_frames_dropped_total",
        "mesh frames dropped",
        "",
        &[("", "/mesh/framesDropped")],
    ),
    (
        "queen_mesh_handshakes_refused_total",
        "peer handshakes refused",
        "",
        &[("", "/mesh/handshakesRefused")],
    ),
    (
        "queen_mesh_connect_failures_total",
        "failed dials to peers",
        "",
        &[("", "/mesh/connectFailures")],
    ),
    (
        "queen_mesh_inbound_connections_total",
        "connections accepted from peers",
        "",
        &[("", "/mesh/inboundConnections")],
    ),
];

/// Gauges: numbers that go up and down.
pub const GAUGES: &[Family] = &[
    (
        "queen_ephemeral_queues_owned",
        "ephemeral queues this node owns and holds in memory",
        "",
        &[("", "/ephemeral/queues")],
    ),
    (
        "queen_ephemeral_messages",
        "ephemeral messages this node holds",
        "",
        &[("", "/ephemeral/messages")],
    ),
    (
        "queen_ephemeral_bytes_held",
        "bytes of ephemeral messages this node holds (each payload's allocated block plus 128 per message)",
        "",
        &[("", "/ephemeral/bytesHeld")],
    ),
    (
        "queen_ephemeral_max_bytes",
        "QUEEN_EPHEMERAL_MAX_BYTES: the most ephemeral bytes this node holds",
        "",
        &[("", "/ephemeral/maxBytes")],
    ),
    (
        "queen_timers_pending",
        "pending timers of every tenant, as this node's fire loop last counted them",
        "",
        &[("", "/timers/pending")],
    ),
    (
        "queen_retention_last_run_timestamp_seconds",
        "when this node's last retention sweep ended (Unix time)",
        "",
        &[("", "/retention/lastRunAt")],
    ),
    (
        "queen_retention_last_duration_seconds",
        "how long this node's last retention sweep took",
        "",
        &[("", "/retention/lastDurationSeconds")],
    ),
    (
        "queen_pops_parked",
        "long-polls parked now",
        "",
        &[("", "/pops/parked")],
    ),
    (
        "queen_limiter_limit",
        "the limiter's current concurrency limit",
        "",
        &[("", "/limiter/limit")],
    ),
    (
        "queen_limiter_in_flight",
        "permits held now",
        "",
        &[("", "/limiter/inFlight")],
    ),
    (
        "queen_pool_size",
        "configured pool size",
        "",
        &[("", "/pool/size")],
    ),
    (
        "queen_pool_connections",
        "open pooled connections",
        "",
        &[("", "/pool/connections")],
    ),
    (
        "queen_pool_idle",
        "idle pooled connections",
        "",
        &[("", "/pool/idle")],
    ),
    (
        "queen_pool_in_use",
        "pooled connections in use",
        "",
        &[("", "/pool/inUse")],
    ),
    (
        "queen_maintenance",
        "1 while pop maintenance is on",
        "",
        &[("", "/maintenance")],
    ),
    (
        "queen_push_maintenance",
        "1 while push maintenance is on (pushes go to the spool)",
        "",
        &[("", "/pushMaintenance")],
    ),
    (
        "queen_spool_pending_records",
        "push requests in this node's spool not yet replayed",
        "",
        &[("", "/spool/pendingRecords")],
    ),
    (
        "queen_spool_pending_bytes",
        "bytes of spooled push requests not yet replayed",
        "",
        &[("", "/spool/pendingBytes")],
    ),
    (
        "queen_hotlist_enabled",
        "1 when pops use the hot-list rings",
        "",
        &[("", "/hotlist")],
    ),
    (
        "queen_mesh_peers_connected",
        "mesh peers connected now",
        "",
        &[("", "/mesh/peersConnected")],
    ),
];
