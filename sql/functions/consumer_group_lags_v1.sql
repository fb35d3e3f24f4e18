-- queen.consumer_group_lags_v1(p_tenant, p_group) -> one row per (group, queue, partition)
--
-- The consumer groups' positions, from which the admin endpoints build their documents
-- (queen.consumer_groups_v1, queen.consumer_groups_lagging_v1 and
-- queen.consumer_group_detail_v1). Covers every group of the tenant, or one when p_group
-- is not NULL. A group is known from its durable subscription
-- (queen.consumer_groups_metadata) or from any cursor row (queen.log_consumers). A
-- partition without a cursor row for a known group counts from offset -1, because that is
-- where the group's first pop there starts: partitions created after the group's first
-- contact deliver their whole backlog.
--
-- Columns besides the names and ids:
--   committed         the cursor (the last offset the group is done with; -1: nothing);
--   last_offset       the partition's last appended offset;
--   offset_lag        last_offset - committed (messages not yet done), never negative;
--   oldest_unconsumed created_at of the segment holding committed + 1 (NULL: no lag);
--   time_lag_seconds  now - oldest_unconsumed, 0 without lag;
--   worker_id         the lease id on the row, live or not;
--   lease_active      a worker holds a lease that has not expired;
--   last_consumed_at, total_consumed  from the cursor row (0 without one).
--
-- PL/pgSQL, one statement per partition: the groups are read from the subscriptions and
-- from the cursors (a join of the cursors and the partitions on the partition id), the
-- partitions of each (group, queue) from queen.log_partitions, then the cursor row and
-- the segment of the oldest unconsumed message by partition id. On the Citus layout each
-- of these is a statement Citus plans (a single-shard one for a partition's rows); the
-- former single LANGUAGE sql statement, a join of reference tables with distributed ones
-- and a correlated LIMIT over the segments, was refused there. On PostgreSQL the answer
-- is the same; an admin listing costs one cursor and one segment lookup per partition.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.consumer_group_lags_v1(p_tenant text, p_group text)
RETURNS TABLE (
    consumer_group    text,
    queue_id          bigint,
    queue_name        text,
    partition_id      bigint,
    partition_name    text,
    committed         bigint,
    last_offset       bigint,
    offset_lag        bigint,
    oldest_unconsumed timestamptz,
    time_lag_seconds  double precision,
    worker_id         text,
    lease_active      boolean,
    last_consumed_at  timestamptz,
    total_consumed    bigint
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := now();
    v_qids   bigint[];
    v_groups text[];
    v_queues bigint[];
    v_more_g text[];
    v_more_q bigint[];
    g        record;
    p        record;
    c        record;
BEGIN
    SELECT coalesce(array_agg(q.id), '{}') INTO v_qids
    FROM queen.queues q WHERE q.tenant = p_tenant;

    SELECT coalesce(array_agg(m.consumer_group), '{}'),
           coalesce(array_agg(m.queue_id), '{}')
    INTO v_groups, v_queues
    FROM queen.consumer_groups_metadata m
    WHERE m.queue_id = ANY (v_qids) AND (p_group IS NULL OR m.consumer_group = p_group);

    SELECT coalesce(array_agg(x.consumer_group), '{}'),
           coalesce(array_agg(x.queue_id), '{}')
    INTO v_more_g, v_more_q
    FROM (SELECT DISTINCT c.consumer_group, p.queue_id
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
          WHERE p.queue_id = ANY (v_qids)
            AND (p_group IS NULL OR c.consumer_group = p_group)) x;

    FOR g IN
        SELECT DISTINCT u.grp, u.qid
        FROM unnest(v_groups || v_more_g, v_queues || v_more_q) AS u (grp, qid)
    LOOP
        consumer_group := g.grp;
        queue_id := g.qid;
        SELECT q.name INTO queue_name FROM queen.queues q WHERE q.id = g.qid;
        FOR p IN
            SELECT lp.id, lp.name, lp.last_offset FROM queen.log_partitions lp
            WHERE lp.queue_id = g.qid
        LOOP
            SELECT lc.committed, lc.worker_id, lc.lease_expires_at, lc.last_consumed_at,
                   lc.total_consumed
            INTO c
            FROM queen.log_consumers lc
            WHERE lc.partition_id = p.id AND lc.consumer_group = g.grp;
            partition_id := p.id;
            partition_name := p.name;
            committed := coalesce(c.committed, -1);
            last_offset := p.last_offset;
            offset_lag := greatest(p.last_offset - committed, 0);
            oldest_unconsumed := NULL;
            IF p.last_offset > committed THEN
                SELECT s.created_at INTO oldest_unconsumed
                FROM queen.log_segments s
                WHERE s.partition_id = p.id AND s.base_offset <= committed + 1
                ORDER BY s.base_offset DESC
                LIMIT 1;
            END IF;
            time_lag_seconds := CASE WHEN oldest_unconsumed IS NULL THEN 0
                ELSE greatest(extract(epoch FROM v_now - oldest_unconsumed),
                              0)::double precision END;
            worker_id := c.worker_id;
            lease_active := coalesce(c.worker_id IS NOT NULL AND c.lease_expires_at > v_now,
                                     false);
            last_consumed_at := c.last_consumed_at;
            total_consumed := coalesce(c.total_consumed, 0);
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;
