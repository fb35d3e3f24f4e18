-- queen.queue_ensure_v1(p_tenant, p_queue) -> bigint
--
-- The id of the tenant's queue p_queue, its row created with the defaults when missing (a
-- group may subscribe before the first push). A concurrent creation is taken as it is
-- (ON CONFLICT DO NOTHING, then read again). The broker calls it where it needs a queue by
-- name before a function that takes its id (the registration of a conflation policy,
-- queen.log_register_group_at_v1).
--
-- Locks: the row it inserts; a concurrent creation of the same queue waits for it. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.queue_ensure_v1(p_tenant text, p_queue text)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    RETURN v_qid;
END;
$$;
