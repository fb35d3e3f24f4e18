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
    v_live text[] := '{}';
    h      record;
    v_row  record;
BEGIN
    -- Lock every row held under the leases, one statement per row in primary-key order (so
    -- two bundles naming the same leases cannot deadlock; on the Citus layout a lock is
    -- taken only by partition id); a row's locked version is its newest, so the live
    -- check reads what the lock holds.
    FOR h IN
        SELECT DISTINCT l.partition_id, l.consumer_group
        FROM queen.lease_holders_v1(p_leases) l
        JOIN queen.log_partitions p ON p.id = l.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE p_tenant IS NULL OR q.tenant = p_tenant
        ORDER BY l.partition_id, l.consumer_group
    LOOP
        SELECT c.worker_id, c.lease_expires_at INTO v_row
        FROM queen.log_consumers c
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = ANY (p_leases)
        FOR UPDATE;
        IF FOUND AND v_row.lease_expires_at IS NOT NULL
           AND v_row.lease_expires_at >= clock_timestamp()
           AND NOT v_row.worker_id = ANY (v_live) THEN
            v_live := v_live || v_row.worker_id;
        END IF;
    END LOOP;

    RETURN QUERY
    SELECT l.id, l.id = ANY (coalesce(v_live, '{}'))
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;
