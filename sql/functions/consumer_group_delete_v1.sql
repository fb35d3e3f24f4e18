-- queen.consumer_group_delete_v1(p_tenant, p_group, p_queue, p_delete_metadata)
--   -> (deleted_partitions integer, metadata_deleted integer, queues text[]), one row
--
-- Forgets a consumer group: deletes its cursor rows (queen.log_consumers) on every queue of
-- the tenant, or on p_queue only when it is not NULL, and, when p_delete_metadata, its
-- durable subscriptions (queen.consumer_groups_metadata), so that its next pop is a first
-- contact again and seeds its cursors anew.
--
-- A live lease of the group goes with its row: the holder's later acks are refused as
-- "Invalid or expired lease". Deleting a group is a deliberate reset, so it does not wait
-- for the lease to end.
--
-- Returns the number of cursor rows and of subscriptions deleted, and the names of the
-- queues touched (the broker tells their group actors after the commit).
-- Locks: the deleted rows. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_delete_v1(
    p_tenant          text,
    p_group           text,
    p_queue           text,
    p_delete_metadata boolean
) RETURNS TABLE (deleted_partitions integer, metadata_deleted integer, queues text[])
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_consumers integer;
    v_meta      integer := 0;
    v_queues    text[];
BEGIN
    WITH targets AS (
        SELECT q.id, q.name FROM queen.queues q
        WHERE q.tenant = p_tenant AND (p_queue IS NULL OR q.name = p_queue)
    ), gone AS (
        DELETE FROM queen.log_consumers c
        USING queen.log_partitions p, targets t
        WHERE c.partition_id = p.id AND p.queue_id = t.id AND c.consumer_group = p_group
        RETURNING t.name
    )
    SELECT count(*), array_agg(DISTINCT g.name) INTO v_consumers, v_queues FROM gone g;

    IF p_delete_metadata THEN
        WITH gone AS (
            DELETE FROM queen.consumer_groups_metadata m
            USING queen.queues q
            WHERE m.queue_id = q.id AND q.tenant = p_tenant
              AND (p_queue IS NULL OR q.name = p_queue) AND m.consumer_group = p_group
            RETURNING q.name
        )
        SELECT count(*), array_cat(v_queues, array_agg(g.name)) INTO v_meta, v_queues
        FROM gone g;
    END IF;

    RETURN QUERY SELECT v_consumers, v_meta,
        coalesce((SELECT array_agg(DISTINCT x) FROM unnest(v_queues) x WHERE x IS NOT NULL),
                 '{}'::text[]);
END;
$$;
