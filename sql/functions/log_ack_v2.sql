-- queen.log_ack_v2(p_pid, p_group, p_lease, p_txn_ids, p_hashes, p_offsets, p_statuses,
--                  p_errors)
--   -> queen.log_ack_answer_row, one row per item
--
-- Acknowledges messages of one (partition p_pid, consumer group p_group). Items are
-- parallel arrays (1-based); p_hashes[i] is queen.txn_hash(p_txn_ids[i]), which the broker
-- computes. p_offsets, or any p_offsets[i], may be NULL: the offset is then found by
-- transaction id within the lease's span (queen.log_resolve_offsets_v2, from the ids the
-- segments store), which is what lets any node ack.
--
-- Locks the cursor row (FOR UPDATE: at most a short wait behind a pop) and refuses every
-- item ("Invalid or expired lease") when the row has no live lease or p_lease names another
-- one; a NULL or '' p_lease acks against the live lease. Statuses:
--   completed | success  the message is done (the default when the status is NULL);
--   dlq        filed in queen.dead_letters, then done; filed only when the queue keeps
--              dead letters (dead_letter_queue true or NULL), else done without a copy;
--   failed     one retry charged (failed_offset/failed_count, the budget that expired
--              leases charged by queen.log_pop_v3 spend too). Within the queue's
--              retry_limit the lease is released and the partition rewinds to the message;
--              with retry_delay_ms > 0 the rewind also sets retry_at = now + the delay, so
--              no claim takes the partition (it and every later message of it) before
--              then. Past the retry limit the message is filed in queen.dead_letters when
--              the queue keeps dead letters for spent retries (dead_letter_queue and
--              dlq_after_max_retries each true or NULL), else skipped; either way the
--              partition rewinds to the next one;
--   retry      rewinds to the message without charging a retry.
-- Offsets at or below the cursor are already done (success); an id found nowhere is
-- refused ("Message not found"), an offset beyond the lease's batch_end too ("Message not
-- part of this lease"), and an unknown status ("Unknown ack status: ...").
--
-- The cursor moves to the longest done prefix of the lease span; completions out of order
-- wait in acked_ahead. A rewind releases the lease and makes every later item of the call a
-- no-op (they come again). A lease whose every delivered message is done is released at
-- once. When every item is completed and together they cover the whole span, that is one
-- positional advance to batch_end without walking the items (the common case). A release
-- that is not a delayed rewind clears retry_at.
--
-- Rows: one per item, in input order; dlq says whether a dead letter was filed;
-- pending_after = messages left beyond the new cursor (what an ack-promote needs).
-- Locks: the cursor row, to the end of the caller's transaction. No notifications.
CREATE OR REPLACE FUNCTION queen.log_ack_v2(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_hashes   bigint[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[]
) RETURNS SETOF queen.log_ack_answer_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid         bigint;
    v_now         timestamptz := now();
    v_n           integer := coalesce(cardinality(p_txn_ids), 0);
    v_c           record;
    v_retry_limit integer;
    v_retry_delay integer;
    v_keep_dlq    boolean;
    v_retry_dlq   boolean;
    v_delayed     boolean := false;
    v_retry_at    timestamptz;
    v_seg_base    bigint;
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
        RETURN QUERY
            SELECT g.n, false, 'Invalid or expired lease', false, false, NULL::text,
                   NULL::text, NULL::bigint
            FROM generate_series(1, v_n) AS g (n);
        RETURN;
    END IF;

    -- The partition's row, then its queue's, in two statements: delegated on Citus, a
    -- statement may read the partition's shard or a reference table, not join them
    -- (docs/scale-out.md).
    SELECT p.queue_id, p.name, p.last_offset INTO v_qid, v_pname, v_last
    FROM queen.log_partitions p WHERE p.id = p_pid;
    SELECT q.retry_limit, q.retry_delay_ms, coalesce(q.dead_letter_queue, true),
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true),
           q.name
    INTO v_retry_limit, v_retry_delay, v_keep_dlq, v_retry_dlq, v_qname
    FROM queen.queues q WHERE q.id = v_qid;

    -- Resolve offsets: the caller's, else by transaction id within the lease's own span
    -- (the segments it covers), so the cost follows the batch, not the partition.
    v_ok := array_fill(false, ARRAY[v_n]);
    v_err := array_fill(NULL::text, ARRAY[v_n]);
    v_dlq := array_fill(false, ARRAY[v_n]);
    IF p_offsets IS NULL OR array_position(p_offsets, NULL) IS NOT NULL THEN
        v_offs := queen.log_resolve_offsets_v2(p_pid, v_c.committed, v_c.batch_end, p_hashes,
                                               p_txn_ids, v_c.acked_ahead);
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
            -- The segment first, then the copy by its key: Citus pushes no INSERT ..
            -- SELECT with LIMIT down to the shard.
            SELECT s.base_offset INTO v_seg_base
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset <= v_offs[i]
            ORDER BY s.base_offset DESC
            LIMIT 1;
            INSERT INTO queen.dead_letters
                (partition_id, consumer_group, message_offset, transaction_id, error_message,
                 retry_count, segment_base, codec, producer, created_at, blob)
            SELECT s.partition_id, p_group, v_offs[i], p_txn_ids[i], p_errors[i],
                   CASE WHEN v_fail_off = v_offs[i] THEN v_fail_count ELSE 0 END,
                   s.base_offset, s.codec, s.producer, s.created_at, s.blob
            FROM queen.log_segments s
            WHERE s.partition_id = p_pid AND s.base_offset = v_seg_base;
        END IF;
    END LOOP;

    IF v_fail_off IS NOT NULL AND v_fail_off <= v_new THEN
        v_fail_off := NULL; -- the charged message is behind the cursor now
        v_fail_count := 0;
    END IF;

    v_release := v_rewind IS NOT NULL OR v_new >= v_c.batch_end;
    IF v_release THEN
        -- Computed before the UPDATE: Citus takes no STABLE function (timestamptz
        -- arithmetic) inside a CASE of an UPDATE of a distributed table.
        v_retry_at := CASE WHEN v_delayed
                           THEN v_now + make_interval(secs => v_retry_delay / 1000.0) END;
        UPDATE queen.log_consumers c SET
            committed = v_new,
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            retry_at = v_retry_at,
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

    RETURN QUERY
        SELECT g.n, v_ok[g.n], v_err[g.n], v_release AND v_ok[g.n], v_dlq[g.n], v_qname,
               v_pname, greatest(v_last - v_new, 0)
        FROM generate_series(1, v_n) AS g (n);
END;
$$;
