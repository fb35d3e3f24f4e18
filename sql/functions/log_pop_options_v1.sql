-- queen.log_pop_options_v1(p_tenant, p_queue, p_group)
--   -> (queue_id, lease_time, delay_secs, window_secs, ttl_secs, max_wait_secs,
--       retry_limit, dead_letters, retry_dead_letters, conflate), one row or none
--
-- What a pop of (p_tenant, p_queue) for group p_group hands queen.log_pop_v3 beside each
-- claim, read in one statement: the queue's id and lease_time, delayedProcessing,
-- windowBuffer, ttl, maxWaitTimeSeconds and retryLimit, whether it files expired messages
-- (dead_letters) and messages whose retries are spent (retry_dead_letters), and the group's
-- conflation flag (false for queue mode and for a group with no subscription row). No row
-- when the queue does not exist.
--
-- One SELECT, in PL/pgSQL: Citus plans no parameterized LANGUAGE sql function that reads a
-- distributed or reference table ("parameterized queries for SQL functions referencing
-- distributed tables are not supported"), and its tables are reference tables there
-- (docs/scale-out.md). On PostgreSQL one function call more per pop of
-- queen.log_pop_list_v2, queen.log_pop_wildcard_bin_v2 and queen.log_pop_specific_v2
-- than the inlined LANGUAGE sql body. Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_options_v1(
    p_tenant text,
    p_queue  text,
    p_group  text
) RETURNS TABLE (
    queue_id           bigint,
    lease_time         integer,
    delay_secs         integer,
    window_secs        integer,
    ttl_secs           integer,
    max_wait_secs      integer,
    retry_limit        integer,
    dead_letters       boolean,
    retry_dead_letters boolean,
    conflate           boolean
) LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT q.id, q.lease_time, q.delayed_processing, q.window_buffer, q.ttl_seconds,
           q.max_wait_time_seconds, q.retry_limit,
           coalesce(q.dead_letter_queue, true),
           coalesce(q.dead_letter_queue, true) AND coalesce(q.dlq_after_max_retries, true),
           coalesce(m.conflation, false)
    FROM queen.queues q
    LEFT JOIN queen.consumer_groups_metadata m
      ON m.consumer_group = p_group AND m.queue_id = q.id AND p_group <> '__QUEUE_MODE__'
    WHERE q.tenant = p_tenant AND q.name = p_queue;
END;
$$;
