-- 064_baseline: the tables, indexes and types that migrations 001-064 built, in one file.
--
-- Contract: creates schema `queen` and every table, index and row type the broker uses,
-- as migrations 001-064 of earlier releases left them (their functions are in
-- sql/functions/, one file each). Runs on a fresh database only: a database those
-- migrations built is recorded as at this version without running it (src/db/schema/
-- legacy.rs), and a database they built only part of is refused at start-up. No locks
-- beyond DDL; no notifications; no data.
--
-- A queue's identity is (tenant, name); a partition is an ordered lane of a queue whose
-- messages live in zstd segments (`log_segments`); a consumer group's position in a
-- partition is one `log_consumers` row (cursor plus lease). PostgreSQL never looks inside
-- a segment blob.

CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE queen.queues (
    id                          bigserial PRIMARY KEY,
    tenant                      text        NOT NULL DEFAULT '',
    name                        text        NOT NULL,
    namespace                   text,
    task                        text,
    -- NULL means "not configured": a pop then uses 60 s (the seed's COALESCE).
    lease_time                  integer,
    retry_limit                 integer     NOT NULL DEFAULT 3,
    priority                    integer     NOT NULL DEFAULT 0,
    delayed_processing          integer     NOT NULL DEFAULT 0,
    window_buffer               integer     NOT NULL DEFAULT 0,
    max_size                    integer     NOT NULL DEFAULT 0,
    retention_seconds           integer     NOT NULL DEFAULT 0,
    completed_retention_seconds integer     NOT NULL DEFAULT 0,
    retention_enabled           boolean     NOT NULL DEFAULT false,
    encryption_enabled          boolean     NOT NULL DEFAULT false,
    -- 0: a failed ack's message is redelivered at once.
    retry_delay_ms              integer     NOT NULL DEFAULT 0,
    -- NULL means "not set": dead letters are kept; an explicit false switches them off.
    dead_letter_queue           boolean,
    dlq_after_max_retries       boolean,
    max_wait_time_seconds       integer     NOT NULL DEFAULT 0,
    -- 0: messages never expire.
    ttl_seconds                 integer     NOT NULL DEFAULT 0,
    min_pop_wait_time           integer     NOT NULL DEFAULT 0,
    -- Seconds a transaction id stays a duplicate in a partition; NULL: the broker's default
    -- (QUEEN_DEDUP_WINDOW_SECS), 0: no dedup.
    dedup_window_seconds        integer,
    -- Option keys this broker does not interpret, kept so a configure round-trips them.
    extra_options               jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);
CREATE INDEX queues_namespace_task_idx ON queen.queues (tenant, namespace, task);

CREATE TABLE queen.log_partitions (
    id            bigserial   PRIMARY KEY,
    queue_id      bigint      NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name          text        NOT NULL,
    -- Offset of the newest message; -1 while the partition is empty.
    last_offset   bigint      NOT NULL DEFAULT -1,
    -- Whole seconds: the write watermark of the candidate scan has two minutes of slack.
    last_write_at timestamptz NOT NULL DEFAULT date_trunc('second', now()),
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
);
CREATE INDEX log_partitions_queue_write_idx ON queen.log_partitions (queue_id, last_write_at);

-- No foreign key to log_partitions on purpose: the referential check cost every append a
-- query and a row lock. Every writer of a segment holds its partition row already, and
-- the trigger of sql/functions/log_partitions_delete_segments_v1.sql deletes a deleted
-- partition's segments in the same statement.
CREATE TABLE queen.log_segments (
    partition_id  bigint      NOT NULL,
    base_offset   bigint      NOT NULL,
    end_offset    bigint      NOT NULL,
    msg_count     integer     NOT NULL,
    -- Monotone in base_offset within a partition (the push takes the partition row lock
    -- and never writes a time older than the previous segment's).
    created_at    timestamptz NOT NULL,
    -- 0 = raw frames, 1 = one zstd frame holding the frames.
    codec         smallint    NOT NULL,
    -- Producer identity stamped by the broker, applied when frames are rendered.
    producer      text,
    -- zstd already: stored EXTERNAL (never compressed again) and kept in the row up to the
    -- page's size (toast_tuple_target below), so a 100-message segment is one row.
    blob          bytea       NOT NULL,
    -- queen.txn_hash of each message's transaction id, in offset order, written by
    -- brokers before the keys below (and by the dead-letter requeue). NULL on segments
    -- that hold keys, and on segments from before hashes (their ids are in queen.dedup).
    txn_hashes    bigint[],
    -- 48-bit transaction-id keys in offset order (queen.txn_key: the hash >> 16), split
    -- into key >> 16 and the low 16 bits: 6 B a message. A segment holds hashes or keys.
    txn_keys_hi   integer[],
    txn_keys_lo   smallint[],
    PRIMARY KEY (partition_id, base_offset),
    CHECK (end_offset = base_offset + msg_count - 1)
) WITH (toast_tuple_target = 8160);
ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL;

CREATE TABLE queen.log_consumers (
    partition_id      bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    consumer_group    text        NOT NULL,
    -- Offset of the last message this group is done with (-1: nothing yet).
    committed         bigint      NOT NULL,
    -- The lease: at most one in-flight batch (committed, batch_end] per row. A lease id
    -- "<uuid>.<partition id>" names its partition (found through the primary key); a bare
    -- uuid, granted to a claim over several partitions, is copied into shared_lease.
    worker_id         text,
    lease_expires_at  timestamptz,
    lease_acquired_at timestamptz,
    batch_end         bigint,
    -- Completed acks above committed+1 that arrived out of order within the lease.
    acked_ahead       bigint[]    NOT NULL DEFAULT '{}',
    -- Redelivery telemetry (never spends the retry budget).
    attempt_count     integer     NOT NULL DEFAULT 0,
    attempt_offset    bigint,
    -- The retry budget: explicit failed acks of the message at failed_offset.
    failed_offset     bigint,
    failed_count      integer     NOT NULL DEFAULT 0,
    total_consumed    bigint      NOT NULL DEFAULT 0,
    last_consumed_at  timestamptz,
    -- retryDelay: a failed ack that rewinds the partition sets this; no claim takes the row
    -- before it (NULL or past: claimable).
    retry_at          timestamptz,
    -- The bare lease id of a several-partition claim; never cleared (a release clears
    -- worker_id, and every lookup also asks worker_id = the lease).
    shared_lease      text,
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX log_consumers_shared_lease_idx
    ON queen.log_consumers (shared_lease) WHERE shared_lease IS NOT NULL;
COMMENT ON COLUMN queen.log_consumers.attempt_count IS
    'deliveries of the batch starting at attempt_offset (the answer''s deliveryAttempt); '
    'telemetry: the retry budget is failed_count';
COMMENT ON COLUMN queen.log_consumers.failed_count IS
    'the retry budget spent on the message at failed_offset: failed acks, and leases that '
    'expired with it as the first undone message (charged by the next claim, '
    'sql/functions/log_pop_v3.sql)';
COMMENT ON COLUMN queen.log_consumers.retry_at IS
    'retryDelay: not claimable before this time (set by a failed ack that rewinds)';

CREATE TABLE queen.consumer_groups_metadata (
    consumer_group         text        NOT NULL,
    queue_id               bigint      NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    -- 'all', 'new' or 'timestamp'; the durable subscription of the group.
    subscription_mode      text        NOT NULL DEFAULT 'all',
    -- NULL: everything retained; otherwise the cursor starts at the first segment at or
    -- after this time (partitions created later deliver their whole backlog).
    subscription_timestamp timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    -- The empty-scan watermark of the SQL candidate scan and when it was last checked.
    watermark              timestamptz NOT NULL DEFAULT '-infinity',
    watermark_checked_at   timestamptz NOT NULL DEFAULT '-infinity',
    -- Last-value delivery per partition (set at first registration, see
    -- sql/functions/log_register_group_at_v1.sql).
    conflation             boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (consumer_group, queue_id)
);

-- Legacy transaction-id dedup, one row per message, written only by brokers from before
-- segments carried transaction-id hashes. Readers fall back to it for segments with
-- neither hashes nor keys. No foreign key on purpose: whoever deletes a partition deletes
-- its rows.
CREATE TABLE queen.dedup (
    partition_id   bigint NOT NULL,
    transaction_id text   NOT NULL,
    message_offset bigint NOT NULL,
    message_id     uuid   NOT NULL,
    PRIMARY KEY (partition_id, transaction_id)
);

CREATE TABLE queen.dead_letters (
    id             bigserial   PRIMARY KEY,
    partition_id   bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    consumer_group text        NOT NULL,
    message_offset bigint      NOT NULL,
    transaction_id text        NOT NULL,
    error_message  text,
    retry_count    integer     NOT NULL DEFAULT 0,
    failed_at      timestamptz NOT NULL DEFAULT now(),
    -- A copy of the segment that held the message (the frame index locates it), so the
    -- dead letter survives retention of the log; the broker slices it when rendering.
    segment_base   bigint      NOT NULL,
    codec          smallint    NOT NULL,
    producer       text,
    created_at     timestamptz NOT NULL,
    blob           bytea       NOT NULL
);
CREATE INDEX dead_letters_partition_idx ON queen.dead_letters (partition_id, failed_at);
-- Expiry of dead letters walks this instead of the table.
CREATE INDEX dead_letters_failed_at_idx ON queen.dead_letters (failed_at);

-- Cluster-wide switches (maintenance mode and the like), one row per key.
CREATE TABLE queen.system_state (
    key        text        PRIMARY KEY,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Message traces: one row per event a consumer recorded about a message, keyed to its
-- partition (deleted with it) and to the message by transaction id.
CREATE TABLE queen.message_traces (
    id             bigserial   PRIMARY KEY,
    tenant         text        NOT NULL,
    partition_id   bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    transaction_id text        NOT NULL,
    consumer_group text        NOT NULL,
    event_type     text        NOT NULL,
    data           jsonb       NOT NULL,
    worker_id      text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX message_traces_message_idx
    ON queen.message_traces (partition_id, transaction_id, created_at);
CREATE INDEX message_traces_created_at_idx ON queen.message_traces (created_at);

-- The names a trace event was filed under (several per event), for the by-name lookups.
CREATE TABLE queen.message_trace_names (
    trace_id   bigint      NOT NULL REFERENCES queen.message_traces (id) ON DELETE CASCADE,
    tenant     text        NOT NULL,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (trace_id, name)
);
CREATE INDEX message_trace_names_name_idx
    ON queen.message_trace_names (tenant, name, created_at);

-- The single cluster-wide retention sweeper's lease (sql/functions/sweeper_lease_v1.sql).
CREATE TABLE queen.sweeper_lease (
    id         integer     PRIMARY KEY CHECK (id = 1),
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- The row of a claimed segment slice, as the pop functions hand it to each other and the
-- broker's wrappers hold it.
CREATE TYPE queen.log_pop_row AS (
    partition_id     bigint,
    delivery_attempt integer,
    claim_start      bigint,
    claim_end        bigint,
    base_offset      bigint,
    start_idx        integer,
    take             integer,
    msg_count        integer,
    created_at       timestamptz,
    codec            smallint,
    producer         text,
    blob             bytea
);

-- The same row with the queue and partition names, as every pop procedure answers it.
CREATE TYPE queen.log_pop_wire_row AS (
    queue_name       text,
    partition_name   text,
    partition_id     bigint,
    delivery_attempt integer,
    claim_start      bigint,
    claim_end        bigint,
    base_offset      bigint,
    start_idx        integer,
    take             integer,
    msg_count        integer,
    created_at       timestamptz,
    codec            smallint,
    producer         text,
    blob             bytea
);

-- The row both dead-letter readers answer (sql/functions/dead_letters_list_v1.sql).
CREATE TYPE queen.dead_letter_row AS (
    id             bigint,
    partition_id   bigint,
    queue_name     text,
    partition_name text,
    consumer_group text,
    message_offset bigint,
    transaction_id text,
    error_message  text,
    retry_count    integer,
    failed_at      timestamptz,
    created_at     timestamptz,
    segment_base   bigint,
    codec          smallint,
    producer       text,
    blob           bytea,
    total          bigint
);
