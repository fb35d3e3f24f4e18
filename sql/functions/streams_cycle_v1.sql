-- queen.streams_cycle_v1(p_tenant, p_query, p_pid, p_group, p_lease, p_txn_id, p_txn_hash,
--                        p_count, p_release, p_ops) -> jsonb
--
-- The SQL part of one streams cycle (POST /streams/v1/cycle, src/log/streams/cycle.rs):
-- the fence and ack of the source batch and the state ops, inside the caller's
-- transaction, which then stores the cycle's sink pushes and commits all of it or nothing.
--
-- Serialises the cycles of one (query, partition): a transaction-scoped advisory lock on
-- them, held to the caller's commit. Then, when p_count is not NULL (NULL: an idle flush,
-- state only), the partial-ack lease primitive of docs/pop.md "Streams: a prefix of a
-- leased batch": locks the cursor row of (p_pid, p_group) and requires its lease to be
-- p_lease and live; the batch is (floor, batch_end], the floor as in queen.log_ack_v2.
-- The first p_count messages are done: the cursor moves to floor + p_count. p_txn_id,
-- when not NULL, must be the transaction id of that last message (p_txn_hash is
-- queen.txn_hash of it, computed by the broker), so a resent cycle that already applied
-- cannot settle the next messages of a kept lease. The lease is released when p_release
-- or nothing is left; else it stays, same id and expiry, on the tail.
-- State ops (p_ops, [{"type": "upsert", "key", "value"} | {"type": "delete", "key"}])
-- apply in order: the last op of a key decides it.
--
-- Answers {"ok": true, "released", "queue", "partition", "pending_after"} (the last three
-- NULL for an idle flush), or {"ok": false, "code", "error"} having written nothing:
--   unknown_query      p_tenant has no query p_query;
--   unknown_partition  p_pid is not a partition of the query's source queue;
--   lease              no live lease p_lease on (p_pid, p_group): expired, replaced,
--                      released, or another group's;
--   settled            p_txn_id is not message p_count of the lease's batch;
--   count              p_count is more than the batch holds.
-- Locks: the advisory lock, the cursor row, the state rows written. No notifications.
CREATE OR REPLACE FUNCTION queen.streams_cycle_v1(
    p_tenant   text,
    p_query    uuid,
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_id   text,
    p_txn_hash bigint,
    p_count    integer,
    p_release  boolean,
    p_ops      jsonb
) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_source   text;
    v_qname    text;
    v_pname    text;
    v_last     bigint;
    v_c        record;
    v_floor    bigint;
    v_new      bigint;
    v_offs     bigint[];
    v_release  boolean := false;
BEGIN
    SELECT q.source_queue INTO v_source
    FROM queen.streams_queries q WHERE q.id = p_query AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('ok', false, 'code', 'unknown_query',
                                  'error', 'no such streams query: ' || p_query);
    END IF;
    SELECT q.name, p.name, p.last_offset INTO v_qname, v_pname, v_last
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid AND q.tenant = p_tenant;
    IF NOT FOUND OR v_qname <> v_source THEN
        RETURN jsonb_build_object('ok', false, 'code', 'unknown_partition',
            'error', 'partition_id ' || p_pid || ' is not a partition of queue '
                     || v_source);
    END IF;

    PERFORM pg_advisory_xact_lock(
        hashtextextended('queen.streams_cycle:' || p_query || ':' || p_pid, 0));

    IF p_count IS NOT NULL THEN
        SELECT c.committed, c.worker_id, c.lease_expires_at, c.batch_end, c.acked_ahead,
               c.attempt_offset, c.failed_offset
        INTO v_c
        FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group
        FOR UPDATE;
        IF NOT FOUND OR v_c.worker_id IS NULL OR v_c.lease_expires_at IS NULL
           OR v_c.lease_expires_at < now() OR v_c.worker_id <> p_lease THEN
            RETURN jsonb_build_object('ok', false, 'code', 'lease',
                                      'error', 'Invalid or expired lease');
        END IF;
        v_floor := greatest(v_c.committed, coalesce(v_c.attempt_offset - 1, v_c.committed));
        IF p_count > v_c.batch_end - v_floor THEN
            RETURN jsonb_build_object('ok', false, 'code', 'count',
                'error', 'ack.count ' || p_count || ' is more than the '
                         || (v_c.batch_end - v_floor) || ' messages the lease holds');
        END IF;
        v_new := v_floor + p_count;
        IF p_txn_id IS NOT NULL THEN
            v_offs := queen.log_resolve_offsets_v2(p_pid, v_c.committed, v_c.batch_end,
                                                   ARRAY[p_txn_hash], ARRAY[p_txn_id],
                                                   v_c.acked_ahead);
            IF v_offs[1] IS DISTINCT FROM v_new THEN
                RETURN jsonb_build_object('ok', false, 'code', 'settled',
                    'error', 'ack.transactionId is not message ' || p_count
                             || ' of the leased batch (already settled?)');
            END IF;
        END IF;
        v_release := p_release OR v_new >= v_c.batch_end;
        UPDATE queen.log_consumers c SET
            committed = v_new,
            worker_id = CASE WHEN v_release THEN NULL ELSE c.worker_id END,
            lease_expires_at = CASE WHEN v_release THEN NULL ELSE c.lease_expires_at END,
            lease_acquired_at = CASE WHEN v_release THEN NULL ELSE c.lease_acquired_at END,
            batch_end = CASE WHEN v_release THEN NULL ELSE c.batch_end END,
            acked_ahead = CASE WHEN v_release THEN '{}'::bigint[]
                               ELSE coalesce((SELECT array_agg(d)
                                              FROM unnest(c.acked_ahead) d
                                              WHERE d > v_new), '{}') END,
            retry_at = CASE WHEN v_release THEN NULL ELSE c.retry_at END,
            failed_offset = CASE WHEN c.failed_offset <= v_new THEN NULL
                                 ELSE c.failed_offset END,
            failed_count = CASE WHEN c.failed_offset <= v_new THEN 0
                                ELSE c.failed_count END,
            total_consumed = c.total_consumed + (v_new - v_c.committed),
            last_consumed_at = now()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    END IF;

    -- State ops: the last op of each key decides it.
    WITH ops AS (
        SELECT DISTINCT ON (o.op ->> 'key') o.op ->> 'key' AS key, o.op ->> 'type' AS kind,
               o.op -> 'value' AS value
        FROM jsonb_array_elements(coalesce(p_ops, '[]'::jsonb)) WITH ORDINALITY AS o (op, n)
        ORDER BY o.op ->> 'key', o.n DESC
    ), gone AS (
        DELETE FROM queen.streams_state s USING ops
        WHERE ops.kind = 'delete' AND s.partition_id = p_pid AND s.query_id = p_query
          AND s.key = ops.key
    )
    INSERT INTO queen.streams_state AS s (partition_id, query_id, key, value)
    SELECT p_pid, p_query, ops.key, coalesce(ops.value, 'null'::jsonb)
    FROM ops WHERE ops.kind = 'upsert'
    ON CONFLICT (partition_id, query_id, key)
    DO UPDATE SET value = excluded.value, updated_at = now();

    RETURN jsonb_build_object(
        'ok', true, 'released', v_release,
        'queue', CASE WHEN p_count IS NOT NULL THEN v_qname END,
        'partition', CASE WHEN p_count IS NOT NULL THEN v_pname END,
        'pending_after', CASE WHEN p_count IS NOT NULL
                              THEN greatest(v_last - v_new, 0) END);
END;
$$;
