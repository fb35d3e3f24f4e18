-- queen.log_pop_specific_v1(p_tenant, p_queue, p_partition, p_group, p_worker, p_batch,
--                           p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from)
--   -> SETOF queen.log_pop_wire_row
--
-- Pops from one named partition. Resolves the queue and partition by name (unknown: no
-- rows, never an error) and claims through queen.log_pop_v1, leasing for p_lease_seconds or
-- the queue's lease_time (60 s when unset). Only then does it read the partition's name to
-- report, in a later command of this VOLATILE function: its snapshot is at least as new as
-- anything the claim saw, so a pop racing the push that creates the partition can never
-- report an empty partitionId.
--
-- Does not register a durable subscription: the pop-carried intent (p_sub_mode,
-- p_sub_from) only seeds a first-contact cursor (queen.log_seed_cursor_v1).
-- Rows: queue_name, partition_name and the columns of queen.log_pop_row; none when nothing
-- was claimed. Locks: as queen.log_pop_v3. No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_specific_v1(
    p_tenant        text,
    p_queue         text,
    p_partition     text,
    p_group         text,
    p_worker        text,
    p_batch         integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_lease  integer;
    v_pid    bigint;
    v_rows   queen.log_pop_row[];
    v_name   text;
BEGIN
    SELECT q.id, q.lease_time INTO v_qid, v_lease
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    SELECT p.id INTO v_pid FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition;
    IF v_pid IS NULL THEN
        RETURN;
    END IF;

    SELECT array_agg(r) INTO v_rows
    FROM queen.log_pop_v1(v_qid, v_pid, p_group, p_worker, p_batch,
                          coalesce(p_lease_seconds, v_lease, 60), p_auto_ack,
                          p_sub_mode, p_sub_from, false) r;
    IF v_rows IS NULL THEN
        RETURN;
    END IF;

    -- Resolved after the claim, in a later command: see the header.
    SELECT p.name INTO v_name FROM queen.log_partitions p WHERE p.id = v_pid;
    RETURN QUERY SELECT p_queue, v_name, r.* FROM unnest(v_rows) r;
END;
$$;
