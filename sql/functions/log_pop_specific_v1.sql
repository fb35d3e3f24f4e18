-- queen.log_pop_specific_v1(p_tenant, p_queue, p_partition, p_group, p_worker, p_batch,
--                           p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from)
--   -> SETOF queen.log_pop_wire_row
--
-- Pops from one named partition. Resolves the queue (with its options,
-- queen.log_pop_options_v1) and the partition by name (unknown: no rows, never an error)
-- and claims through queen.log_pop_v3, leasing for p_lease_seconds or the queue's
-- lease_time (60 s when unset). Only then does it read the partition's name to
-- report, in a later command of this VOLATILE function: its snapshot is at least as new as
-- anything the claim saw, so a pop racing the push that creates the partition can never
-- report an empty partitionId.
--
-- Does not register a durable subscription: the pop-carried intent (p_sub_mode,
-- p_sub_from) only seeds a first-contact cursor (queen.log_seed_cursor_v1).
-- Rows: queue_name, partition_name and the columns of queen.log_pop_row; none when nothing
-- was claimed. A first contact of a group new to the tenant is checked against its
-- consumer-group limit first (queen.tenant_group_admit_v1; over it SQLSTATE QLIMT).
-- Locks: as queen.log_pop_v3, and the limit's advisory lock when a limit is set and the
-- cursor is missing. No notifications.
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
    v_q      record;
    v_pid    bigint;
    v_rows   queen.log_pop_row[];
    v_name   text;
BEGIN
    SELECT * INTO v_q FROM queen.log_pop_options_v1(p_tenant, p_queue, p_group);
    IF v_q.queue_id IS NULL THEN
        RETURN;
    END IF;
    SELECT p.id INTO v_pid FROM queen.log_partitions p
    WHERE p.queue_id = v_q.queue_id AND p.name = p_partition;
    IF v_pid IS NULL THEN
        RETURN;
    END IF;
    -- The claim may create the group's cursor (first contact): the group limit first.
    PERFORM queen.tenant_group_admit_v1(v_q.queue_id, v_pid, p_group);

    SELECT array_agg(r) INTO v_rows
    FROM queen.log_pop_v3(v_q.queue_id, v_pid, p_group, p_worker, p_batch,
                          coalesce(p_lease_seconds, v_q.lease_time, 60), p_auto_ack,
                          p_sub_mode, p_sub_from, false, v_q.delay_secs, v_q.window_secs,
                          v_q.conflate, v_q.ttl_secs, v_q.max_wait_secs, v_q.retry_limit,
                          v_q.dead_letters, v_q.retry_dead_letters) r;
    IF v_rows IS NULL THEN
        RETURN;
    END IF;

    -- Resolved after the claim, in a later command: see the header.
    SELECT p.name INTO v_name FROM queen.log_partitions p WHERE p.id = v_pid;
    RETURN QUERY SELECT p_queue, v_name, r.* FROM unnest(v_rows) r;
END;
$$;
