-- 020_lease_require: the requiredLeases fence of a transaction bundle.
--
-- queen.lease_require_v1(p_leases)
--   p_leases: lease ids (distinct; duplicates are harmless) a bundle must hold.
--   Locks every log_consumers row held under one of them (FOR UPDATE, in primary-key order
--   so two bundles naming the same leases cannot deadlock), then answers one row per
--   distinct lease: (lease_id, live), live = some row still holds it and its expiry is not
--   past clock_timestamp(). Meant to run inside the caller's transaction, before its acks:
--   the row locks keep any pop from re-claiming those partitions and any other ack from
--   releasing them until the caller commits or rolls back.
--   Sends no notifications.

CREATE OR REPLACE FUNCTION queen.lease_require_v1(p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.log_consumers c
    WHERE c.worker_id = ANY (p_leases)
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1 FROM queen.log_consumers c
                   WHERE c.worker_id = l.id
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;
