-- queen.timers_claim_v1(p_limit) -> setof (tenant, queue, timer_key, partition, payload,
--                                          txn, message_id, late_ms, attempts)
--
-- The fire loop's claim (src/timers/fire.rs): deletes up to p_limit timers whose due_at
-- has passed (PostgreSQL's clock at the statement's start), earliest first, and answers
-- them. Runs inside the transaction that then pushes them as messages: the rows come back
-- if it rolls back (a failed push, a node killed mid-fire), so a timer is pushed exactly
-- when its delete commits. FOR UPDATE SKIP LOCKED: rows another node is firing, or a
-- timers_apply_v1 call holds, are left to them; a call that waits on a row claimed here
-- finds it gone and answers too_late. late_ms: how long after deliver_at the claim ran.
--
-- Due means due_at <= statement_timestamp(): stable, so the due-time index stops at the
-- first timer not due yet (clock_timestamp(), volatile, was a filter, and a claim with
-- fewer than p_limit due walked every pending timer). The claimed rows are deleted by
-- their ctid (a TID scan; they are locked, so it cannot move): a join back on the key let
-- the function's generic plan, which does not know p_limit, hash-join a sequential scan
-- of every pending timer (50-300 ms a claim with a million pending).
CREATE OR REPLACE FUNCTION queen.timers_claim_v1(p_limit integer)
RETURNS TABLE (tenant text, queue text, timer_key text, partition text, payload bytea,
               txn text, message_id uuid, late_ms double precision, attempts integer)
LANGUAGE sql
AS $$
    DELETE FROM queen.timers t
     WHERE t.ctid = ANY (ARRAY(
               SELECT d.ctid
                 FROM queen.timers d
                WHERE d.due_at <= statement_timestamp()
                ORDER BY d.due_at
                LIMIT p_limit
                  FOR UPDATE SKIP LOCKED))
    RETURNING t.tenant, t.queue, t.timer_key::text, t.partition, t.payload, t.txn,
              t.message_id,
              extract(epoch FROM clock_timestamp() - t.deliver_at)::double precision
                  * 1000.0,
              t.attempts;
$$;
