-- queen.dead_letters_list_v2(p_tenant, p_queue, p_group, p_partition, p_from, p_to,
--                            p_limit, p_offset, p_max_bytes) -> SETOF queen.dead_letter_row
--
-- The DLQ listing, with a bound on what one page reads: the tenant's dead letters, newest
-- failure first, filtered by queue name, consumer group, partition name and failed_at in
-- [p_from, p_to] (each filter ignored when NULL), paged by p_limit/p_offset, and then cut
-- after the last row whose segment copy keeps the page's copies (blob bytes, counted in
-- page order) within p_max_bytes. The first row of a page is always answered, whatever its
-- size. So a page may hold fewer than p_limit rows while more match: the caller pages on
-- from p_offset + the rows it got. Every row carries `total`, the count of all matching
-- dead letters; a page past the end has no row to carry it, and the caller then asks
-- queen.dead_letters_count_v1.
--
-- Each row carries the copy of the segment that held the message (segment_base, codec,
-- producer, blob): the broker slices frame (message_offset - segment_base) out of it.
-- PostgreSQL never opens the blob: the sizes come from octet_length, which reads the
-- stored length, not the value. Only the answered rows' blobs are read.
--
-- PL/pgSQL: the tenant's matching partitions first (queues, a reference table on the
-- Citus layout, then the partitions), then the page of dead letters of those partitions
-- by partition id without their blobs, the count, and each answered row's segment copy by
-- its key (single-shard statements there). Citus refused the former LANGUAGE sql body
-- (parameters, a window over a join of distributed tables). Same rows on PostgreSQL.
--
-- Read only: no locks beyond each statement's snapshot. No notifications.
CREATE OR REPLACE FUNCTION queen.dead_letters_list_v2(
    p_tenant    text,
    p_queue     text,
    p_group     text,
    p_partition text,
    p_from      timestamptz,
    p_to        timestamptz,
    p_limit     integer,
    p_offset    integer,
    p_max_bytes bigint
) RETURNS SETOF queen.dead_letter_row LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_qids    bigint[];
    v_qnames  text[];
    v_pids    bigint[];
    v_qofp    bigint[];
    v_pnames  text[];
    v_total   bigint;
    v_running bigint := 0;
    v_first   boolean := true;
    d         record;
    r         queen.dead_letter_row;
BEGIN
    SELECT t.ids, t.names INTO v_qids, v_qnames
    FROM queen.tenant_queues_v1(p_tenant, p_queue) t;
    SELECT coalesce(array_agg(p.id), '{}'), coalesce(array_agg(p.queue_id), '{}'),
           coalesce(array_agg(p.name), '{}')
    INTO v_pids, v_qofp, v_pnames
    FROM queen.log_partitions p
    WHERE p.queue_id = ANY (v_qids) AND (p_partition IS NULL OR p.name = p_partition);
    SELECT count(*) INTO v_total
    FROM queen.dead_letters x
    WHERE x.partition_id = ANY (v_pids)
      AND (p_group IS NULL OR x.consumer_group = p_group)
      AND (p_from IS NULL OR x.failed_at >= p_from)
      AND (p_to IS NULL OR x.failed_at <= p_to);
    FOR d IN
        SELECT x.id, x.partition_id, x.consumer_group, x.message_offset, x.transaction_id,
               x.error_message, x.retry_count, x.failed_at, x.created_at,
               octet_length(x.blob) AS bytes
        FROM queen.dead_letters x
        WHERE x.partition_id = ANY (v_pids)
          AND (p_group IS NULL OR x.consumer_group = p_group)
          AND (p_from IS NULL OR x.failed_at >= p_from)
          AND (p_to IS NULL OR x.failed_at <= p_to)
        ORDER BY x.failed_at DESC, x.id DESC
        LIMIT p_limit OFFSET p_offset
    LOOP
        v_running := v_running + coalesce(d.bytes, 0);
        EXIT WHEN NOT v_first AND v_running > p_max_bytes;
        v_first := false;
        r.id := d.id;
        r.partition_id := d.partition_id;
        r.partition_name := v_pnames[array_position(v_pids, d.partition_id)];
        r.queue_name := v_qnames[array_position(
                            v_qids, v_qofp[array_position(v_pids, d.partition_id)])];
        r.consumer_group := d.consumer_group;
        r.message_offset := d.message_offset;
        r.transaction_id := d.transaction_id;
        r.error_message := d.error_message;
        r.retry_count := d.retry_count;
        r.failed_at := d.failed_at;
        r.created_at := d.created_at;
        SELECT x.segment_base, x.codec, x.producer, x.blob
        INTO r.segment_base, r.codec, r.producer, r.blob
        FROM queen.dead_letters x
        WHERE x.partition_id = d.partition_id AND x.id = d.id;
        r.total := v_total;
        RETURN NEXT r;
    END LOOP;
END;
$$;
