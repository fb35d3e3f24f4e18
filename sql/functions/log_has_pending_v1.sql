-- queen.log_has_pending_v1(p_tenant, p_queue, p_group) -> boolean
--
-- The cheap probe of the SQL candidate pop path (queen.log_pop_wildcard_bin_v2). false
-- means definitively nothing to deliver to this group right now: no partition written since
-- the group's empty-scan watermark minus two minutes is ahead of the group's cursor and
-- free of a live lease. The broker can then park the pop without taking a permit or running
-- a scan. true means "maybe": the claim re-verifies under the row lock.
--
-- PL/pgSQL rather than one `LANGUAGE sql` statement: Citus cannot plan a parameterized SQL
-- function's body over distributed tables ("could not create distributed plan"), and on
-- the layout every pop of the legacy path answered 500 from this probe; PL/pgSQL hands
-- the planner the query with its values, a co-located join over the shards there.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_has_pending_v1(
    p_tenant text,
    p_queue  text,
    p_group  text
) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1
        FROM queen.queues q
        JOIN queen.log_partitions p ON p.queue_id = q.id
        LEFT JOIN queen.consumer_groups_metadata m
          ON m.queue_id = q.id AND m.consumer_group = p_group
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_group
        WHERE q.tenant = p_tenant AND q.name = p_queue
          AND p.last_write_at >= coalesce(m.watermark, '-infinity') - interval '2 minutes'
          AND p.last_offset > coalesce(c.committed, -1)
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < now())
    );
END;
$$;
