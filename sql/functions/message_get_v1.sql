-- queen.message_get_v1(p_tenant, p_partition_id, p_transaction_id)
--   -> (queue_name, partition_name, namespace, task, priority, message_offset, created_at,
--       status, lease_expires_at, segment_base, codec, producer, blob, error_message,
--       retry_count, queue_config, consumer_groups), one row or none
--
-- One message of the tenant for the message detail endpoint, found by its transaction id
-- (queen.log_find_offset_v1). Returns the segment that holds it (the broker slices the
-- frame message_offset - segment_base out of the blob), its status relative to the
-- queue-mode cursor ('completed' at or below it, 'processing' inside a live queue-mode
-- lease, with that lease's expiry, else 'pending'), its latest dead letter's error_message
-- and retry_count, the queue's configuration as JSON, and every group's view of it:
-- [{consumerGroup, committed, status, leaseActive}]. No row when the message is unknown,
-- its segment is gone, or the partition is not the tenant's.
--
-- PL/pgSQL, one statement per table: the offset, the partition, the queue (a reference
-- table on the Citus layout), the segment, the queue-mode cursor, the latest dead letter
-- and the groups' cursors, each by partition id (single-shard statements there). Citus
-- refused the former LANGUAGE sql body (parameters, a join of reference and distributed
-- tables with correlated LIMITs). Same row on PostgreSQL.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.message_get_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text
) RETURNS TABLE (
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea,
    error_message    text,
    retry_count      integer,
    queue_config     jsonb,
    consumer_groups  jsonb
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := now();
    v_off  bigint;
    v_qid  bigint;
    v_part text;
    v_q    queen.queues%ROWTYPE;
    s      record;
    c      record;
    v_live boolean;
BEGIN
    v_off := queen.log_find_offset_v1(p_partition_id, p_transaction_id);
    IF v_off IS NULL THEN
        RETURN;
    END IF;
    SELECT p.name, p.queue_id INTO v_part, v_qid
    FROM queen.log_partitions p WHERE p.id = p_partition_id;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO v_q FROM queen.queues q WHERE q.id = v_qid AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT x.created_at, x.base_offset, x.end_offset, x.codec, x.producer, x.blob INTO s
    FROM queen.log_segments x
    WHERE x.partition_id = p_partition_id AND x.base_offset <= v_off
    ORDER BY x.base_offset DESC LIMIT 1;
    IF s.base_offset IS NULL OR s.end_offset < v_off THEN
        RETURN;
    END IF;
    SELECT lc.committed, lc.worker_id, lc.lease_expires_at, lc.batch_end INTO c
    FROM queen.log_consumers lc
    WHERE lc.partition_id = p_partition_id AND lc.consumer_group = '__QUEUE_MODE__';
    v_live := c.worker_id IS NOT NULL AND c.lease_expires_at > v_now;
    queue_name := v_q.name;
    partition_name := v_part;
    namespace := v_q.namespace;
    task := v_q.task;
    priority := v_q.priority;
    message_offset := v_off;
    created_at := s.created_at;
    status := CASE WHEN v_off <= coalesce(c.committed, -1) THEN 'completed'
                   WHEN v_live AND v_off <= c.batch_end THEN 'processing'
                   ELSE 'pending' END;
    lease_expires_at := CASE WHEN v_live AND v_off > c.committed AND v_off <= c.batch_end
                             THEN c.lease_expires_at END;
    segment_base := s.base_offset;
    codec := s.codec;
    producer := s.producer;
    blob := s.blob;
    error_message := NULL;
    retry_count := NULL;
    SELECT x.error_message, x.retry_count INTO error_message, retry_count
    FROM queen.dead_letters x
    WHERE x.partition_id = p_partition_id AND x.transaction_id = p_transaction_id
    ORDER BY x.failed_at DESC LIMIT 1;
    queue_config := to_jsonb(v_q) - 'id' - 'tenant' - 'name' - 'namespace' - 'task'
                    - 'created_at' - 'updated_at';
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'consumerGroup', g.consumer_group,
               'committed', g.committed,
               'status', CASE WHEN v_off <= g.committed THEN 'completed'
                              WHEN g.worker_id IS NOT NULL AND g.lease_expires_at > v_now
                                   AND v_off <= g.batch_end
                              THEN 'processing' ELSE 'pending' END,
               'leaseActive', g.worker_id IS NOT NULL AND g.lease_expires_at > v_now)
               ORDER BY g.consumer_group), '[]'::jsonb)
    INTO consumer_groups
    FROM queen.log_consumers g WHERE g.partition_id = p_partition_id;
    RETURN NEXT;
END;
$$;
