-- 001_schema: the tables of the log design.
--
-- Contract: creates schema `queen` and every table the broker uses, idempotently.
-- A queue's identity is (tenant, name); a partition is an ordered lane of a queue whose
-- messages live in zstd segments (`log_segments`); a consumer group's position in a
-- partition is one `log_consumers` row (cursor plus lease). PostgreSQL never looks inside
-- a segment blob. No locks beyond DDL; no notifications.

CREATE SCHEMA IF NOT EXISTS queen;

CREATE TABLE IF NOT EXISTS queen.queues (
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
    retry_delay_ms              integer     NOT NULL DEFAULT 1000,
    dead_letter_queue           boolean     NOT NULL DEFAULT false,
    dlq_after_max_retries       boolean     NOT NULL DEFAULT false,
    max_wait_time_seconds       integer     NOT NULL DEFAULT 0,
    ttl_seconds                 integer     NOT NULL DEFAULT 3600,
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
-- Databases created before the dedup window existed.
ALTER TABLE queen.queues ADD COLUMN IF NOT EXISTS dedup_window_seconds integer;
CREATE INDEX IF NOT EXISTS queues_namespace_task_idx ON queen.queues (tenant, namespace, task);

CREATE TABLE IF NOT EXISTS queen.log_partitions (
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
CREATE INDEX IF NOT EXISTS log_partitions_queue_write_idx
    ON queen.log_partitions (queue_id, last_write_at);

CREATE TABLE IF NOT EXISTS queen.log_segments (
    partition_id  bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
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
    blob          bytea       NOT NULL,
    -- queen.txn_hash of each message's transaction id, in offset order: transaction-id
    -- dedup and acks resolve ids through it instead of a row per message. NULL on
    -- segments written before it existed (their ids are in the legacy queen.dedup rows).
    txn_hashes    bigint[],
    PRIMARY KEY (partition_id, base_offset),
    CHECK (end_offset = base_offset + msg_count - 1)
);
ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL;
-- Databases created before transaction-id hashes existed.
ALTER TABLE queen.log_segments ADD COLUMN IF NOT EXISTS txn_hashes bigint[];

CREATE TABLE IF NOT EXISTS queen.log_consumers (
    partition_id      bigint      NOT NULL REFERENCES queen.log_partitions (id) ON DELETE CASCADE,
    consumer_group    text        NOT NULL,
    -- Offset of the last message this group is done with (-1: nothing yet).
    committed         bigint      NOT NULL,
    -- The lease: at most one in-flight batch (committed, batch_end] per row.
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
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX IF NOT EXISTS log_consumers_worker_idx
    ON queen.log_consumers (worker_id) WHERE worker_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS queen.consumer_groups_metadata (
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
    -- Last-value delivery per partition (set at first registration; see 014).
    conflation             boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (consumer_group, queue_id)
);
-- Databases created before conflation existed.
ALTER TABLE queen.consumer_groups_metadata
    ADD COLUMN IF NOT EXISTS conflation boolean NOT NULL DEFAULT false;

-- Legacy transaction-id dedup, one row per message, written by log_push_v1 only (brokers
-- before log_push_v2, which keeps the ids as log_segments.txn_hashes instead). Readers
-- fall back to it for segments without txn_hashes. No foreign key on purpose: whoever
-- deletes a partition deletes its rows.
CREATE TABLE IF NOT EXISTS queen.dedup (
    partition_id   bigint NOT NULL,
    transaction_id text   NOT NULL,
    message_offset bigint NOT NULL,
    message_id     uuid   NOT NULL,
    PRIMARY KEY (partition_id, transaction_id)
);
ALTER TABLE queen.dedup DROP CONSTRAINT IF EXISTS dedup_partition_id_fkey;

CREATE TABLE IF NOT EXISTS queen.dead_letters (
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
CREATE INDEX IF NOT EXISTS dead_letters_partition_idx ON queen.dead_letters (partition_id, failed_at);

-- Cluster-wide switches (maintenance mode and the like), one row per key.
CREATE TABLE IF NOT EXISTS queen.system_state (
    key        text        PRIMARY KEY,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
