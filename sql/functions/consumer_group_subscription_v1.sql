-- queen.consumer_group_subscription_v1(p_tenant, p_group, p_timestamp) -> integer
--
-- Moves a consumer group's durable subscriptions to a timestamp: sets subscription_mode =
-- 'timestamp' and subscription_timestamp = p_timestamp on every
-- queen.consumer_groups_metadata row of the group in the tenant. Cursors that exist are
-- left alone (queen.consumer_group_seek_v1 moves those); the timestamp decides where
-- cursors start that are created later, e.g. a first contact after the group's cursors
-- were deleted.
--
-- Returns the number of subscriptions updated.
-- Locks: the updated metadata rows. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_subscription_v1(
    p_tenant    text,
    p_group     text,
    p_timestamp timestamptz
) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_rows integer;
BEGIN
    UPDATE queen.consumer_groups_metadata m
    SET subscription_mode = 'timestamp', subscription_timestamp = p_timestamp
    FROM queen.queues q
    WHERE m.queue_id = q.id AND q.tenant = p_tenant AND m.consumer_group = p_group;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows;
END;
$$;
