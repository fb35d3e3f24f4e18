-- queen.consumer_group_seen_v1(p_tenant, p_queue, p_group) -> void
--
-- Records that consumer group p_group of queue p_queue (of tenant p_tenant) is waiting for
-- messages now: sets its subscription row's last_seen_at, which the idle-group sweep
-- (queen.retention_idle_v1) counts as activity like a consumption or a lease. Called by a
-- pop that found nothing, at most once per interval per group and node (the group actor
-- decides, src/actors/group.rs), so an idle long-poll costs no write per poll. A group
-- without a subscription row (queue mode, or one not registered yet) changes nothing.
--
-- PL/pgSQL, the time read before the UPDATE: on the Citus layout, where the subscriptions
-- and queues are reference tables, the LANGUAGE sql body failed (Citus plans no
-- parameterized SQL function over them, and takes no volatile function in an UPDATE), so
-- no waiting group was ever seen there and the idle sweep forgot it.
--
-- Locks: the one subscription row. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_seen_v1(
    p_tenant text,
    p_queue  text,
    p_group  text
) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    UPDATE queen.consumer_groups_metadata m SET last_seen_at = v_now
    WHERE m.queue_id = v_qid AND m.consumer_group = p_group;
END;
$$;
