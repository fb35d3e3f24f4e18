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
