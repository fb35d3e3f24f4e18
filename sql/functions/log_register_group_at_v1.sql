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
-- The one caller whose insert wins seeds every partition's cursor in this call (-1, or
-- just before the first segment at or after the subscription's timestamp, else
-- last_offset), so concurrent first pops do not convoy on per-partition inserts. One
-- insert per partition, in partition id order (on the Citus layout each goes to its
-- partition's shard; docs/scale-out.md). Called by
-- the broker when a group is registered and by the first contact of
-- queen.log_pop_wildcard_bin_v2.
--
-- Returns the stored policy, which is the request's only when this call registered the
-- group.
-- The group is checked against the tenant's consumer-group limit before its cursors are
-- seeded (queen.tenant_group_admit_v1; over it SQLSTATE QLIMT).
-- Locks: the metadata row it inserts and the cursor rows it seeds; a concurrent first
-- contact waits for this insert; the limit's advisory lock when a limit is set; the
-- advisory lock 'queen.register/<queue id>' shared, to the end of the transaction (keeps
-- completed retention off the queue meanwhile). No notifications.
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
    v_seed     bigint;
    r          record;
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
    -- A registration in flight keeps completed retention off the queue until it commits
    -- (queen.retention_segments_v2 try-locks the same key): until then the sweep does not
    -- see the subscription, and a partition this call has not seeded a cursor on yet (or
    -- one created meanwhile) would lose what queue mode consumed. Taken where both run,
    -- in the broker's session (the coordinator on the Citus layout, where a first
    -- contact's cursors take seconds under load: docs/scale-out.md, "Part eight").
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('queen.register/' || p_qid, 0));
    INSERT INTO queen.consumer_groups_metadata
        (consumer_group, queue_id, subscription_mode, subscription_timestamp, conflation)
    VALUES (p_group, p_qid, v_mode, v_ts, p_conflation)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    IF v_inserted = 1 THEN
        -- The consumer-group limit, before the first cursor (after the subscription's
        -- insert: on the layout a reference table is written before, not after, a read
        -- over every shard).
        PERFORM queen.tenant_group_admit_v1(p_qid, NULL, p_group);
        -- One cursor per statement, each on its partition's shard: Citus refuses the
        -- correlated subquery over the segments in one statement over all partitions,
        -- and a parallel multi-shard insert before the transaction's reference writes.
        FOR r IN
            SELECT p.id, p.last_offset FROM queen.log_partitions p WHERE p.queue_id = p_qid
            ORDER BY p.id
        LOOP
            v_seed := -1;
            IF v_ts IS NOT NULL THEN
                v_seed := NULL;
                SELECT s.base_offset - 1 INTO v_seed
                FROM queen.log_segments s
                WHERE s.partition_id = r.id AND s.created_at >= v_ts
                ORDER BY s.base_offset LIMIT 1;
                v_seed := coalesce(v_seed, r.last_offset);
            END IF;
            INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
            VALUES (r.id, p_group, v_seed)
            ON CONFLICT DO NOTHING;
        END LOOP;
        RETURN p_conflation;
    END IF;

    -- A concurrent first contact registered it between our read and our insert.
    SELECT m.conflation INTO v_stored
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_group AND m.queue_id = p_qid;
    RETURN coalesce(v_stored, false);
END;
$$;
