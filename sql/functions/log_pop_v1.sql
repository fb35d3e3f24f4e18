-- queen.log_pop_v1(p_qid, p_pid, p_group, p_worker, p_budget, p_lease_seconds, p_auto_ack,
--                  p_sub_mode, p_sub_from, p_skip_window) -> SETOF queen.log_pop_row
--
-- The per-partition claim for callers that hold only the queue and partition ids
-- (queen.log_pop_specific_v1, queen.log_pop_wildcard_bin_v1). Reads the queue's delivery
-- options in one statement (delayed_processing, window_buffer, ttl_seconds,
-- max_wait_time_seconds, retry_limit, and whether it keeps dead letters, for failures and
-- for spent retries) and the group's conflation flag (never for queue mode), then claims
-- through queen.log_pop_v3 with them.
--
-- Rows, locks and the synchronous_commit rule: as queen.log_pop_v3. No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_v1(
    p_qid           bigint,
    p_pid           bigint,
    p_group         text,
    p_worker        text,
    p_budget        integer,
    p_lease_seconds integer,
    p_auto_ack      boolean,
    p_sub_mode      text,
    p_sub_from      timestamptz,
    p_skip_window   boolean
) RETURNS SETOF queen.log_pop_row LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_q        record;
    v_conflate boolean;
BEGIN
    SELECT q.delayed_processing, q.window_buffer, q.ttl_seconds, q.max_wait_time_seconds,
           q.retry_limit, coalesce(q.dead_letter_queue, true) AS dead_letters,
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true)
               AS retry_dead_letters
    INTO v_q
    FROM queen.queues q WHERE q.id = p_qid;
    IF p_group <> '__QUEUE_MODE__' THEN
        SELECT m.conflation INTO v_conflate
        FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    END IF;
    RETURN QUERY
        SELECT * FROM queen.log_pop_v3(p_qid, p_pid, p_group, p_worker, p_budget,
                                       p_lease_seconds, p_auto_ack, p_sub_mode, p_sub_from,
                                       p_skip_window, v_q.delayed_processing, v_q.window_buffer,
                                       coalesce(v_conflate, false), v_q.ttl_seconds,
                                       v_q.max_wait_time_seconds, v_q.retry_limit,
                                       coalesce(v_q.dead_letters, true),
                                       coalesce(v_q.retry_dead_letters, true));
END;
$$;
