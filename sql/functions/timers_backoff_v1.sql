-- queen.timers_backoff_v1(p_tenants, p_queues, p_keys, p_message_ids) -> integer
--
-- After a fire that could not push (its transaction rolled back, so the rows are back):
-- each named timer that still holds the same message_id (a reschedule since then is a new
-- timer and keeps its own time) counts one more attempt and is due again after
-- 100 ms * 2^attempts, at most 30 s. deliver_at, the promise, does not move. A timer is
-- never dropped here: it stays pending, cancellable and reschedulable, until a push
-- succeeds (src/timers/fire.rs). Answers the rows moved. Row locks only.
CREATE OR REPLACE FUNCTION queen.timers_backoff_v1(p_tenants text[], p_queues text[],
                                                   p_keys text[], p_message_ids uuid[])
RETURNS integer
LANGUAGE sql
AS $$
    WITH moved AS (
        UPDATE queen.timers t
           SET attempts = t.attempts + 1,
               due_at = clock_timestamp()
                   + make_interval(secs =>
                         least(30.0, 0.1 * power(2, least(t.attempts, 20))))
          FROM unnest(p_tenants, p_queues, p_keys, p_message_ids)
                   AS f(tenant, queue, k, mid)
         WHERE t.tenant = f.tenant AND t.queue = f.queue AND t.timer_key = f.k
           AND t.message_id = f.mid
        RETURNING 1
    )
    SELECT count(*)::integer FROM moved;
$$;
