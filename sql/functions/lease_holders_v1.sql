-- queen.lease_holders_v1(p_leases text[]) -> (partition_id, consumer_group) rows
--
-- The cursor rows (queen.log_consumers) held right now under any of the lease ids, that is
-- with worker_id = the lease. queen.log_lease_extend_v2 and queen.lease_require_v2 find
-- their rows through it. A lease id leads to its rows in one of two ways:
--   * the broker's one-partition claim (the hot path) names the partition in the lease id,
--     "<uuid>.<partition id>" (queen.lease_partition reads it): the row is found through
--     the primary key;
--   * queen.log_pop_v3 (every other claim; it may lease several partitions under one id)
--     grants a bare uuid and writes it into shared_lease too, which is indexed. That column
--     is never cleared: a release sets worker_id NULL, and a stale shared_lease matches
--     nothing since every lookup also asks worker_id = the lease.
-- A bare id found neither way holds nothing and answers no row, and costs no scan of the
-- cursor rows (there is no index on worker_id, below): every claim of this release and of
-- the oldest one a rolling upgrade runs beside (d5ce15b, README "Schema migrations")
-- names its partition or fills shared_lease, so an unknown or guessed id is looked up
-- through the primary key and the shared_lease index only.
--
-- Why not an index on worker_id: every claim sets worker_id and every release clears it, so
-- with an index neither update could be HOT, and each pop and ack wrote index entries
-- besides the row. queen-bench against a private PostgreSQL, with that index dropped by
-- hand: WAL at batch 100 fell from 75.3 to 72.9 B a message, PostgreSQL's CPU per popped
-- and acked message at batch 10 from 54-57 to 47-55 us. A trigger copying bare ids into
-- shared_lease would have spared log_pop_v3's copy, but a BEFORE UPDATE row trigger locks
-- every row its table's updates touch first (one more WAL record per ack) and cost more per
-- pop+ack cycle than the index did.
--
-- Read only: no locks (the callers lock what they use). No notifications.
CREATE OR REPLACE FUNCTION queen.lease_holders_v1(p_leases text[])
RETURNS TABLE (partition_id bigint, consumer_group text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.partition_id, c.consumer_group
    FROM unnest(p_leases) AS l (id)
    JOIN queen.log_consumers c
      ON c.partition_id = queen.lease_partition(l.id) AND c.worker_id = l.id
    UNION ALL
    SELECT c.partition_id, c.consumer_group
    FROM queen.log_consumers c
    WHERE c.shared_lease = ANY (p_leases) AND c.worker_id = c.shared_lease;
END;
$$;
