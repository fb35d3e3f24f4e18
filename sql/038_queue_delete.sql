-- 038_queue_delete: delete a queue and everything stored for it.
--
-- queen.queue_delete_v1(p_tenant, p_queue) -> boolean (true when the queue existed)
--   Locks the queue row (FOR UPDATE) and its partitions (FOR UPDATE, in id order, so a
--   concurrent push waits and then recreates the queue from scratch), deletes the
--   partitions' dedup rows explicitly (queen.dedup has no foreign key on purpose: see
--   001_schema), then the queue row, whose foreign keys cascade to its partitions,
--   segments, consumer cursors, consumer-group metadata and dead letters.
--   No notifications: the broker tells its group actors and its peers after the commit.

CREATE OR REPLACE FUNCTION queen.queue_delete_v1(p_tenant text, p_queue text)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid  bigint;
    v_pids bigint[];
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue
    FOR UPDATE;
    IF v_qid IS NULL THEN
        RETURN false;
    END IF;

    SELECT array_agg(x.id) INTO v_pids FROM (
        SELECT p.id FROM queen.log_partitions p WHERE p.queue_id = v_qid
        ORDER BY p.id FOR UPDATE
    ) x;

    DELETE FROM queen.dedup d WHERE d.partition_id = ANY (coalesce(v_pids, '{}'));
    DELETE FROM queen.queues q WHERE q.id = v_qid;
    RETURN true;
END;
$$;
