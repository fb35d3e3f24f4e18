-- Every sql/ file of main at d5ce15b (the last release before the baseline), concatenated
-- in order (git show d5ce15b:sql/...), then the history refinery recorded for them.

-- ---- sql/001_schema.sql
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

-- ---- sql/002_log_push.sql
-- 002_log_push: append one segment to one partition (brokers before log_push_v2 in
-- 016; kept for rolling upgrades: it still writes the legacy dedup rows, and txn_hashes).
--
-- queen.log_push_v1(p_tenant, p_queue, p_partition, p_txn_ids, p_msg_ids, p_blob, p_codec,
--                   p_producer)
--   Creates the queue and partition rows when missing, locks the partition row (so pushes
--   to one partition are serialised and offsets stay dense), then checks the transaction
--   ids against queen.dedup.
--   * If any id is already stored: returns one row per stored duplicate
--     (duplicate = true, its transaction id, message id and offset) and writes NOTHING; the
--     caller rebuilds the segment without them and calls again in the same transaction
--     (the partition lock is still held, so the second answer is authoritative).
--   * Otherwise: inserts the dedup rows and the segment, bumps last_offset/last_write_at,
--     and returns one row (duplicate = false) with the partition id and the base offset.
--   p_txn_ids and p_msg_ids are in frame order and must be free of duplicates among
--   themselves (the broker dedups within a request first).
--   Locks: the partition row (FOR NO KEY UPDATE) until the caller's transaction ends.
--   Not FOR UPDATE: a group's first pop inserts log_consumers rows whose foreign key takes
--   FOR KEY SHARE on the same partition rows in its own order, and FOR UPDATE conflicts
--   with that, which deadlocked (40P01) pushes against first pops across partitions. Two
--   pushes still exclude each other, since FOR NO KEY UPDATE conflicts with itself.
--   Callers pushing several partitions in one transaction must call in a fixed order
--   (queue, partition) so two such transactions cannot deadlock.

