-- queen.log_partition_ensure_v1(p_qid, p_name) -> bigint
--
-- The id of queue p_qid's partition p_name, created when missing: a row in the directory
-- (queen.log_partition_names) and one in queen.log_partitions (empty: last_offset -1),
-- with the same id from queen.log_partitions' sequence. The one way a partition is
-- created, on plain PostgreSQL and on Citus, where the directory is a reference table and
-- queen.log_partitions is distributed by id (docs/scale-out.md): the directory's unique
-- (queue_id, name) key is what serialises two creators of one partition there.
--
-- A partition an older release's node created (queen.log_partitions only, during a
-- rolling upgrade) is adopted: its directory row is added with its id. Creating rows fires
-- the partitions_limit trigger (queen.tenant_limit_guard_v1, the tenant's partition
-- limit). Takes no lock beyond the inserted rows' and the unique key's; no notifications.
CREATE OR REPLACE FUNCTION queen.log_partition_ensure_v1(p_qid bigint, p_name text)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_pid bigint;
    v_old bigint;
BEGIN
    SELECT n.id INTO v_pid FROM queen.log_partition_names n
    WHERE n.queue_id = p_qid AND n.name = p_name;
    IF v_pid IS NOT NULL THEN
        RETURN v_pid;
    END IF;
    v_pid := nextval(pg_get_serial_sequence('queen.log_partitions', 'id'));
    INSERT INTO queen.log_partition_names (id, queue_id, name) VALUES (v_pid, p_qid, p_name)
    ON CONFLICT (queue_id, name) DO NOTHING;
    IF NOT FOUND THEN
        SELECT n.id INTO v_pid FROM queen.log_partition_names n
        WHERE n.queue_id = p_qid AND n.name = p_name;
        RETURN v_pid;
    END IF;
    -- Only when creating: an older node's partition without a directory row.
    SELECT p.id INTO v_old FROM queen.log_partitions p
    WHERE p.queue_id = p_qid AND p.name = p_name;
    IF v_old IS NOT NULL THEN
        UPDATE queen.log_partition_names SET id = v_old WHERE id = v_pid;
        RETURN v_old;
    END IF;
    INSERT INTO queen.log_partitions (id, queue_id, name) VALUES (v_pid, p_qid, p_name);
    RETURN v_pid;
END;
$$;
