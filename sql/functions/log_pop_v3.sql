-- queen.log_pop_v3(p_qid, p_pid, p_group, p_worker, p_budget, p_lease_seconds, p_auto_ack,
--                  p_sub_mode, p_sub_from, p_skip_window, p_delay, p_window, p_conflate,
--                  p_ttl, p_max_wait, p_retry_limit, p_dead_letters, p_retry_dead_letters)
--   -> SETOF queen.log_pop_row
--
-- The per-partition claim every SQL pop path funnels into (queen.log_pop_list_v2,
-- queen.log_pop_wildcard_bin_v2, queen.log_pop_specific_v2). The queue's options are given
-- by the caller, which reads them once (queen.log_pop_options_v1): p_delay
-- (delayedProcessing seconds), p_window (windowBuffer seconds), p_conflate
-- (the group's conflation flag), p_ttl, p_max_wait, p_retry_limit, p_dead_letters (file
-- expired messages) and p_retry_dead_letters (file messages whose retries are spent).
-- In order:
--   1. Gate: windowBuffer (unless p_skip_window): nothing while the newest segment is
--      younger than p_window seconds.
--   2. Claim: the cursor row of (p_pid, p_group), with the partition's last_offset in the
--      same statement, FOR UPDATE SKIP LOCKED, only when it has no live lease and no
--      retry_at still ahead (a retryDelay hold is left alone like a lease;
--      queen.log_pop_list_v2 answers 'delayed' with that time). A missing row (first
--      contact) is created at queen.log_seed_cursor_v1's position under a non-blocking
--      advisory try-lock; a pop that loses the try-lock returns nothing this cycle.
--   3. An expired lease (worker_id still set: no ack or release came) is one delivery
--      attempt of the first message it left undone, charged to failed_offset/failed_count,
--      the budget failed acks spend. Past p_retry_limit (3 when NULL) the message is filed
--      in the dead letters (p_retry_dead_letters; transaction id 'lease-expired:<offset>')
--      or skipped, and the cursor moves past it. Then the claim goes on from the cursor.
--   4. Expiry: with p_ttl > 0 (seconds since the push) or p_max_wait > 0 (seconds since it
--      became visible: push + p_delay), the leading segments pushed before the earlier of
--      the two limits are not delivered: filed in the dead letters (p_dead_letters;
--      transaction id 'expired:<offset>', error 'expired') or skipped, the cursor passing
--      them. Checked per segment: a segment's messages share its push time, and created_at
--      grows with base_offset, so expired segments are a prefix. A claim expires at most
--      ten thousand messages and files at most 16 MB of segment copies (each dead letter
--      holds a copy of its segment), at least one segment; past that it stops, having
--      moved the cursor, and the next claim goes on.
--   5. Scan from committed + 1: one backward primary-key probe for the head segment, then
--      a forward cursor that stops at p_budget messages or at the first segment younger
--      than p_delay seconds (delayedProcessing). A conflating group (never queue mode) is
--      handed only the newest visible message; the claim moves its cursor to just before
--      it, retiring the older ones undelivered. When the partition holds no segment at all
--      the cursor is sealed at last_offset (a cursor move, not a claim); a push committing
--      after the claim's snapshot stays above the seal.
--   6. With p_auto_ack the cursor moves past the span at once. Otherwise the span
--      (committed, batch_end] is leased to p_worker for p_lease_seconds, counting
--      delivery_attempt for a batch that starts where the last one did. A bare uuid
--      p_worker (one lease over several partitions) is also written into shared_lease,
--      through which queen.lease_holders_v1 finds it; a lease naming its partition
--      ("<uuid>.<partition id>", queen.lease_partition: the Citus layout's one-partition
--      claims, src/db/pop/delegated_claim.rs) is found by the primary key, and
--      shared_lease is left as it is, so the update writes no indexed column (HOT).
--
-- Returns one row per segment slice: (partition_id, delivery_attempt, claim_start,
-- claim_end, base_offset, start_idx, take, msg_count, created_at, codec, producer, blob);
-- no rows = nothing claimed. Never waits on another transaction.
-- Locks: the claimed cursor row, to the end of the caller's transaction; a transaction
-- advisory lock when it creates the row. A leased claim sets synchronous_commit off for the
-- caller's transaction: a lease is a reservation, and a crash that loses it only makes the
-- batch come again, as an expired lease does anyway. That spares one WAL flush wait per
-- pop+ack cycle; the next synchronous commit (the ack's) flushes it. Auto-ack claims keep
-- waiting: their cursor advance is the only record that the messages were delivered. On a
-- Citus node (the setting citus.version exists) a leased claim waits too: a shard move
-- loses a commit of its last moments whose WAL was not written yet (the move's catch-up
-- waits for the source's pg_current_wal_lsn(); docs/scale-out.md, "Adding a worker under
-- load"), and a lost lease hands its batch to the next pop while the first consumer still
-- holds it, a delivery twice that no lease expiry explains.
-- No notifications.
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
    v_seed       bigint;
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
    v_seeded     boolean := false;
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

    -- The claim: never wait, never insert
    -- unconditionally, never before a retryDelay has passed. A missing row (first contact)
    -- is created, then claimed: the loop runs a second time only after that insert.
    LOOP
        SELECT c.committed, c.attempt_count, c.attempt_offset, c.worker_id, c.failed_offset,
               c.failed_count
        INTO v_row
        FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL
               OR c.lease_expires_at < v_now)
          AND (c.retry_at IS NULL OR c.retry_at <= v_now)
        FOR UPDATE OF c SKIP LOCKED;
        EXIT WHEN FOUND;
        IF v_seeded THEN
            RETURN;
        END IF;
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN; -- leased, held back by retryDelay, or mid-claim elsewhere
        END IF;
        IF NOT pg_try_advisory_xact_lock(
                   hashtextextended(p_pid::text || '/' || p_group, 42)) THEN
            RETURN; -- another pop is creating this row: skip this cycle
        END IF;
        -- The seed first, then the insert: Citus plans no function reading the tables
        -- inside an INSERT of a distributed table.
        v_seed := queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from);
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        VALUES (p_pid, p_group, v_seed)
        ON CONFLICT DO NOTHING;
        v_seeded := true;
    END LOOP;
    v_committed := v_row.committed;
    v_att_count := v_row.attempt_count;
    v_att_offset := v_row.attempt_offset;
    -- Read after the claim, in a statement of its own: in a function delegated to a Citus
    -- worker a statement may not join the distributed cursors with the reference table
    -- log_partitions (docs/scale-out.md). A later snapshot only sees more appended.
    SELECT p.last_offset INTO v_last_off FROM queen.log_partitions p WHERE p.id = p_pid;
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
        -- A lease is a reservation: its commit need not wait for the WAL flush, except on
        -- a Citus node (see the header). Set before the UPDATE, so its triggers see it.
        IF current_setting('citus.version', true) IS NULL THEN
            PERFORM set_config('synchronous_commit', 'off', true);
        END IF;
        UPDATE queen.log_consumers c SET
            committed = coalesce(v_committed_at_claim, c.committed),
            total_consumed = c.total_consumed
                + coalesce(v_committed_at_claim - c.committed, 0),
            worker_id = p_worker,
            shared_lease = CASE WHEN queen.lease_partition(p_worker) IS NULL
                                THEN p_worker ELSE c.shared_lease END,
            lease_expires_at = v_now + make_interval(secs => p_lease_seconds),
            lease_acquired_at = v_now,
            batch_end = v_end,
            acked_ahead = '{}',
            attempt_count = v_attempt,
            attempt_offset = v_start
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    END IF;

    RETURN QUERY
        SELECT p_pid, v_attempt, v_start, v_end, u.*
        FROM unnest(v_bases, v_idx, v_takes, v_counts, v_times, v_codecs, v_producers, v_blobs) u;
END;
$$;
