-- queen.log_seed_cursor_v1(p_qid, p_pid, p_group, p_sub_mode, p_sub_from) -> bigint
--
-- Where the cursor of (partition p_pid, group p_group) starts on first contact, the
-- committed offset queen.log_pop_v3 inserts. In this order:
--   1. the group's durable subscription in queen.consumer_groups_metadata: just before the
--      first segment created at or after its timestamp, else last_offset; a subscription
--      without a timestamp starts at -1;
--   2. without one, the pop-carried intent: the p_sub_from timestamp as above, or
--      last_offset when p_sub_mode = 'new';
--   3. otherwise -1 (everything retained).
-- '__QUEUE_MODE__' always starts at -1: a queue-mode pop never skips backlog. The walk goes
-- forward from the oldest retained segment and stops at the first match (created_at grows
-- with base_offset).
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_seed_cursor_v1(
    p_qid      bigint,
    p_pid      bigint,
    p_group    text,
    p_sub_mode text,
    p_sub_from timestamptz
) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_found boolean := false;
    v_ts    timestamptz;
    v_seek  bigint;
    v_last  bigint;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN
        RETURN -1;
    END IF;

    SELECT true, m.subscription_timestamp INTO v_found, v_ts
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;

    IF NOT coalesce(v_found, false) THEN
        IF p_sub_from IS NOT NULL THEN
            v_ts := p_sub_from;
        ELSIF p_sub_mode = 'new' THEN
            SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = p_pid;
            RETURN v_last;
        END IF;
    END IF;

    IF v_ts IS NULL THEN
        RETURN -1;
    END IF;

    -- Forward walk from the oldest retained segment; created_at is monotone in
    -- base_offset, so the first match is the answer and the walk stops there.
    SELECT s.base_offset - 1 INTO v_seek
    FROM queen.log_segments s
    WHERE s.partition_id = p_pid AND s.created_at >= v_ts
    ORDER BY s.base_offset
    LIMIT 1;
    IF v_seek IS NOT NULL THEN
        RETURN v_seek;
    END IF;
    SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = p_pid;
    RETURN v_last;
END;
$$;
