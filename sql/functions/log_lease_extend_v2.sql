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
-- PL/pgSQL, one cursor at a time: the holders from queen.lease_holders_v1, then each
-- holder's partition and queue (the queue a reference table on the Citus layout), then
-- the cursor's update by its key with the new expiry computed first (single-shard
-- statements there). Citus refused the former LANGUAGE sql body (parameters, an UPDATE
-- of the distributed cursors joined with reference tables and now() in its SET). Same
-- result on PostgreSQL; a renewal costs three statements per partition under the lease.
--
-- Locks: the renewed cursor rows, to the end of the caller's transaction. No
-- notifications.
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
    v_now    timestamptz := now();
    v_qid    bigint;
    v_time   integer;
    v_tenant text;
    v_until  timestamptz;
    v_new    timestamptz;
    h        record;
BEGIN
    renewed := 0;
    expires_at := NULL;
    FOR h IN
        SELECT DISTINCT l.partition_id, l.consumer_group
        FROM queen.lease_holders_v1(ARRAY[p_lease]) l
    LOOP
        v_qid := NULL;
        SELECT p.queue_id INTO v_qid
        FROM queen.log_partitions p WHERE p.id = h.partition_id;
        CONTINUE WHEN v_qid IS NULL;
        SELECT q.tenant, q.lease_time INTO v_tenant, v_time
        FROM queen.queues q WHERE q.id = v_qid;
        CONTINUE WHEN NOT FOUND
                      OR (p_tenant IS NOT NULL AND v_tenant IS DISTINCT FROM p_tenant);
        v_until := v_now + make_interval(secs => coalesce(p_seconds, v_time, 60));
        v_new := NULL;
        UPDATE queen.log_consumers c
        SET lease_expires_at = greatest(c.lease_expires_at, v_until)
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease AND c.lease_expires_at >= v_now
        RETURNING c.lease_expires_at INTO v_new;
        IF v_new IS NOT NULL THEN
            renewed := renewed + 1;
            expires_at := greatest(expires_at, v_new);
        END IF;
    END LOOP;
    RETURN NEXT;
END;
$$;
