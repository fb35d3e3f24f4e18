-- queen.log_partition_resolve_v1(p_tenant, p_queue, p_partition, p_default_window)
--   -> (partition_id, window_seconds, max_size, stored), one row
--
-- The first half of a push on the Citus layout, run on the coordinator: finds (creating
-- when missing) the queue and the partition by name in the reference tables
-- (queen.queues, the directory queen.log_partition_names, see
-- queen.log_partition_ensure_v1) and answers what the delegated queen.log_push_at_v1
-- needs: the partition id, the queue's dedup window (dedup_window_seconds, or
-- p_default_window when NULL; 0 off) and its max_size. When max_size is above 0 it takes
-- the queue's transaction-scoped advisory lock (the same key as queen.log_push_v3; every
-- push of such a queue on the layout passes here, on the coordinator) and answers in
-- stored the messages the queue stores now (over its partitions, from the first stored
-- segment's offset to last_offset), which the caller compares with max_size before it
-- appends; otherwise stored is 0. No write when queue and partition exist (a push then
-- writes only its partition's worker). Creating rows fires the queues_limit and
-- partitions_limit triggers (queen.tenant_limit_guard_v1). Creating the queue takes the
-- directory's lock before the queue's (Citus's reference-table shard locks; docs/
-- scale-out.md, "Part eight"). No notifications.
CREATE OR REPLACE FUNCTION queen.log_partition_resolve_v1(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_default_window integer
) RETURNS TABLE (
    partition_id   bigint,
    window_seconds integer,
    max_size       integer,
    stored         bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_window integer;
    v_max    integer;
    v_pid    bigint;
    v_size   bigint := 0;
BEGIN
    SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window), q.max_size
    INTO v_qid, v_window, v_max
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        -- The directory's lock before the queue's (a row lock on no row; nothing on plain
        -- PostgreSQL): the partition is created next, and on the Citus layout every write
        -- of the directory takes Citus's reference-table shard locks in that order (its
        -- foreign key to queen.queues); the other order deadlocks with a push that creates
        -- a partition of a queue that exists (docs/scale-out.md, "Part eight").
        PERFORM 1 FROM queen.log_partition_names n WHERE n.id = 0 FOR UPDATE;
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window), q.max_size
        INTO v_qid, v_window, v_max
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    IF v_max > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('queen.max_size/' || v_qid, 0));
    END IF;
    v_pid := queen.log_partition_ensure_v1(v_qid, p_partition);
    IF v_max > 0 THEN
        -- Co-located: the segments' first offsets grouped by partition, joined on it.
        SELECT coalesce(sum(p.last_offset + 1
                            - coalesce(f.first_base, p.last_offset + 1)), 0)
        INTO v_size
        FROM queen.log_partitions p
        LEFT JOIN (SELECT s.partition_id, min(s.base_offset) AS first_base
                   FROM queen.log_segments s GROUP BY s.partition_id) f
               ON f.partition_id = p.id
        WHERE p.queue_id = v_qid;
    END IF;
    partition_id := v_pid; window_seconds := v_window; max_size := coalesce(v_max, 0);
    stored := v_size;
    RETURN NEXT;
END;
$$;
