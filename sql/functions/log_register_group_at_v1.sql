-- queen.log_register_group_at_v1(p_qid, p_group, p_sub_mode, p_sub_from, p_conflation)
--   -> boolean
--
-- A consumer group's first registration on a queue. Inserts its durable subscription in
-- queen.consumer_groups_metadata: mode 'timestamp' from p_sub_from, else 'new' (from now)
-- when p_sub_mode = 'new', else 'all'; queue mode is always 'all'. It stores the
-- conflation policy too: a conflating group gets only the newest visible message of each
-- partition it claims, the ones behind it retired at the claim. The policy is fixed at the
-- first registration; the stored value wins afterwards.
--
-- The one caller whose insert wins seeds every partition's cursor in one statement (-1, or
-- just before the first segment at or after the subscription's timestamp, else
-- last_offset), so concurrent first pops do not convoy on per-partition inserts. Called by
-- queen.log_register_group_v1 and by the first contact of queen.log_pop_wildcard_bin_v1.
--
-- Returns the stored policy, which is the request's only when this call registered the
-- group.
-- Locks: the metadata row it inserts and the cursor rows it seeds; a concurrent first
-- contact waits for this insert. No notifications.
CREATE OR REPLACE FUNCTION queen.log_register_group_at_v1(
    p_qid         bigint,
    p_group       text,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    p_conflation  boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_mode     text;
    v_ts       timestamptz;
    v_inserted integer;
    v_stored   boolean;
BEGIN
    SELECT m.conflation INTO v_stored
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    IF FOUND THEN
        RETURN v_stored;
    END IF;

    IF p_group = '__QUEUE_MODE__' THEN
        v_mode := 'all';
    ELSIF p_sub_from IS NOT NULL THEN
        v_mode := 'timestamp';
        v_ts := p_sub_from;
    ELSIF p_sub_mode = 'new' THEN
        v_mode := 'new';
        v_ts := now();
    ELSE
        v_mode := 'all';
    END IF;
    INSERT INTO queen.consumer_groups_metadata
        (consumer_group, queue_id, subscription_mode, subscription_timestamp, conflation)
    VALUES (p_group, p_qid, v_mode, v_ts, p_conflation)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 1 THEN
        INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
        SELECT p.id, p_group,
               CASE WHEN v_ts IS NULL THEN -1
                    ELSE coalesce((SELECT s.base_offset - 1
                                   FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.created_at >= v_ts
                                   ORDER BY s.base_offset LIMIT 1),
                                  p.last_offset)
               END
        FROM queen.log_partitions p
        WHERE p.queue_id = p_qid
        ON CONFLICT DO NOTHING;
        RETURN p_conflation;
    END IF;

    -- A concurrent first contact registered it between our read and our insert.
    SELECT m.conflation INTO v_stored
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    RETURN coalesce(v_stored, false);
END;
$$;
