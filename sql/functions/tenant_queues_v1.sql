-- queen.tenant_queues_v1(p_tenant, p_queue) -> (ids bigint[], names text[]), one row
--
-- The tenant's queues, or its one queue named p_queue when that is not NULL, as two
-- parallel arrays (id and name at the same index; empty when none match): the first step
-- of the listings that then read each matching queue's partitions by id
-- (queen.partition_stats_v1, queen.resources_partitions_v1, queen.dead_letters_list_v2).
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how");
-- queen.queues is a reference table there.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_queues_v1(p_tenant text, p_queue text)
RETURNS TABLE (ids bigint[], names text[]) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT coalesce(array_agg(q.id), '{}'), coalesce(array_agg(q.name), '{}')
    FROM queen.queues q
    WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue);
END;
$$;
