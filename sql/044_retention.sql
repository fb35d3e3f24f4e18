-- 044_retention: the retention sweeper's lease and its bounded batches.
--
-- queen.sweeper_lease_v1(p_holder, p_lease_ms) -> boolean
--   Takes or renews the single cluster-wide sweeper lease (the row of queen.sweeper_lease)
--   when it is free, expired, or already p_holder's; true when p_holder holds it now. The
--   row stays locked to the caller's COMMIT, so a batch run in the same transaction can
--   never overlap another node's: the other node waits for the commit, then sees a live
--   lease that is not its own. A dead holder's lease expires and the next node takes it.
-- queen.sweeper_release_v1(p_holder): a stopping holder hands the lease over at once.
--
-- queen.retention_segments_v1(p_after, p_budget, p_default_secs, p_default_completed_secs)
--   One bounded batch of segment retention over partitions with id > p_after, in id order.
--   A queue's retention is retention_seconds, or p_default_secs when that is 0; likewise
--   completed_retention_seconds / p_default_completed_secs; 0 after that means forever.
--   Deletes, per partition, the oldest segments that are
--     older than the retention (consumed or not), or
--     older than the completed retention AND wholly at or below every cursor of the
--     partition (queue mode and each consumer group; a group registered on the queue
--     without a cursor here has passed nothing, and a partition without cursors neither);
--   always a prefix of the partition (created_at grows with base_offset), with the legacy
--   queen.dedup rows of the deleted offsets. At most p_budget segments per call, and at
--   most 4 x p_budget partitions visited. Returns one row per partition it deleted from
--   (tenant, queue, segments, bytes, dedup_rows), then a last row with queue NULL whose
--   resume_after is the p_after of the next call (NULL: the pass is complete).
--   Cursors are not touched: a consumer behind a deleted prefix continues at the first
--   remaining segment (the pop's forward scan), and a partition left without segments is
--   sealed by the pop. Row locks on the deleted segments only.
--
-- queen.retention_rows_v1(p_budget, p_dead_letter_secs, p_trace_secs)
--   Deletes at most p_budget dead letters failed longer than p_dead_letter_secs ago, and
--   at most p_budget traces recorded longer than p_trace_secs ago (their names cascade);
--   0 keeps them forever. Returns (dead_letters, traces) deleted.
--
-- queen.retention_idle_v1(p_budget, p_empty_partition_secs, p_idle_group_secs)
--   With p_empty_partition_secs > 0: deletes at most p_budget partitions without segments,
--   dead letters or traces, not written for that long and without a live lease (their
--   cursors cascade; a later push creates the partition again, from offset 0). Partitions
--   and cursor rows another transaction holds are skipped (SKIP LOCKED), never waited for.
--   With p_idle_group_secs > 0: forgets at most p_budget consumer groups (never queue
--   mode) of a queue whose cursors there were neither consumed nor leased for that long,
--   registered longer ago, and hold no live lease: their cursors and subscription row.
--   Returns (partitions, cursors) deleted. No notifications anywhere in this file.

CREATE TABLE IF NOT EXISTS queen.sweeper_lease (
    id         integer     PRIMARY KEY CHECK (id = 1),
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
-- Expiry of dead letters and traces walks these instead of the tables.
CREATE INDEX IF NOT EXISTS dead_letters_failed_at_idx ON queen.dead_letters (failed_at);
CREATE INDEX IF NOT EXISTS message_traces_created_at_idx ON queen.message_traces (created_at);

CREATE OR REPLACE FUNCTION queen.sweeper_lease_v1(p_holder text, p_lease_ms integer)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_holder text;
BEGIN
    INSERT INTO queen.sweeper_lease AS l (id, holder, expires_at)
    VALUES (1, p_holder, clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0))
    ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
        WHERE l.holder = EXCLUDED.holder OR l.expires_at < clock_timestamp()
    RETURNING l.holder INTO v_holder;
    RETURN v_holder IS NOT NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queen.sweeper_release_v1(p_holder text)
RETURNS void LANGUAGE sql VOLATILE AS $$
    UPDATE queen.sweeper_lease SET expires_at = '-infinity' WHERE holder = p_holder;
$$;

CREATE OR REPLACE FUNCTION queen.retention_segments_v1(
    p_after                  bigint,
    p_budget                 integer,
    p_default_secs           integer,
    p_default_completed_secs integer
) RETURNS TABLE (
    tenant       text,
    queue        text,
    segments     bigint,
    bytes        bigint,
    dedup_rows   bigint,
    resume_after bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := clock_timestamp();
    v_left     integer := greatest(p_budget, 1);
    v_visits   integer := 0;
    v_last     bigint := p_after;
    v_more     boolean := false;
    p          record;
    s          record;
    v_time_cut timestamptz;
    v_done_cut timestamptz;
    v_min      bigint;
    v_cursors  bigint;
    v_missing  bigint;
    v_upto     bigint;
    v_upto_end bigint;
BEGIN
    FOR p IN
        SELECT lp.id, q.id AS qid, q.tenant AS q_tenant, q.name AS q_name,
               CASE WHEN q.retention_seconds > 0 THEN q.retention_seconds
                    ELSE p_default_secs END AS r,
               CASE WHEN q.completed_retention_seconds > 0 THEN q.completed_retention_seconds
                    ELSE p_default_completed_secs END AS c
        FROM queen.log_partitions lp
        JOIN queen.queues q ON q.id = lp.queue_id
        WHERE lp.id > coalesce(p_after, -1)
          AND (q.retention_seconds > 0 OR q.completed_retention_seconds > 0
               OR p_default_secs > 0 OR p_default_completed_secs > 0)
        ORDER BY lp.id
    LOOP
        IF v_left <= 0 OR v_visits >= 4 * greatest(p_budget, 1) THEN
            v_more := true;
            EXIT;
        END IF;
        v_visits := v_visits + 1;
        v_last := p.id;
        v_time_cut := CASE WHEN p.r > 0 THEN v_now - make_interval(secs => p.r) END;
        v_done_cut := CASE WHEN p.c > 0 THEN v_now - make_interval(secs => p.c) END;
        v_min := NULL;
        IF v_done_cut IS NOT NULL THEN
            SELECT min(lc.committed), count(*) INTO v_min, v_cursors
            FROM queen.log_consumers lc WHERE lc.partition_id = p.id;
            SELECT count(*) INTO v_missing
            FROM queen.consumer_groups_metadata m
            WHERE m.queue_id = p.qid
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                              WHERE lc.partition_id = p.id
                                AND lc.consumer_group = m.consumer_group);
            IF v_cursors = 0 OR v_missing > 0 THEN
                v_min := NULL;
            END IF;
        END IF;
        CONTINUE WHEN v_time_cut IS NULL AND v_min IS NULL;

        v_upto := NULL;
        FOR s IN
            SELECT ls.base_offset, ls.end_offset, ls.created_at
            FROM queen.log_segments ls WHERE ls.partition_id = p.id
            ORDER BY ls.base_offset
        LOOP
            EXIT WHEN NOT ((v_time_cut IS NOT NULL AND s.created_at < v_time_cut)
                           OR (v_min IS NOT NULL AND s.end_offset <= v_min
                               AND s.created_at < v_done_cut));
            IF v_left <= 0 THEN
                -- More to delete here: the next call starts with this partition again.
                v_more := true;
                v_last := p.id - 1;
                EXIT;
            END IF;
            v_upto := s.base_offset;
            v_upto_end := s.end_offset;
            v_left := v_left - 1;
        END LOOP;

        IF v_upto IS NOT NULL THEN
            WITH d AS (
                DELETE FROM queen.log_segments ls
                WHERE ls.partition_id = p.id AND ls.base_offset <= v_upto
                RETURNING octet_length(ls.blob) AS n
            )
            SELECT count(*), coalesce(sum(d.n), 0) INTO segments, bytes FROM d;
            DELETE FROM queen.dedup dd
            WHERE dd.partition_id = p.id AND dd.message_offset <= v_upto_end;
            GET DIAGNOSTICS dedup_rows = ROW_COUNT;
            tenant := p.q_tenant;
            queue := p.q_name;
            resume_after := NULL;
            RETURN NEXT;
        END IF;
        EXIT WHEN v_more;
    END LOOP;

    tenant := NULL;
    queue := NULL;
    segments := 0;
    bytes := 0;
    dedup_rows := 0;
    resume_after := CASE WHEN v_more THEN v_last END;
    RETURN NEXT;
END;
$$;

CREATE OR REPLACE FUNCTION queen.retention_rows_v1(
    p_budget           integer,
    p_dead_letter_secs integer,
    p_trace_secs       integer
) RETURNS TABLE (dead_letters bigint, traces bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    dead_letters := 0;
    traces := 0;
    IF p_dead_letter_secs > 0 THEN
        DELETE FROM queen.dead_letters d WHERE d.id IN (
            SELECT x.id FROM queen.dead_letters x
            WHERE x.failed_at < clock_timestamp() - make_interval(secs => p_dead_letter_secs)
            ORDER BY x.failed_at LIMIT p_budget);
        GET DIAGNOSTICS dead_letters = ROW_COUNT;
    END IF;
    IF p_trace_secs > 0 THEN
        DELETE FROM queen.message_traces t WHERE t.id IN (
            SELECT x.id FROM queen.message_traces x
            WHERE x.created_at < clock_timestamp() - make_interval(secs => p_trace_secs)
            ORDER BY x.created_at LIMIT p_budget);
        GET DIAGNOSTICS traces = ROW_COUNT;
    END IF;
    RETURN NEXT;
END;
$$;

CREATE OR REPLACE FUNCTION queen.retention_idle_v1(
    p_budget               integer,
    p_empty_partition_secs integer,
    p_idle_group_secs      integer
) RETURNS TABLE (partitions bigint, cursors bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now  timestamptz := clock_timestamp();
    v_pids bigint[];
    v_n    bigint;
    g      record;
BEGIN
    partitions := 0;
    cursors := 0;
    IF p_empty_partition_secs > 0 THEN
        SELECT array_agg(x.id) INTO v_pids FROM (
            SELECT lp.id FROM queen.log_partitions lp
            WHERE lp.last_write_at < v_now - make_interval(secs => p_empty_partition_secs)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.dead_letters d WHERE d.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.message_traces t WHERE t.partition_id = lp.id)
              AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                              WHERE c.partition_id = lp.id AND c.lease_expires_at > v_now)
            ORDER BY lp.id LIMIT p_budget
            -- A push holding the row waits us out, or we skip it: never block traffic.
            FOR UPDATE SKIP LOCKED
        ) x;
        IF v_pids IS NOT NULL THEN
            -- Only partitions whose every cursor row we can lock now: the cascade below then
            -- waits for no pop (a pop holding one would otherwise deadlock with us).
            SELECT array_agg(x.id) INTO v_pids FROM unnest(v_pids) AS x (id)
            WHERE (SELECT count(*) FROM queen.log_consumers c WHERE c.partition_id = x.id)
                = (SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers c
                                         WHERE c.partition_id = x.id
                                         FOR UPDATE SKIP LOCKED) l);
        END IF;
        IF v_pids IS NOT NULL THEN
            DELETE FROM queen.dedup d WHERE d.partition_id = ANY (v_pids);
            -- Re-checked under the row lock: a push may have landed since the scan.
            DELETE FROM queen.log_partitions lp
            WHERE lp.id = ANY (v_pids)
              AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = lp.id);
            GET DIAGNOSTICS partitions = ROW_COUNT;
        END IF;
    END IF;
    IF p_idle_group_secs > 0 THEN
        FOR g IN
            SELECT m.consumer_group, m.queue_id FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group <> '__QUEUE_MODE__'
              AND m.created_at < v_now - make_interval(secs => p_idle_group_secs)
              AND NOT EXISTS (
                  SELECT 1 FROM queen.log_consumers c
                  JOIN queen.log_partitions lp ON lp.id = c.partition_id
                  WHERE lp.queue_id = m.queue_id AND c.consumer_group = m.consumer_group
                    AND (c.lease_expires_at > v_now
                         OR c.last_consumed_at >= v_now - make_interval(secs => p_idle_group_secs)
                         OR c.lease_acquired_at >= v_now - make_interval(secs => p_idle_group_secs)))
            LIMIT p_budget
        LOOP
            DELETE FROM queen.log_consumers c USING queen.log_partitions lp
            WHERE lp.id = c.partition_id AND lp.queue_id = g.queue_id
              AND c.consumer_group = g.consumer_group;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            cursors := cursors + v_n;
            DELETE FROM queen.consumer_groups_metadata m
            WHERE m.consumer_group = g.consumer_group AND m.queue_id = g.queue_id;
        END LOOP;
    END IF;
    RETURN NEXT;
END;
$$;
