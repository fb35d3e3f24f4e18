-- queen.resources_partitions_v1(p_tenant, p_queue, p_limit, p_offset) -> jsonb
--
-- The tenant's partitions, of one queue when p_queue is not NULL, ordered by queue and
-- partition name and paged by p_limit/p_offset: {partitions: [{id, queue, name,
-- lastOffset, lastWriteAt, createdAt, messages (last_offset + 1), consumers:
-- [{consumerGroup, committed, lag, leaseActive}]}], total}, total counting every match.
-- lag is last_offset - committed per cursor row, never negative.
--
-- PL/pgSQL: the tenant's queues (a reference table on the Citus layout), their
-- partitions, the page cut in memory, then each paged partition's cursors by partition id
-- (single-shard statements there). Citus refused the former LANGUAGE sql body
-- (parameters, a join of reference and distributed tables with a correlated subquery).
-- Same document on PostgreSQL; a page costs one cursor lookup per partition on it.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.resources_partitions_v1(
    p_tenant text, p_queue text, p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_now    timestamptz := now();
    v_qids   bigint[];
    v_qnames text[];
    v_total  bigint;
    v_ids    bigint[];
    v_pq     bigint[];
    v_names  text[];
    v_lasts  bigint[];
    v_writes timestamptz[];
    v_created timestamptz[];
    v_page   jsonb := '[]'::jsonb;
    v_groups jsonb;
    p        record;
BEGIN
    SELECT t.ids, t.names INTO v_qids, v_qnames
    FROM queen.tenant_queues_v1(p_tenant, p_queue) t;
    SELECT coalesce(array_agg(lp.id), '{}'), coalesce(array_agg(lp.queue_id), '{}'),
           coalesce(array_agg(lp.name), '{}'), coalesce(array_agg(lp.last_offset), '{}'),
           coalesce(array_agg(lp.last_write_at), '{}'),
           coalesce(array_agg(lp.created_at), '{}')
    INTO v_ids, v_pq, v_names, v_lasts, v_writes, v_created
    FROM queen.log_partitions lp WHERE lp.queue_id = ANY (v_qids);
    v_total := cardinality(v_ids);
    FOR p IN
        SELECT x.id, x.name, x.last_offset, x.last_write_at, x.created_at,
               v_qnames[array_position(v_qids, x.queue_id)] AS queue_name
        FROM unnest(v_ids, v_pq, v_names, v_lasts, v_writes, v_created)
            AS x (id, queue_id, name, last_offset, last_write_at, created_at)
        ORDER BY queue_name, x.name
        LIMIT p_limit OFFSET p_offset
    LOOP
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'consumerGroup', c.consumer_group, 'committed', c.committed,
                   'lag', greatest(p.last_offset - c.committed, 0),
                   'leaseActive', c.worker_id IS NOT NULL AND c.lease_expires_at > v_now)
                   ORDER BY c.consumer_group), '[]'::jsonb)
        INTO v_groups
        FROM queen.log_consumers c WHERE c.partition_id = p.id;
        v_page := v_page || jsonb_build_array(jsonb_build_object(
            'id', p.id::text, 'queue', p.queue_name, 'name', p.name,
            'lastOffset', p.last_offset, 'lastWriteAt', p.last_write_at,
            'createdAt', p.created_at, 'messages', p.last_offset + 1,
            'consumers', v_groups));
    END LOOP;
    RETURN jsonb_build_object('partitions', v_page, 'total', v_total);
END;
$$;