CREATE OR REPLACE FUNCTION queen.log_push_v1(
    p_tenant    text,
    p_queue     text,
    p_partition text,
    p_txn_ids   text[],
    p_msg_ids   uuid[],
    p_blob      bytea,
    p_codec     smallint,
    p_producer  text
) RETURNS TABLE (
    partition_id   bigint,
    duplicate      boolean,
    transaction_id text,
    message_id     uuid,
    base_offset    bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid        bigint;
    v_pid        bigint;
    v_last       bigint;
    v_count      integer := cardinality(p_txn_ids);
    v_created    timestamptz;
    v_prev_at    timestamptz;
    v_inserted   text[];
BEGIN
    IF v_count IS NULL OR v_count = 0 OR v_count <> cardinality(p_msg_ids) THEN
        RAISE EXCEPTION 'log_push_v1: transaction and message id arrays must be non-empty and equal'
            USING ERRCODE = '22023';
    END IF;

    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    -- Dedup: insert first and let the primary key find repeats (one index probe per
    -- message instead of a lookup and then an insert). The partition lock means nobody
    -- else inserts for this partition meanwhile. If any id was already stored, undo this
    -- call's rows and report the stored ones instead.
    WITH inserted AS (
        INSERT INTO queen.dedup (partition_id, transaction_id, message_offset, message_id)
        SELECT v_pid, t.txn, v_last + t.ord, t.mid
        FROM unnest(p_txn_ids, p_msg_ids) WITH ORDINALITY AS t (txn, mid, ord)
        ON CONFLICT (partition_id, transaction_id) DO NOTHING
        RETURNING transaction_id
    )
    SELECT array_agg(i.transaction_id) INTO v_inserted FROM inserted i;
    IF coalesce(cardinality(v_inserted), 0) < v_count THEN
        DELETE FROM queen.dedup d
        USING unnest(v_inserted) AS t (txn)
        WHERE d.partition_id = v_pid AND d.transaction_id = t.txn;
        -- One primary-key probe per id (a plain "= ANY" lets the planner read the whole
        -- partition's rows and filter them).
        RETURN QUERY
            SELECT v_pid, true, d.transaction_id, d.message_id, d.message_offset
            FROM unnest(p_txn_ids) AS t (txn)
            JOIN queen.dedup d ON d.partition_id = v_pid AND d.transaction_id = t.txn;
        RETURN;
    END IF;

    -- created_at must never go backwards within a partition (delayedProcessing and
    -- windowBuffer rely on it); the lock above orders pushes, the GREATEST guards the clock.
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = v_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(clock_timestamp(), v_prev_at);

    -- txn_hashes too, so brokers on log_push_v2 see these ids (rolling upgrades).
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    VALUES
        (v_pid, v_last + 1, v_last + v_count, v_count, v_created, p_codec, p_producer, p_blob,
         (SELECT array_agg(queen.txn_hash(t.txn) ORDER BY t.i)
          FROM unnest(p_txn_ids) WITH ORDINALITY AS t (txn, i)));

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_count,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = v_pid;

    RETURN QUERY SELECT v_pid, false, NULL::text, NULL::uuid, v_last + 1;
END;
$$;

-- ---- sql/003_log_pop.sql
-- 003_log_pop: the per-partition claim every pop route funnels into.
--
-- queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from) -> bigint
--   Where a (partition, group) cursor starts on first contact, in the seed's order:
--   1. the durable subscription in queen.consumer_groups_metadata (cursor just before the
--      first segment at or after its timestamp, else last_offset; NULL timestamp = -1);
--   2. the pop-carried intent (p_sub_from timestamp, or p_sub_mode = 'new');
--   3. otherwise -1 (everything retained).
--   '__QUEUE_MODE__' skips 1 and 2: a queue-mode pop never skips backlog. Reads only.
--
-- queen.log_pop_v1(p_qid, p_pid, p_group, p_worker, p_budget, p_lease_seconds, p_auto_ack,
--                  p_sub_mode, p_sub_from, p_skip_window) -> segment rows
--   Gates (windowBuffer unless p_skip_window; delayedProcessing always), then claims the
--   consumer row FOR UPDATE SKIP LOCKED (creating it on first contact under a
--   non-blocking advisory try-lock), scans from committed+1 with one backward head probe
--   and a forward cursor that stops at p_budget messages, then auto-acks (p_auto_ack) or
--   leases the span to p_worker. A conflating group (consumer_groups_metadata.conflation)
--   is handed only the newest visible message of the partition, and the claim moves its
--   cursor to just before it (the older ones are retired, never delivered). Returns one
--   row per segment slice:
--   (partition_id, delivery_attempt, claim_start, claim_end, base_offset, start_idx, take,
--    msg_count, created_at, codec, producer, blob). No rows = nothing claimed.
--   Never waits on another transaction. Locks: the claimed consumer row until the end of
--   the caller's transaction; a transaction advisory lock when it creates the row. A
--   leased claim sets synchronous_commit off for the caller's transaction (see below).

-- The row of queen.log_pop_v1, as a type, so the wrappers can hold claimed rows, and the
-- row every pop procedure answers.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                   WHERE n.nspname = 'queen' AND t.typname = 'log_pop_row') THEN
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
    END IF;
    -- The same row with the queue and partition names, as every pop procedure answers it.
    IF NOT EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                   WHERE n.nspname = 'queen' AND t.typname = 'log_pop_wire_row') THEN
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
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_seed_cursor_v1(
    p_qid      bigint,
    p_pid      bigint,
    p_group    text,
    p_sub_mode text,
    p_sub_from timestamptz
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_found boolean := false;
    v_ts    timestamptz;
    v_seek  bigint;
    v_last  bigint;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN
        RETURN -1;
    END IF;

    SELECT true, m.subscription_timestamp INTO v_found, v_ts
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;

    IF NOT coalesce(v_found, false) THEN
        IF p_sub_from IS NOT NULL THEN
            v_ts := p_sub_from;
        ELSIF p_sub_mode = 'new' THEN
            SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = p_pid;
            RETURN v_last;
        END IF;
    END IF;

    IF v_ts IS NULL THEN
        RETURN -1;
    END IF;

    -- Forward walk from the oldest retained segment; created_at is monotone in
    -- base_offset, so the first match is the answer and the walk stops there.
    SELECT s.base_offset - 1 INTO v_seek
    FROM queen.log_segments s
    WHERE s.partition_id = p_pid AND s.created_at >= v_ts
    ORDER BY s.base_offset
    LIMIT 1;
    IF v_seek IS NOT NULL THEN
        RETURN v_seek;
    END IF;
    SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = p_pid;
    RETURN v_last;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_v1(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_delay      integer;
    v_window     integer;
    v_newest     timestamptz;
    v_committed  bigint;
    v_att_count  integer;
    v_att_offset bigint;
    v_last_off   bigint;
    v_wanted     bigint;
    v_budget     integer := p_budget;
    v_visible    timestamptz;
    v_seg        record;
    v_take       integer;
    v_start      bigint;
    v_end        bigint;
    v_seen_any   boolean := false;
    v_bases      bigint[] := '{}';
    v_idx        integer[] := '{}';
    v_takes      integer[] := '{}';
    v_counts     integer[] := '{}';
    v_times      timestamptz[] := '{}';
    v_codecs     smallint[] := '{}';
    v_producers  text[] := '{}';
    v_blobs      bytea[] := '{}';
    v_attempt    integer;
    v_conflate   boolean := false;
    v_committed_at_claim bigint;
BEGIN
    IF p_budget IS NULL OR p_budget <= 0 THEN
        RETURN;
    END IF;

    SELECT q.delayed_processing, q.window_buffer INTO v_delay, v_window
    FROM queen.queues q WHERE q.id = p_qid;

    -- Gate: windowBuffer, a quiet-period debounce on the newest segment.
    IF coalesce(v_window, 0) > 0 AND NOT p_skip_window THEN
        SELECT s.created_at INTO v_newest
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF v_newest IS NOT NULL AND v_newest > v_now - make_interval(secs => v_window) THEN
            RETURN;
        END IF;
    END IF;

    -- The claim: never wait, never insert unconditionally.
    SELECT c.committed, c.attempt_count, c.attempt_offset
    INTO v_committed, v_att_count, v_att_offset
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
    FOR UPDATE SKIP LOCKED;

    IF NOT FOUND THEN
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN; -- leased or mid-claim elsewhere: skip this cycle
        END IF;
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_pid::text || '/' || p_group, 42)) THEN
            RETURN; -- another pop is creating this row: skip this cycle
        END IF;
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (p_pid, p_group,
                queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from))
        ON CONFLICT DO NOTHING;
        SELECT c.committed, c.attempt_count, c.attempt_offset
        INTO v_committed, v_att_count, v_att_offset
        FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
        FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;

    -- Snapshot last_offset before the scan: the cursor seal may only go this far, so a
    -- push committing during the scan stays above the seal.
    SELECT p.last_offset INTO v_last_off FROM queen.log_partitions p WHERE p.id = p_pid;
    IF v_last_off <= v_committed THEN
        RETURN;
    END IF;

    v_wanted := v_committed + 1;
    v_visible := CASE WHEN coalesce(v_delay, 0) > 0
                      THEN v_now - make_interval(secs => v_delay)
                      ELSE 'infinity'::timestamptz END;

    -- Conflation: only the newest visible message, the rest retired by the claim. Queue
    -- mode never conflates, so its pops skip the lookup.
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
        v_conflate := coalesce(v_conflate, false);
    END IF;
    IF v_conflate THEN
        -- created_at grows with base_offset: the first visible segment from the top is
        -- the newest visible one.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_last_off
          AND s.created_at <= v_visible
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF NOT FOUND OR v_seg.end_offset < v_wanted THEN
            RETURN;
        END IF;
        v_start := v_seg.end_offset;
        v_end := v_seg.end_offset;
        v_bases := ARRAY[v_seg.base_offset];
        v_idx := ARRAY[(v_seg.end_offset - v_seg.base_offset)::integer];
        v_takes := ARRAY[1];
        v_counts := ARRAY[v_seg.msg_count];
        v_times := ARRAY[v_seg.created_at];
        v_codecs := ARRAY[v_seg.codec];
        v_producers := ARRAY[v_seg.producer];
        v_blobs := ARRAY[v_seg.blob];
        v_budget := 0;
        v_committed_at_claim := v_start - 1;
    ELSE
        -- Head probe: one backward primary-key step; the covering test is applied afterwards
        -- so a miss cannot walk the partition head.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_wanted
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF FOUND THEN
            v_seen_any := true;
            IF v_seg.end_offset >= v_wanted THEN
                IF v_seg.created_at > v_visible THEN
                    RETURN; -- delayed: every later segment is younger still
                END IF;
                v_take := least(v_seg.end_offset - v_wanted + 1, v_budget)::integer;
                v_start := v_wanted;
                v_end := v_wanted + v_take - 1;
                v_bases := v_bases || v_seg.base_offset;
                v_idx := v_idx || (v_wanted - v_seg.base_offset)::integer;
                v_takes := v_takes || v_take;
                v_counts := v_counts || v_seg.msg_count;
                v_times := v_times || v_seg.created_at;
                v_codecs := v_codecs || v_seg.codec;
                v_producers := v_producers || v_seg.producer;
                v_blobs := v_blobs || v_seg.blob;
                v_budget := v_budget - v_take;
            END IF;
        END IF;

        -- Forward scan: a cursor, so leaving at the budget stops the index walk.
        IF v_budget > 0 THEN
            FOR v_seg IN
                SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_wanted
                ORDER BY s.base_offset
            LOOP
                v_seen_any := true;
                EXIT WHEN v_seg.created_at > v_visible;
                v_take := least(v_seg.msg_count, v_budget);
                IF v_start IS NULL THEN
                    v_start := v_seg.base_offset;
                END IF;
                v_end := v_seg.base_offset + v_take - 1;
                v_bases := v_bases || v_seg.base_offset;
                v_idx := v_idx || 0;
                v_takes := v_takes || v_take;
                v_counts := v_counts || v_seg.msg_count;
                v_times := v_times || v_seg.created_at;
                v_codecs := v_codecs || v_seg.codec;
                v_producers := v_producers || v_seg.producer;
                v_blobs := v_blobs || v_seg.blob;
                v_budget := v_budget - v_take;
                EXIT WHEN v_budget <= 0;
            END LOOP;
        END IF;
    END IF;

    IF v_start IS NULL THEN
        -- The empty-partition cursor seal: only when no segment exists at all (not when
        -- segments are merely deferred by delayedProcessing). A cursor move, not a claim.
        IF NOT v_seen_any THEN
            UPDATE queen.log_consumers c SET committed = v_last_off
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group
              AND c.committed < v_last_off;
        END IF;
        RETURN;
    END IF;

    IF p_auto_ack THEN
        UPDATE queen.log_consumers c SET
            committed = v_end, worker_id = NULL, lease_expires_at = NULL,
            lease_acquired_at = NULL, batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_end - v_committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_attempt := 1;
    ELSE
        v_attempt := CASE WHEN v_att_offset IS NOT DISTINCT FROM v_start
                          THEN v_att_count + 1 ELSE 1 END;
        UPDATE queen.log_consumers c SET
            committed = coalesce(v_committed_at_claim, c.committed),
            total_consumed = c.total_consumed
                + coalesce(v_committed_at_claim - c.committed, 0),
            worker_id = p_worker,
            lease_expires_at = v_now + make_interval(secs => p_lease_seconds),
            lease_acquired_at = v_now,
            batch_end = v_end,
            acked_ahead = '{}',
            attempt_count = v_attempt,
            attempt_offset = v_start
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        -- A lease is a reservation: a crash that loses it only makes the batch come again,
        -- which is what an expired lease does anyway. So its commit need not wait for the
        -- WAL flush (one fsync wait fewer per pop+ack cycle); the next synchronous commit
        -- on the server (the ack's) flushes it. Auto-ack pops keep waiting: their cursor
        -- advance is the only record that the messages were delivered.
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;

    RETURN QUERY
        SELECT p_pid, v_attempt, v_start, v_end, u.*
        FROM unnest(v_bases, v_idx, v_takes, v_counts, v_times, v_codecs, v_producers, v_blobs) u;
END;
$$;

-- ---- sql/004_log_pop_specific.sql
-- 004_log_pop_specific: pop from one named partition.
--
-- queen.log_pop_specific_v1(p_tenant, p_queue, p_partition, p_group, p_worker, p_batch,
--                           p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from)
--   Resolves the queue and partition by name (unknown: no rows, never an error), claims
--   through queen.log_pop_v1 and only then resolves the reported partition id and name, in
--   a later command of this VOLATILE function: its snapshot is at least as new as anything
--   the claim saw, so a pop racing the partition-creating push can never report an empty
--   partitionId. Does not register a durable subscription: the pop-carried intent
--   (p_sub_mode/p_sub_from) seeds a first-contact cursor. Rows: queue_name, partition_name
--   and the columns of log_pop_v1. Locks: as log_pop_v1.

CREATE OR REPLACE FUNCTION queen.log_pop_specific_v1(
    p_tenant        text,
    p_queue         text,
    p_partition     text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_lease  integer;
    v_pid    bigint;
    v_rows   queen.log_pop_row[];
    v_name   text;
BEGIN
    SELECT q.id, q.lease_time INTO v_qid, v_lease
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    SELECT p.id INTO v_pid FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition;
    IF v_pid IS NULL THEN
        RETURN;
    END IF;

    SELECT array_agg(r) INTO v_rows
    FROM queen.log_pop_v1(v_qid, v_pid, p_group, p_worker, p_batch,
                          coalesce(p_lease_seconds, v_lease, 60), p_auto_ack,
                          p_sub_mode, p_sub_from, false) r;
    IF v_rows IS NULL THEN
        RETURN;
    END IF;

    -- Resolved after the claim, in a later command: see the header.
    SELECT p.name INTO v_name FROM queen.log_partitions p WHERE p.id = v_pid;
    RETURN QUERY SELECT p_queue, v_name, r.* FROM unnest(v_rows) r;
END;
$$;

-- ---- sql/005_log_pop_wildcard.sql
-- 005_log_pop_wildcard: pop across a queue's partitions (the SQL candidate scan).
--
-- queen.log_pop_wildcard_bin_v1(p_tenant, p_queue, p_group, p_worker, p_batch, p_partitions,
--                               p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from)
--   1. Provisions the queue row when missing (a group may subscribe before the first push).
--   2. Group first contact: the insert into queen.consumer_groups_metadata that returns a
--      row elects the single seeder, which seeds the cursor of every partition of the queue
--      in one set-based statement (avoids the per-partition lazy-insert convoy).
--   3. Candidate scan: partitions written since the group's watermark minus two minutes,
--      not caught up, not under a live lease, in random order, capped (512 when
--      p_partitions >= 128, else clamp(p_partitions * 4, 64, 512)).
--   4. Claims through queen.log_pop_v1 with a global budget of p_batch messages over at
--      most p_partitions partitions, all leased to p_worker.
--   5. Empty scan: at most every 30 s, re-checks for pending data ignoring leases and
--      advances the watermark only when the queue is genuinely empty.
--   Rows: as queen.log_pop_specific_v1. Never waits on another pop's transaction except
--   the first-contact insert of a concurrent seeder (one short wait, no chain).

CREATE OR REPLACE FUNCTION queen.log_pop_wildcard_bin_v1(
    p_tenant        text,
    p_queue         text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_partitions    integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_qid        bigint;
    v_lease      integer;
    v_watermark  timestamptz;
    v_checked_at timestamptz;
    v_cap        integer;
    v_budget     integer := p_batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_cand       record;
    v_rows       queen.log_pop_row[];
BEGIN
    IF p_batch IS NULL OR p_batch <= 0 OR p_partitions IS NULL OR p_partitions <= 0 THEN
        RETURN;
    END IF;

    SELECT q.id, q.lease_time INTO v_qid, v_lease
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, q.lease_time INTO v_qid, v_lease
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    v_lease := coalesce(p_lease_seconds, v_lease, 60);

    SELECT m.watermark, m.watermark_checked_at INTO v_watermark, v_checked_at
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = v_qid;

    IF v_watermark IS NULL THEN
        -- First contact of this (queue, group): register the durable subscription and seed
        -- every partition's cursor (queen.log_register_group_at_v1, in 014; one elected
        -- seeder when several pops arrive together).
        PERFORM queen.log_register_group_at_v1(v_qid, p_group, p_sub_mode, p_sub_from, false);
        v_watermark := '-infinity';
        v_checked_at := '-infinity';
    END IF;

    v_cap := CASE WHEN p_partitions >= 128 THEN 512
                  ELSE least(greatest(p_partitions * 4, 64), 512) END;

    FOR v_cand IN
        SELECT p.id, p.name
        FROM queen.log_partitions p
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE p.queue_id = v_qid
          AND p.last_write_at >= v_watermark - interval '2 minutes'
          AND (c.partition_id IS NULL OR p.last_offset > c.committed)
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
        ORDER BY random()
        LIMIT v_cap
    LOOP
        SELECT array_agg(r) INTO v_rows
        FROM queen.log_pop_v1(v_qid, v_cand.id, p_group, p_worker, v_budget, v_lease,
                              p_auto_ack, p_sub_mode, p_sub_from, false) r;
        v_got := coalesce((SELECT sum(r.take) FROM unnest(v_rows) r), 0);
        RETURN QUERY SELECT p_queue, v_cand.name, r.* FROM unnest(v_rows) r;
        IF v_got > 0 THEN
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
        END IF;
        EXIT WHEN v_claimed >= p_partitions OR v_budget <= 0;
    END LOOP;

    IF v_claimed = 0 AND v_checked_at < v_now - interval '30 seconds' THEN
        -- The empty-scan watermark, throttled and non-blocking: a pop that cannot take
        -- the metadata row right now leaves the check to the one that can.
        PERFORM 1 FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = v_qid
          AND m.watermark_checked_at < v_now - interval '30 seconds'
        FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            UPDATE queen.consumer_groups_metadata m SET
                watermark_checked_at = v_now,
                watermark = CASE
                    WHEN EXISTS (
                        SELECT 1
                        FROM queen.log_partitions p
                        LEFT JOIN queen.log_consumers c
                          ON c.partition_id = p.id AND c.consumer_group = p_group
                        WHERE p.queue_id = v_qid
                          AND p.last_offset > coalesce(c.committed, -1))
                    THEN m.watermark
                    ELSE v_now END
            WHERE m.consumer_group = p_group AND m.queue_id = v_qid;
        END IF;
    END IF;
END;
$$;

-- ---- sql/006_log_pop_discover.sql
-- 006_log_pop_discover: pop across every queue matching a namespace and/or task.
--
-- queen.log_pop_discover_wire_v1(p_tenant, p_namespace, p_task, p_group, p_worker, p_batch,
--                                p_partitions, p_lease_seconds, p_auto_ack, p_sub_mode,
--                                p_sub_from)
--   NULL p_namespace / p_task match anything (the broker refuses both NULL). Matching queues
--   are tried in descending priority, ties in random order so none starves, each through
--   queen.log_pop_wildcard_bin_v1; the first queue that yields messages answers, so one
--   answer always comes from one queue (the framed answer has a single queue field).
--   Rows and locks: as queen.log_pop_wildcard_bin_v1.

CREATE OR REPLACE FUNCTION queen.log_pop_discover_wire_v1(
    p_tenant        text,
    p_namespace     text,
    p_task          text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_partitions    integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue record;
    v_count bigint;
BEGIN
    FOR v_queue IN
        SELECT q.name
        FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
        ORDER BY q.priority DESC, random()
    LOOP
        RETURN QUERY
            SELECT * FROM queen.log_pop_wildcard_bin_v1(
                p_tenant, v_queue.name, p_group, p_worker, p_batch, p_partitions,
                p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from);
        GET DIAGNOSTICS v_count = ROW_COUNT;
        EXIT WHEN v_count > 0;
    END LOOP;
END;
$$;

-- ---- sql/007_log_has_pending.sql
-- 007_log_has_pending: the cheap probe of the legacy (SQL candidate) pop path.
--
-- queen.log_has_pending_v1(p_tenant, p_queue, p_group) -> boolean
--   false means definitively nothing to deliver to this group right now (no partition
--   written since the group's watermark minus two minutes is ahead of its cursor and free
--   of a live lease), so the broker can park without taking a permit or running a scan.
--   true means "maybe": the claim re-verifies under the row lock. Reads only, no locks.

CREATE OR REPLACE FUNCTION queen.log_has_pending_v1(
    p_tenant text,
    p_queue  text,
    p_group  text
) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1
        FROM queen.queues q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.queue_id = q.id AND m.consumer_group = p_group
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE q.tenant = p_tenant AND q.name = p_queue
          AND p.last_write_at >= coalesce(m.watermark, '-infinity') - interval '2 minutes'
          AND p.last_offset > coalesce(c.committed, -1)
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < now())
    );
$$;

-- ---- sql/008_log_ack.sql
-- 008_log_ack: acknowledge messages of one (partition, consumer group), as brokers before
-- log_ack_v2 (017) call it.
--
-- queen.log_ack_v1(p_pid, p_group, p_lease, p_txn_ids, p_offsets, p_statuses, p_errors)
--   queen.log_ack_v2 with the transaction-id hashes computed here (queen.txn_hash), for
--   rolling upgrades: same items, statuses, locks and rows; see 017_log_ack_v2.

CREATE OR REPLACE FUNCTION queen.log_ack_v1(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[]
) RETURNS TABLE (
    idx            integer,
    success        boolean,
    error          text,
    lease_released boolean,
    dlq            boolean,
    queue_name     text,
    partition_name text,
    pending_after  bigint
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
        SELECT * FROM queen.log_ack_v2(
            p_pid, p_group, p_lease, p_txn_ids,
            (SELECT array_agg(queen.txn_hash(t.txn) ORDER BY t.i)
             FROM unnest(p_txn_ids) WITH ORDINALITY AS t (txn, i)),
            p_offsets, p_statuses, p_errors);
END;
$$;

-- ---- sql/009_log_lease_extend.sql
-- 009_log_lease_extend: renew every partition lease held under one lease id.
--
-- queen.log_lease_extend_v1(p_lease, p_seconds) -> (renewed, expires_at)
--   Every live lease (worker_id = p_lease, not yet expired) moves to now + p_seconds, or
--   now + the queue's lease_time (60 s when unset) when p_seconds is NULL; an expiry is
--   never shortened. renewed = number of partition leases extended (0: the lease is gone),
--   expires_at = the latest new expiry. Locks the renewed consumer rows.

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v1(
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

-- ---- sql/010_configure_queue.sql
-- 010_configure_queue: create or update a queue's configuration (an upsert).
--
-- queen.configure_queue_v1(p_tenant, p_queue, p_namespace, p_task, p_options jsonb)
--   p_options holds the broker-validated options under their column names (lease_time,
--   retry_limit, priority, delayed_processing, window_buffer, max_size, retention_seconds,
--   completed_retention_seconds, retention_enabled, encryption_enabled, retry_delay_ms,
--   dead_letter_queue, dlq_after_max_retries, max_wait_time_seconds, ttl_seconds,
--   min_pop_wait_time, dedup_window_seconds) plus `extra` (an object of keys this broker
--   does not interpret).
--   A key absent from p_options keeps the stored value (the column default on creation).
--   Also makes sure the queue's `Default` partition exists. Returns the queue row id, the
--   Default partition id and the effective row as JSON. Locks the queue row.

CREATE OR REPLACE FUNCTION queen.configure_queue_v1(
    p_tenant    text,
    p_queue     text,
    p_namespace text,
    p_task      text,
    p_options   jsonb
) RETURNS TABLE (
    queue_id     bigint,
    partition_id bigint,
    effective    jsonb
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
    v_pid bigint;
    o     jsonb := coalesce(p_options, '{}'::jsonb);
BEGIN
    INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
    ON CONFLICT (tenant, name) DO NOTHING;

    UPDATE queen.queues q SET
        namespace = p_namespace,
        task = p_task,
        lease_time = CASE WHEN o ? 'lease_time' THEN (o->>'lease_time')::integer ELSE q.lease_time END,
        retry_limit = coalesce((o->>'retry_limit')::integer, q.retry_limit),
        priority = coalesce((o->>'priority')::integer, q.priority),
        delayed_processing = coalesce((o->>'delayed_processing')::integer, q.delayed_processing),
        window_buffer = coalesce((o->>'window_buffer')::integer, q.window_buffer),
        max_size = coalesce((o->>'max_size')::integer, q.max_size),
        retention_seconds = coalesce((o->>'retention_seconds')::integer, q.retention_seconds),
        completed_retention_seconds = coalesce((o->>'completed_retention_seconds')::integer,
                                               q.completed_retention_seconds),
        retention_enabled = coalesce((o->>'retention_enabled')::boolean, q.retention_enabled),
        encryption_enabled = coalesce((o->>'encryption_enabled')::boolean, q.encryption_enabled),
        retry_delay_ms = coalesce((o->>'retry_delay_ms')::integer, q.retry_delay_ms),
        dead_letter_queue = coalesce((o->>'dead_letter_queue')::boolean, q.dead_letter_queue),
        dlq_after_max_retries = coalesce((o->>'dlq_after_max_retries')::boolean,
                                         q.dlq_after_max_retries),
        max_wait_time_seconds = coalesce((o->>'max_wait_time_seconds')::integer,
                                         q.max_wait_time_seconds),
        ttl_seconds = coalesce((o->>'ttl_seconds')::integer, q.ttl_seconds),
        min_pop_wait_time = coalesce((o->>'min_pop_wait_time')::integer, q.min_pop_wait_time),
        dedup_window_seconds = CASE WHEN o ? 'dedup_window_seconds'
                                    THEN (o->>'dedup_window_seconds')::integer
                                    ELSE q.dedup_window_seconds END,
        extra_options = q.extra_options || coalesce(o->'extra', '{}'::jsonb),
        updated_at = now()
    WHERE q.tenant = p_tenant AND q.name = p_queue
    RETURNING q.id INTO v_qid;

    INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, 'Default')
    ON CONFLICT (queue_id, name) DO NOTHING;
    SELECT p.id INTO v_pid FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = 'Default';

    RETURN QUERY
        SELECT v_qid, v_pid, to_jsonb(q) - 'id' - 'tenant' - 'created_at' - 'updated_at'
        FROM queen.queues q WHERE q.id = v_qid;
END;
$$;

-- ---- sql/011_log_pop_list.sql
-- 011_log_pop_list: claim from a list of candidate partitions (the hot-list path).
--
-- queen.log_pop_list_v1(p_tenant, p_queue, p_group, p_worker, p_batch, p_partitions,
--                       p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from, p_candidates,
--                       p_skip_window)
--   Tries the candidate partition ids in the given order through queen.log_pop_v1 with a
--   global budget of p_batch messages over at most p_partitions claimed partitions. Returns
--   the claimed segment rows (verdict = 'row', columns as log_pop_v1) and then exactly one
--   verdict row per candidate, so the broker can check every candidate back into its ring:
--     claimed  delivered; retry_at = lease expiry (NULL with auto-ack); pending_after = how
--              many messages remain beyond the claim
--     drained  nothing to deliver to this group (caught up, or not this queue's partition)
--     leased   another worker holds a live lease; retry_at = its expiry
--     window   windowBuffer holds it (only when p_skip_window is false); retry_at = when the
--              quiet period ends
--     delayed  delayedProcessing holds it; retry_at = when the oldest pending segment shows
--     busy     locked by a concurrent pop, or its row is being created: try again soon
--     skipped  not tried: the budget or the partition count ran out first
--   p_skip_window = true makes the broker's revisit wheel the authority on windowBuffer
--   (delayedProcessing is always enforced here). Locks: as log_pop_v1. Reads the candidates'
--   state without locks to explain an empty claim.

CREATE OR REPLACE FUNCTION queen.log_pop_list_v1(
    p_tenant        text,
    p_queue         text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_partitions    integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_candidates    bigint[],
    p_skip_window   boolean
) RETURNS TABLE (
    verdict          text,
    retry_at         timestamptz,
    pending_after    bigint,
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
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_qid        bigint;
    v_lease      integer;
    v_delay      integer;
    v_window     integer;
    v_budget     integer := p_batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_pid        bigint;
    v_name       text;
    v_rows       queen.log_pop_row[];
    v_end        bigint;
    v_c          record;
    v_last       bigint;
    v_at         timestamptz;
    v_verdicts   text[] := '{}';
    v_retry      timestamptz[] := '{}';
    v_pending    bigint[] := '{}';
    v_names      text[] := '{}';
    i            integer;
BEGIN
    SELECT q.id, q.lease_time, q.delayed_processing, q.window_buffer
    INTO v_qid, v_lease, v_delay, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    v_lease := coalesce(p_lease_seconds, v_lease, 60);

    FOR i IN 1 .. coalesce(cardinality(p_candidates), 0) LOOP
        v_pid := p_candidates[i];
        IF v_claimed >= p_partitions OR v_budget <= 0 THEN
            -- Not even looked up: the pop is full, the candidate goes back as it was.
            v_names := v_names || NULL::text;
            v_verdicts := v_verdicts || 'skipped'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;
        SELECT p.name, p.last_offset INTO v_name, v_last
        FROM queen.log_partitions p WHERE p.id = v_pid AND p.queue_id = v_qid;
        v_names := v_names || v_name;
        IF v_name IS NULL THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;

        SELECT array_agg(r) INTO v_rows
        FROM queen.log_pop_v1(v_qid, v_pid, p_group, p_worker, v_budget, v_lease,
                              p_auto_ack, p_sub_mode, p_sub_from, p_skip_window) r;
        SELECT coalesce(sum(r.take), 0), max(r.claim_end) INTO v_got, v_end
        FROM unnest(v_rows) r;
        RETURN QUERY
            SELECT 'row'::text, NULL::timestamptz, NULL::bigint, p_queue, v_name, r.*
            FROM unnest(v_rows) r;
        IF v_got > 0 THEN
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
            v_verdicts := v_verdicts || 'claimed'::text;
            v_retry := v_retry || CASE WHEN p_auto_ack THEN NULL::timestamptz
                                       ELSE v_now + make_interval(secs => v_lease) END;
            v_pending := v_pending || greatest(v_last - v_end, 0);
            CONTINUE;
        END IF;

        -- Nothing claimed: say why, from an unlocked look at the partition's state.
        SELECT c.committed, c.worker_id, c.lease_expires_at INTO v_c
        FROM queen.log_consumers c
        WHERE c.partition_id = v_pid AND c.consumer_group = p_group;
        SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = v_pid;
        IF NOT FOUND OR v_c IS NULL OR v_c.committed IS NULL THEN
            v_verdicts := v_verdicts || 'busy'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.worker_id IS NOT NULL AND v_c.lease_expires_at >= v_now THEN
            v_verdicts := v_verdicts || 'leased'::text;
            v_retry := v_retry || v_c.lease_expires_at;
        ELSIF v_last <= v_c.committed THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSE
            v_at := NULL;
            IF coalesce(v_window, 0) > 0 AND NOT p_skip_window THEN
                SELECT s.created_at + make_interval(secs => v_window) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid
                ORDER BY s.base_offset DESC LIMIT 1;
                IF v_at IS NOT NULL AND v_at > v_now THEN
                    v_verdicts := v_verdicts || 'window'::text;
                    v_retry := v_retry || v_at;
                    v_pending := v_pending || (v_last - v_c.committed);
                    CONTINUE;
                END IF;
                v_at := NULL;
            END IF;
            IF coalesce(v_delay, 0) > 0 THEN
                SELECT s.created_at + make_interval(secs => v_delay) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid AND s.end_offset > v_c.committed
                ORDER BY s.base_offset LIMIT 1;
            END IF;
            IF v_at IS NOT NULL AND v_at > v_now THEN
                v_verdicts := v_verdicts || 'delayed'::text;
                v_retry := v_retry || v_at;
            ELSE
                v_verdicts := v_verdicts || 'busy'::text;
                v_retry := v_retry || NULL::timestamptz;
            END IF;
        END IF;
        v_pending := v_pending || greatest(v_last - coalesce(v_c.committed, -1), 0);
    END LOOP;

    RETURN QUERY
        SELECT v.verdict, v.retry_at, v.pending, p_queue, v.name, v.pid,
               NULL::integer, NULL::bigint, NULL::bigint, NULL::bigint, NULL::integer,
               NULL::integer, NULL::integer, NULL::timestamptz, NULL::smallint, NULL::text,
               NULL::bytea
        FROM unnest(v_verdicts, v_retry, v_pending, v_names, p_candidates)
             AS v (verdict, retry_at, pending, name, pid);
END;
$$;

-- ---- sql/012_log_pending_partitions.sql
-- 012_log_pending_partitions: the hot-list reseed.
--
-- queen.log_pending_partitions_v1(p_tenant, p_queue, p_group, p_limit)
--   Partitions of the queue that may hold messages for the group: written since the group's
--   empty-scan watermark minus two minutes, and either without a cursor yet or ahead of it.
--   Leased ones are included with their lease expiry, and on a windowBuffer queue every
--   one with the end of its quiet period, so the broker can schedule revisits.
--   Also answers whether the group has met the queue at all (registered = false means the
--   first pop must take the SQL wildcard path, which carries the bulk seed), and the queue's
--   deferral settings the broker caches. Random order, at most p_limit rows; when the group
--   is not registered or nothing is pending, one row with partition_id NULL carries the
--   queue-level columns. Reads only.

CREATE OR REPLACE FUNCTION queen.log_pending_partitions_v1(
    p_tenant text,
    p_queue  text,
    p_group  text,
    p_limit  integer
) RETURNS TABLE (
    registered         boolean,
    window_buffer      integer,
    delayed_processing integer,
    min_pop_wait_time  integer,
    partition_id       bigint,
    partition_name     text,
    lease_expires_at   timestamptz,
    window_ends_at     timestamptz
) LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
               m.watermark, m.consumer_group IS NOT NULL AS registered
        FROM queen.queues q
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.queue_id = q.id AND m.consumer_group = p_group
        WHERE q.tenant = p_tenant AND q.name = p_queue
    ),
    pending AS (
        SELECT p.id, p.name,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at >= now()
                    THEN c.lease_expires_at END AS lease_expires_at,
               CASE WHEN q.window_buffer > 0
                    THEN (SELECT s.created_at FROM queen.log_segments s
                          WHERE s.partition_id = p.id
                          ORDER BY s.base_offset DESC LIMIT 1)
                         + make_interval(secs => q.window_buffer) END AS window_ends_at
        FROM q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE q.registered
          AND p.last_write_at >= q.watermark - interval '2 minutes'
          AND p.last_offset > coalesce(c.committed, -1)
        ORDER BY random()
        LIMIT p_limit
    )
    SELECT q.registered, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
           pending.id, pending.name, pending.lease_expires_at, pending.window_ends_at
    FROM q LEFT JOIN pending ON true;
$$;

-- ---- sql/013_system_state.sql
-- 013_system_state: cluster-wide switches shared through the database.
--
-- queen.set_maintenance_v1(p_pop boolean) -> boolean
--   Turns pop maintenance mode on or off for every node (each node re-reads it at least
--   once a second). Returns the stored value. Locks the system_state row briefly.
-- queen.get_maintenance_v1() -> boolean
--   The current pop maintenance switch (false when never set). Reads only.

CREATE OR REPLACE FUNCTION queen.set_maintenance_v1(p_pop boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES ('maintenance', jsonb_build_object('pop', p_pop), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>'pop')::boolean;
$$;

CREATE OR REPLACE FUNCTION queen.get_maintenance_v1()
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false);
$$;

-- ---- sql/014_group_conflation.sql
-- 014_group_conflation: last-value delivery per partition, stored on the consumer group.
--
-- queen.consumer_groups_metadata.conflation (declared in 001): a conflating group gets only the newest
-- visible message of each partition it claims; the ones behind it are retired (the cursor
-- moves past them at the claim). Stored at the group's first registration; the stored value
-- wins afterwards (the contract's rule). Queue mode never conflates.
--
-- queen.log_register_group_at_v1(p_qid, p_group, p_sub_mode, p_sub_from, p_conflation)
--   -> boolean
--   A group's first registration on a queue: the durable subscription from p_sub_mode /
--   p_sub_from (queue mode always 'all'), the conflation policy, and, for the one caller
--   whose insert wins, every partition's cursor seeded in one statement (no per-partition
--   lazy-insert convoy). Returns the stored policy, which is the request's only when this
--   call registered the group. Locks: the metadata row it inserts. The wildcard pop's
--   first contact (005) calls it too.
--
-- queen.log_register_group_v1(p_tenant, p_queue, p_group, p_sub_mode, p_sub_from,
--                             p_conflation) -> boolean
--   The same by queue name, creating the queue row when missing. Called for pops that ask
--   for conflation.

CREATE OR REPLACE FUNCTION queen.log_register_group_at_v1(
    p_qid         bigint,
    p_group       text,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    p_conflation  boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_mode     text;
    v_ts       timestamptz;
    v_inserted integer;
    v_stored   boolean;
BEGIN
    SELECT m.conflation INTO v_stored
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    IF FOUND THEN
        RETURN v_stored;
    END IF;

    IF p_group = '__QUEUE_MODE__' THEN
        v_mode := 'all';
    ELSIF p_sub_from IS NOT NULL THEN
        v_mode := 'timestamp';
        v_ts := p_sub_from;
    ELSIF p_sub_mode = 'new' THEN
        v_mode := 'new';
        v_ts := now();
    ELSE
        v_mode := 'all';
    END IF;
    INSERT INTO queen.consumer_groups_metadata
        (consumer_group, queue_id, subscription_mode, subscription_timestamp, conflation)
    VALUES (p_group, p_qid, v_mode, v_ts, p_conflation)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 1 THEN
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        SELECT p.id, p_group,
               CASE WHEN v_ts IS NULL THEN -1
                    ELSE coalesce((SELECT s.base_offset - 1
                                   FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.created_at >= v_ts
                                   ORDER BY s.base_offset LIMIT 1),
                                  p.last_offset)
               END
        FROM queen.log_partitions p
        WHERE p.queue_id = p_qid
        ON CONFLICT DO NOTHING;
        RETURN p_conflation;
    END IF;

    -- A concurrent first contact registered it between our read and our insert.
    SELECT m.conflation INTO v_stored
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    RETURN coalesce(v_stored, false);
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_register_group_v1(
    p_tenant      text,
    p_queue       text,
    p_group       text,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    p_conflation  boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    RETURN queen.log_register_group_at_v1(v_qid, p_group, p_sub_mode, p_sub_from, p_conflation);
END;
$$;

-- ---- sql/015_txn_hash.sql
-- 015_txn_hash: transaction ids as 64-bit hashes, and finding a message's offset by them.
--
-- queen.txn_hash(p_txn) -> bigint
--   The first 8 bytes of SHA-256 of the id's UTF-8 bytes, big-endian, as a signed bigint.
--   The broker computes the same value (segment::txn_hash) for every pushed message and
--   stores them per segment (log_segments.txn_hashes, in offset order), so no row per
--   message is needed to find a message by its transaction id. Immutable; no locks.
--
-- queen.log_resolve_offsets_v1(p_pid, p_after, p_upto, p_hashes, p_txn_ids) -> bigint[]
--   p_hashes[i] is queen.txn_hash(p_txn_ids[i]) (the broker computes them). For each id:
--   its offset in (p_after, p_upto] (the first when an id occurs twice there, which only a
--   queue without dedup allows), else its newest offset at or below p_after within the
--   1,000 segments below (an ack of a message already done), else its offset in the legacy
--   queen.dedup rows, else NULL. Reads the segments overlapping the range through the
--   primary key, so the cost follows the lease, not the partition; a whole span acked in
--   delivery order is one array comparison. No locks.
--
-- queen.log_find_offset_v1(p_pid, p_txn) -> bigint
--   The newest offset of one id anywhere in the partition (admin lookups), else the legacy
--   dedup row's, else NULL. Scans the partition's segments: for single-message admin
--   routes, never the data path. No locks.

CREATE OR REPLACE FUNCTION queen.txn_hash(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || left(encode(sha256(convert_to(p_txn, 'UTF8')), 'hex'), 16))::bit(64)::bigint
$$;

CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v1(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[]
) RETURNS bigint[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_span bigint[] := '{}';
    v_offs bigint[];
    r      record;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) = 0 THEN
        RETURN '{}';
    END IF;
    -- The hashes of offsets (p_after, p_upto] in order, from the segments that hold them:
    -- the one holding p_after + 1 (one backward index probe), then forward to p_upto.
    FOR r IN
        SELECT s.base_offset, s.end_offset, s.txn_hashes
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
          AND s.base_offset >= coalesce(
                (SELECT x.base_offset FROM queen.log_segments x
                 WHERE x.partition_id = p_pid AND x.base_offset <= p_after + 1
                 ORDER BY x.base_offset DESC LIMIT 1), -1)
          AND s.base_offset <= p_upto
        ORDER BY s.base_offset
    LOOP
        IF r.txn_hashes IS NULL THEN
            -- A legacy segment: its offsets stay unknown here (the dedup rows answer below).
            v_span := v_span || array_fill(NULL::bigint,
                ARRAY[(least(r.end_offset, p_upto) - greatest(r.base_offset, p_after + 1) + 1)::integer]);
        ELSE
            v_span := v_span || r.txn_hashes[greatest(r.base_offset, p_after + 1) - r.base_offset + 1
                                             : least(r.end_offset, p_upto) - r.base_offset + 1];
        END IF;
    END LOOP;

    IF v_span = p_hashes THEN
        -- The common case: the whole span, in delivery order.
        SELECT array_agg(o) INTO v_offs FROM generate_series(p_after + 1, p_upto) AS o;
        RETURN v_offs;
    END IF;
    -- Otherwise each hash's position in the span (C-level scans of at most a lease's ids).
    SELECT array_agg(p_after + array_position(v_span, t.h) ORDER BY t.i) INTO v_offs
    FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i);

    IF array_position(v_offs, NULL) IS NOT NULL THEN
        -- Below the range: an ack of something already done (bounded look back), then the
        -- legacy dedup rows.
        WITH want AS (
            SELECT t.i, t.h FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i)
            WHERE v_offs[t.i] IS NULL
        ), below AS (
            SELECT s.base_offset, s.txn_hashes
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= p_after
            ORDER BY s.base_offset DESC
            LIMIT 1000
        ), have AS (
            SELECT x.hash, b.base_offset + x.k - 1 AS off
            FROM below b
            CROSS JOIN LATERAL unnest(b.txn_hashes) WITH ORDINALITY AS x (hash, k)
        ), found AS (
            SELECT w.i, max(hv.off) AS off
            FROM want w JOIN have hv ON hv.hash = w.h AND hv.off <= p_after
            GROUP BY w.i
        )
        SELECT array_agg(coalesce(v_offs[o.i], f.off, d.message_offset) ORDER BY o.i)
        INTO v_offs
        FROM unnest(p_txn_ids) WITH ORDINALITY AS o (txn, i)
        LEFT JOIN found f ON f.i = o.i
        LEFT JOIN queen.dedup d
          ON v_offs[o.i] IS NULL AND f.off IS NULL
         AND d.partition_id = p_pid AND d.transaction_id = o.txn;
    END IF;
    RETURN v_offs;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_find_offset_v1(
    p_pid bigint,
    p_txn text
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_h   bigint := queen.txn_hash(p_txn);
    v_off bigint;
BEGIN
    SELECT s.base_offset + x.k - 1 INTO v_off
    FROM queen.log_segments s
    CROSS JOIN LATERAL unnest(s.txn_hashes) WITH ORDINALITY AS x (hash, k)
    WHERE s.partition_id = p_pid AND s.txn_hashes @> ARRAY[v_h] AND x.hash = v_h
    ORDER BY 1 DESC
    LIMIT 1;
    IF v_off IS NULL THEN
        SELECT d.message_offset INTO v_off
        FROM queen.dedup d
        WHERE d.partition_id = p_pid AND d.transaction_id = p_txn;
    END IF;
    RETURN v_off;
END;
$$;

-- ---- sql/016_log_push_v2.sql
-- 016_log_push_v2: append segments to one partition, with transaction-id dedup decided by
-- the broker against a window it keeps in memory.
--
-- queen.log_push_v2(p_tenant, p_queue, p_partition, p_known_last, p_default_window,
--                   p_counts, p_codecs, p_blobs, p_hashes, p_producer)
--   Creates the queue and partition rows when missing and locks the partition row (FOR NO
--   KEY UPDATE, held to the caller's COMMIT: pushes to one partition are serialised and
--   offsets stay dense). The queue's dedup window is dedup_window_seconds, or
--   p_default_window when that is NULL; 0 turns dedup off.
--   p_known_last is the last offset whose transaction ids the broker already holds in its
--   window for this partition (NULL: none). The broker has checked the new ids against
--   them; when the partition's last_offset is the same (or the partition is empty, or
--   dedup is off), that check is complete and this call appends:
--     one segment per element of p_counts/p_codecs/p_blobs, consecutive offsets, with
--     txn_hashes sliced from p_hashes (queen.txn_hash of every message, in order);
--     last_offset/last_write_at bumped; one row: stale = false, the partition id, the
--     last offset BEFORE the append, the window.
--   Otherwise (other writers appended since) it writes NOTHING and answers stale = true:
--     a first row with the partition id, its last offset and the window, then one row per
--     segment above p_known_last created within the window, newest first, with its base
--     and end offsets, its age in ms, and its txn_hashes (or, for a segment without them,
--     its codec and blob, from which the broker reads the ids). The broker adds them to
--     its window, checks again, and calls again in the same transaction: the lock is held,
--     so the second answer is authoritative.
--   Callers appending several partitions in one transaction lock them in a fixed order
--   (queue, partition), so two such transactions cannot deadlock.
--   maxSize: when the queue's max_size is above 0, pushes to the queue are serialised by a
--   transaction-scoped advisory lock taken before the partition lock, and an append that
--   would make the messages the queue stores (over its partitions, from the first stored
--   segment's offset to last_offset: consumed or not, until retention deletes them) exceed
--   max_size writes NOTHING and answers one row: stale = NULL, the partition id,
--   last_offset = the messages stored now, window_seconds = max_size.

CREATE OR REPLACE FUNCTION queen.log_push_v2(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_known_last     bigint,
    p_default_window integer,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_hashes         bigint[],
    p_producer       text
) RETURNS TABLE (
    stale          boolean,
    partition_id   bigint,
    last_offset    bigint,
    window_seconds integer,
    seg_base       bigint,
    seg_end        bigint,
    seg_age_ms     bigint,
    seg_hashes     bigint[],
    seg_codec      smallint,
    seg_blob       bytea
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid     bigint;
    v_window  integer;
    v_pid     bigint;
    v_last    bigint;
    v_n       integer := coalesce(cardinality(p_counts), 0);
    v_total   integer;
    v_now     timestamptz := clock_timestamp();
    v_created timestamptz;
    v_prev_at timestamptz;
    v_max     integer;
    v_size    bigint;
    r         record;
BEGIN
    SELECT sum(c) INTO v_total FROM unnest(p_counts) AS c;
    IF v_n = 0 OR v_n <> coalesce(cardinality(p_codecs), 0)
       OR v_n <> coalesce(cardinality(p_blobs), 0)
       OR v_total IS DISTINCT FROM cardinality(p_hashes)
       OR EXISTS (SELECT 1 FROM unnest(p_counts) AS c WHERE c IS NULL OR c < 1) THEN
        RAISE EXCEPTION 'log_push_v2: counts, codecs and blobs must be non-empty and equal, hashes one per message'
            USING ERRCODE = '22023';
    END IF;

    SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
    INTO v_qid, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
        INTO v_qid, v_window
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    SELECT q.max_size INTO v_max FROM queen.queues q WHERE q.id = v_qid;
    IF v_max > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('queen.max_size/' || v_qid, 0));
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    IF v_window > 0 AND v_last >= 0 AND v_last IS DISTINCT FROM p_known_last THEN
        stale := true; partition_id := v_pid; last_offset := v_last;
        window_seconds := v_window;
        RETURN NEXT;
        -- created_at grows with base_offset: walk back from the newest, stop at the window.
        FOR r IN
            SELECT s.base_offset, s.end_offset, s.created_at, s.txn_hashes, s.codec, s.blob
            FROM queen.log_segments s
            WHERE s.partition_id = v_pid
              AND s.base_offset > CASE WHEN p_known_last <= v_last THEN p_known_last ELSE -1 END
            ORDER BY s.base_offset DESC
        LOOP
            EXIT WHEN r.created_at < v_now - make_interval(secs => v_window);
            seg_base := r.base_offset;
            seg_end := r.end_offset;
            seg_age_ms := (extract(epoch FROM (v_now - r.created_at)) * 1000)::bigint;
            seg_hashes := r.txn_hashes;
            seg_codec := CASE WHEN r.txn_hashes IS NULL THEN r.codec END;
            seg_blob := CASE WHEN r.txn_hashes IS NULL THEN r.blob END;
            RETURN NEXT;
        END LOOP;
        RETURN;
    END IF;

    IF v_max > 0 THEN
        SELECT coalesce(sum(p.last_offset + 1 - coalesce(
                   (SELECT s.base_offset FROM queen.log_segments s
                    WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1),
                   p.last_offset + 1)), 0)
        INTO v_size
        FROM queen.log_partitions p WHERE p.queue_id = v_qid;
        IF v_size + v_total > v_max THEN
            stale := NULL; partition_id := v_pid; last_offset := v_size;
            window_seconds := v_max;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- created_at must never go backwards within a partition (delayedProcessing and
    -- windowBuffer rely on it); the lock above orders pushes, the GREATEST guards the clock.
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = v_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(v_now, v_prev_at);

    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    SELECT v_pid, v_last + 1 + t.before, v_last + t.before + t.cnt, t.cnt, v_created,
           t.codec, p_producer, t.blob, p_hashes[t.before + 1 : t.before + t.cnt]
    FROM (
        SELECT u.cnt, u.codec, u.blob,
               coalesce(sum(u.cnt) OVER (ORDER BY u.k ROWS BETWEEN UNBOUNDED PRECEDING
                                                        AND 1 PRECEDING), 0)::integer AS before
        FROM unnest(p_counts, p_codecs, p_blobs) WITH ORDINALITY AS u (cnt, codec, blob, k)
    ) t;

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_total,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = v_pid;

    stale := false; partition_id := v_pid; last_offset := v_last;
    window_seconds := v_window;
    RETURN NEXT;
END;
$$;

-- ---- sql/017_log_ack_v2.sql
-- 017_log_ack_v2: acknowledge messages of one (partition, consumer group).
--
-- queen.log_ack_v2(p_pid, p_group, p_lease, p_txn_ids, p_hashes, p_offsets, p_statuses,
--                  p_errors)
--   Items are parallel arrays (1-based); p_hashes[i] is queen.txn_hash(p_txn_ids[i]), which
--   the broker computes. p_offsets[i] may be NULL: the offset is then found by transaction
--   id within the lease's span (queen.log_resolve_offsets_v1, through the segments'
--   txn_hashes), which is what lets any node ack.
--   Locks the consumer row (FOR UPDATE, a short wait behind a pop at most) and refuses every
--   item when the row has no live lease or p_lease names another one (NULL/'' p_lease acks
--   against the live lease). Statuses:
--     completed | success  the message is done;
--     dlq                  filed in queen.dead_letters now, then done;
--     failed               one retry charged; the lease is released and the partition
--                          rewinds to it, or, beyond the queue's retry_limit, it is filed in
--                          queen.dead_letters and the partition rewinds to the next one;
--     retry                rewinds to it without charging a retry.
--   The cursor moves to the longest done prefix of the lease span (a whole-batch ack is one
--   positional advance to batch_end); out-of-order completions wait in acked_ahead. A rewind
--   releases the lease and makes every later item of the call a no-op (they come again);
--   a lease whose every delivered message is done is released at once. When every item is
--   completed and together they cover the whole lease span, that is one positional advance
--   to batch_end without walking the items.
--   Rows: (idx, success, error, lease_released, dlq, queue_name, partition_name,
--   pending_after), one per
--   item; pending_after = messages left beyond the new cursor (what an ack-promote needs).

CREATE OR REPLACE FUNCTION queen.log_ack_v2(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_hashes   bigint[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[]
) RETURNS TABLE (
    idx            integer,
    success        boolean,
    error          text,
    lease_released boolean,
    dlq            boolean,
    queue_name     text,
    partition_name text,
    pending_after  bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now         timestamptz := now();
    v_n           integer := coalesce(cardinality(p_txn_ids), 0);
    v_c           record;
    v_retry_limit integer;
    v_qname       text;
    v_pname       text;
    v_last        bigint;
    v_offs        bigint[];
    v_ok          boolean[];
    v_err         text[];
    v_dlq         boolean[];
    v_done        bigint[];
    v_rewind      bigint;
    v_fail_off    bigint;
    v_fail_count  integer;
    v_new         bigint;
    v_floor       bigint;
    v_release     boolean := false;
    v_order       integer[];
    v_status      text;
    v_count       integer;
    i             integer;
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;

    SELECT c.committed, c.worker_id, c.lease_expires_at, c.batch_end, c.acked_ahead,
           c.attempt_offset, c.failed_offset, c.failed_count
    INTO v_c
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
    FOR UPDATE;

    IF NOT FOUND OR v_c.worker_id IS NULL OR v_c.lease_expires_at IS NULL
       OR v_c.lease_expires_at < v_now
       OR (coalesce(p_lease, '') <> '' AND p_lease <> v_c.worker_id) THEN
        FOR i IN 1 .. v_n LOOP
            idx := i; success := false; error := 'Invalid or expired lease';
            lease_released := false; dlq := false; queue_name := NULL; partition_name := NULL;
            pending_after := NULL;
            RETURN NEXT;
        END LOOP;
        RETURN;
    END IF;

    SELECT q.retry_limit, q.name, p.name, p.last_offset
    INTO v_retry_limit, v_qname, v_pname, v_last
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid;

    -- Resolve offsets: the caller's, else by transaction id within the lease's own span
    -- (the segments it covers), so the cost follows the batch, not the partition.
    v_ok := array_fill(false, ARRAY[v_n]);
    v_err := array_fill(NULL::text, ARRAY[v_n]);
    v_dlq := array_fill(false, ARRAY[v_n]);
    IF p_offsets IS NULL OR array_position(p_offsets, NULL) IS NOT NULL THEN
        v_offs := queen.log_resolve_offsets_v1(p_pid, v_c.committed, v_c.batch_end, p_hashes,
                                               p_txn_ids);
        IF p_offsets IS NOT NULL THEN
            SELECT array_agg(coalesce(o.off, v_offs[o.i]) ORDER BY o.i) INTO v_offs
            FROM unnest(p_offsets) WITH ORDINALITY AS o (off, i);
        END IF;
    ELSE
        v_offs := p_offsets;
    END IF;

    v_done := v_c.acked_ahead;
    v_fail_off := v_c.failed_offset;
    v_fail_count := v_c.failed_count;
    -- Messages below the first delivered offset were never delivered (a retention gap):
    -- the done prefix starts after them.
    v_floor := greatest(v_c.committed, coalesce(v_c.attempt_offset - 1, v_c.committed));

    -- The common case: every delivered message of the lease completed (in any order,
    -- repeats allowed). One positional advance to batch_end and the lease is released,
    -- without the per-item walk below.
    IF v_c.acked_ahead = '{}' AND v_c.failed_offset IS NULL
       AND array_position(v_offs, NULL) IS NULL
       AND NOT EXISTS (SELECT 1 FROM unnest(p_statuses) AS st
                       WHERE lower(coalesce(st, 'completed')) NOT IN ('completed', 'success'))
       AND NOT EXISTS (SELECT 1 FROM unnest(v_offs) AS o WHERE o > v_c.batch_end)
       AND (SELECT count(DISTINCT o) FROM unnest(v_offs) AS o WHERE o > v_floor)
           = v_c.batch_end - v_floor THEN
        UPDATE queen.log_consumers c SET
            committed = v_c.batch_end,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_c.batch_end - v_c.committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN QUERY
            SELECT i, true, NULL::text, true, false, v_qname, v_pname,
                   greatest(v_last - v_c.batch_end, 0)
            FROM generate_series(1, v_n) AS i;
        RETURN;
    END IF;

    SELECT array_agg(o.i ORDER BY o.off, o.i) INTO v_order
    FROM unnest(v_offs) WITH ORDINALITY AS o (off, i);

    FOREACH i IN ARRAY v_order LOOP
        v_status := lower(coalesce(p_statuses[i], 'completed'));
        IF v_offs[i] IS NULL THEN
            v_err[i] := 'Message not found';
        ELSIF v_offs[i] <= v_floor THEN
            v_ok[i] := true; -- already done
        ELSIF v_offs[i] > v_c.batch_end THEN
            v_err[i] := 'Message not part of this lease';
        ELSIF v_rewind IS NOT NULL THEN
            v_ok[i] := true; -- no-op: the partition already rewound to an earlier message
        ELSIF v_status IN ('completed', 'success') THEN
            v_done := v_done || v_offs[i];
            v_ok[i] := true;
        ELSIF v_status = 'dlq' THEN
            v_done := v_done || v_offs[i];
            v_dlq[i] := true;
            v_ok[i] := true;
        ELSIF v_status = 'failed' THEN
            v_count := CASE WHEN v_fail_off IS NOT DISTINCT FROM v_offs[i]
                            THEN v_fail_count + 1 ELSE 1 END;
            v_fail_off := v_offs[i];
            v_fail_count := v_count;
            IF v_count > v_retry_limit THEN
                -- Retries spent: dead-letter it and move past it, but still release the
                -- lease, since the client expects the rest of the batch to come again.
                v_done := v_done || v_offs[i];
                v_dlq[i] := true;
                v_rewind := v_offs[i] + 1;
            ELSE
                v_rewind := v_offs[i];
            END IF;
            v_ok[i] := true;
        ELSIF v_status = 'retry' THEN
            v_rewind := v_offs[i];
            v_ok[i] := true;
        ELSE
            v_err[i] := 'Unknown ack status: ' || v_status;
        END IF;
    END LOOP;

    -- The longest done prefix: one positional advance.
    -- Distinct done offsets above the floor, ascending: the prefix is where d = floor + rank.
    SELECT coalesce(max(x.d), v_floor) INTO v_new
    FROM (SELECT u.d, row_number() OVER (ORDER BY u.d) AS rn
          FROM (SELECT DISTINCT d FROM unnest(v_done) AS d WHERE d > v_floor) u) x
    WHERE x.d = v_floor + x.rn
      AND (v_rewind IS NULL OR x.d < v_rewind);
    v_new := greatest(v_new, v_c.committed);

    FOR i IN 1 .. v_n LOOP
        IF v_dlq[i] THEN
            INSERT INTO queen.dead_letters
                (partition_id, consumer_group, message_offset, transaction_id, error_message,
                 retry_count, segment_base, codec, producer, created_at, blob)
            SELECT p_pid, p_group, v_offs[i], p_txn_ids[i], p_errors[i],
                   CASE WHEN v_fail_off = v_offs[i] THEN v_fail_count ELSE 0 END,
                   s.base_offset, s.codec, s.producer, s.created_at, s.blob
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= v_offs[i]
            ORDER BY s.base_offset DESC
            LIMIT 1;
        END IF;
    END LOOP;

    IF v_fail_off IS NOT NULL AND v_fail_off <= v_new THEN
        v_fail_off := NULL; -- the charged message is behind the cursor now
        v_fail_count := 0;
    END IF;

    v_release := v_rewind IS NOT NULL OR v_new >= v_c.batch_end;
    IF v_release THEN
        UPDATE queen.log_consumers c SET
            committed = v_new,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = v_fail_off, failed_count = v_fail_count,
            total_consumed = c.total_consumed + (v_new - v_c.committed),
            last_consumed_at = CASE WHEN v_new > v_c.committed THEN v_now
                                    ELSE c.last_consumed_at END
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    ELSE
        UPDATE queen.log_consumers c SET
            committed = v_new,
            acked_ahead = coalesce((SELECT array_agg(DISTINCT d) FROM unnest(v_done) d
                                    WHERE d > v_new), '{}'),
            failed_offset = v_fail_off, failed_count = v_fail_count,
            total_consumed = c.total_consumed + (v_new - v_c.committed),
            last_consumed_at = CASE WHEN v_new > v_c.committed THEN v_now
                                    ELSE c.last_consumed_at END
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    END IF;

    FOR i IN 1 .. v_n LOOP
        idx := i;
        success := v_ok[i];
        error := v_err[i];
        lease_released := v_release AND v_ok[i];
        dlq := v_dlq[i];
        queue_name := v_qname;
        partition_name := v_pname;
        pending_after := greatest(v_last - v_new, 0);
        RETURN NEXT;
    END LOOP;
END;
$$;

-- ---- sql/018_log_pop_v2.sql
-- 018_log_pop_v2: the per-partition claim with fewer statements per pop.
--
-- A hot-list pop used to run about fourteen statements (each with its executor start-up):
-- the list looked the queue up, then log_pop_v1 looked it up again, read the conflation
-- flag, claimed the consumer row, read last_offset in a statement of its own, and the list
-- then unpacked the claimed rows twice. Here the queue's gates and the group's conflation
-- flag are read once per list call and passed down, the claim reads last_offset in the same
-- statement, and the claimed rows are counted as they are collected.
--
-- queen.log_pop_v2(p_qid, p_pid, p_group, p_worker, p_budget, p_lease_seconds, p_auto_ack,
--                  p_sub_mode, p_sub_from, p_skip_window, p_delay, p_window, p_conflate)
--   Exactly log_pop_v1's contract (see 003), with the queue's delayedProcessing (p_delay)
--   and windowBuffer (p_window) seconds and the group's conflation flag (p_conflate) given
--   by the caller instead of read here. Same rows, same locks, same synchronous_commit rule.
--   last_offset is read with the claim: a push committing after that statement's snapshot
--   stays above the cursor seal, as before.
--
-- queen.log_pop_v1(...)  now a wrapper: reads the gates and the flag, calls log_pop_v2.
--
-- queen.log_pop_list_v1(...)  same contract as in 011; now calls log_pop_v2 once per
--   candidate with the gates read once.

CREATE OR REPLACE FUNCTION queen.log_pop_v2(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean,
    p_delay         integer,
    p_window        integer,
    p_conflate      boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_newest     timestamptz;
    v_committed  bigint;
    v_att_count  integer;
    v_att_offset bigint;
    v_last_off   bigint;
    v_wanted     bigint;
    v_budget     integer := p_budget;
    v_visible    timestamptz;
    v_seg        record;
    v_take       integer;
    v_start      bigint;
    v_end        bigint;
    v_seen_any   boolean := false;
    v_bases      bigint[] := '{}';
    v_idx        integer[] := '{}';
    v_takes      integer[] := '{}';
    v_counts     integer[] := '{}';
    v_times      timestamptz[] := '{}';
    v_codecs     smallint[] := '{}';
    v_producers  text[] := '{}';
    v_blobs      bytea[] := '{}';
    v_attempt    integer;
    v_committed_at_claim bigint;
BEGIN
    IF p_budget IS NULL OR p_budget <= 0 THEN
        RETURN;
    END IF;

    -- Gate: windowBuffer, a quiet-period debounce on the newest segment.
    IF coalesce(p_window, 0) > 0 AND NOT p_skip_window THEN
        SELECT s.created_at INTO v_newest
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF v_newest IS NOT NULL AND v_newest > v_now - make_interval(secs => p_window) THEN
            RETURN;
        END IF;
    END IF;

    -- The claim, with the partition's last_offset: never wait, never insert
    -- unconditionally.
    SELECT c.committed, c.attempt_count, c.attempt_offset, p.last_offset
    INTO v_committed, v_att_count, v_att_offset, v_last_off
    FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
    FOR UPDATE OF c SKIP LOCKED;

    IF NOT FOUND THEN
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN; -- leased or mid-claim elsewhere: skip this cycle
        END IF;
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_pid::text || '/' || p_group, 42)) THEN
            RETURN; -- another pop is creating this row: skip this cycle
        END IF;
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (p_pid, p_group,
                queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from))
        ON CONFLICT DO NOTHING;
        SELECT c.committed, c.attempt_count, c.attempt_offset
        INTO v_committed, v_att_count, v_att_offset
        FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
        FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT p.last_offset INTO v_last_off FROM queen.log_partitions p WHERE p.id = p_pid;
    END IF;

    IF v_last_off <= v_committed THEN
        RETURN;
    END IF;

    v_wanted := v_committed + 1;
    v_visible := CASE WHEN coalesce(p_delay, 0) > 0
                      THEN v_now - make_interval(secs => p_delay)
                      ELSE 'infinity'::timestamptz END;

    IF p_conflate AND p_group <> '__QUEUE_MODE__' THEN
        -- Conflation: only the newest visible message, the rest retired by the claim.
        -- created_at grows with base_offset: the first visible segment from the top is
        -- the newest visible one.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_last_off
          AND s.created_at <= v_visible
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF NOT FOUND OR v_seg.end_offset < v_wanted THEN
            RETURN;
        END IF;
        v_start := v_seg.end_offset;
        v_end := v_seg.end_offset;
        v_bases := ARRAY[v_seg.base_offset];
        v_idx := ARRAY[(v_seg.end_offset - v_seg.base_offset)::integer];
        v_takes := ARRAY[1];
        v_counts := ARRAY[v_seg.msg_count];
        v_times := ARRAY[v_seg.created_at];
        v_codecs := ARRAY[v_seg.codec];
        v_producers := ARRAY[v_seg.producer];
        v_blobs := ARRAY[v_seg.blob];
        v_budget := 0;
        v_committed_at_claim := v_start - 1;
    ELSE
        -- Head probe: one backward primary-key step; the covering test is applied afterwards
        -- so a miss cannot walk the partition head.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_wanted
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF FOUND THEN
            v_seen_any := true;
            IF v_seg.end_offset >= v_wanted THEN
                IF v_seg.created_at > v_visible THEN
                    RETURN; -- delayed: every later segment is younger still
                END IF;
                v_take := least(v_seg.end_offset - v_wanted + 1, v_budget)::integer;
                v_start := v_wanted;
                v_end := v_wanted + v_take - 1;
                v_bases := ARRAY[v_seg.base_offset];
                v_idx := ARRAY[(v_wanted - v_seg.base_offset)::integer];
                v_takes := ARRAY[v_take];
                v_counts := ARRAY[v_seg.msg_count];
                v_times := ARRAY[v_seg.created_at];
                v_codecs := ARRAY[v_seg.codec];
                v_producers := ARRAY[v_seg.producer];
                v_blobs := ARRAY[v_seg.blob];
                v_budget := v_budget - v_take;
            END IF;
        END IF;

        -- Forward scan: a cursor, so leaving at the budget stops the index walk.
        IF v_budget > 0 THEN
            FOR v_seg IN
                SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_wanted
                ORDER BY s.base_offset
            LOOP
                v_seen_any := true;
                EXIT WHEN v_seg.created_at > v_visible;
                v_take := least(v_seg.msg_count, v_budget);
                IF v_start IS NULL THEN
                    v_start := v_seg.base_offset;
                END IF;
                v_end := v_seg.base_offset + v_take - 1;
                v_bases := v_bases || v_seg.base_offset;
                v_idx := v_idx || 0;
                v_takes := v_takes || v_take;
                v_counts := v_counts || v_seg.msg_count;
                v_times := v_times || v_seg.created_at;
                v_codecs := v_codecs || v_seg.codec;
                v_producers := v_producers || v_seg.producer;
                v_blobs := v_blobs || v_seg.blob;
                v_budget := v_budget - v_take;
                EXIT WHEN v_budget <= 0;
            END LOOP;
        END IF;
    END IF;

    IF v_start IS NULL THEN
        -- The empty-partition cursor seal: only when no segment exists at all (not when
        -- segments are merely deferred by delayedProcessing). A cursor move, not a claim.
        IF NOT v_seen_any THEN
            UPDATE queen.log_consumers c SET committed = v_last_off
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group
              AND c.committed < v_last_off;
        END IF;
        RETURN;
    END IF;

    IF p_auto_ack THEN
        UPDATE queen.log_consumers c SET
            committed = v_end, worker_id = NULL, lease_expires_at = NULL,
            lease_acquired_at = NULL, batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_end - v_committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_attempt := 1;
    ELSE
        v_attempt := CASE WHEN v_att_offset IS NOT DISTINCT FROM v_start
                          THEN v_att_count + 1 ELSE 1 END;
        UPDATE queen.log_consumers c SET
            committed = coalesce(v_committed_at_claim, c.committed),
            total_consumed = c.total_consumed
                + coalesce(v_committed_at_claim - c.committed, 0),
            worker_id = p_worker,
            lease_expires_at = v_now + make_interval(secs => p_lease_seconds),
            lease_acquired_at = v_now,
            batch_end = v_end,
            acked_ahead = '{}',
            attempt_count = v_attempt,
            attempt_offset = v_start
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        -- A lease is a reservation: its commit need not wait for the WAL flush (see 003).
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;

    RETURN QUERY
        SELECT p_pid, v_attempt, v_start, v_end, u.*
        FROM unnest(v_bases, v_idx, v_takes, v_counts, v_times, v_codecs, v_producers, v_blobs) u;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_v1(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_delay    integer;
    v_window   integer;
    v_conflate boolean;
BEGIN
    SELECT q.delayed_processing, q.window_buffer INTO v_delay, v_window
    FROM queen.queues q WHERE q.id = p_qid;
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    END IF;
    RETURN QUERY
        SELECT * FROM queen.log_pop_v2(p_qid, p_pid, p_group, p_worker, p_budget,
                                       p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from,
                                       p_skip_window, v_delay, v_window,
                                       coalesce(v_conflate, false));
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_list_v1(
    p_tenant        text,
    p_queue         text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_partitions    integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_candidates    bigint[],
    p_skip_window   boolean
) RETURNS TABLE (
    verdict          text,
    retry_at         timestamptz,
    pending_after    bigint,
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
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_qid        bigint;
    v_lease      integer;
    v_delay      integer;
    v_window     integer;
    v_budget     integer := p_batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_pid        bigint;
    v_name       text;
    v_rows       queen.log_pop_row[];
    v_end        bigint;
    v_c          record;
    v_last       bigint;
    v_at         timestamptz;
    v_verdicts   text[] := '{}';
    v_retry      timestamptz[] := '{}';
    v_pending    bigint[] := '{}';
    v_names      text[] := '{}';
    v_conflate   boolean;
    i            integer;
BEGIN
    SELECT q.id, q.lease_time, q.delayed_processing, q.window_buffer
    INTO v_qid, v_lease, v_delay, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    v_lease := coalesce(p_lease_seconds, v_lease, 60);
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = v_qid;
    END IF;
    v_conflate := coalesce(v_conflate, false);

    FOR i IN 1 .. coalesce(cardinality(p_candidates), 0) LOOP
        v_pid := p_candidates[i];
        IF v_claimed >= p_partitions OR v_budget <= 0 THEN
            -- Not even looked up: the pop is full, the candidate goes back as it was.
            v_names := v_names || NULL::text;
            v_verdicts := v_verdicts || 'skipped'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;
        SELECT p.name, p.last_offset INTO v_name, v_last
        FROM queen.log_partitions p WHERE p.id = v_pid AND p.queue_id = v_qid;
        v_names := v_names || v_name;
        IF v_name IS NULL THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;

        SELECT array_agg(r), coalesce(sum(r.take), 0), max(r.claim_end)
        INTO v_rows, v_got, v_end
        FROM queen.log_pop_v2(v_qid, v_pid, p_group, p_worker, v_budget, v_lease,
                              p_auto_ack, p_sub_mode, p_sub_from, p_skip_window,
                              v_delay, v_window, v_conflate) r;
        IF v_got > 0 THEN
            RETURN QUERY
                SELECT 'row'::text, NULL::timestamptz, NULL::bigint, p_queue, v_name, r.*
                FROM unnest(v_rows) r;
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
            v_verdicts := v_verdicts || 'claimed'::text;
            v_retry := v_retry || CASE WHEN p_auto_ack THEN NULL::timestamptz
                                       ELSE v_now + make_interval(secs => v_lease) END;
            v_pending := v_pending || greatest(v_last - v_end, 0);
            CONTINUE;
        END IF;

        -- Nothing claimed: say why, from an unlocked look at the partition's state.
        SELECT c.committed, c.worker_id, c.lease_expires_at INTO v_c
        FROM queen.log_consumers c
        WHERE c.partition_id = v_pid AND c.consumer_group = p_group;
        SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = v_pid;
        IF NOT FOUND OR v_c IS NULL OR v_c.committed IS NULL THEN
            v_verdicts := v_verdicts || 'busy'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.worker_id IS NOT NULL AND v_c.lease_expires_at >= v_now THEN
            v_verdicts := v_verdicts || 'leased'::text;
            v_retry := v_retry || v_c.lease_expires_at;
        ELSIF v_last <= v_c.committed THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSE
            v_at := NULL;
            IF coalesce(v_window, 0) > 0 AND NOT p_skip_window THEN
                SELECT s.created_at + make_interval(secs => v_window) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid
                ORDER BY s.base_offset DESC LIMIT 1;
                IF v_at IS NOT NULL AND v_at > v_now THEN
                    v_verdicts := v_verdicts || 'window'::text;
                    v_retry := v_retry || v_at;
                    v_pending := v_pending || (v_last - v_c.committed);
                    CONTINUE;
                END IF;
                v_at := NULL;
            END IF;
            IF coalesce(v_delay, 0) > 0 THEN
                SELECT s.created_at + make_interval(secs => v_delay) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid AND s.end_offset > v_c.committed
                ORDER BY s.base_offset LIMIT 1;
            END IF;
            IF v_at IS NOT NULL AND v_at > v_now THEN
                v_verdicts := v_verdicts || 'delayed'::text;
                v_retry := v_retry || v_at;
            ELSE
                v_verdicts := v_verdicts || 'busy'::text;
                v_retry := v_retry || NULL::timestamptz;
            END IF;
        END IF;
        v_pending := v_pending || greatest(v_last - coalesce(v_c.committed, -1), 0);
    END LOOP;

    RETURN QUERY
        SELECT v.verdict, v.retry_at, v.pending, p_queue, v.name, v.pid,
               NULL::integer, NULL::bigint, NULL::bigint, NULL::bigint, NULL::integer,
               NULL::integer, NULL::integer, NULL::timestamptz, NULL::smallint, NULL::text,
               NULL::bytea
        FROM unnest(v_verdicts, v_retry, v_pending, v_names, p_candidates)
             AS v (verdict, retry_at, pending, name, pid);
END;
$$;

-- ---- sql/020_lease_require.sql
-- 020_lease_require: the requiredLeases fence of a transaction bundle.
--
-- queen.lease_require_v1(p_leases)
--   p_leases: lease ids (distinct; duplicates are harmless) a bundle must hold.
--   Locks every log_consumers row held under one of them (FOR UPDATE, in primary-key order
--   so two bundles naming the same leases cannot deadlock), then answers one row per
--   distinct lease: (lease_id, live), live = some row still holds it and its expiry is not
--   past clock_timestamp(). Meant to run inside the caller's transaction, before its acks:
--   the row locks keep any pop from re-claiming those partitions and any other ack from
--   releasing them until the caller commits or rolls back.
--   Sends no notifications.

CREATE OR REPLACE FUNCTION queen.lease_require_v1(p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.log_consumers c
    WHERE c.worker_id = ANY (p_leases)
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1 FROM queen.log_consumers c
                   WHERE c.worker_id = l.id
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;

-- ---- sql/030_consumer_group_lags.sql
-- 030_consumer_group_lags: the consumer groups' positions, for the admin endpoints.
--
-- queen.consumer_group_lags_v1(p_tenant, p_group)
--   One row per (consumer group, queue, partition) of the tenant (of one group when p_group
--   is not NULL). A group is known from its durable subscription (consumer_groups_metadata)
--   or from any cursor row; a partition without a cursor row for a known group counts from
--   offset -1 (that is where its first pop starts: partitions created after the group's
--   first contact deliver their whole backlog). Columns:
--     committed         the cursor (last offset the group is done with, -1: nothing);
--     offset_lag        last_offset - committed (messages not yet done);
--     oldest_unconsumed created_at of the segment holding committed + 1 (NULL: no lag);
--     time_lag_seconds  now - oldest_unconsumed, 0 without lag;
--     lease_active      a worker holds a lease that has not expired.
-- queen.consumer_groups_v1(p_tenant) -> jsonb array, one object per (group, queue), in the
--   shape of GET /api/v1/consumer-groups.
-- queen.consumer_groups_lagging_v1(p_tenant, p_min_lag_seconds) -> jsonb array of partitions
--   whose time lag is at least p_min_lag_seconds.
-- queen.consumer_group_detail_v1(p_tenant, p_group) -> jsonb object keyed by queue name, or
--   NULL when the group is unknown.
-- Read only: no locks beyond MVCC snapshots, no notifications.

CREATE OR REPLACE FUNCTION queen.consumer_group_lags_v1(p_tenant text, p_group text)
RETURNS TABLE (
    consumer_group    text,
    queue_id          bigint,
    queue_name        text,
    partition_id      bigint,
    partition_name    text,
    committed         bigint,
    last_offset       bigint,
    offset_lag        bigint,
    oldest_unconsumed timestamptz,
    time_lag_seconds  double precision,
    worker_id         text,
    lease_active      boolean,
    last_consumed_at  timestamptz,
    total_consumed    bigint
) LANGUAGE sql STABLE AS $$
    WITH groups AS (
        SELECT m.consumer_group, m.queue_id
        FROM queen.consumer_groups_metadata m
        JOIN queen.queues q ON q.id = m.queue_id
        WHERE q.tenant = p_tenant AND (p_group IS NULL OR m.consumer_group = p_group)
        UNION
        SELECT DISTINCT c.consumer_group, p.queue_id
        FROM queen.log_consumers c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.tenant = p_tenant AND (p_group IS NULL OR c.consumer_group = p_group)
    )
    SELECT g.consumer_group, q.id, q.name, p.id, p.name,
           coalesce(c.committed, -1),
           p.last_offset,
           greatest(p.last_offset - coalesce(c.committed, -1), 0),
           o.created_at,
           CASE WHEN o.created_at IS NULL THEN 0
                ELSE greatest(extract(epoch FROM now() - o.created_at), 0)::double precision END,
           c.worker_id,
           coalesce(c.worker_id IS NOT NULL AND c.lease_expires_at > now(), false),
           c.last_consumed_at,
           coalesce(c.total_consumed, 0)
    FROM groups g
    JOIN queen.queues q ON q.id = g.queue_id
    JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = g.consumer_group
    LEFT JOIN LATERAL (
        SELECT s.created_at
        FROM queen.log_segments s
        WHERE s.partition_id = p.id
          AND p.last_offset > coalesce(c.committed, -1)
          AND s.base_offset <= coalesce(c.committed, -1) + 1
        ORDER BY s.base_offset DESC
        LIMIT 1
    ) o ON true;
$$;

CREATE OR REPLACE FUNCTION queen.consumer_groups_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(x.row ORDER BY x.consumer_group, x.queue_name), '[]'::jsonb)
    FROM (
        SELECT l.consumer_group, l.queue_name,
               jsonb_build_object(
                   'name', l.consumer_group,
                   'topics', jsonb_build_array(l.queue_name),
                   'queueName', l.queue_name,
                   'members', count(DISTINCT l.worker_id) FILTER (WHERE l.lease_active),
                   'partitionsWithLag', count(*) FILTER (WHERE l.offset_lag > 0),
                   'totalLag', sum(l.offset_lag),
                   'maxTimeLag', max(l.time_lag_seconds),
                   'state', CASE
                       WHEN max(l.time_lag_seconds) < 60 THEN 'Stable'
                       WHEN max(l.last_consumed_at) > now() - interval '1 hour'
                            OR bool_or(l.lease_active) THEN 'Lagging'
                       ELSE 'Dead' END,
                   'subscriptionMode', coalesce(m.subscription_mode, 'all'),
                   'subscriptionTimestamp', m.subscription_timestamp,
                   'subscriptionCreatedAt', m.created_at
               ) AS row
        FROM queen.consumer_group_lags_v1(p_tenant, NULL) l
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.consumer_group = l.consumer_group AND m.queue_id = l.queue_id
        GROUP BY l.consumer_group, l.queue_name, m.subscription_mode,
                 m.subscription_timestamp, m.created_at
    ) x;
$$;

CREATE OR REPLACE FUNCTION queen.consumer_groups_lagging_v1(p_tenant text, p_min_lag_seconds double precision)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'consumer_group', l.consumer_group,
               'queue_name', l.queue_name,
               'partition_name', l.partition_name,
               'partition_id', l.partition_id::text,
               'worker_id', l.worker_id,
               'offset_lag', l.offset_lag,
               'time_lag_seconds', round(l.time_lag_seconds::numeric, 3),
               'lag_hours', round((l.time_lag_seconds / 3600)::numeric, 3),
               'oldest_unconsumed_at', l.oldest_unconsumed,
               'last_consumed_at', l.last_consumed_at
           ) ORDER BY l.time_lag_seconds DESC, l.consumer_group, l.queue_name, l.partition_name),
           '[]'::jsonb)
    FROM queen.consumer_group_lags_v1(p_tenant, NULL) l
    WHERE l.offset_lag > 0 AND l.time_lag_seconds >= p_min_lag_seconds;
$$;

CREATE OR REPLACE FUNCTION queen.consumer_group_detail_v1(p_tenant text, p_group text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_object_agg(x.queue_name, jsonb_build_object('partitions', x.partitions))
    FROM (
        SELECT l.queue_name,
               jsonb_agg(jsonb_build_object(
                   'partition', l.partition_name,
                   'partitionId', l.partition_id::text,
                   'workerId', l.worker_id,
                   'lastConsumedAt', l.last_consumed_at,
                   'totalConsumed', l.total_consumed,
                   'committedOffset', l.committed,
                   'offsetLag', l.offset_lag,
                   'timeLagSeconds', round(l.time_lag_seconds::numeric, 3),
                   'leaseActive', l.lease_active
               ) ORDER BY l.partition_name) AS partitions
        FROM queen.consumer_group_lags_v1(p_tenant, p_group) l
        GROUP BY l.queue_name
    ) x;
$$;

-- ---- sql/031_consumer_group_delete.sql
-- 031_consumer_group_delete: forget a consumer group, on every queue or on one.
--
-- queen.consumer_group_delete_v1(p_tenant, p_group, p_queue, p_delete_metadata)
--   Deletes the group's cursor rows (queen.log_consumers) on every queue of the tenant, or
--   on p_queue only when it is not NULL, and, when p_delete_metadata, its durable
--   subscriptions (queen.consumer_groups_metadata), so the next pop is a first contact again.
--   A live lease of the group goes with its row: the holder's later acks are refused as
--   "Invalid or expired lease" (deleting a group is a deliberate reset).
--   Rows: (deleted_partitions, metadata_deleted, queues) where queues are the names of the
--   queues touched (the broker tells their group actors). Locks the deleted rows.

CREATE OR REPLACE FUNCTION queen.consumer_group_delete_v1(
    p_tenant          text,
    p_group           text,
    p_queue           text,
    p_delete_metadata boolean
) RETURNS TABLE (deleted_partitions integer, metadata_deleted integer, queues text[])
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_consumers integer;
    v_meta      integer := 0;
    v_queues    text[];
BEGIN
    WITH targets AS (
        SELECT q.id, q.name FROM queen.queues q
        WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
    ), gone AS (
        DELETE FROM queen.log_consumers c
        USING queen.log_partitions p, targets t
        WHERE c.partition_id = p.id AND p.queue_id = t.id AND c.consumer_group = p_group
        RETURNING t.name
    )
    SELECT count(*), array_agg(DISTINCT g.name) INTO v_consumers, v_queues FROM gone g;

    IF p_delete_metadata THEN
        WITH gone AS (
            DELETE FROM queen.consumer_groups_metadata m
            USING queen.queues q
            WHERE m.queue_id = q.id AND q.tenant = p_tenant
              AND (p_queue IS NULL OR q.name = p_queue) AND m.consumer_group = p_group
            RETURNING q.name
        )
        SELECT count(*), array_cat(v_queues, array_agg(g.name)) INTO v_meta, v_queues
        FROM gone g;
    END IF;

    RETURN QUERY SELECT v_consumers, v_meta,
        coalesce((SELECT array_agg(DISTINCT x) FROM unnest(v_queues) x WHERE x IS NOT NULL),
                 '{}'::text[]);
END;
$$;

-- ---- sql/032_consumer_group_subscription.sql
-- 032_consumer_group_subscription: move a group's durable subscription to a timestamp.
--
-- queen.consumer_group_subscription_v1(p_tenant, p_group, p_timestamp)
--   Sets subscription_mode = 'timestamp' and subscription_timestamp = p_timestamp on every
--   durable subscription of the group in the tenant. Cursors that exist are left alone (a
--   seek moves those); the timestamp decides where cursors start that are created later
--   (a first contact after a metadata reset). Returns the number of subscriptions updated.
--   Locks the updated metadata rows.

CREATE OR REPLACE FUNCTION queen.consumer_group_subscription_v1(
    p_tenant    text,
    p_group     text,
    p_timestamp timestamptz
) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_rows integer;
BEGIN
    UPDATE queen.consumer_groups_metadata m
    SET subscription_mode = 'timestamp', subscription_timestamp = p_timestamp
    FROM queen.queues q
    WHERE m.queue_id = q.id AND q.tenant = p_tenant AND m.consumer_group = p_group;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows;
END;
$$;

-- ---- sql/033_consumer_group_seek.sql
-- 033_consumer_group_seek: move a group's cursors on one queue to the end or to a time.
--
-- queen.consumer_group_seek_v1(p_tenant, p_group, p_queue, p_timestamp)
--   p_timestamp NULL seeks to the end: every partition's cursor becomes its last_offset
--   (nothing pending). Otherwise each cursor becomes (base_offset - 1) of the partition's
--   first segment created at or after p_timestamp, or last_offset when there is none, so
--   the next pop redelivers from there. Cursor rows missing for the group are created, and
--   the group's durable subscription is registered when missing (so its next pop is not a
--   first contact that would seed over the seek); its empty-scan watermark is reset so the
--   SQL candidate scan looks at every partition again.
--   A live lease is never broken: the group's rows on the queue are locked (FOR UPDATE) and
--   when any of them holds an unexpired lease nothing changes and one row comes back with
--   refused = true. Expired leases are cleared along with the per-lease state.
--   Rows: (refused, partition_id, partition_name, last_offset, committed) per partition
--   moved; one row of NULLs (refused = false) when the queue has no partition; no rows
--   when the queue does not exist.

CREATE OR REPLACE FUNCTION queen.consumer_group_seek_v1(
    p_tenant    text,
    p_group     text,
    p_queue     text,
    p_timestamp timestamptz
) RETURNS TABLE (
    refused        boolean,
    partition_id   bigint,
    partition_name text,
    last_offset    bigint,
    committed      bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_leased integer;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;

    SELECT count(*) FILTER (WHERE c.worker_id IS NOT NULL AND c.lease_expires_at > now())
    INTO v_leased
    FROM (SELECT c.worker_id, c.lease_expires_at
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
          WHERE p.queue_id = v_qid AND c.consumer_group = p_group
          ORDER BY c.partition_id
          FOR UPDATE OF c) c;
    IF v_leased > 0 THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
        RETURN;
    END IF;

    INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
    VALUES (p_group, v_qid)
    ON CONFLICT DO NOTHING;
    UPDATE queen.consumer_groups_metadata m
    SET watermark = '-infinity', watermark_checked_at = '-infinity'
    WHERE m.consumer_group = p_group AND m.queue_id = v_qid;

    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    SELECT p.id, p_group, -1 FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ON CONFLICT DO NOTHING;

    RETURN QUERY
    WITH target AS (
        SELECT p.id, p.name, p.last_offset,
               CASE WHEN p_timestamp IS NULL THEN p.last_offset
                    ELSE coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.created_at >= p_timestamp
                                   ORDER BY s.base_offset LIMIT 1),
                                  p.last_offset) END AS new_committed
        FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ), moved AS (
        UPDATE queen.log_consumers c SET
            committed = t.new_committed,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            attempt_count = 0, attempt_offset = NULL,
            failed_offset = NULL, failed_count = 0
        FROM target t
        WHERE c.partition_id = t.id AND c.consumer_group = p_group
          -- A row a concurrent first pop created and leased after the check above.
          AND (c.worker_id IS NULL OR c.lease_expires_at <= now())
        RETURNING t.id, t.name, t.last_offset, t.new_committed
    )
    SELECT false, m.id, m.name, m.last_offset, m.new_committed FROM moved m ORDER BY m.name;
    IF NOT FOUND THEN
        -- A queue without partitions (a pop provisioned it before any push): nothing moved.
        RETURN QUERY SELECT false, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
    END IF;
END;
$$;

-- ---- sql/034_dead_letters.sql
-- 034_dead_letters: read the dead-letter queue.
--
-- queen.dead_letters_list_v1(p_tenant, p_queue, p_group, p_partition, p_from, p_to,
--                            p_limit, p_offset)
--   The tenant's dead letters, newest failure first, filtered by queue name, consumer group,
--   partition name and failed_at in [p_from, p_to] (each filter ignored when NULL), paged by
--   p_limit/p_offset. Every row carries `total`, the count of all matching dead letters (a
--   page past the end has no row to carry it: the caller then asks
--   queen.dead_letters_count_v1). Each row carries the copy of the
--   segment that held the message (segment_base, codec, producer, blob): the broker slices
--   frame (message_offset - segment_base) out of it. PostgreSQL never opens the blob.
-- queen.dead_letters_count_v1(p_tenant, p_queue, p_group, p_partition, p_from, p_to)
--   The number of matching dead letters (for a page past the end).
-- queen.dead_letter_find_v1(p_tenant, p_partition_id, p_transaction_id)
--   The dead letters of one message (one per consumer group that filed it), same row
--   type (queen.dead_letter_row).
-- Read only; no locks, no notifications.

-- The row both readers answer, declared once.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                   WHERE n.nspname = 'queen' AND t.typname = 'dead_letter_row') THEN
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
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION queen.dead_letters_list_v1(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer
) RETURNS SETOF queen.dead_letter_row LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT d.id, d.partition_id, q.name AS queue_name, p.name AS partition_name,
               d.consumer_group, d.message_offset, d.transaction_id, d.error_message,
               d.retry_count, d.failed_at, d.created_at,
               count(*) OVER () AS total
        FROM queen.dead_letters d
        JOIN queen.log_partitions p ON p.id = d.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.tenant = p_tenant
          AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_group IS NULL OR d.consumer_group = p_group)
          AND (p_partition IS NULL OR p.name = p_partition)
          AND (p_from IS NULL OR d.failed_at >= p_from)
          AND (p_to IS NULL OR d.failed_at <= p_to)
        ORDER BY d.failed_at DESC, d.id DESC
        LIMIT p_limit OFFSET p_offset
    )
    SELECT m.id, m.partition_id, m.queue_name, m.partition_name, m.consumer_group,
           m.message_offset, m.transaction_id, m.error_message, m.retry_count, m.failed_at,
           m.created_at, d.segment_base, d.codec, d.producer, d.blob, m.total
    FROM matching m JOIN queen.dead_letters d ON d.id = m.id
    ORDER BY m.failed_at DESC, m.id DESC;
