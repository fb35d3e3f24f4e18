-- queen.dead_letters_count_v1(p_tenant, p_queue, p_group, p_partition, p_from, p_to)
--   -> bigint
--
-- The number of the tenant's dead letters that match the filters of
-- queen.dead_letters_list_v1 (queue name, consumer group, partition name, failed_at in
-- [p_from, p_to]; each ignored when NULL). The broker asks it only when a page of the list
-- comes back empty, since then no row carries the list's `total`.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letters_count_v1(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz
) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*)
    FROM queen.dead_letters d
    JOIN queen.log_partitions p ON p.id = d.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE q.tenant = p_tenant
      AND (p_queue IS NULL OR q.name = p_queue)
      AND (p_group IS NULL OR d.consumer_group = p_group)
      AND (p_partition IS NULL OR p.name = p_partition)
      AND (p_from IS NULL OR d.failed_at >= p_from)
      AND (p_to IS NULL OR d.failed_at <= p_to);
$$;
