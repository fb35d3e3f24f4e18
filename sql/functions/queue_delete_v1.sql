-- queen.queue_delete_v1(p_tenant, p_queue) -> boolean (true when the queue existed)
--
-- Deletes a queue and everything stored for it. Locks the queue row (FOR UPDATE), then
-- takes its partitions one at a time in id order: locks the partition row, deletes its
-- legacy queen.dedup rows (that table has no foreign key on purpose, see
-- sql/migrations/064_baseline.sql), its segments and its row, whose foreign keys cascade
-- to the consumer cursors and dead letters. A concurrent push waits on the partition row
-- and then creates the queue again from scratch. Last the queue row, whose keys cascade to
-- the partition directory (and from it to the traces) and the consumer-group metadata.
--
-- Every statement on a partition names it by id, so on the Citus layout each is a
-- single-shard statement on the partition's worker (Citus refuses a FOR UPDATE over
-- several shards); the segments are deleted here, before the partition row, so the
-- trigger that calls queen.log_partitions_delete_segments_v1 finds none left.
-- The partition ids are read from queen.log_partitions and the directory
-- (queen.log_partition_names) both: a partition created by an older node has no
-- directory row, and on the layout the directory may hold a partition whose counters row
-- is not there yet.
--
-- Locks: the queue and partition rows and every deleted row, to the end of the caller's
-- transaction. No notifications: the broker tells its group actors and its peers after the
-- commit.
CREATE OR REPLACE FUNCTION queen.queue_delete_v1(p_tenant text, p_queue text)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid bigint;
    v_pid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q
    WHERE q.tenant = p_tenant AND q.name = p_queue
    FOR UPDATE;
    IF v_qid IS NULL THEN
        RETURN false;
    END IF;

    FOR v_pid IN
        SELECT x.id FROM (
            SELECT p.id FROM queen.log_partitions p WHERE p.queue_id = v_qid
            UNION
            SELECT n.id FROM queen.log_partition_names n WHERE n.queue_id = v_qid
        ) x ORDER BY x.id
    LOOP
        PERFORM 1 FROM queen.log_partitions p WHERE p.id = v_pid FOR UPDATE;
        DELETE FROM queen.dedup d WHERE d.partition_id = v_pid;
        DELETE FROM queen.log_segments s WHERE s.partition_id = v_pid;
        DELETE FROM queen.log_partitions p WHERE p.id = v_pid;
    END LOOP;

    DELETE FROM queen.queues q WHERE q.id = v_qid;
    RETURN true;
END;
$$;