$$;

CREATE OR REPLACE FUNCTION queen.dead_letter_find_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS SETOF queen.dead_letter_row LANGUAGE sql STABLE AS $$
    SELECT d.id, d.partition_id, q.name, p.name, d.consumer_group, d.message_offset,
           d.transaction_id, d.error_message, d.retry_count, d.failed_at, d.created_at,
           d.segment_base, d.codec, d.producer, d.blob, count(*) OVER ()
    FROM queen.dead_letters d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.tenant = p_tenant AND d.partition_id = p_partition_id
      AND d.transaction_id = p_transaction_id
    ORDER BY d.failed_at, d.id;
$$;

CREATE OR REPLACE FUNCTION queen.dead_letters_count_v1(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz
) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*)
    FROM queen.dead_letters d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.tenant = p_tenant
      AND (p_queue IS NULL OR q.name = p_queue)
      AND (p_group IS NULL OR d.consumer_group = p_group)
      AND (p_partition IS NULL OR p.name = p_partition)
      AND (p_from IS NULL OR d.failed_at >= p_from)
      AND (p_to IS NULL OR d.failed_at <= p_to);
$$;

-- ---- sql/035_dead_letter_requeue.sql
-- 035_dead_letter_requeue: put a dead-lettered message back on its partition.
--
-- queen.dead_letter_requeue_v1(p_tenant, p_partition_id, p_transaction_id, p_message_id,
--                              p_blob, p_codec, p_producer)
--   Decision 9.6 of the wire contract: a retry appends the message again to its partition as
--   a new message (p_blob is a one-frame segment the broker built from the dead letter's
--   copy, under the new message id p_message_id and the same transaction id). In one
--   transaction it locks the partition row (FOR NO KEY UPDATE, as a push does), deletes
--   every dead letter of (partition, transaction id) (one per consumer group that filed it;
--   the new message is delivered to every group, as any push is), deletes the message's
--   dedup row so the transaction id now names the new offset, and appends through
--   queen.log_push_v1.
--   Rows: one (queue_name, partition_name, base_offset, removed) on success; none when the
--   partition is not the tenant's or no dead letter matches (a concurrent retry won).

