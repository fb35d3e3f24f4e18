//! Queen: a partitioned message broker whose only state is PostgreSQL.
//!
//! # Map
//!
//! - [`config`]: the typed settings tree, read once from the environment.
//! - [`domain`]: validated names and options, and what a push carries (items, verdicts);
//!   no I/O.
//! - [`segment`]: the stored-record format: frames, and zstd blobs built on push and
//!   sliced on pop. PostgreSQL never looks inside a blob.
//! - [`db`]: the only module that speaks SQL: pool, embedded PostgreSQL launcher, schema
//!   installer, one Rust function per SQL function.
//! - [`actors`]: one group actor per (tenant, queue, consumer group) owning its hot-list
//!   ring, revisit wheel and wake gate; the registry that finds or starts them, and the
//!   directory of their addresses that both use.
//! - [`log`]: the partition log's operations as handlers use them: push, pop (planned by
//!   the group actor, with the long-poll backoff), ack.
//! - [`http`]: the route table (`http::routes`), the handlers' state, bodies, and the one
//!   place that maps errors to answers; `http::admin`
//!   holds the tier 2 admin endpoints (groups, DLQ, messages, resources, status, traces),
//!   whose SQL wrappers are in `db::admin`; `http::reads` the read-only offset reads and
//!   partition discovery, whose SQL wrappers are in `db::reads`.
//! - [`broker`]: the shared parts handed to handlers (it holds the log's and the spool's
//!   state, whose types never name it back); [`limiter`]: the Vegas limit around
//!   database work; [`metrics`]: counters, a leaf (plain numbers in, nothing of the broker
//!   imported); [`maintenance`]: the cluster-wide pop switch.
//! - [`mesh`]: the peer mesh between broker nodes: msgpack hints (push landed, config
//!   changed, maintenance changed) that wake other nodes' group actors before any claim.
//!   Only hints: PostgreSQL stays the truth, except for ephemeral queues' calls, which it
//!   forwards to the queue's owner node.
//! - [`ephemeral`]: ephemeral queues: contents in the owner node's memory only (rings,
//!   cursors, leases, a broker-wide byte budget), declarations in PostgreSQL.
//! - [`auth`]: JWT verification, the role each route needs and the tenant a token names;
//!   `http::auth` is the gate that applies them to requests when `JWT_ENABLED` is on (the
//!   request's tenant, default without auth, is then part of every key and SQL call).
//! - [`app`]: wiring; [`telemetry`] and [`shutdown`]: one concern each.
//!
//! # How a message travels
//!
//! **Push.** `http::push` validates the items (a JSON body, or a `QPB1` body decoded by
//! `http::binary`, whose flag-8 groups arrive already compressed and are kept as they are);
//! `log::push` groups them by (queue, partition), dedups transaction ids within the request
//! and against the partition's in-memory dedup window (`log::push::window`), frames and
//! compresses one segment per group, and appends all groups in one transaction through
//! `queen.log_push_v3`, which assigns dense offsets under the partition row lock and
//! appends only if the window saw every earlier append (else it lists what others stored,
//! and the check runs again). Each segment keeps its messages' transaction-id keys.
//! After the commit the queue's group actors hear which partitions received messages, and
//! so do the peers, through the mesh: their actors wake as if the push had been theirs.
//!
//! **Pop.** `http::pop` parses the query; `log::pop` asks the group actor for a plan. An
//! empty ring answers at once (no limiter permit, no pooled connection) and parks a
//! `wait=true` pop on the actor's wake gate; otherwise the pop takes a permit and a
//! connection and claims from lent ring candidates through `queen.log_pop_list_v2` (a
//! group's first pop uses `queen.log_pop_wildcard_bin_v2`, which seeds its cursors; named
//! partitions and namespace/task pops have procedures of their own). All of them funnel
//! into `queen.log_pop_v3`: gates, claim-first `FOR UPDATE SKIP LOCKED`, head probe and
//! forward scan, then auto-ack or lease. Verdicts go back to the actor (leased and held
//! partitions onto its wheel). What a plan lends (candidates, the one reseed in flight)
//! travels inside the actor's reply and gives itself back when dropped, so a client that
//! leaves at any moment leaves the actor's accounting whole. The handler decompresses the returned segments and slices
//! their frames into the JSON answer (with `frames=true`, `http::binary` ships the stored
//! segments whole as the `QPF1` answer instead). Pushes, ack-promotes and the wheel open
//! the gate; the seed's bounded backoff is the floor under lost wakes.
//!
//! **Ack.** `log::ack` groups acknowledgements by (partition, lease) and calls
//! `queen.log_ack_v2`, which finds offsets by transaction-id key within the lease's span
//! (so any node can ack; a whole-batch ack is one positional advance), moves
//! the cursor by the longest acknowledged prefix, rewinds on a nack, charges retries and
//! files dead letters, and releases the lease once everything delivered is done.
//!
//! **Retention.** `retention` runs on every node; the one holding the sweeper lease deletes
//! segments past their queue's retention (`sql/functions/retention_segments_v2.sql`),
//! expired dead letters and traces, and optionally empty partitions and abandoned groups'
//! cursors, in bounded batches. Consumers behind deleted segments continue at the first
//! remaining message.

#![warn(missing_docs)]

pub mod actors;
pub mod app;
pub mod auth;
pub mod broker;
pub mod config;
pub mod db;
pub mod domain;
pub mod ephemeral;
pub mod http;
pub mod limiter;
pub mod log;
pub mod maintenance;
pub mod mesh;
pub mod metrics;
pub mod retention;
pub mod segment;
pub mod shutdown;
pub mod telemetry;
pub mod timers;
