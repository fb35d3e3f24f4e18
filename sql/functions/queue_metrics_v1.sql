-- queen.queue_metrics_v1(p_tenant, p_window_seconds) -> (tenant, queue_name, depth,
--   lag_seconds, throughput), one row per queue
--
-- Per-queue gauges for /metrics/prometheus and the status documents
-- (queen.status_queue_rows_v1 takes its lag). One row per queue of the tenant, of every
-- tenant when p_tenant is NULL:
--   depth        messages the queue-mode cursor has not passed (last_offset - committed,
--                summed over partitions; a queue never popped in queue mode counts all);
--   lag_seconds  the age of the oldest such message: now - created_at of the segment that
--                holds committed + 1, the largest over partitions; 0 when depth is 0;
--   throughput   messages appended in the last p_window_seconds: per partition,
--                last_offset minus the end offset of the newest segment created before the
--                window. A backward index walk over the window's segments only; partitions
--                not written in the window are skipped by last_write_at.
--
-- PL/pgSQL, one statement per partition: the queues (a reference table on the Citus
-- layout), their partitions, then per partition its queue-mode cursor and the two segment
-- lookups by partition id (single-shard statements there). Citus refused the former
-- LANGUAGE sql body (parameters, a join of reference and distributed tables with
-- correlated LIMITs). Same rows on PostgreSQL; a scrape costs up to three lookups per
-- partition instead of one statement.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.queue_metrics_v1(p_tenant text, p_window_seconds integer)
RETURNS TABLE (
    tenant      text,
    queue_name  text,
    depth       bigint,
    lag_seconds double precision,
    throughput  bigint
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_now       timestamptz := now();
    v_window    timestamptz := now() - make_interval(secs => p_window_seconds);
    q           record;
    p           record;
    v_committed bigint;
    v_oldest    timestamptz;
    v_before    bigint;
BEGIN
    FOR q IN
        SELECT qq.id, qq.tenant, qq.name FROM queen.queues qq
        WHERE p_tenant IS NULL OR qq.tenant = p_tenant
    LOOP
        tenant := q.tenant;
        queue_name := q.name;
        depth := 0;
        lag_seconds := 0;
        throughput := 0;
        FOR p IN
            SELECT lp.id, lp.last_offset, lp.last_write_at FROM queen.log_partitions lp
            WHERE lp.queue_id = q.id
        LOOP
            v_committed := NULL;
            SELECT lc.committed INTO v_committed
            FROM queen.log_consumers lc
            WHERE lc.partition_id = p.id AND lc.consumer_group = '__QUEUE_MODE__';
            v_committed := coalesce(v_committed, -1);
            depth := depth + greatest(p.last_offset - v_committed, 0);
            IF p.last_offset > v_committed THEN
                v_oldest := NULL;
                SELECT s.created_at INTO v_oldest
                FROM queen.log_segments s
                WHERE s.partition_id = p.id AND s.base_offset <= v_committed + 1
                ORDER BY s.base_offset DESC LIMIT 1;
                IF v_oldest IS NOT NULL THEN
                    lag_seconds := greatest(
                        lag_seconds, extract(epoch FROM v_now - v_oldest)::double precision);
                END IF;
            END IF;
            IF p.last_write_at >= date_trunc('second', v_window) THEN
                v_before := NULL;
                SELECT s.end_offset INTO v_before
                FROM queen.log_segments s
                WHERE s.partition_id = p.id AND s.created_at <= v_window
                ORDER BY s.base_offset DESC LIMIT 1;
                throughput := throughput + p.last_offset - coalesce(v_before, -1);
            END IF;
        END LOOP;
        RETURN NEXT;
    END LOOP;
END;
$$;
