-- queen.trace_add_v1(p_tenant, p_partition_id, p_transaction_id, p_group, p_names,
--                    p_event_type, p_data, p_worker) -> bigint
--
-- Records one trace event a consumer reported about a message: a queen.message_traces row
-- (keyed to its partition, deleted with it, and to the message by transaction id) and one
-- queen.message_trace_names row per distinct name in p_names, for the by-name lookups.
-- Returns the event's id, or NULL when the partition is not the tenant's (nothing stored).
--
-- Locks: the partition row's FOR KEY SHARE lock (the foreign key), to the end of the
-- caller's transaction. No notifications.
CREATE OR REPLACE FUNCTION queen.trace_add_v1(
    p_tenant         text,
    p_partition_id   bigint,
    p_transaction_id text,
    p_group          text,
    p_names          text[],
    p_event_type     text,
    p_data           jsonb,
    p_worker         text
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_id bigint;
    v_at timestamptz;
BEGIN
    PERFORM 1 FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_partition_id AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO queen.message_traces
        (tenant, partition_id, transaction_id, consumer_group, event_type, data, worker_id)
    VALUES (p_tenant, p_partition_id, p_transaction_id, p_group, p_event_type, p_data, p_worker)
    RETURNING id, created_at INTO v_id, v_at;
    INSERT INTO queen.message_trace_names (trace_id, tenant, name, created_at)
    SELECT DISTINCT v_id, p_tenant, n, v_at FROM unnest(coalesce(p_names, '{}')) n
    ON CONFLICT DO NOTHING;
    RETURN v_id;
END;
$$;
