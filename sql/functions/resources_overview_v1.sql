-- queen.resources_overview_v1(p_tenant) -> jsonb
--
-- The tenant's resources overview: {queues, partitions, namespaces, tasks (distinct
-- values), consumerGroups (distinct groups with a durable subscription), messages: {total,
-- pending, processing, completed, deadLetter}}. Message counts are sums of
-- queen.partition_stats_v1 over every partition of the tenant.
--
-- PL/pgSQL, so that the Citus layout plans it (docs/scale-out.md, "What runs, and how").
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_overview_v1(p_tenant text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues q WHERE q.tenant = p_tenant),
        'partitions', count(s.partition_id),
        'namespaces', (SELECT count(DISTINCT q.namespace) FROM queen.queues q
                       WHERE q.tenant = p_tenant),
        'tasks', (SELECT count(DISTINCT q.task) FROM queen.queues q WHERE q.tenant = p_tenant),
        'consumerGroups', (SELECT count(DISTINCT m.consumer_group)
                           FROM queen.consumer_groups_metadata m
                           JOIN queen.queues q ON q.id = m.queue_id
                           WHERE q.tenant = p_tenant),
        'messages', jsonb_build_object(
            'total', coalesce(sum(s.total), 0),
            'pending', coalesce(sum(s.pending), 0),
            'processing', coalesce(sum(s.processing), 0),
            'completed', coalesce(sum(s.completed), 0),
            'deadLetter', coalesce(sum(s.dead_letter), 0)))
    FROM queen.partition_stats_v1(p_tenant, NULL) s
    );
END;
$$;
