-- queen.log_lease_extend_v2(p_tenant, p_lease, p_seconds) -> (renewed, expires_at), one row
--
-- Renews every partition lease held under one lease id. Each live lease (worker_id =
-- p_lease, not yet expired; rows found through queen.lease_holders_v1) moves to now +
-- p_seconds, or now + the queue's lease_time (60 s when unset) when p_seconds is NULL; an
-- expiry is never shortened. renewed = the number of partition leases extended (0: the
-- lease is gone), expires_at = the latest new expiry.
--
-- Only partitions whose queue belongs to p_tenant are renewed (NULL: any tenant): a lease
-- id is a capability the client sends back, and another tenant's lease answers renewed 0
-- and stays as it was. The tenant rule is explained in queen.lease_require_v2.
--
-- Locks: the renewed cursor rows, to the end of the caller's transaction, one statement
-- per row in (partition, group) order, as queen.lease_require_v2 takes them. PL/pgSQL, a
-- lookup and an update per held row: on the Citus layout the single UPDATE joined with
-- the holders and the queue was refused ("database error" on every renewal), and a
-- statement there may lock or write the cursors of one partition only. No notifications.
CREATE OR REPLACE FUNCTION queen.log_lease_extend_v2(
    p_tenant  text,
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    h         record;
    v_expiry  timestamptz;
    v_new     timestamptz;
    v_renewed integer := 0;
    v_latest  timestamptz;
BEGIN
    FOR h IN
        SELECT DISTINCT l.partition_id, l.consumer_group, q.lease_time
        FROM queen.lease_holders_v1(ARRAY[p_lease]) l
        JOIN queen.log_partitions p ON p.id = l.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE p_tenant IS NULL OR q.tenant = p_tenant
        ORDER BY l.partition_id, l.consumer_group
    LOOP
        v_expiry := now() + make_interval(secs => coalesce(p_seconds, h.lease_time, 60));
        UPDATE queen.log_consumers c
        SET lease_expires_at = greatest(c.lease_expires_at, v_expiry)
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease
          AND c.lease_expires_at >= now()
        RETURNING c.lease_expires_at INTO v_new;
        IF FOUND THEN
            v_renewed := v_renewed + 1;
            v_latest := greatest(v_latest, v_new);
        END IF;
    END LOOP;
    RETURN QUERY SELECT v_renewed, v_latest;
END;
$$;
