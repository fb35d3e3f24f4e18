-- queen.queue_ensure_v1(p_tenant, p_queue) -> bigint
--
-- The id of the tenant's queue p_queue, its row created with the defaults when missing (a
-- group may subscribe before the first push). A concurrent creation is taken as it is
-- (ON CONFLICT DO NOTHING, then read again). The broker calls it where it needs a queue by
-- name before a function that takes its id (the registration of a conflation policy,
-- queen.log_register_group_at_v1).
--
-- Locks: the row it inserts; a concurrent creation of the same queue waits for it. When
-- it creates the queue, on the Citus layout, Citus's shard locks of the subscriptions and
-- then of the queues (docs/scale-out.md, "Part eight"). No notifications.
CREATE OR REPLACE FUNCTION queen.queue_ensure_v1(p_tenant text, p_queue text)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        -- The subscriptions' lock before the queue's (a row lock on no row; nothing on
        -- plain PostgreSQL): the caller registers a group next, and on the Citus layout
        -- every write of a subscription takes Citus's reference-table shard locks in that
        -- order (its foreign key to queen.queues); the other order deadlocks with it.
        PERFORM 1 FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = '' AND m.queue_id = 0
        FOR UPDATE;
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    RETURN v_qid;
END;
$$;
