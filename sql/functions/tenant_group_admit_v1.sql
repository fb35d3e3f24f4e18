-- queen.tenant_group_admit_v1(p_qid bigint, p_pid bigint, p_group text) -> void
--
-- The consumer-group limit (QUEEN_TENANT_MAX_CONSUMER_GROUPS, the session setting
-- queen.max_groups; queen.tenant_limit_v1 explains the limits): called before a cursor of
-- p_group may be created on queue p_qid, by the functions that create cursors, all of
-- which run where the broker's statement runs (on the Citus layout, the coordinator):
-- queen.log_register_group_at_v1 and queen.consumer_group_seek_v1 with p_pid NULL (they
-- create the group's cursors themselves), and the pop drivers queen.log_pop_specific_v2,
-- queen.log_pop_list_v2 and queen.log_pop_wildcard_bin_v2 (and their _v1 versions, kept
-- for the previous release's nodes) with the partition whose cursor queen.log_pop_v3
-- would create at first contact. Not a trigger on
-- queen.log_consumers, as it was: on the layout a cursor is inserted on its shard's
-- worker (inside the delegated queen.log_pop_v3 too), where the broker's session settings
-- are not set and an advisory lock excludes only that worker's sessions.
--
-- Returns at once, reading nothing, when the limit is unset or p_group is queue mode
-- (__QUEUE_MODE__, never counted). With p_pid given, also when the group's cursor on that
-- partition exists (one single-shard read). Otherwise the group is new to the tenant only
-- when it has no cursor on any of the tenant's queues; a new group is counted against the
-- limit, and over it queen.tenant_limit_check_v1 raises SQLSTATE QLIMT (the caller's
-- transaction rolls back, so no cursor is stored). The tenant's partitions are read from
-- the directory queen.log_partition_names (a reference table on the layout; on plain
-- PostgreSQL complete as well), the cursors over every shard.
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.groups/<tenant>' before it
-- looks whether the group is new and counts, in later statements, so concurrent first
-- contacts are counted one after the other and never overshoot: every caller takes it in
-- the broker's session (the coordinator on the layout), and it is held to the end of the
-- transaction, past the commit of the cursors on the workers. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_group_admit_v1(
    p_qid   bigint,
    p_pid   bigint,
    p_group text
) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_max    integer;
    v_tenant text;
    v_count  bigint;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN
        RETURN;
    END IF;
    v_max := queen.tenant_limit_v1('queen.max_groups');
    IF v_max IS NULL THEN
        RETURN;
    END IF;
    IF p_pid IS NOT NULL THEN
        PERFORM 1 FROM queen.log_consumers c
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    SELECT q.tenant INTO v_tenant FROM queen.queues q WHERE q.id = p_qid;
    IF v_tenant IS NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.groups/' || v_tenant, 0));
    PERFORM 1 FROM queen.log_consumers c
    JOIN queen.log_partition_names n ON n.id = c.partition_id
    JOIN queen.queues q ON q.id = n.queue_id
    WHERE q.tenant = v_tenant AND c.consumer_group = p_group
    LIMIT 1;
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT count(DISTINCT c.consumer_group) INTO v_count
    FROM queen.log_consumers c
    JOIN queen.log_partition_names n ON n.id = c.partition_id
    JOIN queen.queues q ON q.id = n.queue_id
    WHERE q.tenant = v_tenant AND c.consumer_group <> '__QUEUE_MODE__';
    PERFORM queen.tenant_limit_check_v1(v_max, v_count,
                                        'consumer groups (QUEEN_TENANT_MAX_CONSUMER_GROUPS)');
END;
$$;
