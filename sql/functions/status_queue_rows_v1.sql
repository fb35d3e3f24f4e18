-- queen.status_queue_rows_v1(p_tenant, p_from, p_to, p_queue, p_namespace, p_task)
--   -> (queue_id, name, namespace, task, partitions, total, pending, processing, completed,
--       dead_letter, pushed, dead_lettered, lag_seconds), one row per queue
--
-- The per-queue figures behind the status documents (queen.status_v1,
-- queen.status_queues_v1, queen.status_queue_v1), for the tenant's queues matching
-- p_queue, p_namespace and p_task (each ignored when NULL).
--
-- Every number comes from the tables. The message counts are queen.partition_stats_v1's,
-- summed over the queue's partitions (offsets and the queue-mode cursor). pushed is the
-- msg_count of segments created in [p_from, p_to], dead_lettered the dead letters with
-- failed_at in it, and lag_seconds queen.queue_metrics_v1's queue-mode lag. Nothing
-- records acks over time, so "consumed" is only known as the cursors' position now.
--
-- PL/pgSQL, per queue: its partitions' stats from queen.partition_stats_v1, then the
-- segments and dead letters of its partitions by partition id. Citus refused the former
-- LANGUAGE sql body (parameters, correlated subqueries joining reference and distributed
-- tables). Same rows on PostgreSQL.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.status_queue_rows_v1(
    p_tenant text, p_from timestamptz, p_to timestamptz, p_queue text, p_namespace text,
    p_task text)
RETURNS TABLE (queue_id bigint, name text, namespace text, task text, partitions bigint,
               total bigint, pending bigint, processing bigint, completed bigint,
               dead_letter bigint, pushed bigint, dead_lettered bigint,
               lag_seconds double precision)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_lag_names text[];
    v_lags      double precision[];
    v_pids      bigint[];
    q           record;
BEGIN
    SELECT coalesce(array_agg(m.queue_name), '{}'), coalesce(array_agg(m.lag_seconds), '{}')
    INTO v_lag_names, v_lags
    FROM queen.queue_metrics_v1(p_tenant, 60) m;
    FOR q IN
        SELECT qq.id, qq.name, qq.namespace, qq.task FROM queen.queues qq
        WHERE qq.tenant = p_tenant
          AND (p_queue IS NULL OR qq.name = p_queue)
          AND (p_namespace IS NULL OR qq.namespace = p_namespace)
          AND (p_task IS NULL OR qq.task = p_task)
    LOOP
        queue_id := q.id;
        name := q.name;
        namespace := q.namespace;
        task := q.task;
        SELECT count(s.partition_id), coalesce(sum(s.total), 0)::bigint,
               coalesce(sum(s.pending), 0)::bigint, coalesce(sum(s.processing), 0)::bigint,
               coalesce(sum(s.completed), 0)::bigint,
               coalesce(sum(s.dead_letter), 0)::bigint,
               coalesce(array_agg(s.partition_id), '{}')
        INTO partitions, total, pending, processing, completed, dead_letter, v_pids
        FROM queen.partition_stats_v1(p_tenant, q.name) s;
        SELECT coalesce(sum(g.msg_count), 0)::bigint INTO pushed
        FROM queen.log_segments g
        WHERE g.partition_id = ANY (v_pids) AND g.created_at BETWEEN p_from AND p_to;
        SELECT count(*) INTO dead_lettered
        FROM queen.dead_letters d
        WHERE d.partition_id = ANY (v_pids) AND d.failed_at BETWEEN p_from AND p_to;
        lag_seconds := coalesce(v_lags[array_position(v_lag_names, q.name)], 0);
        RETURN NEXT;
    END LOOP;
END;
$$;