CREATE OR REPLACE FUNCTION queen.dead_letter_requeue_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text,
    p_message_id     uuid,
    p_blob           bytea,
    p_codec          smallint,
    p_producer       text
) RETURNS TABLE (queue_name text, partition_name text, base_offset bigint, removed integer)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue     text;
    v_partition text;
    v_removed   integer;
    v_base      bigint;
BEGIN
    SELECT q.name, p.name INTO v_queue, v_partition
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant
    FOR NO KEY UPDATE OF p;
    IF v_queue IS NULL THEN
        RETURN;
    END IF;

    DELETE FROM queen.dead_letters d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    IF v_removed = 0 THEN
        RETURN;
    END IF;

    DELETE FROM queen.dedup d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;

    SELECT r.base_offset INTO v_base
    FROM queen.log_push_v1(p_tenant, v_queue, v_partition, ARRAY[p_transaction_id],
                           ARRAY[p_message_id], p_blob, p_codec, p_producer) r;

    RETURN QUERY SELECT v_queue, v_partition, v_base, v_removed;
END;
$$;

-- ---- sql/036_resource_stats.sql
-- 036_resource_stats: per-partition message counts for the resources endpoints.
--
-- queen.partition_stats_v1(p_tenant, p_queue)
--   One row per partition of the tenant (of one queue when p_queue is not NULL). Offsets are
--   dense from 0, so a partition has held last_offset + 1 messages. Counts are relative to
--   the queue-mode cursor (consumer group __QUEUE_MODE__; -1 when it never popped):
--     total       last_offset + 1, every message ever appended;
--     completed   committed + 1, messages queue mode is done with (acked or dead-lettered);
--     processing  messages inside a live queue-mode lease (committed, batch_end];
--     pending     total - completed - processing, waiting for a queue-mode consumer;
--     dead_letter dead letters filed for the partition by any group;
--     oldest/newest created_at of the partition's first and last stored segment.
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.partition_stats_v1(p_tenant text, p_queue text)
RETURNS TABLE (
    queue_id       bigint,
    queue_name     text,
    partition_id   bigint,
    partition_name text,
    created_at     timestamptz,
    last_offset    bigint,
    last_write_at  timestamptz,
    total          bigint,
    completed      bigint,
    processing     bigint,
    pending        bigint,
    dead_letter    bigint,
    oldest         timestamptz,
    newest         timestamptz
) LANGUAGE sql STABLE AS $$
    SELECT q.id, q.name, p.id, p.name, p.created_at, p.last_offset, p.last_write_at,
           p.last_offset + 1,
           least(coalesce(c.committed, -1), p.last_offset) + 1,
           x.processing,
           p.last_offset - least(coalesce(c.committed, -1), p.last_offset) - x.processing,
           (SELECT count(*) FROM queen.dead_letters d WHERE d.partition_id = p.id),
           (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
            ORDER BY s.base_offset LIMIT 1),
           (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
            ORDER BY s.base_offset DESC LIMIT 1)
    FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    CROSS JOIN LATERAL (
        SELECT CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN greatest(least(c.batch_end, p.last_offset) - c.committed, 0)
                    ELSE 0 END AS processing
    ) x
    WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue);
$$;

-- ---- sql/037_resources.sql
-- 037_resources: the resources endpoints' documents, built from queen.partition_stats_v1.
--
-- queen.resources_overview_v1(p_tenant) -> jsonb {queues, partitions, namespaces, tasks,
--   consumerGroups, messages: {total, pending, processing, completed, deadLetter}}.
-- queen.resources_queues_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb {queues: [{id,
--   name, namespace, task, priority, createdAt, partitions, messages: {total, pending,
--   processing}}], total}; p_search matches a substring of the name (case-insensitive).
-- queen.resource_queue_v1(p_tenant, p_queue) -> jsonb {id, name, namespace, task, createdAt,
--   config, partitions: [{id, name, createdAt, stats: {total, pending, processing,
--   completed, failed, deadLetter}, oldestMessage, newestMessage}], totals}, or NULL when
--   the queue does not exist. `failed` is dead letters (this broker has no other failure
--   state).
-- queen.queue_depth_v1(p_tenant, p_queue, p_group) -> jsonb {queue, group, pending,
--   partitionsPending, conflation (false), effectivePending, partitions: [{partition,
--   pending}]}, or NULL for an unknown queue. With p_group: last_offset minus that group's
--   cursor (-1 where it has none). Without: the worst cursor (the one furthest behind) of
--   queue mode and every group; queue mode counts from -1 where it never popped, so a
--   partition only bus groups consumed still counts its messages as pending.
-- queen.resources_partitions_v1(p_tenant, p_queue, p_limit, p_offset) -> jsonb
--   {partitions: [{id, queue, name, lastOffset, lastWriteAt, createdAt, messages,
--   consumers: [{consumerGroup, committed, lag, leaseActive}]}], total} (decision 9.6).
-- queen.resources_namespaces_v1(p_tenant), queen.resources_tasks_v1(p_tenant) -> jsonb
--   {namespaces|tasks: [{namespace|task, queues, partitions, messages: {total, pending}}]};
--   queues without one are left out.
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.resources_overview_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues q WHERE q.tenant = p_tenant),
        'partitions', count(s.partition_id),
        'namespaces', (SELECT count(DISTINCT q.namespace) FROM queen.queues q
                       WHERE q.tenant = p_tenant),
        'tasks', (SELECT count(DISTINCT q.task) FROM queen.queues q WHERE q.tenant = p_tenant),
        'consumerGroups', (SELECT count(DISTINCT m.consumer_group)
                           FROM queen.consumer_groups_metadata m
                           JOIN queen.queues q ON q.id = m.queue_id
                           WHERE q.tenant = p_tenant),
        'messages', jsonb_build_object(
            'total', coalesce(sum(s.total), 0),
            'pending', coalesce(sum(s.pending), 0),
            'processing', coalesce(sum(s.processing), 0),
            'completed', coalesce(sum(s.completed), 0),
            'deadLetter', coalesce(sum(s.dead_letter), 0)))
    FROM queen.partition_stats_v1(p_tenant, NULL) s;
$$;

CREATE OR REPLACE FUNCTION queen.resources_queues_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT q.* FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_search IS NULL OR strpos(lower(q.name), lower(p_search)) > 0)
    ), page AS (
        SELECT m.* FROM matching m ORDER BY m.name LIMIT p_limit OFFSET p_offset
    ), stats AS (
        SELECT s.queue_id, count(*) AS partitions, sum(s.total) AS total,
               sum(s.pending) AS pending, sum(s.processing) AS processing
        FROM queen.partition_stats_v1(p_tenant, NULL) s
        WHERE s.queue_id IN (SELECT id FROM page)
        GROUP BY s.queue_id
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'id', p.id::text, 'name', p.name, 'namespace', p.namespace, 'task', p.task,
            'priority', p.priority, 'createdAt', p.created_at,
            'partitions', coalesce(st.partitions, 0),
            'messages', jsonb_build_object(
                'total', coalesce(st.total, 0),
                'pending', coalesce(st.pending, 0),
                'processing', coalesce(st.processing, 0)))
            ORDER BY p.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching))
    FROM page p LEFT JOIN stats st ON st.queue_id = p.id;
$$;

CREATE OR REPLACE FUNCTION queen.resource_queue_v1(p_tenant text, p_queue text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', q.id::text, 'name', q.name, 'namespace', q.namespace, 'task', q.task,
        'createdAt', q.created_at,
        'config', to_jsonb(q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task' - 'created_at',
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'id', s.partition_id::text, 'name', s.partition_name,
                'createdAt', s.created_at,
                'stats', jsonb_build_object(
                    'total', s.total, 'pending', s.pending, 'processing', s.processing,
                    'completed', s.completed, 'failed', s.dead_letter,
                    'deadLetter', s.dead_letter),
                'oldestMessage', s.oldest, 'newestMessage', s.newest)
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb),
        'totals', (
            SELECT jsonb_build_object(
                'total', coalesce(sum(s.total), 0), 'pending', coalesce(sum(s.pending), 0),
                'processing', coalesce(sum(s.processing), 0),
                'completed', coalesce(sum(s.completed), 0),
                'failed', coalesce(sum(s.dead_letter), 0),
                'deadLetter', coalesce(sum(s.dead_letter), 0))
            FROM queen.partition_stats_v1(p_tenant, p_queue) s))
    FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue;
$$;

CREATE OR REPLACE FUNCTION queen.queue_depth_v1(p_tenant text, p_queue text, p_group text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue
    ), parts AS (
        SELECT p.name,
               greatest(p.last_offset - coalesce(
                   CASE WHEN p_group IS NOT NULL THEN
                            (SELECT c.committed FROM queen.log_consumers c
                             WHERE c.partition_id = p.id AND c.consumer_group = p_group)
                        ELSE least(
                            coalesce((SELECT c.committed FROM queen.log_consumers c
                                      WHERE c.partition_id = p.id
                                        AND c.consumer_group = '__QUEUE_MODE__'), -1),
                            (SELECT min(c.committed) FROM queen.log_consumers c
                             WHERE c.partition_id = p.id)) END, -1), 0) AS pending
        FROM queen.log_partitions p JOIN q ON p.queue_id = q.id
    )
    SELECT jsonb_build_object(
        'queue', p_queue, 'group', p_group,
        'pending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitionsPending', (SELECT count(*) FROM parts WHERE pending > 0),
        'conflation', false,
        'effectivePending', coalesce((SELECT sum(pending) FROM parts), 0),
        'partitions', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                    'partition', name, 'pending', pending) ORDER BY name)
                                FROM parts), '[]'::jsonb))
    FROM q;
$$;

CREATE OR REPLACE FUNCTION queen.resources_partitions_v1(
    p_tenant text, p_queue text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT p.*, q.name AS queue_name
        FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
    ), page AS (
        SELECT m.* FROM matching m ORDER BY m.queue_name, m.name LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'partitions', coalesce(jsonb_agg(jsonb_build_object(
            'id', p.id::text, 'queue', p.queue_name, 'name', p.name,
            'lastOffset', p.last_offset, 'lastWriteAt', p.last_write_at,
            'createdAt', p.created_at, 'messages', p.last_offset + 1,
            'consumers', coalesce((
                SELECT jsonb_agg(jsonb_build_object(
                    'consumerGroup', c.consumer_group, 'committed', c.committed,
                    'lag', greatest(p.last_offset - c.committed, 0),
                    'leaseActive', c.worker_id IS NOT NULL AND c.lease_expires_at > now())
                    ORDER BY c.consumer_group)
                FROM queen.log_consumers c WHERE c.partition_id = p.id), '[]'::jsonb))
            ORDER BY p.queue_name, p.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching))
    FROM page p;
$$;

CREATE OR REPLACE FUNCTION queen.resources_namespaces_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('namespaces', coalesce(jsonb_agg(jsonb_build_object(
               'namespace', x.namespace, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.namespace), '[]'::jsonb))
    FROM (
        SELECT q.namespace, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.namespace IS NOT NULL
        GROUP BY q.namespace
    ) x;
$$;

CREATE OR REPLACE FUNCTION queen.resources_tasks_v1(p_tenant text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('tasks', coalesce(jsonb_agg(jsonb_build_object(
               'task', x.task, 'queues', x.queues, 'partitions', x.partitions,
               'messages', jsonb_build_object('total', x.total, 'pending', x.pending))
               ORDER BY x.task), '[]'::jsonb))
    FROM (
        SELECT q.task, count(DISTINCT q.id) AS queues, count(s.partition_id) AS partitions,
               coalesce(sum(s.total), 0) AS total, coalesce(sum(s.pending), 0) AS pending
        FROM queen.queues q
        LEFT JOIN queen.partition_stats_v1(p_tenant, NULL) s ON s.queue_id = q.id
        WHERE q.tenant = p_tenant AND q.task IS NOT NULL
        GROUP BY q.task
    ) x;
$$;

-- ---- sql/038_queue_delete.sql
-- 038_queue_delete: delete a queue and everything stored for it.
--
-- queen.queue_delete_v1(p_tenant, p_queue) -> boolean (true when the queue existed)
--   Locks the queue row (FOR UPDATE) and its partitions (FOR UPDATE, in id order, so a
--   concurrent push waits and then recreates the queue from scratch), deletes the
--   partitions' dedup rows explicitly (queen.dedup has no foreign key on purpose: see
--   001_schema), then the queue row, whose foreign keys cascade to its partitions,
--   segments, consumer cursors, consumer-group metadata and dead letters.
--   No notifications: the broker tells its group actors and its peers after the commit.

CREATE OR REPLACE FUNCTION queen.queue_delete_v1(p_tenant text, p_queue text)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid  bigint;
    v_pids bigint[];
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue
    FOR UPDATE;
    IF v_qid IS NULL THEN
        RETURN false;
    END IF;

    SELECT array_agg(x.id) INTO v_pids FROM (
        SELECT p.id FROM queen.log_partitions p WHERE p.queue_id = v_qid
        ORDER BY p.id FOR UPDATE
    ) x;

    DELETE FROM queen.dedup d WHERE d.partition_id = ANY (coalesce(v_pids, '{}'));
    DELETE FROM queen.queues q WHERE q.id = v_qid;
    RETURN true;
END;
$$;

-- ---- sql/039_messages.sql
-- 039_messages: find messages for the messages endpoints.
--
-- A message is (partition, offset): offsets are dense per partition, and a segment row
-- covers base_offset..end_offset, so PostgreSQL lists messages from segment rows with
-- generate_series and never opens a blob; the broker reads ids, payloads and transaction
-- ids out of the blobs.
--
-- queen.messages_list_v1(p_tenant, p_queue, p_partition, p_namespace, p_task, p_status,
--                        p_from, p_to, p_limit, p_offset)
--   Messages newest first (segment created_at DESC, partition id, offset DESC), filtered
--   by queue, partition, namespace, task (each ignored when NULL), segment created_at in
--   [p_from, p_to], and status (NULL: any). Status is relative to the queue-mode cursor:
--   'completed' at or below the cursor, 'processing' inside a live queue-mode lease,
--   'pending' otherwise. bus_status is 'completed' when every other group's cursor has
--   passed the message, 'pending' when one has not, NULL when there is no other group.
--   At most p_offset + p_limit segments are expanded (each holds at least one matching
--   message, because segments are pre-filtered by status range). The blob (with codec and
--   producer) comes only on the first row of each segment, NULL on the others.
-- queen.message_get_v1(p_tenant, p_partition_id, p_transaction_id)
--   One message found by its transaction id (queen.log_find_offset_v1), with its segment, its status, its latest dead
--   letter (error_message, retry_count), the queue's configuration and every group's view
--   of it ([{consumerGroup, committed, status, leaseActive}]). No row when unknown.
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.messages_list_v1(
    p_tenant    text,
    p_queue     text,
    p_partition text,
    p_namespace text,
    p_task      text,
    p_status    text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer
) RETURNS TABLE (
    partition_id     bigint,
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    bus_status       text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea
) LANGUAGE sql STABLE AS $$
    WITH parts AS (
        SELECT p.id, p.name, q.name AS qname, q.namespace, q.task, q.priority,
               coalesce(c.committed, -1) AS committed,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN c.batch_end END AS lease_end,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                    THEN c.lease_expires_at END AS lease_expires_at,
               (SELECT min(b.committed) FROM queen.log_consumers b
                WHERE b.partition_id = p.id AND b.consumer_group <> '__QUEUE_MODE__') AS bus_min
        FROM queen.queues q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
        WHERE q.tenant = p_tenant
          AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_partition IS NULL OR p.name = p_partition)
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
    ), segs AS (
        SELECT s.partition_id, s.base_offset, s.end_offset, s.created_at, pa.name, pa.qname,
               pa.namespace, pa.task, pa.priority, pa.committed, pa.lease_end,
               pa.lease_expires_at, pa.bus_min
        FROM parts pa
        JOIN queen.log_segments s ON s.partition_id = pa.id
        WHERE (p_from IS NULL OR s.created_at >= p_from)
          AND (p_to IS NULL OR s.created_at <= p_to)
          AND (p_status IS NULL
               OR (p_status = 'completed' AND s.base_offset <= pa.committed)
               OR (p_status = 'processing' AND pa.lease_end IS NOT NULL
                   AND s.end_offset > pa.committed AND s.base_offset <= pa.lease_end)
               OR (p_status = 'pending'
                   AND s.end_offset > coalesce(pa.lease_end, pa.committed)))
        ORDER BY s.created_at DESC, s.partition_id, s.base_offset DESC
        LIMIT p_limit + p_offset
    ), msgs AS (
        SELECT sg.*, o.off,
               CASE WHEN o.off <= sg.committed THEN 'completed'
                    WHEN sg.lease_end IS NOT NULL AND o.off <= sg.lease_end THEN 'processing'
                    ELSE 'pending' END AS st
        FROM segs sg
        CROSS JOIN LATERAL generate_series(sg.end_offset, sg.base_offset, -1) AS o (off)
    ), page AS (
        SELECT m.* FROM msgs m
        WHERE p_status IS NULL OR m.st = p_status
        ORDER BY m.created_at DESC, m.partition_id, m.off DESC
        LIMIT p_limit OFFSET p_offset
    ), numbered AS (
        SELECT pg.*, row_number() OVER (PARTITION BY pg.partition_id, pg.base_offset) AS rn
        FROM page pg
    )
    SELECT n.partition_id, n.qname, n.name, n.namespace, n.task, n.priority, n.off,
           n.created_at, n.st,
           CASE WHEN n.bus_min IS NULL THEN NULL
                WHEN n.off <= n.bus_min THEN 'completed' ELSE 'pending' END,
           CASE WHEN n.st = 'processing' THEN n.lease_expires_at END,
           n.base_offset,
           CASE WHEN n.rn = 1 THEN s.codec END,
           CASE WHEN n.rn = 1 THEN s.producer END,
           CASE WHEN n.rn = 1 THEN s.blob END
    FROM numbered n
    JOIN queen.log_segments s
      ON s.partition_id = n.partition_id AND s.base_offset = n.base_offset
    ORDER BY n.created_at DESC, n.partition_id, n.off DESC;
$$;

CREATE OR REPLACE FUNCTION queen.message_get_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea,
    error_message    text,
    retry_count      integer,
    queue_config     jsonb,
    consumer_groups  jsonb
) LANGUAGE sql STABLE AS $$
    SELECT q.name, p.name, q.namespace, q.task, q.priority, d.message_offset, s.created_at,
           CASE WHEN d.message_offset <= coalesce(c.committed, -1) THEN 'completed'
                WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                     AND d.message_offset <= c.batch_end THEN 'processing'
                ELSE 'pending' END,
           CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > now()
                     AND d.message_offset > c.committed AND d.message_offset <= c.batch_end
                THEN c.lease_expires_at END,
           s.base_offset, s.codec, s.producer, s.blob,
           dl.error_message, dl.retry_count,
           to_jsonb(q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task' - 'created_at'
               - 'updated_at',
           coalesce((SELECT jsonb_agg(jsonb_build_object(
                         'consumerGroup', g.consumer_group,
                         'committed', g.committed,
                         'status', CASE WHEN d.message_offset <= g.committed THEN 'completed'
                                        WHEN g.worker_id IS NOT NULL
                                             AND g.lease_expires_at > now()
                                             AND d.message_offset <= g.batch_end
                                        THEN 'processing' ELSE 'pending' END,
                         'leaseActive', g.worker_id IS NOT NULL AND g.lease_expires_at > now())
                         ORDER BY g.consumer_group)
                     FROM queen.log_consumers g WHERE g.partition_id = p.id), '[]'::jsonb)
    -- The message's offset by its transaction id (segments' txn_hashes, else legacy
    -- dedup rows): see 015_txn_hash.
    FROM (SELECT p_partition_id AS partition_id, p_transaction_id AS transaction_id,
                 queen.log_find_offset_v1(p_partition_id, p_transaction_id) AS message_offset) d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    JOIN LATERAL (
        SELECT s.* FROM queen.log_segments s
        WHERE s.partition_id = d.partition_id AND s.base_offset <= d.message_offset
        ORDER BY s.base_offset DESC LIMIT 1
    ) s ON s.end_offset >= d.message_offset
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    LEFT JOIN LATERAL (
        SELECT x.error_message, x.retry_count FROM queen.dead_letters x
        WHERE x.partition_id = d.partition_id AND x.transaction_id = d.transaction_id
        ORDER BY x.failed_at DESC LIMIT 1
    ) dl ON true
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
      AND q.tenant = p_tenant;
$$;

-- ---- sql/040_message_erase.sql
-- 040_message_erase: delete one message's content.
--
-- A log keeps dense offsets, so a message cannot leave its segment; DELETE of a message
-- erases it instead: its payload becomes empty (rendered as `data: null`), its frame stays
-- (same id, transaction id and offset, so a consumer holding it can still ack it), and its
-- dead letters go. The broker rewrites the segment blob; PostgreSQL only stores it.
--
-- queen.message_segment_lock_v1(p_tenant, p_partition_id, p_transaction_id)
--   The message's offset and its segment (base_offset, codec, blob), the segment row locked
--   FOR UPDATE until the caller's transaction ends, so two erasures of one segment queue.
--   No row when the message is unknown.
-- queen.message_segment_rewrite_v1(p_partition_id, p_base_offset, p_transaction_id, p_blob,
--                                   p_codec)
--   Stores the rewritten blob (and its codec) and deletes the message's dead letters;
--   returns the number of dead letters deleted. Call in the same transaction as the lock.

CREATE OR REPLACE FUNCTION queen.message_segment_lock_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (message_offset bigint, base_offset bigint, codec smallint, blob bytea)
LANGUAGE sql VOLATILE AS $$
    SELECT d.message_offset, s.base_offset, s.codec, s.blob
    -- The message's offset by its transaction id (segments' txn_hashes, else legacy
    -- dedup rows): see 015_txn_hash.
    FROM (SELECT p_partition_id AS partition_id, p_transaction_id AS transaction_id,
                 queen.log_find_offset_v1(p_partition_id, p_transaction_id) AS message_offset) d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    JOIN queen.log_segments s
      ON s.partition_id = d.partition_id
     AND s.base_offset = (SELECT max(x.base_offset) FROM queen.log_segments x
                          WHERE x.partition_id = d.partition_id
                            AND x.base_offset <= d.message_offset)
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
      AND q.tenant = p_tenant AND s.end_offset >= d.message_offset
    FOR UPDATE OF s;
$$;

CREATE OR REPLACE FUNCTION queen.message_segment_rewrite_v1(
    p_partition_id   bigint,
    p_base_offset    bigint,
    p_transaction_id text,
    p_blob           bytea,
    p_codec          smallint
) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_dead integer;
BEGIN
    UPDATE queen.log_segments s SET blob = p_blob, codec = p_codec
    WHERE s.partition_id = p_partition_id AND s.base_offset = p_base_offset;
    DELETE FROM queen.dead_letters d
    WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id;
    GET DIAGNOSTICS v_dead = ROW_COUNT;
    RETURN v_dead;
END;
$$;

-- ---- sql/041_queue_metrics.sql
-- 041_queue_metrics: per-queue depth, lag and throughput, for /metrics/prometheus and the
-- status endpoints.
--
-- queen.queue_metrics_v1(p_tenant, p_window_seconds)
--   One row per queue of the tenant (of every tenant when p_tenant is NULL):
--     depth         messages the queue-mode cursor has not passed (last_offset - committed,
--                   summed over partitions; a queue never popped in queue mode counts all);
--     lag_seconds   age of the oldest such message: now - created_at of the segment that
--                   holds committed + 1, the largest over partitions; 0 when depth is 0;
--     throughput    messages appended in the last p_window_seconds: per partition,
--                   last_offset minus the end offset of the newest segment created before
--                   the window (a backward index walk over the window's segments only;
--                   partitions not written in the window are skipped by last_write_at).
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.queue_metrics_v1(p_tenant text, p_window_seconds integer)
RETURNS TABLE (
    tenant      text,
    queue_name  text,
    depth       bigint,
    lag_seconds double precision,
    throughput  bigint
) LANGUAGE sql STABLE AS $$
    SELECT q.tenant, q.name,
           coalesce(sum(greatest(p.last_offset - coalesce(c.committed, -1), 0)), 0)::bigint,
           coalesce(max(CASE WHEN o.created_at IS NULL THEN 0
                             ELSE greatest(extract(epoch FROM now() - o.created_at), 0)
                        END), 0)::double precision,
           coalesce(sum(w.appended), 0)::bigint
    FROM queen.queues q
    LEFT JOIN queen.log_partitions p ON p.queue_id = q.id
    LEFT JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = '__QUEUE_MODE__'
    LEFT JOIN LATERAL (
        SELECT s.created_at FROM queen.log_segments s
        WHERE s.partition_id = p.id
          AND p.last_offset > coalesce(c.committed, -1)
          AND s.base_offset <= coalesce(c.committed, -1) + 1
        ORDER BY s.base_offset DESC LIMIT 1
    ) o ON true
    LEFT JOIN LATERAL (
        SELECT p.last_offset - coalesce((
                   SELECT s.end_offset FROM queen.log_segments s
                   WHERE s.partition_id = p.id
                     AND s.created_at <= now() - make_interval(secs => p_window_seconds)
                   ORDER BY s.base_offset DESC LIMIT 1), -1) AS appended
        WHERE p.last_write_at >= date_trunc('second',
                                            now() - make_interval(secs => p_window_seconds))
    ) w ON true
    WHERE p_tenant IS NULL OR q.tenant = p_tenant
    GROUP BY q.tenant, q.name;
$$;

-- ---- sql/042_status.sql
-- 042_status: the dashboard documents of the status and analytics endpoints.
--
-- Every number comes from the tables: offsets and cursors (totals, pending, processing,
-- completed), segment rows (messages pushed in a window: the msg_count of segments whose
-- created_at falls in it) and dead letters (failed_at in the window). Nothing records acks
-- over time, so "consumed" is only known as the cursors' position now.
--
-- queen.status_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) -> jsonb
--   {window: {from, to}, queues, partitions, messages: {total, pending, processing,
--   completed, deadLetter}, pushed, pushedPerSecond, deadLettered}: totals over the matching
--   queues, and what happened in [p_from, p_to].
-- queen.status_queues_v1(p_tenant, p_from, p_to, p_namespace, p_task, p_limit, p_offset)
--   -> jsonb {queues: [{name, namespace, task, partitions, messages: {...}, pushed,
--   deadLettered, lagSeconds}], total}.
-- queen.status_queue_v1(p_tenant, p_queue, p_from, p_to) -> jsonb, the same entry plus
--   {partitions: [{name, messages: {...}, lastWriteAt}]}, or NULL for an unknown queue.
-- queen.status_analytics_v1(p_tenant, p_interval, p_from, p_to, p_queue, p_namespace,
--   p_task) -> jsonb {interval, from, to, buckets: [{bucket, pushed, deadLettered}]},
--   buckets by date_trunc(p_interval) (hour, day, week or month).
-- Read only; no locks, no notifications.

CREATE OR REPLACE FUNCTION queen.status_queue_rows_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS TABLE (queue_id bigint, name text, namespace text, task text, partitions bigint,
               total bigint, pending bigint, processing bigint, completed bigint,
               dead_letter bigint, pushed bigint, dead_lettered bigint,
               lag_seconds double precision)
LANGUAGE sql STABLE AS $$
    WITH lags AS (SELECT m.queue_name, m.lag_seconds FROM queen.queue_metrics_v1(p_tenant, 60) m)
    SELECT q.id, q.name, q.namespace, q.task,
           count(s.partition_id), coalesce(sum(s.total), 0)::bigint,
           coalesce(sum(s.pending), 0)::bigint, coalesce(sum(s.processing), 0)::bigint,
           coalesce(sum(s.completed), 0)::bigint, coalesce(sum(s.dead_letter), 0)::bigint,
           coalesce((SELECT sum(g.msg_count) FROM queen.log_segments g
                     JOIN queen.log_partitions p ON p.id = g.partition_id
                     WHERE p.queue_id = q.id AND g.created_at BETWEEN p_from AND p_to), 0)::bigint,
           (SELECT count(*) FROM queen.dead_letters d
            JOIN queen.log_partitions p ON p.id = d.partition_id
            WHERE p.queue_id = q.id AND d.failed_at BETWEEN p_from AND p_to),
           coalesce((SELECT l.lag_seconds FROM lags l WHERE l.queue_name = q.name), 0)
    FROM queen.queues q
    LEFT JOIN queen.partition_stats_v1(p_tenant, p_queue) s ON s.queue_id = q.id
    WHERE q.tenant = p_tenant
      AND (p_queue IS NULL OR q.name = p_queue)
      AND (p_namespace IS NULL OR q.namespace = p_namespace)
      AND (p_task IS NULL OR q.task = p_task)
    GROUP BY q.id, q.name, q.namespace, q.task;
$$;

CREATE OR REPLACE FUNCTION queen.status_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'queues', count(*),
        'partitions', coalesce(sum(r.partitions), 0),
        'messages', jsonb_build_object(
            'total', coalesce(sum(r.total), 0), 'pending', coalesce(sum(r.pending), 0),
            'processing', coalesce(sum(r.processing), 0),
            'completed', coalesce(sum(r.completed), 0),
            'deadLetter', coalesce(sum(r.dead_letter), 0)),
        'pushed', coalesce(sum(r.pushed), 0),
        'pushedPerSecond', round(coalesce(sum(r.pushed), 0)
                                 / greatest(extract(epoch FROM p_to - p_from), 1), 3),
        'deadLettered', coalesce(sum(r.dead_lettered), 0))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task) r;
$$;

CREATE OR REPLACE FUNCTION queen.status_queues_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_namespace text, p_task text,
    p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH rows AS (
        SELECT * FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, NULL, p_namespace,
                                                 p_task)
    ), page AS (
        SELECT * FROM rows ORDER BY name LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'queues', coalesce(jsonb_agg(jsonb_build_object(
            'name', r.name, 'namespace', r.namespace, 'task', r.task,
            'partitions', r.partitions,
            'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                           'processing', r.processing,
                                           'completed', r.completed,
                                           'deadLetter', r.dead_letter),
            'pushed', r.pushed, 'deadLettered', r.dead_lettered,
            'lagSeconds', round(r.lag_seconds::numeric, 3)) ORDER BY r.name), '[]'::jsonb),
        'total', (SELECT count(*) FROM rows))
    FROM page r;
$$;

