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
