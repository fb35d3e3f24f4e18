-- queen.ephemeral_forget_v1(p_tenant, p_queue) -> boolean
--
-- Removes the declaration of one ephemeral queue (DELETE /api/v1/ephemeral/queue/{queue});
-- true when there was one. The queue's contents are the owning broker's to drop.
--
-- One primary-key delete: a row lock. No notifications.
CREATE OR REPLACE FUNCTION queen.ephemeral_forget_v1(p_tenant text, p_queue text)
RETURNS boolean LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM queen.ephemeral_queues e
         WHERE e.tenant = p_tenant AND e.queue = p_queue
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone);
$$;
