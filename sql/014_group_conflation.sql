-- 014_group_conflation: last-value delivery per partition, stored on the consumer group.
--
-- queen.consumer_groups_metadata.conflation (declared in 001): a conflating group gets only the newest
-- visible message of each partition it claims; the ones behind it are retired (the cursor
-- moves past them at the claim). Stored at the group's first registration; the stored value
-- wins afterwards (the contract's rule). Queue mode never conflates.
--
-- queen.log_register_group_at_v1(p_qid, p_group, p_sub_mode, p_sub_from, p_conflation)
--   -> boolean
--   A group's first registration on a queue: the durable subscription from p_sub_mode /
--   p_sub_from (queue mode always 'all'), the conflation policy, and, for the one caller
--   whose insert wins, every partition's cursor seeded in one statement (no per-partition
--   lazy-insert convoy). Returns the stored policy, which is the request's only when this
--   call registered the group. Locks: the metadata row it inserts. The wildcard pop's
--   first contact (005) calls it too.
--
-- queen.log_register_group_v1(p_tenant, p_queue, p_group, p_sub_mode, p_sub_from,
--                             p_conflation) -> boolean
--   The same by queue name, creating the queue row when missing. Called for pops that ask
--   for conflation.

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

CREATE OR REPLACE FUNCTION queen.log_register_group_v1(
    p_tenant      text,
    p_queue       text,
    p_group       text,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    p_conflation  boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    RETURN queen.log_register_group_at_v1(v_qid, p_group, p_sub_mode, p_sub_from, p_conflation);
END;
$$;