CREATE OR REPLACE FUNCTION queen.status_queue_v1(
    p_tenant text, p_queue text, p_from timestamptz, p_to timestamptz)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', r.name, 'namespace', r.namespace, 'task', r.task,
        'window', jsonb_build_object('from', p_from, 'to', p_to),
        'messages', jsonb_build_object('total', r.total, 'pending', r.pending,
                                       'processing', r.processing, 'completed', r.completed,
                                       'deadLetter', r.dead_letter),
        'pushed', r.pushed, 'deadLettered', r.dead_lettered,
        'lagSeconds', round(r.lag_seconds::numeric, 3),
        'partitions', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'name', s.partition_name, 'lastWriteAt', s.last_write_at,
                'messages', jsonb_build_object('total', s.total, 'pending', s.pending,
                                               'processing', s.processing,
                                               'completed', s.completed,
                                               'deadLetter', s.dead_letter))
                ORDER BY s.partition_name)
            FROM queen.partition_stats_v1(p_tenant, p_queue) s), '[]'::jsonb))
    FROM queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, NULL, NULL) r;
$$;

CREATE OR REPLACE FUNCTION queen.status_analytics_v1(
    p_tenant text, p_interval text, p_from timestamptz, p_to timestamptz, p_queue text,
    p_namespace text, p_task text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH qs AS (
        SELECT q.id FROM queen.queues q
        WHERE q.tenant = p_tenant
          AND (p_queue IS NULL OR q.name = p_queue)
          AND (p_namespace IS NULL OR q.namespace = p_namespace)
          AND (p_task IS NULL OR q.task = p_task)
    ), pushed AS (
        SELECT date_trunc(p_interval, g.created_at) AS bucket, sum(g.msg_count) AS n
        FROM queen.log_segments g
        JOIN queen.log_partitions p ON p.id = g.partition_id
        WHERE p.queue_id IN (SELECT id FROM qs) AND g.created_at BETWEEN p_from AND p_to
        GROUP BY 1
    ), dead AS (
        SELECT date_trunc(p_interval, d.failed_at) AS bucket, count(*) AS n
        FROM queen.dead_letters d
        JOIN queen.log_partitions p ON p.id = d.partition_id
        WHERE p.queue_id IN (SELECT id FROM qs) AND d.failed_at BETWEEN p_from AND p_to
        GROUP BY 1
    )
    SELECT jsonb_build_object(
        'interval', p_interval, 'from', p_from, 'to', p_to,
        'buckets', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                'bucket', b.bucket, 'pushed', coalesce(pu.n, 0),
                'deadLettered', coalesce(de.n, 0)) ORDER BY b.bucket)
            FROM (SELECT bucket FROM pushed UNION SELECT bucket FROM dead) b
            LEFT JOIN pushed pu ON pu.bucket = b.bucket
            LEFT JOIN dead de ON de.bucket = b.bucket), '[]'::jsonb));
$$;

-- ---- sql/043_traces.sql
-- 043_traces: message traces, the events consumers record about a message.
--
-- Tables: queen.message_traces, one row per recorded event, keyed to its partition (deleted
-- with it) and to the message by transaction id; queen.message_trace_names, the names an
-- event was filed under (several per event), for the by-name lookups.
--
-- queen.trace_add_v1(p_tenant, p_partition_id, p_transaction_id, p_group, p_names,
--                    p_event_type, p_data, p_worker) -> bigint
--   Stores one event and its names; returns its id, or NULL when the partition is not the
--   tenant's (nothing stored). Takes the partition row's FOR KEY SHARE lock (foreign key).
-- queen.traces_for_message_v1(p_tenant, p_partition_id, p_transaction_id) -> jsonb
--   {traces: [{id, event_type, data, consumer_group, worker_id, created_at, trace_names}]},
--   oldest first.
-- queen.traces_by_name_v1(p_tenant, p_name, p_from, p_to, p_limit, p_offset) -> jsonb
--   {traces: [... plus transaction_id, partition_id, queue, partition], total,
--   pagination: {limit, offset}}, newest first.
-- queen.trace_names_v1(p_tenant, p_search, p_limit, p_offset) -> jsonb
--   {trace_names: [{trace_name, trace_count, message_count, last_seen}], total,
--   pagination: {limit, offset}}, most recently seen first; p_search matches a substring.
-- No notifications.

