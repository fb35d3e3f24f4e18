-- queen.queue_depth_v1(p_tenant, p_queue, p_group) -> jsonb, or NULL for an unknown queue
--
-- The queue depth document: {queue, group, pending, partitionsPending, conflation (always
-- false), effectivePending (= pending), partitions: [{partition, pending}]}, partitions by
-- name. With p_group: per partition, last_offset minus that group's cursor (-1 where it has
-- none). Without: last_offset minus the cursor furthest behind among queue mode and every
-- group; queue mode counts from -1 where it never popped, so a partition that only bus
-- groups consumed still counts its messages as pending.
--
-- PL/pgSQL: the queue (a reference table on the Citus layout), its partitions, then per
-- partition the cursors by partition id (single-shard statements there). Citus refused
-- the former LANGUAGE sql body (parameters, correlated subqueries over the cursors). Same
-- document on PostgreSQL; it costs one or two cursor lookups per partition.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.queue_depth_v1(p_tenant text, p_queue text, p_group text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_qid     bigint;
    v_names   text[] := '{}';
    v_pending bigint[] := '{}';
    v_behind  bigint;
    p         record;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN NULL;
    END IF;
    FOR p IN
        SELECT lp.id, lp.name, lp.last_offset FROM queen.log_partitions lp
        WHERE lp.queue_id = v_qid
    LOOP
        v_behind := NULL;
        IF p_group IS NOT NULL THEN
            SELECT c.committed INTO v_behind FROM queen.log_consumers c
            WHERE c.partition_id = p.id AND c.consumer_group = p_group;
        ELSE
            SELECT least(coalesce(min(c.committed) FILTER (
                                      WHERE c.consumer_group = '__QUEUE_MODE__'), -1),
                         min(c.committed))
            INTO v_behind
            FROM queen.log_consumers c WHERE c.partition_id = p.id;
        END IF;
        v_names := v_names || p.name;
        v_pending := v_pending || greatest(p.last_offset - coalesce(v_behind, -1), 0);
    END LOOP;
    RETURN (
        SELECT jsonb_build_object(
            'queue', p_queue, 'group', p_group,
            'pending', coalesce(sum(x.pending), 0),
            'partitionsPending', count(*) FILTER (WHERE x.pending > 0),
            'conflation', false,
            'effectivePending', coalesce(sum(x.pending), 0),
            'partitions', coalesce(jsonb_agg(jsonb_build_object(
                                       'partition', x.name, 'pending', x.pending)
                                   ORDER BY x.name), '[]'::jsonb))
        FROM unnest(v_names, v_pending) AS x (name, pending));
END;
$$;
