-- queen.queue_delete_v1(p_tenant, p_queue) -> boolean (true when the queue existed)
--
-- Deletes a queue and everything stored for it. Locks the queue row (FOR UPDATE) and its
-- partitions (FOR UPDATE, in id order), so a concurrent push waits and then creates the
-- queue again from scratch. Deletes the partitions' legacy queen.dedup rows explicitly
-- (that table has no foreign key on purpose, see sql/migrations/064_baseline.sql), then the
-- queue row. Its foreign keys cascade to the partitions, and from them to the consumer
-- cursors, dead letters and traces, and to the consumer-group metadata; the trigger that
-- calls queen.log_partitions_delete_segments_v1 deletes the partitions' segments.
--
-- Locks: the queue and partition rows and every deleted row, to the end of the caller's
-- transaction. No notifications: the broker tells its group actors and its peers after the
-- commit.
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