CREATE TABLE IF NOT EXISTS queen.message_traces (
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
CREATE INDEX IF NOT EXISTS message_traces_message_idx
    ON queen.message_traces (partition_id, transaction_id, created_at);

CREATE TABLE IF NOT EXISTS queen.message_trace_names (
    trace_id   bigint      NOT NULL REFERENCES queen.message_traces (id) ON DELETE CASCADE,
    tenant     text        NOT NULL,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (trace_id, name)
);
CREATE INDEX IF NOT EXISTS message_trace_names_name_idx
    ON queen.message_trace_names (tenant, name, created_at);

CREATE OR REPLACE FUNCTION queen.trace_add_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text,
    p_group          text,
    p_names          text[],
    p_event_type     text,
    p_data           jsonb,
    p_worker         text
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_id bigint;
    v_at timestamptz;
BEGIN
    PERFORM 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO queen.message_traces
        (tenant, partition_id, transaction_id, consumer_group, event_type, data, worker_id)
    VALUES (p_tenant, p_partition_id, p_transaction_id, p_group, p_event_type, p_data, p_worker)
    RETURNING id, created_at INTO v_id, v_at;
    INSERT INTO queen.message_trace_names (trace_id, tenant, name, created_at)
    SELECT DISTINCT v_id, p_tenant, n, v_at FROM unnest(coalesce(p_names, '{}')) n
    ON CONFLICT DO NOTHING;
    RETURN v_id;
END;
$$;

CREATE OR REPLACE FUNCTION queen.traces_for_message_v1(
    p_tenant text, p_partition_id bigint, p_transaction_id text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('traces', coalesce(jsonb_agg(jsonb_build_object(
        'id', t.id::text, 'event_type', t.event_type, 'data', t.data,
        'consumer_group', t.consumer_group, 'worker_id', t.worker_id,
        'created_at', t.created_at,
        'trace_names', coalesce((SELECT jsonb_agg(n.name ORDER BY n.name)
                                 FROM queen.message_trace_names n WHERE n.trace_id = t.id),
                                '[]'::jsonb))
        ORDER BY t.created_at, t.id), '[]'::jsonb))
    FROM queen.message_traces t
    WHERE t.tenant = p_tenant AND t.partition_id = p_partition_id
      AND t.transaction_id = p_transaction_id;
$$;

CREATE OR REPLACE FUNCTION queen.traces_by_name_v1(
    p_tenant text, p_name text, p_from timestamptz, p_to timestamptz, p_limit integer,
    p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH matching AS (
        SELECT n.trace_id, n.created_at FROM queen.message_trace_names n
        WHERE n.tenant = p_tenant AND n.name = p_name
          AND (p_from IS NULL OR n.created_at >= p_from)
          AND (p_to IS NULL OR n.created_at <= p_to)
    ), page AS (
        SELECT m.trace_id FROM matching m
        ORDER BY m.created_at DESC, m.trace_id DESC LIMIT p_limit OFFSET p_offset
    )
    SELECT jsonb_build_object(
        'traces', coalesce((SELECT jsonb_agg(jsonb_build_object(
            'id', t.id::text, 'transaction_id', t.transaction_id,
            'partition_id', t.partition_id::text, 'queue', q.name, 'partition', p.name,
            'event_type', t.event_type, 'data', t.data, 'consumer_group', t.consumer_group,
            'worker_id', t.worker_id, 'created_at', t.created_at,
            'trace_names', (SELECT jsonb_agg(n.name ORDER BY n.name)
                            FROM queen.message_trace_names n WHERE n.trace_id = t.id))
            ORDER BY t.created_at DESC, t.id DESC)
            FROM page pg
            JOIN queen.message_traces t ON t.id = pg.trace_id
            JOIN queen.log_partitions p ON p.id = t.partition_id
            JOIN queen.queues q ON q.id = p.queue_id), '[]'::jsonb),
        'total', (SELECT count(*) FROM matching),
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
$$;

CREATE OR REPLACE FUNCTION queen.trace_names_v1(
    p_tenant text, p_search text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    WITH names AS (
        SELECT n.name, count(*) AS traces,
               count(DISTINCT (t.partition_id, t.transaction_id)) AS messages,
               max(n.created_at) AS last_seen
        FROM queen.message_trace_names n
        JOIN queen.message_traces t ON t.id = n.trace_id
        WHERE n.tenant = p_tenant
          AND (p_search IS NULL OR strpos(lower(n.name), lower(p_search)) > 0)
        GROUP BY n.name
    )
    SELECT jsonb_build_object(
        'trace_names', coalesce((SELECT jsonb_agg(jsonb_build_object(
            'trace_name', x.name, 'trace_count', x.traces, 'message_count', x.messages,
            'last_seen', x.last_seen) ORDER BY x.last_seen DESC, x.name)
            FROM (SELECT * FROM names ORDER BY last_seen DESC, name
                  LIMIT p_limit OFFSET p_offset) x), '[]'::jsonb),
        'total', (SELECT count(*) FROM names),
        'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset));
$$;

-- ---- sql/044_retention.sql
-- 044_retention: the retention sweeper's lease and its bounded batches.
--
-- queen.sweeper_lease_v1(p_holder, p_lease_ms) -> boolean
--   Takes or renews the single cluster-wide sweeper lease (the row of queen.sweeper_lease)
--   when it is free, expired, or already p_holder's; true when p_holder holds it now. The
--   row stays locked to the caller's COMMIT, so a batch run in the same transaction can
--   never overlap another node's: the other node waits for the commit, then sees a live
--   lease that is not its own. A dead holder's lease expires and the next node takes it.
-- queen.sweeper_release_v1(p_holder): a stopping holder hands the lease over at once.
--
-- queen.retention_segments_v1(p_after, p_budget, p_default_secs, p_default_completed_secs)
--   One bounded batch of segment retention over partitions with id > p_after, in id order.
--   A queue's retention is retention_seconds, or p_default_secs when that is 0; likewise
--   completed_retention_seconds / p_default_completed_secs; 0 after that means forever.
--   Deletes, per partition, the oldest segments that are
--     older than the retention (consumed or not), or
--     older than the completed retention AND wholly at or below every cursor of the
--     partition (queue mode and each consumer group; a group registered on the queue
--     without a cursor here has passed nothing, and a partition without cursors neither);
--   always a prefix of the partition (created_at grows with base_offset), with the legacy
--   queen.dedup rows of the deleted offsets. At most p_budget segments per call, and at
--   most 4 x p_budget partitions visited. Returns one row per partition it deleted from
--   (tenant, queue, segments, bytes, dedup_rows), then a last row with queue NULL whose
--   resume_after is the p_after of the next call (NULL: the pass is complete).
--   Cursors are not touched: a consumer behind a deleted prefix continues at the first
--   remaining segment (the pop's forward scan), and a partition left without segments is
--   sealed by the pop. Row locks on the deleted segments only.
--
-- queen.retention_rows_v1(p_budget, p_dead_letter_secs, p_trace_secs)
--   Deletes at most p_budget dead letters failed longer than p_dead_letter_secs ago, and
--   at most p_budget traces recorded longer than p_trace_secs ago (their names cascade);
--   0 keeps them forever. Returns (dead_letters, traces) deleted.
--
-- queen.retention_idle_v1(p_budget, p_empty_partition_secs, p_idle_group_secs)
--   With p_empty_partition_secs > 0: deletes at most p_budget partitions without segments,
--   dead letters or traces, not written for that long and without a live lease (their
--   cursors cascade; a later push creates the partition again, from offset 0). Partitions
--   and cursor rows another transaction holds are skipped (SKIP LOCKED), never waited for.
--   With p_idle_group_secs > 0: forgets at most p_budget consumer groups (never queue
--   mode) of a queue whose cursors there were neither consumed nor leased for that long,
--   registered longer ago, and hold no live lease: their cursors and subscription row.
--   Returns (partitions, cursors) deleted. No notifications anywhere in this file.

CREATE TABLE IF NOT EXISTS queen.sweeper_lease (
    id         integer     PRIMARY KEY CHECK (id = 1),
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
-- Expiry of dead letters and traces walks these instead of the tables.
CREATE INDEX IF NOT EXISTS dead_letters_failed_at_idx ON queen.dead_letters (failed_at);
CREATE INDEX IF NOT EXISTS message_traces_created_at_idx ON queen.message_traces (created_at);

CREATE OR REPLACE FUNCTION queen.sweeper_lease_v1(p_holder text, p_lease_ms integer)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_holder text;
BEGIN
    INSERT INTO queen.sweeper_lease AS l (id, holder, expires_at)
    VALUES (1, p_holder, clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0))
    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
        WHERE l.holder = EXCLUDED.holder OR l.expires_at < clock_timestamp()
    RETURNING l.holder INTO v_holder;
    RETURN v_holder IS NOT NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queen.sweeper_release_v1(p_holder text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    UPDATE queen.sweeper_lease SET expires_at = '-infinity' WHERE holder = p_holder;
$$;

CREATE OR REPLACE FUNCTION queen.retention_segments_v1(
    p_after                  bigint,
    p_budget                 integer,
    p_default_secs           integer,
    p_default_completed_secs integer
) RETURNS TABLE (
    tenant       text,
    queue        text,
    segments     bigint,
    bytes        bigint,
    dedup_rows   bigint,
    resume_after bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := clock_timestamp();
    v_left     integer := greatest(p_budget, 1);
    v_visits   integer := 0;
    v_last     bigint := p_after;
    v_more     boolean := false;
    p          record;
    s          record;
    v_time_cut timestamptz;
    v_done_cut timestamptz;
    v_min      bigint;
    v_cursors  bigint;
    v_missing  bigint;
    v_upto     bigint;
    v_upto_end bigint;
BEGIN
    FOR p IN
        SELECT lp.id, q.id AS qid, q.tenant AS q_tenant, q.name AS q_name,
               CASE WHEN q.retention_seconds > 0 THEN q.retention_seconds
                    ELSE p_default_secs END AS r,
               CASE WHEN q.completed_retention_seconds > 0 THEN q.completed_retention_seconds
                    ELSE p_default_completed_secs END AS c
        FROM queen.log_partitions lp
        JOIN queen.queues q ON q.id = lp.queue_id
        WHERE lp.id > coalesce(p_after, -1)
          AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0
               OR p_default_secs > 0 OR p_default_completed_secs > 0)
        ORDER BY lp.id
    LOOP
        IF v_left <= 0 OR v_visits >= 4 * greatest(p_budget, 1) THEN
            v_more := true;
            EXIT;
        END IF;
        v_visits := v_visits + 1;
        v_last := p.id;
        v_time_cut := CASE WHEN p.r > 0 THEN v_now - make_interval(secs => p.r) END;
        v_done_cut := CASE WHEN p.c > 0 THEN v_now - make_interval(secs => p.c) END;
        v_min := NULL;
        IF v_done_cut IS NOT NULL THEN
            SELECT min(lc.committed), count(*) INTO v_min, v_cursors
            FROM queen.log_consumers lc WHERE lc.partition_id = p.id;
            SELECT count(*) INTO v_missing
            FROM queen.consumer_groups_metadata m
            WHERE m.queue_id = p.qid
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                              WHERE lc.partition_id = p.id
                                AND lc.consumer_group = m.consumer_group);
            IF v_cursors = 0 OR v_missing > 0 THEN
                v_min := NULL;
            END IF;
        END IF;
        CONTINUE WHEN v_time_cut IS NULL AND v_min IS NULL;

        v_upto := NULL;
        FOR s IN
            SELECT ls.base_offset, ls.end_offset, ls.created_at
            FROM queen.log_segments ls WHERE ls.partition_id = p.id
            ORDER BY ls.base_offset
        LOOP
            EXIT WHEN NOT ((v_time_cut IS NOT NULL AND s.created_at < v_time_cut)
                           OR (v_min IS NOT NULL AND s.end_offset <= v_min
                               AND s.created_at < v_done_cut));
            IF v_left <= 0 THEN
                -- More to delete here: the next call starts with this partition again.
                v_more := true;
                v_last := p.id - 1;
                EXIT;
            END IF;
            v_upto := s.base_offset;
            v_upto_end := s.end_offset;
            v_left := v_left - 1;
        END LOOP;

        IF v_upto IS NOT NULL THEN
            WITH d AS (
                DELETE FROM queen.log_segments ls
                WHERE ls.partition_id = p.id AND ls.base_offset <= v_upto
                RETURNING octet_length(ls.blob) AS n
            )
            SELECT count(*), coalesce(sum(d.n), 0) INTO segments, bytes FROM d;
            DELETE FROM queen.dedup dd
            WHERE dd.partition_id = p.id AND dd.message_offset <= v_upto_end;
            GET DIAGNOSTICS dedup_rows = ROW_COUNT;
            tenant := p.q_tenant;
            queue := p.q_name;
            resume_after := NULL;
            RETURN NEXT;
        END IF;
        EXIT WHEN v_more;
    END LOOP;

    tenant := NULL;
    queue := NULL;
    segments := 0;
    bytes := 0;
    dedup_rows := 0;
    resume_after := CASE WHEN v_more THEN v_last END;
    RETURN NEXT;
END;
$$;

CREATE OR REPLACE FUNCTION queen.retention_rows_v1(
    p_budget           integer,
    p_dead_letter_secs integer,
    p_trace_secs       integer
) RETURNS TABLE (dead_letters bigint, traces bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    dead_letters := 0;
    traces := 0;
    IF p_dead_letter_secs > 0 THEN
        DELETE FROM queen.dead_letters d WHERE d.id IN (
            SELECT x.id FROM queen.dead_letters x
            WHERE x.failed_at < clock_timestamp() - make_interval(secs => p_dead_letter_secs)
            ORDER BY x.failed_at LIMIT p_budget);
        GET DIAGNOSTICS dead_letters = ROW_COUNT;
    END IF;
    IF p_trace_secs > 0 THEN
        DELETE FROM queen.message_traces t WHERE t.id IN (
            SELECT x.id FROM queen.message_traces x
            WHERE x.created_at < clock_timestamp() - make_interval(secs => p_trace_secs)
            ORDER BY x.created_at LIMIT p_budget);
        GET DIAGNOSTICS traces = ROW_COUNT;
    END IF;
    RETURN NEXT;
END;
$$;

CREATE OR REPLACE FUNCTION queen.retention_idle_v1(
    p_budget               integer,
    p_empty_partition_secs integer,
    p_idle_group_secs      integer
) RETURNS TABLE (partitions bigint, cursors bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := clock_timestamp();
    v_pids bigint[];
    v_n    bigint;
    g      record;
BEGIN
    partitions := 0;
    cursors := 0;
    IF p_empty_partition_secs > 0 THEN
        SELECT array_agg(x.id) INTO v_pids FROM (
            SELECT lp.id FROM queen.log_partitions lp
            WHERE lp.last_write_at < v_now - make_interval(secs => p_empty_partition_secs)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.message_traces t WHERE t.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                              WHERE c.partition_id = lp.id AND c.lease_expires_at > v_now)
            ORDER BY lp.id LIMIT p_budget
            -- A push holding the row waits us out, or we skip it: never block traffic.
            FOR UPDATE SKIP LOCKED
        ) x;
        IF v_pids IS NOT NULL THEN
            -- Only partitions whose every cursor row we can lock now: the cascade below then
            -- waits for no pop (a pop holding one would otherwise deadlock with us).
            SELECT array_agg(x.id) INTO v_pids FROM unnest(v_pids) AS x (id)
            WHERE (SELECT count(*) FROM queen.log_consumers c WHERE c.partition_id = x.id)
                = (SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers c
                                         WHERE c.partition_id = x.id
                                         FOR UPDATE SKIP LOCKED) l);
        END IF;
        IF v_pids IS NOT NULL THEN
            DELETE FROM queen.dedup d WHERE d.partition_id = ANY (v_pids);
            -- Re-checked under the row lock: a push may have landed since the scan.
            DELETE FROM queen.log_partitions lp
            WHERE lp.id = ANY (v_pids)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id);
            GET DIAGNOSTICS partitions = ROW_COUNT;
        END IF;
    END IF;
    IF p_idle_group_secs > 0 THEN
        FOR g IN
            SELECT m.consumer_group, m.queue_id FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group <> '__QUEUE_MODE__'
              AND m.created_at < v_now - make_interval(secs => p_idle_group_secs)
              AND NOT EXISTS (
                  SELECT 1 FROM queen.log_consumers c
                  JOIN queen.log_partitions lp ON lp.id = c.partition_id
                  WHERE lp.queue_id = m.queue_id AND c.consumer_group = m.consumer_group
                    AND (c.lease_expires_at > v_now
                         OR c.last_consumed_at >= v_now - make_interval(secs => p_idle_group_secs)
                         OR c.lease_acquired_at >= v_now - make_interval(secs => p_idle_group_secs)))
            LIMIT p_budget
        LOOP
            DELETE FROM queen.log_consumers c USING queen.log_partitions lp
            WHERE lp.id = c.partition_id AND lp.queue_id = g.queue_id
              AND c.consumer_group = g.consumer_group;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            cursors := cursors + v_n;
            DELETE FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group = g.consumer_group AND m.queue_id = g.queue_id;
        END LOOP;
    END IF;
    RETURN NEXT;
END;
$$;

-- ---- sql/045_dead_letter_requeue_v2.sql
-- 045_dead_letter_requeue_v2: a dead-letter retry appends a NEW message, a copy of the
-- dead one under its own transaction id, and leaves the original where it is.
--
-- queen.dead_letter_requeue_v2(p_tenant, p_partition_id, p_transaction_id,
--                              p_new_transaction_id, p_message_id, p_blob, p_codec,
--                              p_producer)
--   Replaces dead_letter_requeue_v1 (035), which appended the copy under the ORIGINAL
--   transaction id and deleted the original's legacy dedup row: the id then named two
--   offsets of the partition, so an ack by (partition, transaction id) from a group that
--   had not yet passed the original could land on the wrong one (a nack of the original
--   rewound to the copy; on segments without txn_hashes, resolved through the dedup row,
--   the original could no longer be acked at all).
--   Here the log stays append-only and every message keeps one name. p_blob is a one-frame
--   segment the broker built from the dead letter's copy of the payload, under the new
--   message id p_message_id and the new transaction id p_new_transaction_id (the broker
--   derives it from the original's, see src/http/admin/dlq.rs). In one transaction it
--   locks the partition row (FOR NO KEY UPDATE, as a push does: appends to one partition
--   are serialised and offsets stay dense), deletes every dead letter of
--   (partition, p_transaction_id) (one per consumer group that filed it: the copy is
--   delivered to every group, as any push is), and appends the copy as one segment after
--   last_offset with its txn_hash. The original's offset, segment, txn_hashes and dedup
--   state are not touched. No dedup check: the new id is fresh (it holds a new UUIDv7).
--   The dedup windows of the brokers learn the segment as they learn any other writer's
--   (log_push_v2 answers stale and hands it over). Not counted against maxSize: a retry
--   is an operator's act on a message the queue already held.
--   Rows: one (queue_name, partition_name, base_offset, removed, retried_offset) on
--   success, retried_offset being the original's offset (the lowest dead letter's); none
--   when the partition is not the tenant's or no dead letter matches (a concurrent retry
--   won).

CREATE OR REPLACE FUNCTION queen.dead_letter_requeue_v2(
    p_tenant             text,
    p_partition_id       bigint,
    p_transaction_id     text,
    p_new_transaction_id text,
    p_message_id         uuid,
    p_blob               bytea,
    p_codec              smallint,
    p_producer           text
) RETURNS TABLE (
    queue_name     text,
    partition_name text,
    base_offset    bigint,
    removed        integer,
    retried_offset bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_queue     text;
    v_partition text;
    v_last      bigint;
    v_removed   integer;
    v_retried   bigint;
    v_prev_at   timestamptz;
    v_created   timestamptz;
BEGIN
    SELECT q.name, p.name, p.last_offset INTO v_queue, v_partition, v_last
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant
    FOR NO KEY UPDATE OF p;
    IF v_queue IS NULL THEN
        RETURN;
    END IF;

    WITH gone AS (
        DELETE FROM queen.dead_letters d
        WHERE d.partition_id = p_partition_id AND d.transaction_id = p_transaction_id
        RETURNING d.message_offset
    )
    SELECT count(*)::integer, min(g.message_offset) INTO v_removed, v_retried FROM gone g;
    IF v_removed = 0 THEN
        RETURN;
    END IF;

    -- created_at must never go backwards within a partition (as in log_push_v2).
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = p_partition_id
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(clock_timestamp(), v_prev_at);

    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    VALUES
        (p_partition_id, v_last + 1, v_last + 1, 1, v_created, p_codec, p_producer, p_blob,
         ARRAY[queen.txn_hash(p_new_transaction_id)]);

    UPDATE queen.log_partitions p
    SET last_offset = v_last + 1,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = p_partition_id;

    RETURN QUERY SELECT v_queue, v_partition, v_last + 1, v_removed, v_retried;
END;
$$;

-- ---- sql/048_log_render_failed.sql
-- 048_log_render_failed: give back the part of a leased delivery the broker could not render.
--
-- queen.log_render_failed_v1(p_pid, p_group, p_lease, p_from, p_to, p_damaged, p_error)
--   The broker claimed offsets of partition p_pid for p_group under lease p_lease, and
--   offsets p_from .. p_to (the first unrenderable message, and through the end of its
--   segment's slice when the segment itself is damaged) could not be turned into an
--   answer: a segment that does not decompress or parse (p_damaged: no node can read it),
--   or a payload sealed under a key this node does not hold (not damaged: a node with the
--   right key can). Locks the consumer row (FOR UPDATE) and does nothing unless p_lease is
--   still its lease. Then:
--     p_from after the lease's first delivered offset (attempt_offset): the lease is cut to
--       end before it (batch_end = p_from - 1); the broker answers the messages before it.
--       Answers 'truncated'.
--     p_from is the first delivered offset, p_damaged, and the deliveries charged at it
--       (attempt_count, which every claim starting there counts) are past the queue's
--       retry_limit: offsets p_from .. p_to are filed in queen.dead_letters (error
--       p_error, transaction id 'unreadable:<offset>' since it cannot be read, with the
--       copy of the segment that holds each) and the cursor moves past them; the lease is
--       released. Answers 'dead_lettered'.
--     otherwise the lease is released at once (not left to expire) and the cursor stays:
--       the next pop, on this node or a node that can render it, claims it again. Answers
--       'released'.
--   A message that only this node cannot open is never dead-lettered for it.
--   Answers 'gone' (and changes nothing) when the lease is no longer the row's.

CREATE OR REPLACE FUNCTION queen.log_render_failed_v1(
    p_pid     bigint,
    p_group   text,
    p_lease   text,
    p_from    bigint,
    p_to      bigint,
    p_damaged boolean,
    p_error   text
) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_c     record;
    v_limit integer;
BEGIN
    SELECT c.committed, c.worker_id, c.batch_end, c.attempt_count, c.attempt_offset
    INTO v_c
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
    FOR UPDATE;
    IF NOT FOUND OR v_c.worker_id IS DISTINCT FROM p_lease OR p_to < p_from THEN
        RETURN 'gone';
    END IF;

    IF p_from > coalesce(v_c.attempt_offset, v_c.committed + 1) THEN
        UPDATE queen.log_consumers c SET batch_end = least(c.batch_end, p_from - 1)
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'truncated';
    END IF;

    SELECT q.retry_limit INTO v_limit
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid;

    IF p_damaged AND v_c.attempt_offset = p_from AND v_c.attempt_count > v_limit THEN
        INSERT INTO queen.dead_letters
            (partition_id, consumer_group, message_offset, transaction_id, error_message,
             retry_count, segment_base, codec, producer, created_at, blob)
        SELECT p_pid, p_group, o, 'unreadable:' || o, p_error, v_c.attempt_count,
               s.base_offset, s.codec, s.producer, s.created_at, s.blob
        FROM generate_series(p_from, p_to) AS o
        CROSS JOIN LATERAL (
            SELECT x.base_offset, x.codec, x.producer, x.created_at, x.blob
            FROM queen.log_segments x
            WHERE x.partition_id = p_pid AND x.base_offset <= o
            ORDER BY x.base_offset DESC
            LIMIT 1) s;
        UPDATE queen.log_consumers c SET
            committed = greatest(c.committed, p_to),
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = NULL, failed_count = 0,
            total_consumed = c.total_consumed + greatest(p_to - c.committed, 0),
            last_consumed_at = now()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'dead_lettered';
    END IF;

    UPDATE queen.log_consumers c SET
        worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
        batch_end = NULL, acked_ahead = '{}'
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    RETURN 'released';
END;
$$;

-- ---- sql/049_retention_cursor_lock.sql
-- 049_retention_cursor_lock: completed retention no longer races a consumer starting on
-- the partition it sweeps.
--
-- queen.retention_segments_v1 (044) read a partition's cursors and the groups without one in
-- two statements, and took no lock: a group's first claim on the partition (which inserts
-- its cursor and leases from the start) could commit between them, or run beside the
-- sweep, and the sweeper then deleted segments that group had just leased; its acks
-- answered "Message not found" and those messages were lost to it. The replacement below
-- locks the partition row FOR UPDATE SKIP LOCKED before it reads the cursors (inserting a
-- cursor row takes KEY SHARE on its partition, which FOR UPDATE excludes, so no cursor can
-- start until the batch commits), reads cursors and missing groups in one statement, and
-- leaves a partition it cannot lock at once for the next pass. Everything else, signature
-- and answers included, is as in 044.

CREATE OR REPLACE FUNCTION queen.retention_segments_v1(
    p_after                  bigint,
    p_budget                 integer,
    p_default_secs           integer,
    p_default_completed_secs integer
) RETURNS TABLE (
    tenant       text,
    queue        text,
    segments     bigint,
    bytes        bigint,
    dedup_rows   bigint,
    resume_after bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := clock_timestamp();
    v_left     integer := greatest(p_budget, 1);
    v_visits   integer := 0;
    v_last     bigint := p_after;
    v_more     boolean := false;
    p          record;
    s          record;
    v_time_cut timestamptz;
    v_done_cut timestamptz;
    v_min      bigint;
    v_cursors  bigint;
    v_missing  bigint;
    v_locked   bigint;
    v_upto     bigint;
    v_upto_end bigint;
BEGIN
    FOR p IN
        SELECT lp.id, q.id AS qid, q.tenant AS q_tenant, q.name AS q_name,
               CASE WHEN q.retention_seconds > 0 THEN q.retention_seconds
                    ELSE p_default_secs END AS r,
               CASE WHEN q.completed_retention_seconds > 0 THEN q.completed_retention_seconds
                    ELSE p_default_completed_secs END AS c
        FROM queen.log_partitions lp
        JOIN queen.queues q ON q.id = lp.queue_id
        WHERE lp.id > coalesce(p_after, -1)
          AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0
               OR p_default_secs > 0 OR p_default_completed_secs > 0)
        ORDER BY lp.id
    LOOP
        IF v_left <= 0 OR v_visits >= 4 * greatest(p_budget, 1) THEN
            v_more := true;
            EXIT;
        END IF;
        v_visits := v_visits + 1;
        v_last := p.id;
        v_time_cut := CASE WHEN p.r > 0 THEN v_now - make_interval(secs => p.r) END;
        v_done_cut := CASE WHEN p.c > 0 THEN v_now - make_interval(secs => p.c) END;
        v_min := NULL;
        IF v_done_cut IS NOT NULL THEN
            -- FOR UPDATE conflicts with the KEY SHARE lock that inserting a cursor row takes
            -- on its partition: no group can start a cursor here (and lease what is about
            -- to go) until this batch commits. SKIP LOCKED: never wait; a partition busy
            -- with a push or a new cursor is met again on the next pass.
            v_locked := NULL;
            SELECT lp.id INTO v_locked FROM queen.log_partitions lp
            WHERE lp.id = p.id FOR UPDATE SKIP LOCKED;
            IF v_locked IS NOT NULL THEN
                -- One statement, one snapshot: the cursors and the groups missing one.
                SELECT c.lo, c.n,
                       (SELECT count(*)
                        FROM queen.consumer_groups_metadata m
                        WHERE m.queue_id = p.qid
                          AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                                          WHERE lc.partition_id = p.id
                                            AND lc.consumer_group = m.consumer_group))
                INTO v_min, v_cursors, v_missing
                FROM (SELECT min(lc.committed) AS lo, count(*) AS n
                      FROM queen.log_consumers lc WHERE lc.partition_id = p.id) c;
                IF v_cursors = 0 OR v_missing > 0 THEN
                    v_min := NULL;
                END IF;
            END IF;
        END IF;
        CONTINUE WHEN v_time_cut IS NULL AND v_min IS NULL;

        v_upto := NULL;
        FOR s IN
            SELECT ls.base_offset, ls.end_offset, ls.created_at
            FROM queen.log_segments ls WHERE ls.partition_id = p.id
            ORDER BY ls.base_offset
        LOOP
            EXIT WHEN NOT ((v_time_cut IS NOT NULL AND s.created_at < v_time_cut)
                           OR (v_min IS NOT NULL AND s.end_offset <= v_min
                               AND s.created_at < v_done_cut));
            IF v_left <= 0 THEN
                -- More to delete here: the next call starts with this partition again.
                v_more := true;
                v_last := p.id - 1;
                EXIT;
            END IF;
            v_upto := s.base_offset;
            v_upto_end := s.end_offset;
            v_left := v_left - 1;
        END LOOP;

        IF v_upto IS NOT NULL THEN
            WITH d AS (
                DELETE FROM queen.log_segments ls
                WHERE ls.partition_id = p.id AND ls.base_offset <= v_upto
                RETURNING octet_length(ls.blob) AS n
            )
            SELECT count(*), coalesce(sum(d.n), 0) INTO segments, bytes FROM d;
            DELETE FROM queen.dedup dd
            WHERE dd.partition_id = p.id AND dd.message_offset <= v_upto_end;
            GET DIAGNOSTICS dedup_rows = ROW_COUNT;
            tenant := p.q_tenant;
            queue := p.q_name;
            resume_after := NULL;
            RETURN NEXT;
        END IF;
        EXIT WHEN v_more;
    END LOOP;

    tenant := NULL;
    queue := NULL;
    segments := 0;
    bytes := 0;
    dedup_rows := 0;
    resume_after := CASE WHEN v_more THEN v_last END;
    RETURN NEXT;
END;
$$;

-- ---- sql/050_queue_options.sql
-- 050_queue_options: the storage the honoured queue options need, and defaults that keep
-- a queue which configures nothing behaving as before.
--
-- Contract: schema changes only, re-runnable; no functions, no notifications. Takes the
-- ACCESS EXCLUSIVE lock of queen.queues and queen.log_consumers for a catalog-only change
-- (a nullable column without a default, defaults, NOT NULL dropped) under the installer's
-- lock_timeout, and updates the queue rows that still hold the old never-honoured defaults.
--
-- Until now ttl, maxWaitTimeSeconds, retryDelay, deadLetterQueue and dlqAfterMaxRetries were
-- stored and ignored, so what a queue did was "no expiry, redelivery at once, dead letters
-- after retryLimit" whatever its row said. Their column defaults (ttl 3600 s, retryDelay
-- 1000 ms, both switches false) would change that behaviour now that they are read, so:
--   * ttl_seconds and retry_delay_ms default to 0 (off); rows holding exactly the old
--     default (3600, 1000), which no client sends unless its user asked, become 0;
--   * dead_letter_queue and dlq_after_max_retries become nullable, NULL meaning "not set":
--     dead letters are kept, as they always were; the stored `false`, which never switched
--     anything off, becomes NULL. An explicit false from now on switches them off.

ALTER TABLE queen.queues ALTER COLUMN ttl_seconds SET DEFAULT 0;
ALTER TABLE queen.queues ALTER COLUMN retry_delay_ms SET DEFAULT 0;
ALTER TABLE queen.queues ALTER COLUMN dead_letter_queue DROP NOT NULL;
ALTER TABLE queen.queues ALTER COLUMN dead_letter_queue SET DEFAULT NULL;
ALTER TABLE queen.queues ALTER COLUMN dlq_after_max_retries DROP NOT NULL;
ALTER TABLE queen.queues ALTER COLUMN dlq_after_max_retries SET DEFAULT NULL;

UPDATE queen.queues SET ttl_seconds = 0 WHERE ttl_seconds = 3600;
UPDATE queen.queues SET retry_delay_ms = 0 WHERE retry_delay_ms = 1000;
UPDATE queen.queues SET dead_letter_queue = NULL WHERE dead_letter_queue = false;
UPDATE queen.queues SET dlq_after_max_retries = NULL WHERE dlq_after_max_retries = false;

-- retryDelay: a failed ack that rewinds the partition sets this; no claim takes the row
-- before it (NULL or past: claimable).
ALTER TABLE queen.log_consumers ADD COLUMN IF NOT EXISTS retry_at timestamptz;

COMMENT ON COLUMN queen.log_consumers.attempt_count IS
    'deliveries of the batch starting at attempt_offset (the answer''s deliveryAttempt); '
    'telemetry: the retry budget is failed_count';
COMMENT ON COLUMN queen.log_consumers.failed_count IS
    'the retry budget spent on the message at failed_offset: failed acks, and leases that '
    'expired with it as the first undone message (charged by the next claim, sql/051)';
COMMENT ON COLUMN queen.log_consumers.retry_at IS
    'retryDelay: not claimable before this time (set by a failed ack that rewinds)';

-- ---- sql/051_log_pop_v3.sql
-- 051_log_pop_v3: the per-partition claim honours ttl, maxWaitTimeSeconds, retryDelay and
-- counts an expired lease against retryLimit.
--
-- queen.log_dead_letter_span_v1(p_pid, p_group, p_base, p_from, p_to, p_txn_prefix,
--                               p_error, p_retry_count) -> integer
--   Files offsets p_from .. p_to of the segment at p_base of partition p_pid in
--   queen.dead_letters for p_group, each with a copy of that segment, the transaction id
--   p_txn_prefix || offset (SQL cannot read the id inside the blob; the listing shows this
--   name and a retry takes it), p_error and p_retry_count. One statement for the span.
--   Returns the rows filed. No locks beyond the insert.
--
-- queen.log_pop_v3(p_qid, p_pid, p_group, p_worker, p_budget, p_lease_seconds, p_auto_ack,
--                  p_sub_mode, p_sub_from, p_skip_window, p_delay, p_window, p_conflate,
--                  p_ttl, p_max_wait, p_retry_limit, p_dead_letters, p_retry_dead_letters)
--   log_pop_v2's contract (018) with the queue's remaining delivery options given by the
--   caller, and three more steps between the claim and the scan:
--   * retryDelay: a cursor row whose retry_at is still ahead is not claimed (the row is
--     left alone, like a leased one; log_pop_list_v1 answers 'delayed' with that time);
--   * an expired lease (worker_id still set: no ack or release came) is one delivery
--     attempt of the first message it left undone: charged to failed_offset/failed_count,
--     the retry budget failed acks spend. Past p_retry_limit the message is filed in the
--     dead letters (p_retry_dead_letters, transaction id 'lease-expired:<offset>') or
--     skipped, and the cursor moves past it. Then the claim goes on from the cursor;
--   * expiry: with p_ttl > 0 (seconds since the push) or p_max_wait > 0 (seconds since it
--     became visible: push + p_delay), the leading segments pushed before the earlier of
--     the two limits are not delivered: filed in the dead letters (p_dead_letters,
--     transaction id 'expired:<offset>', error 'expired') or skipped, the cursor passing
--     them. Checked per segment (a segment's messages share its push time; created_at
--     grows with base_offset, so expired segments are a prefix). A claim expires at most
--     10,000 messages, and files at most 16 MB of segment copies (each dead letter holds a
--     copy of its segment), at least one segment: past that it stops there, having moved
--     the cursor, and the next claim goes on.
--   Returns the same rows as log_pop_v2. Locks as log_pop_v2.
--
-- queen.log_pop_v2(...)  now a wrapper: reads the options above, calls log_pop_v3.
-- queen.log_pop_v1(...)  now reads every gate and option in one statement, calls v3.
-- queen.log_pop_list_v1(...)  same contract as in 018; reads the options once per call,
--   calls log_pop_v3, and answers 'delayed' (retry_at = the row's retry_at) for a
--   partition held back by retryDelay.
-- queen.log_pending_partitions_v1(...)  same contract as in 012; a partition held back
--   by retryDelay reports that time as its lease expiry, so the reseed schedules it.

CREATE OR REPLACE FUNCTION queen.log_dead_letter_span_v1(
    p_pid         bigint,
    p_group       text,
    p_base        bigint,
    p_from        bigint,
    p_to          bigint,
    p_txn_prefix  text,
    p_error       text,
    p_retry_count integer
) RETURNS integer LANGUAGE sql VOLATILE AS $$
    WITH filed AS (
        INSERT INTO queen.dead_letters
            (partition_id, consumer_group, message_offset, transaction_id, error_message,
             retry_count, segment_base, codec, producer, created_at, blob)
        SELECT p_pid, p_group, o, p_txn_prefix || o, p_error, p_retry_count,
               s.base_offset, s.codec, s.producer, s.created_at, s.blob
        FROM queen.log_segments s
        CROSS JOIN LATERAL generate_series(greatest(p_from, s.base_offset),
                                           least(p_to, s.end_offset)) AS o
        WHERE s.partition_id = p_pid AND s.base_offset = p_base
        RETURNING 1
    )
    SELECT count(*)::integer FROM filed;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_v3(
    p_qid                bigint,
    p_pid                bigint,
    p_group              text,
    p_worker             text,
    p_budget             integer,
    p_lease_seconds      integer,
    p_auto_ack           boolean,
    p_sub_mode           text,
    p_sub_from           timestamptz,
    p_skip_window        boolean,
    p_delay              integer,
    p_window             integer,
    p_conflate           boolean,
    p_ttl                integer,
    p_max_wait           integer,
    p_retry_limit        integer,
    p_dead_letters       boolean,
    p_retry_dead_letters boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_newest     timestamptz;
    v_committed  bigint;
    v_att_count  integer;
    v_att_offset bigint;
    v_last_off   bigint;
    v_row        record;
    v_from_cur   bigint;
    v_charge     bigint;
    v_count      integer;
    v_fail_off   bigint;
    v_fail_count integer;
    v_cutoff     timestamptz;
    v_expired    integer := 0;
    v_copied     bigint := 0;
    v_n          integer;
    v_head       record;
    v_wanted     bigint;
    v_budget     integer := p_budget;
    v_visible    timestamptz;
    v_seg        record;
    v_take       integer;
    v_start      bigint;
    v_end        bigint;
    v_seen_any   boolean := false;
    v_bases      bigint[] := '{}';
    v_idx        integer[] := '{}';
    v_takes      integer[] := '{}';
    v_counts     integer[] := '{}';
    v_times      timestamptz[] := '{}';
    v_codecs     smallint[] := '{}';
    v_producers  text[] := '{}';
    v_blobs      bytea[] := '{}';
    v_attempt    integer;
    v_committed_at_claim bigint;
BEGIN
    IF p_budget IS NULL OR p_budget <= 0 THEN
        RETURN;
    END IF;

    -- Gate: windowBuffer, a quiet-period debounce on the newest segment.
    IF coalesce(p_window, 0) > 0 AND NOT p_skip_window THEN
        SELECT s.created_at INTO v_newest
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF v_newest IS NOT NULL AND v_newest > v_now - make_interval(secs => p_window) THEN
            RETURN;
        END IF;
    END IF;

    -- The claim, with the partition's last_offset: never wait, never insert
    -- unconditionally, never before a retryDelay has passed.
    SELECT c.committed, c.attempt_count, c.attempt_offset, c.worker_id, c.failed_offset,
           c.failed_count, p.last_offset
    INTO v_row
    FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
      AND (c.retry_at IS NULL OR c.retry_at <= v_now)
    FOR UPDATE OF c SKIP LOCKED;

    IF NOT FOUND THEN
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN; -- leased, held back by retryDelay, or mid-claim elsewhere
        END IF;
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_pid::text || '/' || p_group, 42)) THEN
            RETURN; -- another pop is creating this row: skip this cycle
        END IF;
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (p_pid, p_group,
                queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from))
        ON CONFLICT DO NOTHING;
        SELECT c.committed, c.attempt_count, c.attempt_offset, c.worker_id, c.failed_offset,
               c.failed_count, p.last_offset
        INTO v_row
        FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
          AND (c.retry_at IS NULL OR c.retry_at <= v_now)
        FOR UPDATE OF c SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    v_committed := v_row.committed;
    v_att_count := v_row.attempt_count;
    v_att_offset := v_row.attempt_offset;
    v_last_off := v_row.last_offset;
    v_from_cur := v_committed;
    v_fail_off := v_row.failed_offset;
    v_fail_count := v_row.failed_count;

    -- An expired lease: one delivery attempt of the first message it left undone.
    IF v_row.worker_id IS NOT NULL THEN
        v_charge := greatest(v_committed, coalesce(v_att_offset - 1, v_committed)) + 1;
        IF v_charge <= v_last_off THEN
            v_count := CASE WHEN v_fail_off IS NOT DISTINCT FROM v_charge
                            THEN v_fail_count + 1 ELSE 1 END;
            IF v_count > coalesce(p_retry_limit, 3) THEN
                IF p_retry_dead_letters THEN
                    PERFORM queen.log_dead_letter_span_v1(
                        p_pid, p_group,
                        (SELECT s.base_offset FROM queen.log_segments s
                         WHERE s.partition_id = p_pid AND s.base_offset <= v_charge
                         ORDER BY s.base_offset DESC LIMIT 1),
                        v_charge, v_charge, 'lease-expired:',
                        'lease expired ' || v_count || ' times', v_count);
                END IF;
                v_committed := v_charge;
                v_fail_off := NULL;
                v_fail_count := 0;
            ELSE
                v_fail_off := v_charge;
                v_fail_count := v_count;
            END IF;
        END IF;
        UPDATE queen.log_consumers c SET
            committed = v_committed,
            total_consumed = c.total_consumed + (v_committed - v_from_cur),
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = v_fail_off, failed_count = v_fail_count
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_from_cur := v_committed;
    END IF;

    IF v_last_off <= v_committed THEN
        RETURN;
    END IF;

    -- Expiry (ttl from the push, maxWaitTimeSeconds from visibility): the leading segments
    -- pushed before the cutoff are passed, whole segments at a time.
    IF coalesce(p_ttl, 0) > 0 OR coalesce(p_max_wait, 0) > 0 THEN
        v_cutoff := least(
            CASE WHEN coalesce(p_ttl, 0) > 0 THEN v_now - make_interval(secs => p_ttl) END,
            CASE WHEN coalesce(p_max_wait, 0) > 0
                 THEN v_now - make_interval(secs => coalesce(p_delay, 0) + p_max_wait) END);
        LOOP
            SELECT s.base_offset, s.end_offset, s.created_at, octet_length(s.blob) AS bytes
            INTO v_head
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= v_committed + 1
            ORDER BY s.base_offset DESC LIMIT 1;
            IF NOT FOUND OR v_head.end_offset <= v_committed THEN
                SELECT s.base_offset, s.end_offset, s.created_at,
                       octet_length(s.blob) AS bytes
                INTO v_head
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_committed + 1
                ORDER BY s.base_offset LIMIT 1;
                EXIT WHEN NOT FOUND;
            END IF;
            EXIT WHEN v_head.created_at >= v_cutoff OR v_head.base_offset > v_last_off;
            v_n := (least(v_head.end_offset, v_last_off)
                    - greatest(v_committed + 1, v_head.base_offset) + 1)::integer;
            IF p_dead_letters THEN
                PERFORM queen.log_dead_letter_span_v1(
                    p_pid, p_group, v_head.base_offset,
                    greatest(v_committed + 1, v_head.base_offset),
                    least(v_head.end_offset, v_last_off), 'expired:', 'expired', 0);
                v_copied := v_copied + v_n::bigint * v_head.bytes;
            END IF;
            v_expired := v_expired + v_n;
            v_committed := least(v_head.end_offset, v_last_off);
            EXIT WHEN v_expired >= 10000 OR v_copied >= 16777216 OR v_committed >= v_last_off;
        END LOOP;
        IF v_expired > 0 THEN
            IF v_fail_off IS NOT NULL AND v_fail_off <= v_committed THEN
                v_fail_off := NULL;
                v_fail_count := 0;
            END IF;
            UPDATE queen.log_consumers c SET
                committed = v_committed,
                total_consumed = c.total_consumed + (v_committed - v_from_cur),
                acked_ahead = '{}',
                failed_offset = v_fail_off, failed_count = v_fail_count
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
            v_from_cur := v_committed;
            IF v_expired >= 10000 OR v_copied >= 16777216 OR v_last_off <= v_committed THEN
                RETURN;
            END IF;
        END IF;
    END IF;

    v_wanted := v_committed + 1;
    v_visible := CASE WHEN coalesce(p_delay, 0) > 0
                      THEN v_now - make_interval(secs => p_delay)
                      ELSE 'infinity'::timestamptz END;

    IF p_conflate AND p_group <> '__QUEUE_MODE__' THEN
        -- Conflation: only the newest visible message, the rest retired by the claim.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_last_off
          AND s.created_at <= v_visible
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF NOT FOUND OR v_seg.end_offset < v_wanted THEN
            RETURN;
        END IF;
        v_start := v_seg.end_offset;
        v_end := v_seg.end_offset;
        v_bases := ARRAY[v_seg.base_offset];
        v_idx := ARRAY[(v_seg.end_offset - v_seg.base_offset)::integer];
        v_takes := ARRAY[1];
        v_counts := ARRAY[v_seg.msg_count];
        v_times := ARRAY[v_seg.created_at];
        v_codecs := ARRAY[v_seg.codec];
        v_producers := ARRAY[v_seg.producer];
        v_blobs := ARRAY[v_seg.blob];
        v_budget := 0;
        v_committed_at_claim := v_start - 1;
    ELSE
        -- Head probe: one backward primary-key step.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_wanted
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF FOUND THEN
            v_seen_any := true;
            IF v_seg.end_offset >= v_wanted THEN
                IF v_seg.created_at > v_visible THEN
                    RETURN; -- delayed: every later segment is younger still
                END IF;
                v_take := least(v_seg.end_offset - v_wanted + 1, v_budget)::integer;
                v_start := v_wanted;
                v_end := v_wanted + v_take - 1;
                v_bases := ARRAY[v_seg.base_offset];
                v_idx := ARRAY[(v_wanted - v_seg.base_offset)::integer];
                v_takes := ARRAY[v_take];
                v_counts := ARRAY[v_seg.msg_count];
                v_times := ARRAY[v_seg.created_at];
                v_codecs := ARRAY[v_seg.codec];
                v_producers := ARRAY[v_seg.producer];
                v_blobs := ARRAY[v_seg.blob];
                v_budget := v_budget - v_take;
            END IF;
        END IF;

        -- Forward scan: a cursor, so leaving at the budget stops the index walk.
        IF v_budget > 0 THEN
            FOR v_seg IN
                SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_wanted
                ORDER BY s.base_offset
            LOOP
                v_seen_any := true;
                EXIT WHEN v_seg.created_at > v_visible;
                v_take := least(v_seg.msg_count, v_budget);
                IF v_start IS NULL THEN
                    v_start := v_seg.base_offset;
                END IF;
                v_end := v_seg.base_offset + v_take - 1;
                v_bases := v_bases || v_seg.base_offset;
                v_idx := v_idx || 0;
                v_takes := v_takes || v_take;
                v_counts := v_counts || v_seg.msg_count;
                v_times := v_times || v_seg.created_at;
                v_codecs := v_codecs || v_seg.codec;
                v_producers := v_producers || v_seg.producer;
                v_blobs := v_blobs || v_seg.blob;
                v_budget := v_budget - v_take;
                EXIT WHEN v_budget <= 0;
            END LOOP;
        END IF;
    END IF;

    IF v_start IS NULL THEN
        -- The empty-partition cursor seal: only when no segment exists at all (not when
        -- segments are merely deferred by delayedProcessing). A cursor move, not a claim.
        IF NOT v_seen_any THEN
            UPDATE queen.log_consumers c SET committed = v_last_off
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group
              AND c.committed < v_last_off;
        END IF;
        RETURN;
    END IF;

    IF p_auto_ack THEN
        UPDATE queen.log_consumers c SET
            committed = v_end, worker_id = NULL, lease_expires_at = NULL,
            lease_acquired_at = NULL, batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_end - v_committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_attempt := 1;
    ELSE
        v_attempt := CASE WHEN v_att_offset IS NOT DISTINCT FROM v_start
                          THEN v_att_count + 1 ELSE 1 END;
        UPDATE queen.log_consumers c SET
            committed = coalesce(v_committed_at_claim, c.committed),
            total_consumed = c.total_consumed
                + coalesce(v_committed_at_claim - c.committed, 0),
            worker_id = p_worker,
            lease_expires_at = v_now + make_interval(secs => p_lease_seconds),
            lease_acquired_at = v_now,
            batch_end = v_end,
            acked_ahead = '{}',
            attempt_count = v_attempt,
            attempt_offset = v_start
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        -- A lease is a reservation: its commit need not wait for the WAL flush (see 003).
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;

    RETURN QUERY
        SELECT p_pid, v_attempt, v_start, v_end, u.*
        FROM unnest(v_bases, v_idx, v_takes, v_counts, v_times, v_codecs, v_producers, v_blobs) u;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_v2(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean,
    p_delay         integer,
    p_window        integer,
    p_conflate      boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_q record;
BEGIN
    SELECT q.ttl_seconds, q.max_wait_time_seconds, q.retry_limit,
           coalesce(q.dead_letter_queue, true) AS dead_letters,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
               AS retry_dead_letters
    INTO v_q
    FROM queen.queues q WHERE q.id = p_qid;
    RETURN QUERY
        SELECT * FROM queen.log_pop_v3(p_qid, p_pid, p_group, p_worker, p_budget,
                                       p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from,
                                       p_skip_window, p_delay, p_window, p_conflate,
                                       v_q.ttl_seconds, v_q.max_wait_time_seconds,
                                       v_q.retry_limit, coalesce(v_q.dead_letters, true),
                                       coalesce(v_q.retry_dead_letters, true));
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_v1(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_q        record;
    v_conflate boolean;
BEGIN
    SELECT q.delayed_processing, q.window_buffer, q.ttl_seconds, q.max_wait_time_seconds,
           q.retry_limit, coalesce(q.dead_letter_queue, true) AS dead_letters,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
               AS retry_dead_letters
    INTO v_q
    FROM queen.queues q WHERE q.id = p_qid;
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    END IF;
    RETURN QUERY
        SELECT * FROM queen.log_pop_v3(p_qid, p_pid, p_group, p_worker, p_budget,
                                       p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from,
                                       p_skip_window, v_q.delayed_processing, v_q.window_buffer,
                                       coalesce(v_conflate, false), v_q.ttl_seconds,
                                       v_q.max_wait_time_seconds, v_q.retry_limit,
                                       coalesce(v_q.dead_letters, true),
                                       coalesce(v_q.retry_dead_letters, true));
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pop_list_v1(
    p_tenant        text,
    p_queue         text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_partitions    integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_candidates    bigint[],
    p_skip_window   boolean
) RETURNS TABLE (
    verdict          text,
    retry_at         timestamptz,
    pending_after    bigint,
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
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_q          record;
    v_qid        bigint;
    v_lease      integer;
    v_delay      integer;
    v_window     integer;
    v_budget     integer := p_batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_pid        bigint;
    v_name       text;
    v_rows       queen.log_pop_row[];
    v_end        bigint;
    v_c          record;
    v_last       bigint;
    v_at         timestamptz;
    v_verdicts   text[] := '{}';
    v_retry      timestamptz[] := '{}';
    v_pending    bigint[] := '{}';
    v_names      text[] := '{}';
    v_conflate   boolean;
    i            integer;
BEGIN
    SELECT q.id, q.lease_time, q.delayed_processing, q.window_buffer, q.ttl_seconds,
           q.max_wait_time_seconds, q.retry_limit,
           coalesce(q.dead_letter_queue, true) AS dead_letters,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
               AS retry_dead_letters
    INTO v_q
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    v_qid := v_q.id;
    v_delay := v_q.delayed_processing;
    v_window := v_q.window_buffer;
    v_lease := coalesce(p_lease_seconds, v_q.lease_time, 60);
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = v_qid;
    END IF;
    v_conflate := coalesce(v_conflate, false);

    FOR i IN 1 .. coalesce(cardinality(p_candidates), 0) LOOP
        v_pid := p_candidates[i];
        IF v_claimed >= p_partitions OR v_budget <= 0 THEN
            -- Not even looked up: the pop is full, the candidate goes back as it was.
            v_names := v_names || NULL::text;
            v_verdicts := v_verdicts || 'skipped'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;
        SELECT p.name, p.last_offset INTO v_name, v_last
        FROM queen.log_partitions p WHERE p.id = v_pid AND p.queue_id = v_qid;
        v_names := v_names || v_name;
        IF v_name IS NULL THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;

        SELECT array_agg(r), coalesce(sum(r.take), 0), max(r.claim_end)
        INTO v_rows, v_got, v_end
        FROM queen.log_pop_v3(v_qid, v_pid, p_group, p_worker, v_budget, v_lease,
                              p_auto_ack, p_sub_mode, p_sub_from, p_skip_window,
                              v_delay, v_window, v_conflate, v_q.ttl_seconds,
                              v_q.max_wait_time_seconds, v_q.retry_limit,
                              coalesce(v_q.dead_letters, true),
                              coalesce(v_q.retry_dead_letters, true)) r;
        IF v_got > 0 THEN
            RETURN QUERY
                SELECT 'row'::text, NULL::timestamptz, NULL::bigint, p_queue, v_name, r.*
                FROM unnest(v_rows) r;
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
            v_verdicts := v_verdicts || 'claimed'::text;
            v_retry := v_retry || CASE WHEN p_auto_ack THEN NULL::timestamptz
                                       ELSE v_now + make_interval(secs => v_lease) END;
            v_pending := v_pending || greatest(v_last - v_end, 0);
            CONTINUE;
        END IF;

        -- Nothing claimed: say why, from an unlocked look at the partition's state.
        SELECT c.committed, c.worker_id, c.lease_expires_at, c.retry_at INTO v_c
        FROM queen.log_consumers c
        WHERE c.partition_id = v_pid AND c.consumer_group = p_group;
        SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = v_pid;
        IF NOT FOUND OR v_c IS NULL OR v_c.committed IS NULL THEN
            v_verdicts := v_verdicts || 'busy'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.worker_id IS NOT NULL AND v_c.lease_expires_at >= v_now THEN
            v_verdicts := v_verdicts || 'leased'::text;
            v_retry := v_retry || v_c.lease_expires_at;
        ELSIF v_last <= v_c.committed THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.retry_at IS NOT NULL AND v_c.retry_at > v_now THEN
            v_verdicts := v_verdicts || 'delayed'::text;
            v_retry := v_retry || v_c.retry_at;
        ELSE
            v_at := NULL;
            IF coalesce(v_window, 0) > 0 AND NOT p_skip_window THEN
                SELECT s.created_at + make_interval(secs => v_window) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid
                ORDER BY s.base_offset DESC LIMIT 1;
                IF v_at IS NOT NULL AND v_at > v_now THEN
                    v_verdicts := v_verdicts || 'window'::text;
                    v_retry := v_retry || v_at;
                    v_pending := v_pending || (v_last - v_c.committed);
                    CONTINUE;
                END IF;
                v_at := NULL;
            END IF;
            IF coalesce(v_delay, 0) > 0 THEN
                SELECT s.created_at + make_interval(secs => v_delay) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid AND s.end_offset > v_c.committed
                ORDER BY s.base_offset LIMIT 1;
            END IF;
            IF v_at IS NOT NULL AND v_at > v_now THEN
                v_verdicts := v_verdicts || 'delayed'::text;
                v_retry := v_retry || v_at;
            ELSE
                v_verdicts := v_verdicts || 'busy'::text;
                v_retry := v_retry || NULL::timestamptz;
            END IF;
        END IF;
        v_pending := v_pending || greatest(v_last - coalesce(v_c.committed, -1), 0);
    END LOOP;

    RETURN QUERY
        SELECT v.verdict, v.retry_at, v.pending, p_queue, v.name, v.pid,
               NULL::integer, NULL::bigint, NULL::bigint, NULL::bigint, NULL::integer,
               NULL::integer, NULL::integer, NULL::timestamptz, NULL::smallint, NULL::text,
               NULL::bytea
        FROM unnest(v_verdicts, v_retry, v_pending, v_names, p_candidates)
             AS v (verdict, retry_at, pending, name, pid);
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_pending_partitions_v1(
    p_tenant text,
    p_queue  text,
    p_group  text,
    p_limit  integer
) RETURNS TABLE (
    registered         boolean,
    window_buffer      integer,
    delayed_processing integer,
    min_pop_wait_time  integer,
    partition_id       bigint,
    partition_name     text,
    lease_expires_at   timestamptz,
    window_ends_at     timestamptz
) LANGUAGE sql STABLE AS $$
    WITH q AS (
        SELECT q.id, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
               m.watermark, m.consumer_group IS NOT NULL AS registered
        FROM queen.queues q
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.queue_id = q.id AND m.consumer_group = p_group
        WHERE q.tenant = p_tenant AND q.name = p_queue
    ),
    pending AS (
        SELECT p.id, p.name,
               CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at >= now()
                    THEN c.lease_expires_at
                    WHEN c.retry_at > now() THEN c.retry_at END AS lease_expires_at,
               CASE WHEN q.window_buffer > 0
                    THEN (SELECT s.created_at FROM queen.log_segments s
                          WHERE s.partition_id = p.id
                          ORDER BY s.base_offset DESC LIMIT 1)
                         + make_interval(secs => q.window_buffer) END AS window_ends_at
        FROM q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE q.registered
          AND p.last_write_at >= q.watermark - interval '2 minutes'
          AND p.last_offset > coalesce(c.committed, -1)
        ORDER BY random()
        LIMIT p_limit
    )
    SELECT q.registered, q.window_buffer, q.delayed_processing, q.min_pop_wait_time,
           pending.id, pending.name, pending.lease_expires_at, pending.window_ends_at
    FROM q LEFT JOIN pending ON true;
$$;

-- ---- sql/052_log_ack_v2_options.sql
-- 052_log_ack_v2_options: acks honour retryDelay, deadLetterQueue and dlqAfterMaxRetries.
--
-- queen.log_ack_v2(p_pid, p_group, p_lease, p_txn_ids, p_hashes, p_offsets, p_statuses,
--                  p_errors)
--   Same signature, rows, locks and statuses as in 017, with the queue's options read in
--   the statement that already read retry_limit:
--     failed   within the retry limit, and the queue's retry_delay_ms > 0: the rewind also
--              sets the cursor row's retry_at to now + the delay, so no claim takes the
--              partition (it and every later message of it) before then (sql/051);
--              past the retry limit: filed in queen.dead_letters only when the queue keeps
--              dead letters for spent retries (dead_letter_queue and
--              dlq_after_max_retries, each true or NULL = not set); otherwise skipped.
--              Either way the cursor moves past it;
--     dlq      filed only when the queue keeps dead letters (dead_letter_queue true or
--              NULL); otherwise the message is done without a copy.
--   The answer's `dlq` says whether a dead letter was filed. A release that is not a
--   delayed rewind clears retry_at.
CREATE OR REPLACE FUNCTION queen.log_ack_v2(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_hashes   bigint[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[]
) RETURNS TABLE (
    idx            integer,
    success        boolean,
    error          text,
    lease_released boolean,
    dlq            boolean,
    queue_name     text,
    partition_name text,
    pending_after  bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now         timestamptz := now();
    v_n           integer := coalesce(cardinality(p_txn_ids), 0);
    v_c           record;
    v_retry_limit integer;
    v_retry_delay integer;
    v_keep_dlq    boolean;
    v_retry_dlq   boolean;
    v_delayed     boolean := false;
    v_qname       text;
    v_pname       text;
    v_last        bigint;
    v_offs        bigint[];
    v_ok          boolean[];
    v_err         text[];
    v_dlq         boolean[];
    v_done        bigint[];
    v_rewind      bigint;
    v_fail_off    bigint;
    v_fail_count  integer;
    v_new         bigint;
    v_floor       bigint;
    v_release     boolean := false;
    v_order       integer[];
    v_status      text;
    v_count       integer;
    i             integer;
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;

    SELECT c.committed, c.worker_id, c.lease_expires_at, c.batch_end, c.acked_ahead,
           c.attempt_offset, c.failed_offset, c.failed_count
    INTO v_c
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
    FOR UPDATE;

    IF NOT FOUND OR v_c.worker_id IS NULL OR v_c.lease_expires_at IS NULL
       OR v_c.lease_expires_at < v_now
       OR (coalesce(p_lease, '') <> '' AND p_lease <> v_c.worker_id) THEN
        FOR i IN 1 .. v_n LOOP
            idx := i; success := false; error := 'Invalid or expired lease';
            lease_released := false; dlq := false; queue_name := NULL; partition_name := NULL;
            pending_after := NULL;
            RETURN NEXT;
        END LOOP;
        RETURN;
    END IF;

    SELECT q.retry_limit, q.retry_delay_ms, coalesce(q.dead_letter_queue, true),
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true),
           q.name, p.name, p.last_offset
    INTO v_retry_limit, v_retry_delay, v_keep_dlq, v_retry_dlq, v_qname, v_pname, v_last
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid;

    -- Resolve offsets: the caller's, else by transaction id within the lease's own span
    -- (the segments it covers), so the cost follows the batch, not the partition.
    v_ok := array_fill(false, ARRAY[v_n]);
    v_err := array_fill(NULL::text, ARRAY[v_n]);
    v_dlq := array_fill(false, ARRAY[v_n]);
    IF p_offsets IS NULL OR array_position(p_offsets, NULL) IS NOT NULL THEN
        v_offs := queen.log_resolve_offsets_v1(p_pid, v_c.committed, v_c.batch_end, p_hashes,
                                               p_txn_ids);
        IF p_offsets IS NOT NULL THEN
            SELECT array_agg(coalesce(o.off, v_offs[o.i]) ORDER BY o.i) INTO v_offs
            FROM unnest(p_offsets) WITH ORDINALITY AS o (off, i);
        END IF;
    ELSE
        v_offs := p_offsets;
    END IF;

    v_done := v_c.acked_ahead;
    v_fail_off := v_c.failed_offset;
    v_fail_count := v_c.failed_count;
    -- Messages below the first delivered offset were never delivered (a retention gap):
    -- the done prefix starts after them.
    v_floor := greatest(v_c.committed, coalesce(v_c.attempt_offset - 1, v_c.committed));

    -- The common case: every delivered message of the lease completed (in any order,
    -- repeats allowed). One positional advance to batch_end and the lease is released,
    -- without the per-item walk below.
    IF v_c.acked_ahead = '{}' AND v_c.failed_offset IS NULL
       AND array_position(v_offs, NULL) IS NULL
       AND NOT EXISTS (SELECT 1 FROM unnest(p_statuses) AS st
                       WHERE lower(coalesce(st, 'completed')) NOT IN ('completed', 'success'))
       AND NOT EXISTS (SELECT 1 FROM unnest(v_offs) AS o WHERE o > v_c.batch_end)
       AND (SELECT count(DISTINCT o) FROM unnest(v_offs) AS o WHERE o > v_floor)
           = v_c.batch_end - v_floor THEN
        UPDATE queen.log_consumers c SET
            committed = v_c.batch_end,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_c.batch_end - v_c.committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN QUERY
            SELECT i, true, NULL::text, true, false, v_qname, v_pname,
                   greatest(v_last - v_c.batch_end, 0)
            FROM generate_series(1, v_n) AS i;
        RETURN;
    END IF;

    SELECT array_agg(o.i ORDER BY o.off, o.i) INTO v_order
    FROM unnest(v_offs) WITH ORDINALITY AS o (off, i);

    FOREACH i IN ARRAY v_order LOOP
        v_status := lower(coalesce(p_statuses[i], 'completed'));
        IF v_offs[i] IS NULL THEN
            v_err[i] := 'Message not found';
        ELSIF v_offs[i] <= v_floor THEN
            v_ok[i] := true; -- already done
        ELSIF v_offs[i] > v_c.batch_end THEN
            v_err[i] := 'Message not part of this lease';
        ELSIF v_rewind IS NOT NULL THEN
            v_ok[i] := true; -- no-op: the partition already rewound to an earlier message
        ELSIF v_status IN ('completed', 'success') THEN
            v_done := v_done || v_offs[i];
            v_ok[i] := true;
        ELSIF v_status = 'dlq' THEN
            v_done := v_done || v_offs[i];
            v_dlq[i] := v_keep_dlq;
            v_ok[i] := true;
        ELSIF v_status = 'failed' THEN
            v_count := CASE WHEN v_fail_off IS NOT DISTINCT FROM v_offs[i]
                            THEN v_fail_count + 1 ELSE 1 END;
            v_fail_off := v_offs[i];
            v_fail_count := v_count;
            IF v_count > v_retry_limit THEN
                -- Retries spent: dead-letter it and move past it, but still release the
                -- lease, since the client expects the rest of the batch to come again.
                v_done := v_done || v_offs[i];
                v_dlq[i] := v_retry_dlq;
                v_rewind := v_offs[i] + 1;
            ELSE
                v_rewind := v_offs[i];
                v_delayed := coalesce(v_retry_delay, 0) > 0;
            END IF;
            v_ok[i] := true;
        ELSIF v_status = 'retry' THEN
            v_rewind := v_offs[i];
            v_ok[i] := true;
        ELSE
            v_err[i] := 'Unknown ack status: ' || v_status;
        END IF;
    END LOOP;

    -- The longest done prefix: one positional advance.
    -- Distinct done offsets above the floor, ascending: the prefix is where d = floor + rank.
    SELECT coalesce(max(x.d), v_floor) INTO v_new
    FROM (SELECT u.d, row_number() OVER (ORDER BY u.d) AS rn
          FROM (SELECT DISTINCT d FROM unnest(v_done) AS d WHERE d > v_floor) u) x
    WHERE x.d = v_floor + x.rn
      AND (v_rewind IS NULL OR x.d < v_rewind);
    v_new := greatest(v_new, v_c.committed);

    FOR i IN 1 .. v_n LOOP
        IF v_dlq[i] THEN
            INSERT INTO queen.dead_letters
                (partition_id, consumer_group, message_offset, transaction_id, error_message,
                 retry_count, segment_base, codec, producer, created_at, blob)
            SELECT p_pid, p_group, v_offs[i], p_txn_ids[i], p_errors[i],
                   CASE WHEN v_fail_off = v_offs[i] THEN v_fail_count ELSE 0 END,
                   s.base_offset, s.codec, s.producer, s.created_at, s.blob
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= v_offs[i]
            ORDER BY s.base_offset DESC
            LIMIT 1;
        END IF;
    END LOOP;

    IF v_fail_off IS NOT NULL AND v_fail_off <= v_new THEN
        v_fail_off := NULL; -- the charged message is behind the cursor now
        v_fail_count := 0;
    END IF;

    v_release := v_rewind IS NOT NULL OR v_new >= v_c.batch_end;
    IF v_release THEN
        UPDATE queen.log_consumers c SET
            committed = v_new,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            retry_at = CASE WHEN v_delayed
                            THEN v_now + make_interval(secs => v_retry_delay / 1000.0) END,
            failed_offset = v_fail_off, failed_count = v_fail_count,
            total_consumed = c.total_consumed + (v_new - v_c.committed),
            last_consumed_at = CASE WHEN v_new > v_c.committed THEN v_now
                                    ELSE c.last_consumed_at END
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    ELSE
        UPDATE queen.log_consumers c SET
            committed = v_new,
            acked_ahead = coalesce((SELECT array_agg(DISTINCT d) FROM unnest(v_done) d
                                    WHERE d > v_new), '{}'),
            failed_offset = v_fail_off, failed_count = v_fail_count,
            total_consumed = c.total_consumed + (v_new - v_c.committed),
            last_consumed_at = CASE WHEN v_new > v_c.committed THEN v_now
                                    ELSE c.last_consumed_at END
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    END IF;

    FOR i IN 1 .. v_n LOOP
        idx := i;
        success := v_ok[i];
        error := v_err[i];
        lease_released := v_release AND v_ok[i];
        dlq := v_dlq[i];
        queue_name := v_qname;
        partition_name := v_pname;
        pending_after := greatest(v_last - v_new, 0);
        RETURN NEXT;
    END LOOP;
END;
$$;

-- ---- sql/053_log_render_failed_options.sql
-- 053_log_render_failed_options: a damaged segment's messages whose deliveries are spent
-- are skipped, not filed, on a queue that keeps no dead letters for spent retries.
--
-- queen.log_render_failed_v1(p_pid, p_group, p_lease, p_from, p_to, p_damaged, p_error)
--   Same signature, answers and locks as in 048. The 'dead_lettered' case files the
--   offsets in queen.dead_letters only when the queue's dead_letter_queue and
--   dlq_after_max_retries are each true or not set (NULL); otherwise they are passed
--   without a copy. The cursor moves past them either way.
CREATE OR REPLACE FUNCTION queen.log_render_failed_v1(
    p_pid     bigint,
    p_group   text,
    p_lease   text,
    p_from    bigint,
    p_to      bigint,
    p_damaged boolean,
    p_error   text
) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_c     record;
    v_limit integer;
    v_file  boolean;
BEGIN
    SELECT c.committed, c.worker_id, c.batch_end, c.attempt_count, c.attempt_offset
    INTO v_c
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
    FOR UPDATE;
    IF NOT FOUND OR v_c.worker_id IS DISTINCT FROM p_lease OR p_to < p_from THEN
        RETURN 'gone';
    END IF;

    IF p_from > coalesce(v_c.attempt_offset, v_c.committed + 1) THEN
        UPDATE queen.log_consumers c SET batch_end = least(c.batch_end, p_from - 1)
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'truncated';
    END IF;

    SELECT q.retry_limit,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
    INTO v_limit, v_file
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid;

    IF p_damaged AND v_c.attempt_offset = p_from AND v_c.attempt_count > v_limit THEN
        INSERT INTO queen.dead_letters
            (partition_id, consumer_group, message_offset, transaction_id, error_message,
             retry_count, segment_base, codec, producer, created_at, blob)
        SELECT p_pid, p_group, o, 'unreadable:' || o, p_error, v_c.attempt_count,
               s.base_offset, s.codec, s.producer, s.created_at, s.blob
        FROM generate_series(p_from, p_to) AS o
        CROSS JOIN LATERAL (
            SELECT x.base_offset, x.codec, x.producer, x.created_at, x.blob
            FROM queen.log_segments x
            WHERE x.partition_id = p_pid AND x.base_offset <= o
            ORDER BY x.base_offset DESC
            LIMIT 1) s
        WHERE v_file;
        UPDATE queen.log_consumers c SET
            committed = greatest(c.committed, p_to),
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = NULL, failed_count = 0,
            total_consumed = c.total_consumed + greatest(p_to - c.committed, 0),
            last_consumed_at = now()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'dead_lettered';
    END IF;

    UPDATE queen.log_consumers c SET
        worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
        batch_end = NULL, acked_ahead = '{}'
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    RETURN 'released';
END;
$$;

-- ---- sql/054_consumer_group_seek_retry_at.sql
-- 054_consumer_group_seek_retry_at: a seek also ends a retryDelay hold.
--
-- queen.consumer_group_seek_v1(p_tenant, p_group, p_queue, p_timestamp)
--   Same signature, rows and locks as in 033. The per-lease state a seek clears now
--   includes retry_at (sql/050): a group moved by an operator (typically past a message
--   that keeps failing) is delivered its new position at once, not after the retryDelay
--   its last failed ack set.
CREATE OR REPLACE FUNCTION queen.consumer_group_seek_v1(
    p_tenant    text,
    p_group     text,
    p_queue     text,
    p_timestamp timestamptz
) RETURNS TABLE (
    refused        boolean,
    partition_id   bigint,
    partition_name text,
    last_offset    bigint,
    committed      bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_leased integer;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;

    SELECT count(*) FILTER (WHERE c.worker_id IS NOT NULL AND c.lease_expires_at > now())
    INTO v_leased
    FROM (SELECT c.worker_id, c.lease_expires_at
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
          WHERE p.queue_id = v_qid AND c.consumer_group = p_group
          ORDER BY c.partition_id
          FOR UPDATE OF c) c;
    IF v_leased > 0 THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
        RETURN;
    END IF;

    INSERT INTO queen.consumer_groups_metadata (consumer_group, queue_id)
    VALUES (p_group, v_qid)
    ON CONFLICT DO NOTHING;
    UPDATE queen.consumer_groups_metadata m
    SET watermark = '-infinity', watermark_checked_at = '-infinity'
    WHERE m.consumer_group = p_group AND m.queue_id = v_qid;

    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    SELECT p.id, p_group, -1 FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ON CONFLICT DO NOTHING;

    RETURN QUERY
    WITH target AS (
        SELECT p.id, p.name, p.last_offset,
               CASE WHEN p_timestamp IS NULL THEN p.last_offset
                    ELSE coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.created_at >= p_timestamp
                                   ORDER BY s.base_offset LIMIT 1),
                                  p.last_offset) END AS new_committed
        FROM queen.log_partitions p WHERE p.queue_id = v_qid
    ), moved AS (
        UPDATE queen.log_consumers c SET
            committed = t.new_committed,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            attempt_count = 0, attempt_offset = NULL,
            failed_offset = NULL, failed_count = 0, retry_at = NULL
        FROM target t
        WHERE c.partition_id = t.id AND c.consumer_group = p_group
          -- A row a concurrent first pop created and leased after the check above.
          AND (c.worker_id IS NULL OR c.lease_expires_at <= now())
        RETURNING t.id, t.name, t.last_offset, t.new_committed
    )
    SELECT false, m.id, m.name, m.last_offset, m.new_committed FROM moved m ORDER BY m.name;
    IF NOT FOUND THEN
        -- A queue without partitions (a pop provisioned it before any push): nothing moved.
        RETURN QUERY SELECT false, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint;
    END IF;
END;
$$;

-- ---- sql/055_push_maintenance.sql
-- 055_push_maintenance: the push maintenance switch, beside the pop one of 013.
--
-- queen.set_push_maintenance_v1(p_push boolean) -> boolean
--   Turns push maintenance on or off for every node: while it is on, each node writes
--   pushes to its own spool instead of the database (each node re-reads the switch twice a
--   second). Returns the stored value. Locks the 'maintenance_push' row of
--   queen.system_state briefly; the pop switch's row is not touched.
-- queen.get_maintenance_v2() -> TABLE(pop boolean, push boolean)
--   Both switches (false when never set), one row. Reads only.

CREATE OR REPLACE FUNCTION queen.set_push_maintenance_v1(p_push boolean)
RETURNS boolean LANGUAGE sql VOLATILE AS $$
    INSERT INTO queen.system_state (key, value, updated_at)
    VALUES ('maintenance_push', jsonb_build_object('push', p_push), now())
    ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
    RETURNING (value->>'push')::boolean;
$$;

CREATE OR REPLACE FUNCTION queen.get_maintenance_v2()
RETURNS TABLE (pop boolean, push boolean) LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (s.value->>'pop')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance'), false),
           coalesce((SELECT (s.value->>'push')::boolean
                     FROM queen.system_state s WHERE s.key = 'maintenance_push'), false);
$$;

-- ---- sql/058_segments_inline.sql
-- Segments stay in the table row up to the page's size instead of being cut into TOAST
-- chunks from 2 kB on. A push of 100 small messages is a blob of about 5 kB: toasted, its
-- INSERT wrote three chunk rows and three entries of the TOAST index besides the segment
-- row (more WAL per message), and every pop that read it fetched the chunks back through
-- that index. The blob is zstd already (its storage is EXTERNAL: never compressed again),
-- so keeping it inline costs no compression either. Larger segments are toasted as before.
-- Rows written before keep their TOAST chunks; only new rows are affected.
ALTER TABLE queen.log_segments SET (toast_tuple_target = 8160);

-- ---- sql/060_tenant_leases.sql
-- 060_tenant_leases: the lease paths that name a lease id, checked against the caller's
-- tenant. A lease id is only ever shown to the tenant that popped under it, but a lease is
-- a capability a client sends back: another tenant holding (or guessing) it must neither
-- renew nor fence with it. Both functions match only cursors of partitions whose queue
-- belongs to p_tenant; the v1 functions stay for brokers of the previous version.
--
-- queen.log_lease_extend_v2(p_tenant, p_lease, p_seconds) -> (renewed, expires_at)
--   As log_lease_extend_v1, limited to the tenant's partitions: another tenant's lease is
--   "renewed 0" (not found) and is left as it was.
-- queen.lease_require_v2(p_tenant, p_leases) -> (lease_id, live)
--   As lease_require_v1, limited to the tenant's partitions: another tenant's lease is
--   neither locked nor live, so a bundle naming it fails and changes nothing.

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v2(
    p_tenant  text,
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
          AND q.tenant = p_tenant
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v2(p_tenant text, p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.log_consumers c
    JOIN queen.log_partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE c.worker_id = ANY (p_leases) AND q.tenant = p_tenant
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1 FROM queen.log_consumers c
                   JOIN queen.log_partitions p ON p.id = c.partition_id
                   JOIN queen.queues q ON q.id = p.queue_id
                   WHERE c.worker_id = l.id
                     AND q.tenant = p_tenant
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;

-- ---- sql/061_tenant_limits.sql
-- 061_tenant_limits: what one tenant may create, checked where rows are created.
--
-- The limits are the broker's settings (QUEEN_TENANT_MAX_QUEUES,
-- QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE, QUEEN_TENANT_MAX_CONSUMER_GROUPS), handed to
-- PostgreSQL as the session settings queen.max_queues, queen.max_partitions and
-- queen.max_groups of every pooled connection (unset or 0: no limit). The checks are
-- BEFORE INSERT triggers, so every path that creates a queue, a partition or a consumer
-- group's cursor is covered (the push functions, configure, the pop's first contact, seek)
-- without touching those functions, and they cost nothing on the per-message paths: a row
-- is inserted once per queue, partition, or (partition, group).
--
-- Each check takes a transaction-scoped advisory lock (per tenant for queues and groups,
-- per queue for partitions) before it counts, so concurrent creations are counted one
-- after the other and never overshoot: the second waits for the first's commit, then its
-- count (a new statement, a new snapshot) sees the first's row. A row that exists already
-- (an INSERT ... ON CONFLICT DO NOTHING of a known name) always passes.
--
-- The partition limit counts a queue's named partitions: its `Default` partition (which
-- configure creates, and which a push naming no partition lands in) is always allowed.
--
-- Over a limit: an exception with SQLSTATE QLIMT and a message naming the setting; the
-- caller's transaction rolls back, so nothing is stored. The broker answers it 403.

CREATE OR REPLACE FUNCTION queen.tenant_limit_v1(p_name text)
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT nullif(nullif(current_setting(p_name, true), ''), '0')::integer;
$$;

CREATE OR REPLACE FUNCTION queen.queues_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max   integer := queen.tenant_limit_v1('queen.max_queues');
    v_count bigint;
BEGIN
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.queues/' || NEW.tenant, 0));
    PERFORM 1 FROM queen.queues q WHERE q.tenant = NEW.tenant AND q.name = NEW.name;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(*) INTO v_count FROM queen.queues q WHERE q.tenant = NEW.tenant;
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % queues (QUEEN_TENANT_MAX_QUEUES)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION queen.partitions_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max   integer := queen.tenant_limit_v1('queen.max_partitions');
    v_count bigint;
BEGIN
    -- Every queue may have its Default partition besides the limit: configure creates it
    -- (configuring a queue whose named partitions are at the limit must still work).
    IF v_max IS NULL OR NEW.name = 'Default' THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.partitions/' || NEW.queue_id, 0));
    PERFORM 1 FROM queen.log_partitions p WHERE p.queue_id = NEW.queue_id AND p.name = NEW.name;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(*) INTO v_count FROM queen.log_partitions p
    WHERE p.queue_id = NEW.queue_id AND p.name <> 'Default';
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % partitions per queue (QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION queen.groups_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max    integer;
    v_qid    bigint;
    v_tenant text;
    v_count  bigint;
BEGIN
    IF NEW.consumer_group = '__QUEUE_MODE__' THEN
        RETURN NEW;
    END IF;
    v_max := queen.tenant_limit_v1('queen.max_groups');
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    SELECT p.queue_id, q.tenant INTO v_qid, v_tenant
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = NEW.partition_id;
    -- The group already reads this queue: another partition's cursor, nothing new.
    PERFORM 1 FROM queen.log_partitions p
    JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = NEW.consumer_group
    WHERE p.queue_id = v_qid;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.groups/' || v_tenant, 0));
    PERFORM 1 FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = NEW.consumer_group
    WHERE q.tenant = v_tenant;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(DISTINCT c.consumer_group) INTO v_count
    FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    JOIN queen.log_consumers c ON c.partition_id = p.id
    WHERE q.tenant = v_tenant AND c.consumer_group <> '__QUEUE_MODE__';
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % consumer groups (QUEEN_TENANT_MAX_CONSUMER_GROUPS)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER queues_limit BEFORE INSERT ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.queues_limit_v1();
CREATE OR REPLACE TRIGGER partitions_limit BEFORE INSERT ON queen.log_partitions
    FOR EACH ROW EXECUTE FUNCTION queen.partitions_limit_v1();
CREATE OR REPLACE TRIGGER groups_limit BEFORE INSERT ON queen.log_consumers
    FOR EACH ROW EXECUTE FUNCTION queen.groups_limit_v1();

-- ---- sql/062_segments_without_foreign_key.sql
-- 062_segments_without_foreign_key: a segment INSERT runs no foreign-key check.
--
-- The foreign key log_segments.partition_id -> log_partitions(id) made every append run
-- the referential check: a query through SPI and a FOR KEY SHARE lock on the partition
-- row, which the append has just updated, so the lock is a WAL record of its own per push.
-- queen-bench against a private PostgreSQL, with the key dropped by hand: PostgreSQL's CPU
-- per pushed message fell from 17.2-18.0 to 13.8-15.5 us at batch 10 and from 2.2 to 2.0
-- us at batch 100. Every writer of a segment already holds its partition row: the appends
-- update or lock it, a first append inserts it in the same statement, log_push_v2 and the
-- dead-letter requeue lock it, so no segment can land for a partition being deleted (its
-- DELETE waits for the writer, or the writer finds the row gone and writes nothing).
--
-- What the key's ON DELETE CASCADE did, the trigger below does: every statement that
-- deletes partitions (a queue delete cascading to them, retention dropping empty ones)
-- deletes their segments in the same transaction. The other tables keep their keys: they
-- are not written per message.

CREATE OR REPLACE FUNCTION queen.log_partitions_delete_segments_v1()
RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM queen.log_segments s
    USING deleted_partitions d
    WHERE s.partition_id = d.id;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER log_partitions_delete_segments
    AFTER DELETE ON queen.log_partitions
    REFERENCING OLD TABLE AS deleted_partitions
    FOR EACH STATEMENT EXECUTE FUNCTION queen.log_partitions_delete_segments_v1();

ALTER TABLE queen.log_segments DROP CONSTRAINT IF EXISTS log_segments_partition_id_fkey;

-- ---- sql/063_leases_named_by_partition.sql
-- 063_leases_named_by_partition: a pop and its ack rewrite the cursor row in place.
--
-- log_consumers_worker_idx indexed the lease id (worker_id), which every claim sets and
-- every release clears: neither update could be HOT, so each cycle of pop and ack wrote
-- index entries into the primary key and the lease index besides the row, and pruned
-- more. queen-bench against a private PostgreSQL with the index dropped by hand: WAL at
-- batch 100 from 75.3 to 72.9 B a message, PostgreSQL's CPU per popped and acked message
-- at batch 10 from 54-57 to 47-55 us. The index existed only for the paths that name a
-- lease by its id alone (lease extend, a transaction's requiredLeases); acks name the
-- partition as well and go through the primary key.
--
-- So the lease id itself leads to its rows now:
--   * the broker's one-partition claim (the hot path) names the partition in the lease
--     id, "<uuid>.<partition id>": its rows are found through the primary key, and its
--     updates change no indexed column;
--   * log_pop_v3 (every other claim; it may lease several partitions under one id) grants
--     a bare uuid and writes it into shared_lease too, indexed as worker_id was. That
--     column is never cleared: a release sets worker_id NULL and a stale shared_lease
--     matches nothing, since every lookup also asks worker_id = the lease;
--   * a bare id found neither way is looked for by a scan of the cursor rows: the leases
--     that brokers of the previous version grant from their own one-partition claim
--     (during a rolling upgrade), and leases already gone.
-- A trigger copying bare ids into shared_lease would have spared log_pop_v3's copy below,
-- but a BEFORE UPDATE row trigger locks every row its table's updates touch first (one
-- more WAL record per ack) and cost PostgreSQL more per pop+ack cycle than the index did.
--
-- queen.lease_partition(p_lease) -> bigint
--   The partition a lease id names, NULL for a bare one. Immutable.
-- queen.lease_holders_v1(p_leases) -> (partition_id, consumer_group)
--   The cursor rows held under any of the leases right now (worker_id = the lease), as
--   above. No locks.
-- log_lease_extend_v1/v2 and lease_require_v1/v2 keep their contracts (009, 020, 060)
-- and find their rows through lease_holders_v1; each v1 (brokers before tenants) is its
-- v2 with a NULL tenant, which here means any tenant. log_pop_v3 is 051's with shared_lease.

ALTER TABLE queen.log_consumers ADD COLUMN IF NOT EXISTS shared_lease text;
CREATE INDEX IF NOT EXISTS log_consumers_shared_lease_idx
    ON queen.log_consumers (shared_lease) WHERE shared_lease IS NOT NULL;

CREATE OR REPLACE FUNCTION queen.lease_partition(p_lease text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT substring(p_lease FROM '^[0-9a-f-]{36}\.([0-9]{1,18})$')::bigint
$$;

-- Leases granted before this migration are all bare: found through the index from now on.
UPDATE queen.log_consumers SET shared_lease = worker_id
WHERE worker_id IS NOT NULL AND shared_lease IS DISTINCT FROM worker_id;

DROP INDEX IF EXISTS queen.log_consumers_worker_idx;

CREATE OR REPLACE FUNCTION queen.lease_holders_v1(p_leases text[])
RETURNS TABLE (partition_id bigint, consumer_group text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    r       record;
    v_found text[] := '{}';
    v_rest  text[];
BEGIN
    FOR r IN
        SELECT c.partition_id, c.consumer_group, c.worker_id
        FROM unnest(p_leases) AS l (id)
        JOIN queen.log_consumers c
          ON c.partition_id = queen.lease_partition(l.id) AND c.worker_id = l.id
        UNION ALL
        SELECT c.partition_id, c.consumer_group, c.worker_id
        FROM queen.log_consumers c
        WHERE c.shared_lease = ANY (p_leases) AND c.worker_id = c.shared_lease
    LOOP
        partition_id := r.partition_id;
        consumer_group := r.consumer_group;
        RETURN NEXT;
        v_found := v_found || r.worker_id;
    END LOOP;

    -- Bare ids that matched nothing above: a scan.
    v_rest := ARRAY(SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)
                    WHERE queen.lease_partition(u.id) IS NULL AND u.id <> ALL (v_found));
    IF cardinality(v_rest) > 0 THEN
        RETURN QUERY
        SELECT c.partition_id, c.consumer_group
        FROM queen.log_consumers c
        WHERE c.worker_id = ANY (v_rest) AND c.shared_lease IS DISTINCT FROM c.worker_id;
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v2(
    p_tenant  text,
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.lease_holders_v1(ARRAY[p_lease]) h, queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
          AND (p_tenant IS NULL OR q.tenant = p_tenant)
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v1(
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    SELECT * FROM queen.log_lease_extend_v2(NULL, p_lease, p_seconds);
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v2(p_tenant text, p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_live text[];
BEGIN
    -- Lock every row held under the leases (primary-key order, so two bundles naming the
    -- same leases cannot deadlock); a row's locked version is its newest, so the live
    -- check reads what the lock holds.
    SELECT array_agg(DISTINCT held.worker_id) INTO v_live
    FROM (
        SELECT c.worker_id, c.lease_expires_at
        FROM queen.lease_holders_v1(p_leases) h
        JOIN queen.log_consumers c
          ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = ANY (p_leases) AND (p_tenant IS NULL OR q.tenant = p_tenant)
        ORDER BY c.partition_id, c.consumer_group
        FOR UPDATE OF c
    ) held
    WHERE held.lease_expires_at IS NOT NULL AND held.lease_expires_at >= clock_timestamp();

    RETURN QUERY
    SELECT l.id, l.id = ANY (coalesce(v_live, '{}'))
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v1(p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE sql VOLATILE AS $$
    SELECT * FROM queen.lease_require_v2(NULL, p_leases);
$$;

-- 051's log_pop_v3, its lease written into shared_lease as well (the one changed line).
CREATE OR REPLACE FUNCTION queen.log_pop_v3(
    p_qid                bigint,
    p_pid                bigint,
    p_group              text,
    p_worker             text,
    p_budget             integer,
    p_lease_seconds      integer,
    p_auto_ack           boolean,
    p_sub_mode           text,
    p_sub_from           timestamptz,
    p_skip_window        boolean,
    p_delay              integer,
    p_window             integer,
    p_conflate           boolean,
    p_ttl                integer,
    p_max_wait           integer,
    p_retry_limit        integer,
    p_dead_letters       boolean,
    p_retry_dead_letters boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_newest     timestamptz;
    v_committed  bigint;
    v_att_count  integer;
    v_att_offset bigint;
    v_last_off   bigint;
    v_row        record;
    v_from_cur   bigint;
    v_charge     bigint;
    v_count      integer;
    v_fail_off   bigint;
    v_fail_count integer;
    v_cutoff     timestamptz;
    v_expired    integer := 0;
    v_copied     bigint := 0;
    v_n          integer;
    v_head       record;
    v_wanted     bigint;
    v_budget     integer := p_budget;
    v_visible    timestamptz;
    v_seg        record;
    v_take       integer;
    v_start      bigint;
    v_end        bigint;
    v_seen_any   boolean := false;
    v_bases      bigint[] := '{}';
    v_idx        integer[] := '{}';
    v_takes      integer[] := '{}';
    v_counts     integer[] := '{}';
    v_times      timestamptz[] := '{}';
    v_codecs     smallint[] := '{}';
    v_producers  text[] := '{}';
    v_blobs      bytea[] := '{}';
    v_attempt    integer;
    v_committed_at_claim bigint;
BEGIN
    IF p_budget IS NULL OR p_budget <= 0 THEN
        RETURN;
    END IF;

    -- Gate: windowBuffer, a quiet-period debounce on the newest segment.
    IF coalesce(p_window, 0) > 0 AND NOT p_skip_window THEN
        SELECT s.created_at INTO v_newest
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF v_newest IS NOT NULL AND v_newest > v_now - make_interval(secs => p_window) THEN
            RETURN;
        END IF;
    END IF;

    -- The claim, with the partition's last_offset: never wait, never insert
    -- unconditionally, never before a retryDelay has passed.
    SELECT c.committed, c.attempt_count, c.attempt_offset, c.worker_id, c.failed_offset,
           c.failed_count, p.last_offset
    INTO v_row
    FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
      AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
      AND (c.retry_at IS NULL OR c.retry_at <= v_now)
    FOR UPDATE OF c SKIP LOCKED;

    IF NOT FOUND THEN
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN; -- leased, held back by retryDelay, or mid-claim elsewhere
        END IF;
        IF NOT pg_try_advisory_xact_lock(hashtextextended(p_pid::text || '/' || p_group, 42)) THEN
            RETURN; -- another pop is creating this row: skip this cycle
        END IF;
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (p_pid, p_group,
                queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from))
        ON CONFLICT DO NOTHING;
        SELECT c.committed, c.attempt_count, c.attempt_offset, c.worker_id, c.failed_offset,
               c.failed_count, p.last_offset
        INTO v_row
        FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
          AND (c.retry_at IS NULL OR c.retry_at <= v_now)
        FOR UPDATE OF c SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    v_committed := v_row.committed;
    v_att_count := v_row.attempt_count;
    v_att_offset := v_row.attempt_offset;
    v_last_off := v_row.last_offset;
    v_from_cur := v_committed;
    v_fail_off := v_row.failed_offset;
    v_fail_count := v_row.failed_count;

    -- An expired lease: one delivery attempt of the first message it left undone.
    IF v_row.worker_id IS NOT NULL THEN
        v_charge := greatest(v_committed, coalesce(v_att_offset - 1, v_committed)) + 1;
        IF v_charge <= v_last_off THEN
            v_count := CASE WHEN v_fail_off IS NOT DISTINCT FROM v_charge
                            THEN v_fail_count + 1 ELSE 1 END;
            IF v_count > coalesce(p_retry_limit, 3) THEN
                IF p_retry_dead_letters THEN
                    PERFORM queen.log_dead_letter_span_v1(
                        p_pid, p_group,
                        (SELECT s.base_offset FROM queen.log_segments s
                         WHERE s.partition_id = p_pid AND s.base_offset <= v_charge
                         ORDER BY s.base_offset DESC LIMIT 1),
                        v_charge, v_charge, 'lease-expired:',
                        'lease expired ' || v_count || ' times', v_count);
                END IF;
                v_committed := v_charge;
                v_fail_off := NULL;
                v_fail_count := 0;
            ELSE
                v_fail_off := v_charge;
                v_fail_count := v_count;
            END IF;
        END IF;
        UPDATE queen.log_consumers c SET
            committed = v_committed,
            total_consumed = c.total_consumed + (v_committed - v_from_cur),
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = v_fail_off, failed_count = v_fail_count
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_from_cur := v_committed;
    END IF;

    IF v_last_off <= v_committed THEN
        RETURN;
    END IF;

    -- Expiry (ttl from the push, maxWaitTimeSeconds from visibility): the leading segments
    -- pushed before the cutoff are passed, whole segments at a time.
    IF coalesce(p_ttl, 0) > 0 OR coalesce(p_max_wait, 0) > 0 THEN
        v_cutoff := least(
            CASE WHEN coalesce(p_ttl, 0) > 0 THEN v_now - make_interval(secs => p_ttl) END,
            CASE WHEN coalesce(p_max_wait, 0) > 0
                 THEN v_now - make_interval(secs => coalesce(p_delay, 0) + p_max_wait) END);
        LOOP
            SELECT s.base_offset, s.end_offset, s.created_at, octet_length(s.blob) AS bytes
            INTO v_head
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= v_committed + 1
            ORDER BY s.base_offset DESC LIMIT 1;
            IF NOT FOUND OR v_head.end_offset <= v_committed THEN
                SELECT s.base_offset, s.end_offset, s.created_at,
                       octet_length(s.blob) AS bytes
                INTO v_head
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_committed + 1
                ORDER BY s.base_offset LIMIT 1;
                EXIT WHEN NOT FOUND;
            END IF;
            EXIT WHEN v_head.created_at >= v_cutoff OR v_head.base_offset > v_last_off;
            v_n := (least(v_head.end_offset, v_last_off)
                    - greatest(v_committed + 1, v_head.base_offset) + 1)::integer;
            IF p_dead_letters THEN
                PERFORM queen.log_dead_letter_span_v1(
                    p_pid, p_group, v_head.base_offset,
                    greatest(v_committed + 1, v_head.base_offset),
                    least(v_head.end_offset, v_last_off), 'expired:', 'expired', 0);
                v_copied := v_copied + v_n::bigint * v_head.bytes;
            END IF;
            v_expired := v_expired + v_n;
            v_committed := least(v_head.end_offset, v_last_off);
            EXIT WHEN v_expired >= 10000 OR v_copied >= 16777216 OR v_committed >= v_last_off;
        END LOOP;
        IF v_expired > 0 THEN
            IF v_fail_off IS NOT NULL AND v_fail_off <= v_committed THEN
                v_fail_off := NULL;
                v_fail_count := 0;
            END IF;
            UPDATE queen.log_consumers c SET
                committed = v_committed,
                total_consumed = c.total_consumed + (v_committed - v_from_cur),
                acked_ahead = '{}',
                failed_offset = v_fail_off, failed_count = v_fail_count
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
            v_from_cur := v_committed;
            IF v_expired >= 10000 OR v_copied >= 16777216 OR v_last_off <= v_committed THEN
                RETURN;
            END IF;
        END IF;
    END IF;

    v_wanted := v_committed + 1;
    v_visible := CASE WHEN coalesce(p_delay, 0) > 0
                      THEN v_now - make_interval(secs => p_delay)
                      ELSE 'infinity'::timestamptz END;

    IF p_conflate AND p_group <> '__QUEUE_MODE__' THEN
        -- Conflation: only the newest visible message, the rest retired by the claim.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_last_off
          AND s.created_at <= v_visible
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF NOT FOUND OR v_seg.end_offset < v_wanted THEN
            RETURN;
        END IF;
        v_start := v_seg.end_offset;
        v_end := v_seg.end_offset;
        v_bases := ARRAY[v_seg.base_offset];
        v_idx := ARRAY[(v_seg.end_offset - v_seg.base_offset)::integer];
        v_takes := ARRAY[1];
        v_counts := ARRAY[v_seg.msg_count];
        v_times := ARRAY[v_seg.created_at];
        v_codecs := ARRAY[v_seg.codec];
        v_producers := ARRAY[v_seg.producer];
        v_blobs := ARRAY[v_seg.blob];
        v_budget := 0;
        v_committed_at_claim := v_start - 1;
    ELSE
        -- Head probe: one backward primary-key step.
        SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
        INTO v_seg
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid AND s.base_offset <= v_wanted
        ORDER BY s.base_offset DESC
        LIMIT 1;
        IF FOUND THEN
            v_seen_any := true;
            IF v_seg.end_offset >= v_wanted THEN
                IF v_seg.created_at > v_visible THEN
                    RETURN; -- delayed: every later segment is younger still
                END IF;
                v_take := least(v_seg.end_offset - v_wanted + 1, v_budget)::integer;
                v_start := v_wanted;
                v_end := v_wanted + v_take - 1;
                v_bases := ARRAY[v_seg.base_offset];
                v_idx := ARRAY[(v_wanted - v_seg.base_offset)::integer];
                v_takes := ARRAY[v_take];
                v_counts := ARRAY[v_seg.msg_count];
                v_times := ARRAY[v_seg.created_at];
                v_codecs := ARRAY[v_seg.codec];
                v_producers := ARRAY[v_seg.producer];
                v_blobs := ARRAY[v_seg.blob];
                v_budget := v_budget - v_take;
            END IF;
        END IF;

        -- Forward scan: a cursor, so leaving at the budget stops the index walk.
        IF v_budget > 0 THEN
            FOR v_seg IN
                SELECT s.base_offset, s.end_offset, s.msg_count, s.created_at, s.codec, s.producer, s.blob
                FROM queen.log_segments s
                WHERE s.partition_id = p_pid AND s.base_offset > v_wanted
                ORDER BY s.base_offset
            LOOP
                v_seen_any := true;
                EXIT WHEN v_seg.created_at > v_visible;
                v_take := least(v_seg.msg_count, v_budget);
                IF v_start IS NULL THEN
                    v_start := v_seg.base_offset;
                END IF;
                v_end := v_seg.base_offset + v_take - 1;
                v_bases := v_bases || v_seg.base_offset;
                v_idx := v_idx || 0;
                v_takes := v_takes || v_take;
                v_counts := v_counts || v_seg.msg_count;
                v_times := v_times || v_seg.created_at;
                v_codecs := v_codecs || v_seg.codec;
                v_producers := v_producers || v_seg.producer;
                v_blobs := v_blobs || v_seg.blob;
                v_budget := v_budget - v_take;
                EXIT WHEN v_budget <= 0;
            END LOOP;
        END IF;
    END IF;

    IF v_start IS NULL THEN
        -- The empty-partition cursor seal: only when no segment exists at all (not when
        -- segments are merely deferred by delayedProcessing). A cursor move, not a claim.
        IF NOT v_seen_any THEN
            UPDATE queen.log_consumers c SET committed = v_last_off
            WHERE c.partition_id = p_pid AND c.consumer_group = p_group
              AND c.committed < v_last_off;
        END IF;
        RETURN;
    END IF;

    IF p_auto_ack THEN
        UPDATE queen.log_consumers c SET
            committed = v_end, worker_id = NULL, lease_expires_at = NULL,
            lease_acquired_at = NULL, batch_end = NULL, acked_ahead = '{}',
            total_consumed = c.total_consumed + (v_end - v_committed),
            last_consumed_at = v_now
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        v_attempt := 1;
    ELSE
        v_attempt := CASE WHEN v_att_offset IS NOT DISTINCT FROM v_start
                          THEN v_att_count + 1 ELSE 1 END;
        UPDATE queen.log_consumers c SET
            committed = coalesce(v_committed_at_claim, c.committed),
            total_consumed = c.total_consumed
                + coalesce(v_committed_at_claim - c.committed, 0),
            worker_id = p_worker,
            shared_lease = p_worker,
            lease_expires_at = v_now + make_interval(secs => p_lease_seconds),
            lease_acquired_at = v_now,
            batch_end = v_end,
            acked_ahead = '{}',
            attempt_count = v_attempt,
            attempt_offset = v_start
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        -- A lease is a reservation: its commit need not wait for the WAL flush (see 003).
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;

    RETURN QUERY
        SELECT p_pid, v_attempt, v_start, v_end, u.*
        FROM unnest(v_bases, v_idx, v_takes, v_counts, v_times, v_codecs, v_producers, v_blobs) u;
END;
$$;

-- ---- sql/064_txn_keys.sql
-- 064_txn_keys: segments keep 48-bit transaction-id keys in two narrow arrays instead of
-- 64-bit hashes; every reader takes both kinds of segment.
--
-- The hashes were 824 B of a 100-message segment row (an int8 array), 8.2 B of the
-- 72.8 B of WAL a message queen-bench measured at batch 100 (pg_waldump --stats=record:
-- the segment rows are nine tenths of the broker's WAL). A key is the first 48 bits of
-- SHA-256 of the id's UTF-8 bytes, that is queen.txn_hash(id) >> 16 (arithmetic shift),
-- so a hash an earlier broker stored turns into the same key. It is stored as
-- txn_keys_hi (key >> 16, an int4) and txn_keys_lo (the key's low 16 bits, as a signed
-- int2): 6 B a message and two array headers, 648 B a segment. Two int arrays and not one
-- packed bytea because PostgreSQL unnests them at C speed (a bytea would need six
-- get_byte calls a key: about 35 us a 100-key segment against 12).
--
-- What the width decides: a push answered `duplicate` is always checked against the
-- stored frame's id (a key only finds candidates); an ack inside a lease's span and an
-- admin lookup by id take the key's word, as they took the hash's. For two ids among a
-- 100-message lease to share a key is about 2e-11; for a lookup among 10^8 messages of a
-- partition to meet another id's key, about 4e-7.
--
-- log_segments.txn_keys_hi integer[], txn_keys_lo smallint[]
--   Written by this version's broker instead of txn_hashes, in offset order. A segment
--   holds one kind, txn_hashes (earlier brokers, and the dead-letter requeue) or the keys,
--   or neither (segments from before 015; their ids are in queen.dedup).
--
-- queen.txn_key(p_txn) -> bigint
--   The key of one id. Immutable.
-- queen.segment_txn_keys(p_hashes, p_hi, p_lo) -> bigint[]
--   A segment's keys in offset order from whichever it holds; NULL when neither.
--
-- queen.log_resolve_offsets_v1, queen.log_find_offset_v1: the same signatures and answers
--   as in 015, compared in keys so that both kinds of segment answer. Brokers of the
--   previous version call them too (through log_ack_v2 and the admin routes), with 64-bit
--   hashes, which become keys here.
--
-- queen.log_push_v3(p_tenant, p_queue, p_partition, p_known_last, p_default_window,
--                   p_counts, p_codecs, p_blobs, p_keys_hi, p_keys_lo, p_producer)
--   log_push_v2 (016) writing keys: p_keys_hi/p_keys_lo hold every message's key in
--   order, and a stale answer lists each segment's key columns (seg_keys_hi, seg_keys_lo)
--   or its hashes (seg_hashes), as stored (the broker turns them into keys); the codec
--   and blob only for a segment with neither.
--
-- Rolling upgrades: brokers of the previous version keep calling log_push_v2 and writing
-- txn_hashes, which this version reads. They see the segments this version writes as
-- segments without hashes: log_push_v2 hands them the blob, from whose frames their window
-- reads the ids; their claim returns no hashes for them, so their acks skip the known-
-- and whole-lease statements and go through log_ack_v2, which resolves ids with the
-- function below.

ALTER TABLE queen.log_segments ADD COLUMN IF NOT EXISTS txn_keys_hi integer[];
ALTER TABLE queen.log_segments ADD COLUMN IF NOT EXISTS txn_keys_lo smallint[];

CREATE OR REPLACE FUNCTION queen.txn_key(p_txn text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT queen.txn_hash(p_txn) >> 16
$$;

CREATE OR REPLACE FUNCTION queen.segment_txn_keys(
    p_hashes bigint[],
    p_hi     integer[],
    p_lo     smallint[]
) RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_hi IS NOT NULL THEN
            (SELECT array_agg((u.hi::bigint << 16) | (u.lo::bigint & 65535) ORDER BY u.k)
             FROM unnest(p_hi, p_lo) WITH ORDINALITY AS u (hi, lo, k))
        WHEN p_hashes IS NOT NULL THEN
            (SELECT array_agg(u.h >> 16 ORDER BY u.k)
             FROM unnest(p_hashes) WITH ORDINALITY AS u (h, k))
    END
$$;

CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v1(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[]
) RETURNS bigint[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_keys bigint[];
    v_span bigint[] := '{}';
    v_offs bigint[];
    r      record;
BEGIN
    IF coalesce(cardinality(p_hashes), 0) = 0 THEN
        RETURN '{}';
    END IF;
    SELECT array_agg(t.h >> 16 ORDER BY t.i) INTO v_keys
    FROM unnest(p_hashes) WITH ORDINALITY AS t (h, i);
    -- The keys of offsets (p_after, p_upto] in order, from the segments that hold them:
    -- the one holding p_after + 1 (one backward index probe), then forward to p_upto.
    -- Only the span's part of each segment is turned into keys.
    FOR r IN
        SELECT s.base_offset, s.end_offset, s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo,
               greatest(s.base_offset, p_after + 1) - s.base_offset + 1 AS a,
               least(s.end_offset, p_upto) - s.base_offset + 1 AS b
        FROM queen.log_segments s
        WHERE s.partition_id = p_pid
          AND s.base_offset >= coalesce(
                (SELECT x.base_offset FROM queen.log_segments x
                 WHERE x.partition_id = p_pid AND x.base_offset <= p_after + 1
                 ORDER BY x.base_offset DESC LIMIT 1), -1)
          AND s.base_offset <= p_upto
        ORDER BY s.base_offset
    LOOP
        IF r.txn_keys_hi IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT (u.hi::bigint << 16) | (u.lo::bigint & 65535)
                FROM unnest(r.txn_keys_hi[r.a : r.b], r.txn_keys_lo[r.a : r.b])
                     WITH ORDINALITY AS u (hi, lo, k)
                ORDER BY u.k);
        ELSIF r.txn_hashes IS NOT NULL THEN
            v_span := v_span || ARRAY(
                SELECT u.h >> 16 FROM unnest(r.txn_hashes[r.a : r.b]) WITH ORDINALITY AS u (h, k)
                ORDER BY u.k);
        ELSE
            -- A legacy segment: its offsets stay unknown here (the dedup rows answer below).
            v_span := v_span || array_fill(NULL::bigint, ARRAY[(r.b - r.a + 1)::integer]);
        END IF;
    END LOOP;

    IF v_span = v_keys THEN
        -- The common case: the whole span, in delivery order.
        SELECT array_agg(o) INTO v_offs FROM generate_series(p_after + 1, p_upto) AS o;
        RETURN v_offs;
    END IF;
    -- Otherwise each key's position in the span (C-level scans of at most a lease's ids).
    SELECT array_agg(p_after + array_position(v_span, t.h) ORDER BY t.i) INTO v_offs
    FROM unnest(v_keys) WITH ORDINALITY AS t (h, i);

    IF array_position(v_offs, NULL) IS NOT NULL THEN
        -- Below the range: an ack of something already done (bounded look back), then the
        -- legacy dedup rows.
        WITH want AS (
            SELECT t.i, t.h FROM unnest(v_keys) WITH ORDINALITY AS t (h, i)
            WHERE v_offs[t.i] IS NULL
        ), below AS (
            SELECT s.base_offset,
                   queen.segment_txn_keys(s.txn_hashes, s.txn_keys_hi, s.txn_keys_lo) AS keys
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= p_after
            ORDER BY s.base_offset DESC
            LIMIT 1000
        ), have AS (
            SELECT x.key, b.base_offset + x.k - 1 AS off
            FROM below b
            CROSS JOIN LATERAL unnest(b.keys) WITH ORDINALITY AS x (key, k)
        ), found AS (
            SELECT w.i, max(hv.off) AS off
            FROM want w JOIN have hv ON hv.key = w.h AND hv.off <= p_after
            GROUP BY w.i
        )
        SELECT array_agg(coalesce(v_offs[o.i], f.off, d.message_offset) ORDER BY o.i)
        INTO v_offs
        FROM unnest(p_txn_ids) WITH ORDINALITY AS o (txn, i)
        LEFT JOIN found f ON f.i = o.i
        LEFT JOIN queen.dedup d
          ON v_offs[o.i] IS NULL AND f.off IS NULL
         AND d.partition_id = p_pid AND d.transaction_id = o.txn;
    END IF;
    RETURN v_offs;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_find_offset_v1(
    p_pid bigint,
    p_txn text
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_h   bigint := queen.txn_hash(p_txn);
    v_hi  integer := (v_h >> 32)::integer;
    v_lo  bigint := (v_h >> 16) & 65535;
    v_off bigint;
BEGIN
    -- Each kind of segment through the containment test of its own column first.
    SELECT max(f.off) INTO v_off
    FROM (
        SELECT s.base_offset + x.k - 1 AS off
        FROM queen.log_segments s
        CROSS JOIN LATERAL unnest(s.txn_hashes) WITH ORDINALITY AS x (hash, k)
        WHERE s.partition_id = p_pid AND s.txn_hashes @> ARRAY[v_h] AND x.hash = v_h
        UNION ALL
        SELECT s.base_offset + x.k - 1
        FROM queen.log_segments s
        CROSS JOIN LATERAL unnest(s.txn_keys_hi, s.txn_keys_lo) WITH ORDINALITY AS x (hi, lo, k)
        WHERE s.partition_id = p_pid AND s.txn_keys_hi @> ARRAY[v_hi]
          AND x.hi = v_hi AND (x.lo::bigint & 65535) = v_lo
    ) f;
    IF v_off IS NULL THEN
        SELECT d.message_offset INTO v_off
        FROM queen.dedup d
        WHERE d.partition_id = p_pid AND d.transaction_id = p_txn;
    END IF;
    RETURN v_off;
END;
$$;

CREATE OR REPLACE FUNCTION queen.log_push_v3(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_known_last     bigint,
    p_default_window integer,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_keys_hi        integer[],
    p_keys_lo        smallint[],
    p_producer       text
) RETURNS TABLE (
    stale          boolean,
    partition_id   bigint,
    last_offset    bigint,
    window_seconds integer,
    seg_base       bigint,
    seg_end        bigint,
    seg_age_ms     bigint,
    seg_keys_hi    integer[],
    seg_keys_lo    smallint[],
    seg_hashes     bigint[],
    seg_codec      smallint,
    seg_blob       bytea
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid     bigint;
    v_window  integer;
    v_pid     bigint;
    v_last    bigint;
    v_n       integer := coalesce(cardinality(p_counts), 0);
    v_total   integer;
    v_now     timestamptz := clock_timestamp();
    v_created timestamptz;
    v_prev_at timestamptz;
    v_max     integer;
    v_size    bigint;
    r         record;
BEGIN
    SELECT sum(c) INTO v_total FROM unnest(p_counts) AS c;
    IF v_n = 0 OR v_n <> coalesce(cardinality(p_codecs), 0)
       OR v_n <> coalesce(cardinality(p_blobs), 0)
       OR v_total IS DISTINCT FROM cardinality(p_keys_hi)
       OR v_total IS DISTINCT FROM cardinality(p_keys_lo)
       OR EXISTS (SELECT 1 FROM unnest(p_counts) AS c WHERE c IS NULL OR c < 1) THEN
        RAISE EXCEPTION 'log_push_v3: counts, codecs and blobs must be non-empty and equal, keys one per message'
            USING ERRCODE = '22023';
    END IF;

    SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
    INTO v_qid, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
        INTO v_qid, v_window
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    SELECT q.max_size INTO v_max FROM queen.queues q WHERE q.id = v_qid;
    IF v_max > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('queen.max_size/' || v_qid, 0));
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    IF v_window > 0 AND v_last >= 0 AND v_last IS DISTINCT FROM p_known_last THEN
        stale := true; partition_id := v_pid; last_offset := v_last;
        window_seconds := v_window;
        RETURN NEXT;
        -- created_at grows with base_offset: walk back from the newest, stop at the window.
        FOR r IN
            SELECT s.base_offset, s.end_offset, s.created_at, s.codec, s.blob, s.txn_hashes,
                   s.txn_keys_hi, s.txn_keys_lo
            FROM queen.log_segments s
            WHERE s.partition_id = v_pid
              AND s.base_offset > CASE WHEN p_known_last <= v_last THEN p_known_last ELSE -1 END
            ORDER BY s.base_offset DESC
        LOOP
            EXIT WHEN r.created_at < v_now - make_interval(secs => v_window);
            seg_base := r.base_offset;
            seg_end := r.end_offset;
            seg_age_ms := (extract(epoch FROM (v_now - r.created_at)) * 1000)::bigint;
            seg_keys_hi := r.txn_keys_hi;
            seg_keys_lo := r.txn_keys_lo;
            seg_hashes := r.txn_hashes;
            seg_codec := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.codec END;
            seg_blob := CASE WHEN r.txn_keys_hi IS NULL AND r.txn_hashes IS NULL THEN r.blob END;
            RETURN NEXT;
        END LOOP;
        RETURN;
    END IF;

    IF v_max > 0 THEN
        SELECT coalesce(sum(p.last_offset + 1 - coalesce(
                   (SELECT s.base_offset FROM queen.log_segments s
                    WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1),
                   p.last_offset + 1)), 0)
        INTO v_size
        FROM queen.log_partitions p WHERE p.queue_id = v_qid;
        IF v_size + v_total > v_max THEN
            stale := NULL; partition_id := v_pid; last_offset := v_size;
            window_seconds := v_max;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- created_at must never go backwards within a partition (delayedProcessing and
    -- windowBuffer rely on it); the lock above orders pushes, the GREATEST guards the clock.
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = v_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(v_now, v_prev_at);

    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_keys_hi, txn_keys_lo)
    SELECT v_pid, v_last + 1 + t.before, v_last + t.before + t.cnt, t.cnt, v_created,
           t.codec, p_producer, t.blob, p_keys_hi[t.before + 1 : t.before + t.cnt],
           p_keys_lo[t.before + 1 : t.before + t.cnt]
    FROM (
        SELECT u.cnt, u.codec, u.blob,
               coalesce(sum(u.cnt) OVER (ORDER BY u.k ROWS BETWEEN UNBOUNDED PRECEDING
                                                        AND 1 PRECEDING), 0)::integer AS before
        FROM unnest(p_counts, p_codecs, p_blobs) WITH ORDINALITY AS u (cnt, codec, blob, k)
    ) t;

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_total,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = v_pid;

    stale := false; partition_id := v_pid; last_offset := v_last;
    window_seconds := v_window;
    RETURN NEXT;
END;
$$;

-- ---- refinery's history of the files above, as the broker of d5ce15b wrote it
CREATE TABLE queen.schema_migrations (version integer PRIMARY KEY, name varchar(255), applied_on varchar(255), checksum varchar(255));
INSERT INTO queen.schema_migrations VALUES (1, 'schema', '2026-12-05T14:26:57.219198287Z', '17941727659059967871');
INSERT INTO queen.schema_migrations VALUES (2, 'log_push', '2026-12-05T14:26:57.306657746Z', '11533887382771190049');
INSERT INTO queen.schema_migrations VALUES (3, 'log_pop', '2026-12-05T14:26:57.310533205Z', '14434549847010424577');
INSERT INTO queen.schema_migrations VALUES (4, 'log_pop_specific', '2026-12-05T14:26:57.314539357Z', '2866869166538943226');
INSERT INTO queen.schema_migrations VALUES (5, 'log_pop_wildcard', '2026-12-05T14:26:57.318511246Z', '11715056969295280057');
INSERT INTO queen.schema_migrations VALUES (6, 'log_pop_discover', '2026-12-05T14:26:57.322535734Z', '17616945234609050604');
INSERT INTO queen.schema_migrations VALUES (7, 'log_has_pending', '2026-12-05T14:26:57.326532551Z', '5782540566869096793');
INSERT INTO queen.schema_migrations VALUES (8, 'log_ack', '2026-12-05T14:26:57.330540098Z', '9767482735908381807');
INSERT INTO queen.schema_migrations VALUES (9, 'log_lease_extend', '2026-12-05T14:26:57.334532685Z', '15120251185566422972');
INSERT INTO queen.schema_migrations VALUES (10, 'configure_queue', '2026-12-05T14:26:57.338524509Z', '14059745488362359097');
INSERT INTO queen.schema_migrations VALUES (11, 'log_pop_list', '2026-12-05T14:26:57.342537238Z', '3763739296652423392');
INSERT INTO queen.schema_migrations VALUES (12, 'log_pending_partitions', '2026-12-05T14:26:57.345281949Z', '14495873856499925212');
INSERT INTO queen.schema_migrations VALUES (13, 'system_state', '2026-12-05T14:26:57.350530652Z', '4820018568186124296');
INSERT INTO queen.schema_migrations VALUES (14, 'group_conflation', '2026-12-05T14:26:57.354522731Z', '14021902105391751735');
INSERT INTO queen.schema_migrations VALUES (15, 'txn_hash', '2026-12-05T14:26:57.356191692Z', '12969388049094064741');
INSERT INTO queen.schema_migrations VALUES (16, 'log_push_v2', '2026-12-05T14:26:57.357009337Z', '9375172762621785309');
INSERT INTO queen.schema_migrations VALUES (17, 'log_ack_v2', '2026-12-05T14:26:57.361190299Z', '11613956158109795637');
INSERT INTO queen.schema_migrations VALUES (18, 'log_pop_v2', '2026-12-05T14:26:57.366530827Z', '16165871750761495624');
INSERT INTO queen.schema_migrations VALUES (20, 'lease_require', '2026-12-05T14:26:57.370509473Z', '8506572802909595767');
INSERT INTO queen.schema_migrations VALUES (30, 'consumer_group_lags', '2026-12-05T14:26:57.374516432Z', '13228644073930485056');
INSERT INTO queen.schema_migrations VALUES (31, 'consumer_group_delete', '2026-12-05T14:26:57.37850127Z', '9777239904123518420');
INSERT INTO queen.schema_migrations VALUES (32, 'consumer_group_subscription', '2026-12-05T14:26:57.382517896Z', '1163170047279121902');
INSERT INTO queen.schema_migrations VALUES (33, 'consumer_group_seek', '2026-12-05T14:26:57.386499459Z', '13476415382247148231');
INSERT INTO queen.schema_migrations VALUES (34, 'dead_letters', '2026-12-05T14:26:57.390528449Z', '1688220617499458659');
INSERT INTO queen.schema_migrations VALUES (35, 'dead_letter_requeue', '2026-12-05T14:26:57.394541364Z', '2793529098678839952');
INSERT INTO queen.schema_migrations VALUES (36, 'resource_stats', '2026-12-05T14:26:57.39535106Z', '3307343055059391303');
INSERT INTO queen.schema_migrations VALUES (37, 'resources', '2026-12-05T14:26:57.398507876Z', '9676482401940262114');
INSERT INTO queen.schema_migrations VALUES (38, 'queue_delete', '2026-12-05T14:26:57.402530835Z', '8863863120067201336');
INSERT INTO queen.schema_migrations VALUES (39, 'messages', '2026-12-05T14:26:57.406520322Z', '13970524368901759611');
INSERT INTO queen.schema_migrations VALUES (40, 'message_erase', '2026-12-05T14:26:57.410520905Z', '7194789115301209055');
INSERT INTO queen.schema_migrations VALUES (41, 'queue_metrics', '2026-12-05T14:26:57.414534196Z', '18349989459069954116');
INSERT INTO queen.schema_migrations VALUES (42, 'status', '2026-12-05T14:26:57.416308894Z', '5489241116950726726');
INSERT INTO queen.schema_migrations VALUES (43, 'traces', '2026-12-05T14:26:57.418495498Z', '8115405201309425394');
INSERT INTO queen.schema_migrations VALUES (44, 'retention', '2026-12-05T14:26:57.445550785Z', '15749486357995502108');
INSERT INTO queen.schema_migrations VALUES (45, 'dead_letter_requeue_v2', '2026-12-05T14:26:57.46369019Z', '6712537676750051215');
INSERT INTO queen.schema_migrations VALUES (48, 'log_render_failed', '2026-12-05T14:26:57.466545852Z', '11072345412275713763');
INSERT INTO queen.schema_migrations VALUES (49, 'retention_cursor_lock', '2026-12-05T14:26:57.467478935Z', '5552817405243760990');
INSERT INTO queen.schema_migrations VALUES (50, 'queue_options', '2026-12-05T14:26:57.471172464Z', '11272193751473235601');
INSERT INTO queen.schema_migrations VALUES (51, 'log_pop_v3', '2026-12-05T14:26:57.472430237Z', '14998870746739720565');
INSERT INTO queen.schema_migrations VALUES (52, 'log_ack_v2_options', '2026-12-05T14:26:57.477544959Z', '7364374801021147107');
INSERT INTO queen.schema_migrations VALUES (53, 'log_render_failed_options', '2026-12-05T14:26:57.48655709Z', '1590005939695203331');
INSERT INTO queen.schema_migrations VALUES (54, 'consumer_group_seek_retry_at', '2026-12-05T14:26:57.489829316Z', '9839800618549192774');
INSERT INTO queen.schema_migrations VALUES (55, 'push_maintenance', '2026-12-05T14:26:57.49061258Z', '11635086172184800809');
INSERT INTO queen.schema_migrations VALUES (58, 'segments_inline', '2026-12-05T14:26:57.49456857Z', '2588185239981672136');
INSERT INTO queen.schema_migrations VALUES (60, 'tenant_leases', '2026-12-05T14:26:57.498539993Z', '14477902600313084091');
INSERT INTO queen.schema_migrations VALUES (61, 'tenant_limits', '2026-12-05T14:26:57.502553476Z', '6040433154044682342');
INSERT INTO queen.schema_migrations VALUES (62, 'segments_without_foreign_key', '2026-12-05T14:26:57.506540805Z', '3099842997012033195');
INSERT INTO queen.schema_migrations VALUES (63, 'leases_named_by_partition', '2026-12-05T14:26:57.51056085Z', '17837434345057832789');
INSERT INTO queen.schema_migrations VALUES (64, 'txn_keys', '2026-12-05T14:26:57.522572008Z', '6106601793032222663');
