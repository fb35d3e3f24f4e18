-- queen.log_render_failed_v1(p_pid, p_group, p_lease, p_from, p_to, p_damaged, p_error)
--   -> text: 'truncated', 'dead_lettered', 'released' or 'gone'
--
-- Gives back the part of a leased delivery the broker could not render. The broker claimed
-- offsets of partition p_pid for p_group under lease p_lease, and offsets p_from .. p_to
-- (the first unrenderable message, through the end of its segment's slice when the segment
-- itself is damaged) could not be turned into an answer: a segment that does not
-- decompress or parse (p_damaged: no node can read it), or a payload sealed under a key
-- this node does not hold (not damaged: a node with the right key can). Does nothing and
-- answers 'gone' unless p_lease is still the row's lease. Then:
--   * p_from after the lease's first delivered offset (attempt_offset): the lease is cut
--     to end before it (batch_end = p_from - 1) and the broker answers the messages before
--     it. Answers 'truncated'.
--   * p_from is the first delivered offset, p_damaged, and the deliveries counted there
--     (attempt_count) are past the queue's retry_limit: offsets p_from .. p_to are filed in
--     queen.dead_letters (error p_error, transaction id 'unreadable:<offset>' since the id
--     cannot be read, each with a copy of its segment) when the queue keeps dead letters
--     for spent retries (dead_letter_queue and dlq_after_max_retries each true or NULL),
--     else passed without a copy. The cursor moves past them and the lease is released.
--     Answers 'dead_lettered'.
--   * otherwise the lease is released at once, not left to expire, and the cursor stays:
--     the next pop, on this node or on one that can render it, claims it again. Answers
--     'released'.
-- A message that only this node cannot open is never dead-lettered for it.
--
-- Locks: the cursor row (FOR UPDATE), to the end of the caller's transaction.
-- No notifications.
CREATE OR REPLACE FUNCTION queen.log_render_failed_v1(
    p_pid     bigint,
    p_group   text,
    p_lease   text,
    p_from    bigint,
    p_to      bigint,
    p_damaged boolean,
    p_error   text
) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_c     record;
    v_limit integer;
    v_file  boolean;
    v_o     bigint;
    v_s     record;
BEGIN
    SELECT c.committed, c.worker_id, c.batch_end, c.attempt_count, c.attempt_offset
    INTO v_c
    FROM queen.log_consumers c
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group
    FOR UPDATE;
    IF NOT FOUND OR v_c.worker_id IS DISTINCT FROM p_lease OR p_to < p_from THEN
        RETURN 'gone';
    END IF;

    IF p_from > coalesce(v_c.attempt_offset, v_c.committed + 1) THEN
        UPDATE queen.log_consumers c SET batch_end = least(c.batch_end, p_from - 1)
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'truncated';
    END IF;

    SELECT q.retry_limit,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
    INTO v_limit, v_file
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = p_pid;

    IF p_damaged AND v_c.attempt_offset = p_from AND v_c.attempt_count > v_limit THEN
        -- One offset at a time, its segment found first and copied by value: Citus does
        -- not push down a LATERAL subquery with LIMIT over a table function's column, so
        -- one INSERT .. SELECT over generate_series was refused on the layout.
        FOR v_o IN p_from .. p_to LOOP
            EXIT WHEN NOT v_file;
            SELECT x.base_offset, x.codec, x.producer, x.created_at, x.blob INTO v_s
            FROM queen.log_segments x
            WHERE x.partition_id = p_pid AND x.base_offset <= v_o
            ORDER BY x.base_offset DESC
            LIMIT 1;
            CONTINUE WHEN NOT FOUND;
            INSERT INTO queen.dead_letters
                (partition_id, consumer_group, message_offset, transaction_id,
                 error_message, retry_count, segment_base, codec, producer, created_at,
                 blob)
            VALUES (p_pid, p_group, v_o, 'unreadable:' || v_o, p_error, v_c.attempt_count,
                    v_s.base_offset, v_s.codec, v_s.producer, v_s.created_at, v_s.blob);
        END LOOP;
        UPDATE queen.log_consumers c SET
            committed = greatest(c.committed, p_to),
            worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
            batch_end = NULL, acked_ahead = '{}',
            failed_offset = NULL, failed_count = 0,
            total_consumed = c.total_consumed + greatest(p_to - c.committed, 0),
            last_consumed_at = now()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        RETURN 'dead_lettered';
    END IF;

    UPDATE queen.log_consumers c SET
        worker_id = NULL, lease_expires_at = NULL, lease_acquired_at = NULL,
        batch_end = NULL, acked_ahead = '{}'
    WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
    RETURN 'released';
END;
$$;
