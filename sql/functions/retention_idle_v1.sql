-- queen.retention_idle_v1(p_budget, p_empty_partition_secs, p_idle_group_secs)
--   -> (partitions, cursors), one row
--
-- One bounded batch of the retention sweeper (run under queen.sweeper_lease_v1) that
-- forgets what is no longer used:
--   * with p_empty_partition_secs > 0, deletes at most p_budget partitions without
--     segments, dead letters or traces, not written for that long and without a live
--     lease, and their directory rows (queen.log_partition_names); their cursors
--     cascade. A later push creates the partition again, from offset 0. The emptiness
--     is checked again under the row lock, since a push may have landed since the scan;
--   * with p_idle_group_secs > 0, forgets at most p_budget consumer groups of a queue
--     (never queue mode), registered longer ago than that, not seen waiting for that long
--     (last_seen_at, set by queen.consumer_group_seen_v1: a long-poll on an empty queue is
--     activity), whose cursors there were neither consumed nor leased for that long and
--     hold no live lease: their cursors and their subscription row.
-- Returns the numbers of partitions and of cursor rows deleted.
--
-- Locks: the deleted rows. Partitions, and their cursor rows, that another transaction
-- holds are skipped (FOR UPDATE SKIP LOCKED), never waited for: a push holding a partition
-- waits us out or is skipped, and a partition is only deleted when all its cursor rows
-- could be locked, so the cascade waits for no pop (one holding a cursor would otherwise
-- deadlock with the sweep). No notifications.
--
-- On the Citus layout: the candidates are read by one multi-shard query whose subqueries
-- are co-located on the partition id; the traces (a table of the coordinator there), the
-- locks and the deletes are statements of one partition or one group each, in Citus's
-- sequential mode (a reference table is written after the multi-shard reads).
CREATE OR REPLACE FUNCTION queen.retention_idle_v1(
    p_budget               integer,
    p_empty_partition_secs integer,
    p_idle_group_secs      integer
) RETURNS TABLE (partitions bigint, cursors bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := clock_timestamp();
    v_cutoff timestamptz;
    v_pids   bigint[];
    v_pid    bigint;
    v_n      bigint;
    v_groups integer := 0;
    g        record;
BEGIN
    partitions := 0;
    cursors := 0;
    -- A setting of Citus's; on plain PostgreSQL an unused placeholder of this transaction.
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    IF p_empty_partition_secs > 0 THEN
        v_cutoff := v_now - make_interval(secs => p_empty_partition_secs);
        SELECT array_agg(x.id ORDER BY x.id) INTO v_pids FROM (
            SELECT lp.id FROM queen.log_partitions lp
            WHERE lp.last_write_at < v_cutoff
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                              WHERE c.partition_id = lp.id AND c.lease_expires_at > v_now)
            ORDER BY lp.id LIMIT p_budget
        ) x;
        FOREACH v_pid IN ARRAY coalesce(v_pids, '{}'::bigint[]) LOOP
            CONTINUE WHEN EXISTS (SELECT 1 FROM queen.message_traces t
                                  WHERE t.partition_id = v_pid);
            -- A push holding the row waits us out, or we skip it: never block traffic.
            PERFORM 1 FROM queen.log_partitions lp WHERE lp.id = v_pid FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
            -- Only when every cursor row can be locked now: the cascade below then waits
            -- for no pop (a pop holding one would otherwise deadlock with us).
            CONTINUE WHEN (SELECT count(*) FROM queen.log_consumers c WHERE c.partition_id = v_pid)
                <> (SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers c
                                         WHERE c.partition_id = v_pid
                                         FOR UPDATE SKIP LOCKED) l);
            -- Re-checked under the row lock: a push may have landed since the scan.
            CONTINUE WHEN EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = v_pid);
            DELETE FROM queen.dedup d WHERE d.partition_id = v_pid;
            DELETE FROM queen.log_partitions lp WHERE lp.id = v_pid;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            partitions := partitions + v_n;
            DELETE FROM queen.log_partition_names n WHERE n.id = v_pid;
        END LOOP;
    END IF;
    IF p_idle_group_secs > 0 THEN
        v_cutoff := v_now - make_interval(secs => p_idle_group_secs);
        FOR g IN
            SELECT m.consumer_group, m.queue_id FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group <> '__QUEUE_MODE__'
              AND m.created_at < v_cutoff
              AND (m.last_seen_at IS NULL OR m.last_seen_at < v_cutoff)
            ORDER BY m.queue_id, m.consumer_group
        LOOP
            EXIT WHEN v_groups >= p_budget;
            CONTINUE WHEN EXISTS (
                SELECT 1 FROM queen.log_consumers c
                JOIN queen.log_partitions lp ON lp.id = c.partition_id
                WHERE lp.queue_id = g.queue_id AND c.consumer_group = g.consumer_group
                  AND (c.lease_expires_at > v_now
                       OR c.last_consumed_at >= v_cutoff
                       OR c.lease_acquired_at >= v_cutoff));
            DELETE FROM queen.log_consumers c USING queen.log_partitions lp
            WHERE lp.id = c.partition_id AND lp.queue_id = g.queue_id
              AND c.consumer_group = g.consumer_group;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            cursors := cursors + v_n;
            DELETE FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group = g.consumer_group AND m.queue_id = g.queue_id;
            v_groups := v_groups + 1;
        END LOOP;
    END IF;
    RETURN NEXT;
END;
$$;
