-- 063_leases_named_by_partition: a pop and its ack rewrite the cursor row in place.
--
-- log_consumers_worker_idx indexed the lease id (worker_id), which every claim sets and
-- every release clears: neither update could be HOT, so each cycle of pop and ack wrote
-- index entries into the primary key and the lease index besides the row, and pruned
-- more. queen-bench against a private PostgreSQL with the index dropped by hand: WAL at
-- batch 100 from 75.3 to 72.9 B a message, PostgreSQL's CPU per popped and acked message
-- at batch 10 from 54-57 to 47-55 us. The index existed only for the paths that name a
-- lease by its id alone (lease extend, a transaction's requiredLeases); acks name the
-- partition as well and go through the primary key.
--
-- So the lease id itself leads to its rows now:
--   * the broker's one-partition claim (the hot path) names the partition in the lease
--     id, "<uuid>.<partition id>": its rows are found through the primary key, and its
--     updates change no indexed column;
--   * every other claim (the SQL functions, which may lease several partitions under one
--     id, and brokers of the previous version) grants a bare uuid; the trigger below
--     copies it into shared_lease, indexed, as worker_id was. That column is never
--     cleared: a release sets worker_id NULL and a stale shared_lease matches nothing,
--     since every lookup also asks worker_id = the lease.
--
-- queen.lease_partition(p_lease) -> bigint
--   The partition a lease id names, NULL for a bare one. Immutable.
-- queen.lease_holders_v1(p_leases) -> (partition_id, consumer_group)
--   The cursor rows held under any of the leases right now (worker_id = the lease), by
--   the primary key for named leases and by shared_lease for the others. No locks.
-- log_lease_extend_v1/v2 and lease_require_v1/v2 keep their contracts (009, 020, 060)
-- and find their rows through lease_holders_v1.

ALTER TABLE queen.log_consumers ADD COLUMN IF NOT EXISTS shared_lease text;
CREATE INDEX IF NOT EXISTS log_consumers_shared_lease_idx
    ON queen.log_consumers (shared_lease) WHERE shared_lease IS NOT NULL;

CREATE OR REPLACE FUNCTION queen.lease_partition(p_lease text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT substring(p_lease FROM '^[0-9a-f-]{36}\.([0-9]{1,18})$')::bigint
$$;

CREATE OR REPLACE FUNCTION queen.log_consumers_share_lease_v1()
RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    NEW.shared_lease := NEW.worker_id;
    RETURN NEW;
END;
$$;

-- Fires only when a claim grants a bare lease id: the one-partition claim's named leases
-- and every release leave the row as the statement wrote it.
CREATE OR REPLACE TRIGGER log_consumers_share_lease
    BEFORE UPDATE OF worker_id ON queen.log_consumers
    FOR EACH ROW
    WHEN (NEW.worker_id IS NOT NULL
          AND NEW.worker_id IS DISTINCT FROM OLD.worker_id
          AND NEW.worker_id NOT LIKE '%.%')
    EXECUTE FUNCTION queen.log_consumers_share_lease_v1();

-- Leases granted before this migration are all bare.
UPDATE queen.log_consumers SET shared_lease = worker_id
WHERE worker_id IS NOT NULL AND shared_lease IS DISTINCT FROM worker_id;

DROP INDEX IF EXISTS queen.log_consumers_worker_idx;

CREATE OR REPLACE FUNCTION queen.lease_holders_v1(p_leases text[])
RETURNS TABLE (partition_id bigint, consumer_group text)
LANGUAGE sql STABLE AS $$
    SELECT c.partition_id, c.consumer_group
    FROM unnest(p_leases) AS l (id)
    JOIN queen.log_consumers c
      ON c.partition_id = queen.lease_partition(l.id) AND c.worker_id = l.id
    UNION ALL
    SELECT c.partition_id, c.consumer_group
    FROM queen.log_consumers c
    WHERE c.shared_lease = ANY (p_leases) AND c.worker_id = c.shared_lease
$$;

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v1(
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.lease_holders_v1(ARRAY[p_lease]) h, queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

CREATE OR REPLACE FUNCTION queen.log_lease_extend_v2(
    p_tenant  text,
    p_lease   text,
    p_seconds integer
) RETURNS TABLE (
    renewed    integer,
    expires_at timestamptz
) LANGUAGE sql VOLATILE AS $$
    WITH extended AS (
        UPDATE queen.log_consumers c SET
            lease_expires_at = greatest(
                c.lease_expires_at,
                now() + make_interval(secs => coalesce(p_seconds, q.lease_time, 60)))
        FROM queen.lease_holders_v1(ARRAY[p_lease]) h, queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
          AND c.worker_id = p_lease
          AND c.lease_expires_at >= now()
          AND p.id = c.partition_id
          AND q.tenant = p_tenant
        RETURNING c.lease_expires_at
    )
    SELECT count(*)::integer, max(e.lease_expires_at) FROM extended e;
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v1(p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.lease_holders_v1(p_leases) h
    JOIN queen.log_consumers c
      ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
    WHERE c.worker_id = ANY (p_leases)
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1
                   FROM queen.lease_holders_v1(ARRAY[l.id]) h
                   JOIN queen.log_consumers c
                     ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
                   WHERE c.worker_id = l.id
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;

CREATE OR REPLACE FUNCTION queen.lease_require_v2(p_tenant text, p_leases text[])
RETURNS TABLE (lease_id text, live boolean)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1
    FROM queen.lease_holders_v1(p_leases) h
    JOIN queen.log_consumers c
      ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
    JOIN queen.log_partitions p ON p.id = c.partition_id
    JOIN queen.queues q ON q.id = p.queue_id
    WHERE c.worker_id = ANY (p_leases) AND q.tenant = p_tenant
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c;

    RETURN QUERY
    SELECT l.id,
           EXISTS (SELECT 1
                   FROM queen.lease_holders_v1(ARRAY[l.id]) h
                   JOIN queen.log_consumers c
                     ON c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
                   JOIN queen.log_partitions p ON p.id = c.partition_id
                   JOIN queen.queues q ON q.id = p.queue_id
                   WHERE c.worker_id = l.id
                     AND q.tenant = p_tenant
                     AND c.lease_expires_at IS NOT NULL
                     AND c.lease_expires_at >= clock_timestamp())
    FROM (SELECT DISTINCT u.id FROM unnest(p_leases) AS u (id)) l
    ORDER BY l.id;
END;
$$;
