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
