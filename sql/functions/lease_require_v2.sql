-- queen.lease_require_v2(p_tenant, p_leases text[]) -> (lease_id, live) rows
--
-- The requiredLeases fence of a transaction bundle. p_leases are the lease ids the bundle
-- must hold (duplicates are harmless). Locks every queen.log_consumers row held under one
-- of them (FOR UPDATE, in primary-key order, so two bundles naming the same leases cannot
-- deadlock), then answers one row per distinct lease, by id: live = some row still holds
-- it and its expiry is not past clock_timestamp(). The locked version of a row is its
-- newest, so the live check reads what the lock holds.
--
-- Meant to run inside the caller's transaction, before its acks: the row locks keep any pop
-- from claiming those partitions again, and any other ack from releasing them, until the
-- caller commits or rolls back.
--
-- Only rows of partitions whose queue belongs to p_tenant count: a lease id is shown only
-- to the tenant that popped under it, but it is a capability the client sends back, and
-- another tenant holding or guessing it must not fence with it. Such a lease is neither
-- locked nor live, so a bundle naming it fails and changes nothing. p_tenant NULL matches
-- every tenant. Rows are found through queen.lease_holders_v1.
--
-- Locks: the held cursor rows, to the end of the caller's transaction. No notifications.
CREATE OR REPLACE FUNCTION queen.lease_require_v2(p_tenant text, p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_live text[];
BEGIN
    -- Lock every row held under the leases (primary-key order, so two bundles naming the
    -- same leases cannot deadlock); a row's locked version is its newest, so the live
    -- check reads what the lock holds.
    SELECT array_agg(DISTINCT held.worker_id) INTO v_live
    FROM (
        SELECT c.worker_id, c.lease_expires_at
        FROM queen.lease_holders_v1(p_leases) h
        JOIN queen.log_consumers c
          ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.worker_id = ANY (p_leases) AND (p_tenant IS NULL OR q.tenant = p_tenant)
        ORDER BY c.partition_id, c.consumer_group
        FOR UPDATE OF c
    ) held
    WHERE held.lease_expires_at IS NOT NULL AND held.lease_expires_at >= clock_timestamp();

    RETURN QUERY
    SELECT l.id, l.id = ANY (coalesce(v_live, '{}'))
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;
