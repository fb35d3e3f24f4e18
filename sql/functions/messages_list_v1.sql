-- queen.messages_list_v1(p_tenant, p_queue, p_partition, p_namespace, p_task, p_status,
--                        p_from, p_to, p_limit, p_offset)
--   -> (partition_id, queue_name, partition_name, namespace, task, priority,
--       message_offset, created_at, status, bus_status, lease_expires_at, segment_base,
--       codec, producer, blob) rows
--
-- The messages endpoint's listing. A message is (partition, offset): offsets are dense per
-- partition and a segment row covers base_offset .. end_offset, so PostgreSQL lists
-- messages from segment rows with generate_series and never opens a blob; the broker reads
-- ids, payloads and transaction ids out of the blobs.
--
-- Messages come newest first (segment created_at DESC, partition id, offset DESC),
-- filtered by queue, partition, namespace and task (each ignored when NULL), segment
-- created_at in [p_from, p_to], and status (NULL: any), paged by p_limit/p_offset. Status
-- is relative to the queue-mode cursor: 'completed' at or below it, 'processing' inside a
-- live queue-mode lease (lease_expires_at then set), 'pending' otherwise. bus_status is
-- 'completed' when every other group's cursor has passed the message, 'pending' when one
-- has not, NULL when there is no other group. At most p_offset + p_limit segments are
-- expanded: segments are pre-filtered by status range, so each holds at least one
-- matching message. The blob (with codec and producer) comes only on the first row of
-- each segment, NULL on the others.
--
-- PL/pgSQL: the tenant's matching queues (a reference table on the Citus layout), their
-- partitions, then per partition its cursors and its newest matching segments by
-- partition id (single-shard statements there); the page is cut from those in memory, and
-- each answered segment's blob read by its key. Citus refused the former LANGUAGE sql
-- body (parameters, a join of reference and distributed tables with a correlated
-- subquery). Same rows on PostgreSQL; a listing costs three lookups per partition.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.messages_list_v1(
    p_tenant    text,
    p_queue     text,
    p_partition text,
    p_namespace text,
    p_task      text,
    p_status    text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer
) RETURNS TABLE (
    partition_id     bigint,
    queue_name       text,
    partition_name   text,
    namespace        text,
    task             text,
    priority         integer,
    message_offset   bigint,
    created_at       timestamptz,
    status           text,
    bus_status       text,
    lease_expires_at timestamptz,
    segment_base     bigint,
    codec            smallint,
    producer         text,
    blob             bytea
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := now();
    v_cap    integer := p_limit + p_offset;
    -- Per matching partition (index k).
    v_pids   bigint[] := '{}';
    v_pnames text[] := '{}';
    v_qnames text[] := '{}';
    v_ns     text[] := '{}';
    v_tasks  text[] := '{}';
    v_prios  integer[] := '{}';
    v_comm   bigint[] := '{}';
    v_lend   bigint[] := '{}';
    v_lexp   timestamptz[] := '{}';
    v_bus    bigint[] := '{}';
    -- Per candidate segment.
    v_sk     integer[] := '{}';
    v_spid   bigint[] := '{}';
    v_sbase  bigint[] := '{}';
    v_send   bigint[] := '{}';
    v_sat    timestamptz[] := '{}';
    v_seen   text[] := '{}';
    v_k      integer := 0;
    v_comm1  bigint;
    v_lend1  bigint;
    v_bus1   bigint;
    v_live   boolean;
    q        record;
    p        record;
    c        record;
    sg       record;
    m        record;
BEGIN
    FOR q IN
        SELECT qq.id, qq.name, qq.namespace, qq.task, qq.priority FROM queen.queues qq
        WHERE qq.tenant = p_tenant
          AND (p_queue IS NULL OR qq.name = p_queue)
          AND (p_namespace IS NULL OR qq.namespace = p_namespace)
          AND (p_task IS NULL OR qq.task = p_task)
    LOOP
        FOR p IN
            SELECT lp.id, lp.name FROM queen.log_partitions lp
            WHERE lp.queue_id = q.id AND (p_partition IS NULL OR lp.name = p_partition)
        LOOP
            SELECT lc.committed, lc.worker_id, lc.lease_expires_at, lc.batch_end INTO c
            FROM queen.log_consumers lc
            WHERE lc.partition_id = p.id AND lc.consumer_group = '__QUEUE_MODE__';
            v_live := c.worker_id IS NOT NULL AND c.lease_expires_at > v_now;
            v_comm1 := coalesce(c.committed, -1);
            v_lend1 := CASE WHEN v_live THEN c.batch_end END;
            v_k := v_k + 1;
            v_pids := v_pids || p.id;
            v_pnames := v_pnames || p.name;
            v_qnames := v_qnames || q.name;
            v_ns := v_ns || q.namespace;
            v_tasks := v_tasks || q.task;
            v_prios := v_prios || q.priority;
            v_comm := v_comm || v_comm1;
            v_lend := v_lend || v_lend1;
            v_lexp := v_lexp || CASE WHEN v_live THEN c.lease_expires_at END;
            SELECT min(b.committed) INTO v_bus1 FROM queen.log_consumers b
            WHERE b.partition_id = p.id AND b.consumer_group <> '__QUEUE_MODE__';
            v_bus := v_bus || v_bus1;
            FOR sg IN
                SELECT s.base_offset, s.end_offset, s.created_at FROM queen.log_segments s
                WHERE s.partition_id = p.id
                  AND (p_from IS NULL OR s.created_at >= p_from)
                  AND (p_to IS NULL OR s.created_at <= p_to)
                  AND (p_status IS NULL
                       OR (p_status = 'completed' AND s.base_offset <= v_comm1)
                       OR (p_status = 'processing' AND v_lend1 IS NOT NULL
                           AND s.end_offset > v_comm1 AND s.base_offset <= v_lend1)
                       OR (p_status = 'pending'
                           AND s.end_offset > coalesce(v_lend1, v_comm1)))
                ORDER BY s.created_at DESC, s.base_offset DESC
                LIMIT v_cap
            LOOP
                v_sk := v_sk || v_k;
                v_spid := v_spid || p.id;
                v_sbase := v_sbase || sg.base_offset;
                v_send := v_send || sg.end_offset;
                v_sat := v_sat || sg.created_at;
            END LOOP;
        END LOOP;
    END LOOP;

    FOR m IN
        WITH segs AS (
            SELECT x.* FROM unnest(v_sk, v_spid, v_sbase, v_send, v_sat)
                AS x (k, pid, base_offset, end_offset, created_at)
            ORDER BY x.created_at DESC, x.pid, x.base_offset DESC
            LIMIT v_cap
        ), msgs AS (
            SELECT sg.*, o.off,
                   CASE WHEN o.off <= v_comm[sg.k] THEN 'completed'
                        WHEN v_lend[sg.k] IS NOT NULL AND o.off <= v_lend[sg.k]
                        THEN 'processing'
                        ELSE 'pending' END AS st
            FROM segs sg
            CROSS JOIN LATERAL generate_series(sg.end_offset, sg.base_offset, -1) AS o (off)
        )
        SELECT mm.* FROM msgs mm
        WHERE p_status IS NULL OR mm.st = p_status
        ORDER BY mm.created_at DESC, mm.pid, mm.off DESC
        LIMIT p_limit OFFSET p_offset
    LOOP
        partition_id := m.pid;
        queue_name := v_qnames[m.k];
        partition_name := v_pnames[m.k];
        namespace := v_ns[m.k];
        task := v_tasks[m.k];
        priority := v_prios[m.k];
        message_offset := m.off;
        created_at := m.created_at;
        status := m.st;
        bus_status := CASE WHEN v_bus[m.k] IS NULL THEN NULL
                           WHEN m.off <= v_bus[m.k] THEN 'completed' ELSE 'pending' END;
        lease_expires_at := CASE WHEN m.st = 'processing' THEN v_lexp[m.k] END;
        segment_base := m.base_offset;
        codec := NULL;
        producer := NULL;
        blob := NULL;
        IF NOT (m.pid || ':' || m.base_offset) = ANY (v_seen) THEN
            v_seen := v_seen || (m.pid || ':' || m.base_offset);
            SELECT s.codec, s.producer, s.blob INTO codec, producer, blob
            FROM queen.log_segments s
            WHERE s.partition_id = m.pid AND s.base_offset = m.base_offset;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
