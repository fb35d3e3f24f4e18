-- queen.retention_segments_v2(p_after, p_budget, p_default_secs, p_default_completed_secs,
--                               p_default_dedup_secs)
--   -> (tenant, queue, segments, bytes, dedup_rows, resume_after) rows
--
-- One bounded batch of segment retention, run by the sweeper under queen.sweeper_lease_v1,
-- over partitions with id > p_after in id order. A queue's retention is retention_seconds,
-- or p_default_secs when that is 0; likewise completed_retention_seconds and
-- p_default_completed_secs; 0 after that means forever. Its dedup window is
-- dedup_window_seconds, or p_default_dedup_secs when that is NULL
-- (QUEEN_DEDUP_WINDOW_SECS).
-- Deletes, per partition, the oldest segments that are older than the dedup window and
--   older than the retention, consumed or not, or
--   older than the completed retention AND wholly at or below every cursor of the
--   partition (queue mode and each consumer group; a group registered on the queue without
--   a cursor here has passed nothing, and a partition without cursors neither).
-- A segment inside the dedup window stays whatever the retention: its frames are what
-- proves a retried push a duplicate (a window's key is never proof alone), so deleting it
-- would store the retry again (tests/broker/retention_dedup.rs). Always a prefix of the
-- partition (created_at grows with base_offset), with the legacy queen.dedup rows of the
-- deleted offsets. At most p_budget segments per call, and at most 4 x p_budget partitions
-- visited.
--
-- Returns one row per partition it deleted from (tenant, queue, segments, bytes,
-- dedup_rows), then a last row with queue NULL whose resume_after is the p_after of the
-- next call (NULL: the pass is complete). Cursors are not touched: a consumer behind a
-- deleted prefix continues at the first remaining segment (the pop's forward scan), and a
-- partition left without segments is sealed by the pop.
--
-- Locks: the deleted segment and dedup rows. For completed retention, the partition row
-- FOR UPDATE SKIP LOCKED before the cursors are read, and the cursors and the groups
-- missing one are read in one statement. Inserting a cursor row takes KEY SHARE on its
-- partition, which FOR UPDATE excludes, so no group can start a cursor here, and lease
-- segments about to go, until the batch commits; without that lock, a group's first claim
-- could commit between the reads or run beside the sweep, and its acks then found the
-- leased messages deleted ("Message not found"). A partition it cannot lock at once is met
-- again on the next pass. Completed retention also leaves a partition alone while a
-- group registration on its queue is in flight (a try of the advisory lock
-- 'queen.register/<queue id>', held to the end of the batch once taken). No
-- notifications.
CREATE OR REPLACE FUNCTION queen.retention_segments_v2(
    p_after                  bigint,
    p_budget                 integer,
    p_default_secs           integer,
    p_default_completed_secs integer,
    p_default_dedup_secs     integer
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
    v_keep_cut timestamptz;
    v_min      bigint;
    v_cursors  bigint;
    v_missing  bigint;
    v_locked   bigint;
    v_upto     bigint;
    v_upto_end bigint;
BEGIN
    FOR p IN
        SELECT lp.id, q.id AS qid, q.tenant AS q_tenant, q.name AS q_name,
               CASE WHEN q.retention_seconds > 0 THEN q.retention_seconds
                    ELSE p_default_secs END AS r,
               CASE WHEN q.completed_retention_seconds > 0
                    THEN q.completed_retention_seconds
                    ELSE p_default_completed_secs END AS c,
               coalesce(q.dedup_window_seconds, p_default_dedup_secs) AS w
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
        v_keep_cut := CASE WHEN p.w > 0 THEN v_now - make_interval(secs => p.w) END;
        v_min := NULL;
        IF v_done_cut IS NOT NULL THEN
            -- FOR UPDATE conflicts with the KEY SHARE lock that inserting a cursor row
            -- takes on its partition: no group can start a cursor here (and lease what is
            -- about to go) until this batch commits. SKIP LOCKED: never wait; a partition
            -- busy with a push or a new cursor is met again on the next pass.
            v_locked := NULL;
            SELECT lp.id INTO v_locked FROM queen.log_partitions lp
            WHERE lp.id = p.id FOR UPDATE SKIP LOCKED;
            -- A group registration in flight on the queue (queen.log_register_group_at_v1
            -- holds this key shared to its commit): its subscription is not visible yet,
            -- so this pass leaves the partition's completed retention alone.
            IF v_locked IS NOT NULL AND NOT pg_try_advisory_xact_lock(
                   hashtextextended('queen.register/' || p.qid, 0)) THEN
                v_locked := NULL;
            END IF;
            IF v_locked IS NOT NULL THEN
                -- One statement, one snapshot: the cursors and the groups missing one.
                SELECT c.lo, c.n,
                       (SELECT count(*)
                        FROM queen.consumer_groups_metadata m
                        WHERE m.queue_id = p.qid
                          AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                                          WHERE lc.partition_id = p.id
                                            AND lc.consumer_group = m.consumer_group))
                INTO v_min, v_cursors, v_missing
                FROM (SELECT min(lc.committed) AS lo, count(*) AS n
                      FROM queen.log_consumers lc WHERE lc.partition_id = p.id) c;
                IF v_cursors = 0 OR v_missing > 0 THEN
                    v_min := NULL;
                END IF;
            END IF;
        END IF;
        CONTINUE WHEN v_time_cut IS NULL AND v_min IS NULL;

        v_upto := NULL;
        FOR s IN
            SELECT ls.base_offset, ls.end_offset, ls.created_at
            FROM queen.log_segments ls WHERE ls.partition_id = p.id
            ORDER BY ls.base_offset
        LOOP
            -- Inside the dedup window, and so is every later segment (created_at grows).
            EXIT WHEN v_keep_cut IS NOT NULL AND s.created_at >= v_keep_cut;
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
