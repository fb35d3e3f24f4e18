-- queen.retention_idle_v1(p_budget, p_empty_partition_secs, p_idle_group_secs)
--   -> (partitions, cursors), one row
--
-- One bounded batch of the retention sweeper (run under queen.sweeper_lease_v1) that
-- forgets what is no longer used:
--   * with p_empty_partition_secs > 0, deletes at most p_budget partitions without
--     segments, dead letters or traces, not written for that long and without a live
--     lease. Their cursors cascade; a later push creates the partition again, from offset
--     0. The emptiness is checked again under the row lock, since a push may have landed
--     since the scan;
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
CREATE OR REPLACE FUNCTION queen.retention_idle_v1(
    p_budget               integer,
    p_empty_partition_secs integer,
    p_idle_group_secs      integer
) RETURNS TABLE (partitions bigint, cursors bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := clock_timestamp();
    v_pids bigint[];
    v_n    bigint;
    g      record;
BEGIN
    partitions := 0;
    cursors := 0;
    IF p_empty_partition_secs > 0 THEN
        SELECT array_agg(x.id) INTO v_pids FROM (
            SELECT lp.id FROM queen.log_partitions lp
            WHERE lp.last_write_at < v_now - make_interval(secs => p_empty_partition_secs)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.message_traces t WHERE t.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                              WHERE c.partition_id = lp.id AND c.lease_expires_at > v_now)
            ORDER BY lp.id LIMIT p_budget
            -- A push holding the row waits us out, or we skip it: never block traffic.
            FOR UPDATE SKIP LOCKED
        ) x;
        IF v_pids IS NOT NULL THEN
            -- Only partitions whose every cursor row we can lock now: the cascade below then
            -- waits for no pop (a pop holding one would otherwise deadlock with us).
            SELECT array_agg(x.id) INTO v_pids FROM unnest(v_pids) AS x (id)
            WHERE (SELECT count(*) FROM queen.log_consumers c WHERE c.partition_id = x.id)
                = (SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers c
                                         WHERE c.partition_id = x.id
                                         FOR UPDATE SKIP LOCKED) l);
        END IF;
        IF v_pids IS NOT NULL THEN
            DELETE FROM queen.dedup d WHERE d.partition_id = ANY (v_pids);
            -- Re-checked under the row lock: a push may have landed since the scan.
            DELETE FROM queen.log_partitions lp
            WHERE lp.id = ANY (v_pids)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id);
            GET DIAGNOSTICS partitions = ROW_COUNT;
        END IF;
    END IF;
    IF p_idle_group_secs > 0 THEN
        FOR g IN
            SELECT m.consumer_group, m.queue_id FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group <> '__QUEUE_MODE__'
              AND m.created_at < v_now - make_interval(secs => p_idle_group_secs)
              AND (m.last_seen_at IS NULL
                   OR m.last_seen_at < v_now - make_interval(secs => p_idle_group_secs))
              AND NOT EXISTS (
                  SELECT 1 FROM queen.log_consumers c
                  JOIN queen.log_partitions lp ON lp.id = c.partition_id
                  WHERE lp.queue_id = m.queue_id AND c.consumer_group = m.consumer_group
                    AND (c.lease_expires_at > v_now
                         OR c.last_consumed_at >= v_now - make_interval(secs => p_idle_group_secs)
                         OR c.lease_acquired_at >= v_now - make_interval(secs => p_idle_group_secs)))
            LIMIT p_budget
        LOOP
            DELETE FROM queen.log_consumers c USING queen.log_partitions lp
            WHERE lp.id = c.partition_id AND lp.queue_id = g.queue_id
              AND c.consumer_group = g.consumer_group;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            cursors := cursors + v_n;
            DELETE FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group = g.consumer_group AND m.queue_id = g.queue_id;
        END LOOP;
    END IF;
    RETURN NEXT;
END;
$$;
