-- queen.partition_stats_v1(p_tenant, p_queue) -> one row per partition
--
-- Per-partition message counts, the source of the resources and status documents
-- (queen.resources_overview_v1, queen.resources_queues_v1, queen.resources_grouped_v1,
-- queen.resource_queue_v1, queen.status_queue_rows_v1 and
-- queen.status_queue_v1). One row per partition of the tenant,
-- of one queue when p_queue is not NULL. Offsets are dense from 0, so a partition has held
-- last_offset + 1 messages. Counts are relative to the queue-mode cursor (consumer group
-- __QUEUE_MODE__; -1 when it never popped):
--   total       last_offset + 1, every message ever appended;
--   completed   committed + 1, messages queue mode is done with (acked or dead-lettered);
--   processing  messages inside a live queue-mode lease (committed, batch_end];
--   pending     total - completed - processing, waiting for a queue-mode consumer;
--   dead_letter dead letters filed for the partition by any group;
--   oldest/newest created_at of the partition's first and last stored segment.
-- Consumer groups other than queue mode do not change these counts.
--
-- PL/pgSQL, one statement per partition: the tenant's queues first (a reference table on
-- the Citus layout), their partitions, then per partition its queue-mode cursor, its dead
-- letter count and its first and last segment by partition id (single-shard statements
-- there). Citus refused the former LANGUAGE sql body (parameters, correlated subqueries
-- over distributed tables). Same rows on PostgreSQL; a listing costs four primary-key
-- lookups per partition instead of one statement.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
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
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_now   timestamptz := now();
    v_ids   bigint[];
    v_names text[];
    p       record;
    c       record;
    v_done  bigint;
BEGIN
    SELECT t.ids, t.names INTO v_ids, v_names
    FROM queen.tenant_queues_v1(p_tenant, p_queue) t;
    FOR p IN
        SELECT lp.id, lp.queue_id, lp.name, lp.created_at, lp.last_offset, lp.last_write_at
        FROM queen.log_partitions lp
        WHERE lp.queue_id = ANY (v_ids)
    LOOP
        SELECT lc.committed, lc.worker_id, lc.lease_expires_at, lc.batch_end INTO c
        FROM queen.log_consumers lc
        WHERE lc.partition_id = p.id AND lc.consumer_group = '__QUEUE_MODE__';
        queue_id := p.queue_id;
        queue_name := v_names[array_position(v_ids, p.queue_id)];
        partition_id := p.id;
        partition_name := p.name;
        created_at := p.created_at;
        last_offset := p.last_offset;
        last_write_at := p.last_write_at;
        total := p.last_offset + 1;
        v_done := least(coalesce(c.committed, -1), p.last_offset);
        completed := v_done + 1;
        processing := CASE WHEN c.worker_id IS NOT NULL AND c.lease_expires_at > v_now
                           THEN greatest(least(c.batch_end, p.last_offset) - c.committed, 0)
                           ELSE 0 END;
        pending := p.last_offset - v_done - processing;
        SELECT count(*) INTO dead_letter
        FROM queen.dead_letters d WHERE d.partition_id = p.id;
        SELECT s.created_at INTO oldest
        FROM queen.log_segments s WHERE s.partition_id = p.id
        ORDER BY s.base_offset LIMIT 1;
        SELECT s.created_at INTO newest
        FROM queen.log_segments s WHERE s.partition_id = p.id
        ORDER BY s.base_offset DESC LIMIT 1;
        RETURN NEXT;
    END LOOP;
END;
$$;
