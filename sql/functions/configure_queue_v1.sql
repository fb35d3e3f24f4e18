-- queen.configure_queue_v1(p_tenant, p_queue, p_namespace, p_task, p_options jsonb)
--   -> (queue_id, partition_id, effective jsonb), one row
--
-- Creates or updates a queue's configuration: an upsert of the queen.queues row of
-- (p_tenant, p_queue). namespace and task are always set from p_namespace and p_task.
-- p_options holds the options the broker has validated, under their column names
-- (lease_time, retry_limit, priority, delayed_processing, window_buffer, max_size,
-- retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled,
-- retry_delay_ms, dead_letter_queue, dlq_after_max_retries, max_wait_time_seconds,
-- ttl_seconds, min_pop_wait_time, dedup_window_seconds), plus `extra`, an object of keys
-- this broker does not interpret, merged into extra_options. A key absent from p_options
-- (or given as JSON null) keeps the stored value, the column default on creation; only
-- lease_time and dedup_window_seconds, present with null, are set back to NULL (meaning
-- "use the broker's default").
--
-- Also makes sure the queue's `Default` partition exists, so a push naming no partition
-- and a pop of the queue have a partition to meet.
--
-- Returns the queue id, the Default partition's id and the effective queue row as JSON
-- (without id, tenant, created_at and updated_at).
-- Locks: the queue row, to the end of the caller's transaction; on the Citus layout the
-- directory's and then the queues' reference-table shard locks (docs/scale-out.md, "Part
-- eight"). Creating the queue or its
-- Default partition fires the queues_limit trigger (queen.tenant_limit_guard_v1, its
-- advisory lock); the Default partition is exempt from partitions_limit. No notifications.
CREATE OR REPLACE FUNCTION queen.configure_queue_v1(
    p_tenant    text,
    p_queue     text,
    p_namespace text,
    p_task      text,
    p_options   jsonb
) RETURNS TABLE (
    queue_id     bigint,
    partition_id bigint,
    effective    jsonb
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
    v_pid bigint;
    o     jsonb := coalesce(p_options, '{}'::jsonb);
BEGIN
    -- The directory's lock before the queue's (a row lock on no row; nothing on plain
    -- PostgreSQL): the Default partition is ensured below, and on the Citus layout every
    -- write of the directory takes Citus's reference-table shard locks in that order (its
    -- foreign key to queen.queues); the other order deadlocks (docs/scale-out.md, "Part
    -- eight").
    PERFORM 1 FROM queen.log_partition_names n WHERE n.id = 0 FOR UPDATE;
    INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
    ON CONFLICT (tenant, name) DO NOTHING;

    UPDATE queen.queues q SET
        namespace = p_namespace,
        task = p_task,
        lease_time = CASE WHEN o ? 'lease_time' THEN (o->>'lease_time')::integer ELSE q.lease_time END,
        retry_limit = coalesce((o->>'retry_limit')::integer, q.retry_limit),
        priority = coalesce((o->>'priority')::integer, q.priority),
        delayed_processing = coalesce((o->>'delayed_processing')::integer, q.delayed_processing),
        window_buffer = coalesce((o->>'window_buffer')::integer, q.window_buffer),
        max_size = coalesce((o->>'max_size')::integer, q.max_size),
        retention_seconds = coalesce((o->>'retention_seconds')::integer, q.retention_seconds),
        completed_retention_seconds = coalesce((o->>'completed_retention_seconds')::integer,
                                               q.completed_retention_seconds),
        retention_enabled = coalesce((o->>'retention_enabled')::boolean, q.retention_enabled),
        encryption_enabled = coalesce((o->>'encryption_enabled')::boolean, q.encryption_enabled),
        retry_delay_ms = coalesce((o->>'retry_delay_ms')::integer, q.retry_delay_ms),
        dead_letter_queue = coalesce((o->>'dead_letter_queue')::boolean, q.dead_letter_queue),
        dlq_after_max_retries = coalesce((o->>'dlq_after_max_retries')::boolean,
                                         q.dlq_after_max_retries),
        max_wait_time_seconds = coalesce((o->>'max_wait_time_seconds')::integer,
                                         q.max_wait_time_seconds),
        ttl_seconds = coalesce((o->>'ttl_seconds')::integer, q.ttl_seconds),
        min_pop_wait_time = coalesce((o->>'min_pop_wait_time')::integer, q.min_pop_wait_time),
        dedup_window_seconds = CASE WHEN o ? 'dedup_window_seconds'
                                    THEN (o->>'dedup_window_seconds')::integer
                                    ELSE q.dedup_window_seconds END,
        extra_options = q.extra_options || coalesce(o->'extra', '{}'::jsonb),
        updated_at = now()
    WHERE q.tenant = p_tenant AND q.name = p_queue
    RETURNING q.id INTO v_qid;

    v_pid := queen.log_partition_ensure_v1(v_qid, 'Default');

    RETURN QUERY
        SELECT v_qid, v_pid, to_jsonb(q) - 'id' - 'tenant' - 'created_at' - 'updated_at'
        FROM queen.queues q WHERE q.id = v_qid;
END;
$$;
