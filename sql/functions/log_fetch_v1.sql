-- queen.log_fetch_v1(p_tenant, p_queues, p_partitions, p_offsets, p_entry_bytes,
--                    p_call_bytes, p_call_segments)
--   -> (k, queue_known, partition_id, high_watermark, log_start, base_offset, msg_count,
--       created_at, codec, blob, stored_bytes) rows
--
-- The offset read of POST /api/v1/fetch: entry k (from 1) asks for partition
-- p_partitions[k] of the tenant's queue p_queues[k] from offset p_offsets[k]. Per entry,
-- in entry order: first one head row (base_offset NULL) with
--   queue_known    the tenant has the queue;
--   partition_id   the partition's id (NULL: no such partition);
--   high_watermark last_offset + 1, the offset the next push will take (0: none);
--   log_start      the first offset retention kept: the first stored segment's
--                  base_offset, else high_watermark (everything removed, or nothing
--                  written);
-- then, only when log_start <= p_offsets[k] < high_watermark, the segment holding
-- p_offsets[k] and the ones after it, by base_offset (segments are dense and never
-- overlap; retention only removes a prefix), so the broker can slice records contiguous
-- from the asked offset. The offsets are the pop's: a message's offset is its segment's
-- base_offset plus its index in the blob. An entry takes segments while its stored bytes
-- (octet_length of the blobs, stored_bytes) are below p_entry_bytes[k] and the call's are
-- below p_call_bytes, and at most p_call_segments segments in all; the first segment of the
-- call is taken whatever its size, so a call below some high watermark delivers something.
--
-- Read only, one snapshot (STABLE): no lease, cursor or statistics is written, so two
-- readers get the same answer and no consumer group sees a fetch. No locks. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.log_fetch_v1(
    p_tenant        text,
    p_queues        text[],
    p_partitions    text[],
    p_offsets       bigint[],
    p_entry_bytes   bigint[],
    p_call_bytes    bigint,
    p_call_segments integer
) RETURNS TABLE (
    k              integer,
    queue_known    boolean,
    partition_id   bigint,
    high_watermark bigint,
    log_start      bigint,
    base_offset    bigint,
    msg_count      integer,
    created_at     timestamptz,
    codec          smallint,
    blob           bytea,
    stored_bytes   bigint
) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
    v_k          integer;
    v_qid        bigint;
    v_pid        bigint;
    v_last       bigint;
    v_first      bigint;
    v_from       bigint;
    v_entry_used bigint;
    v_call_used  bigint := 0;
    v_segments   integer := 0;
    s            record;
BEGIN
    FOR v_k IN 1 .. coalesce(cardinality(p_queues), 0) LOOP
        v_pid := NULL;
        v_last := -1;
        v_first := NULL;
        SELECT q.id INTO v_qid FROM queen.queues q
        WHERE q.tenant = p_tenant AND q.name = p_queues[v_k];
        queue_known := FOUND;
        IF queue_known THEN
            SELECT p.id, p.last_offset INTO v_pid, v_last FROM queen.log_partitions p
            WHERE p.queue_id = v_qid AND p.name = p_partitions[v_k];
            IF v_pid IS NULL THEN
                v_last := -1;
            ELSE
                SELECT s2.base_offset INTO v_first FROM queen.log_segments s2
                WHERE s2.partition_id = v_pid ORDER BY s2.base_offset LIMIT 1;
            END IF;
        END IF;
        k := v_k;
        partition_id := v_pid;
        high_watermark := v_last + 1;
        log_start := coalesce(v_first, v_last + 1);
        base_offset := NULL; msg_count := NULL; created_at := NULL; codec := NULL;
        blob := NULL; stored_bytes := NULL;
        RETURN NEXT;

        CONTINUE WHEN v_pid IS NULL OR p_offsets[v_k] < log_start
                   OR p_offsets[v_k] >= high_watermark;
        SELECT s2.base_offset INTO v_from FROM queen.log_segments s2
        WHERE s2.partition_id = v_pid AND s2.base_offset <= p_offsets[v_k]
        ORDER BY s2.base_offset DESC LIMIT 1;
        v_entry_used := 0;
        FOR s IN
            SELECT s2.base_offset, s2.msg_count, s2.created_at, s2.codec, s2.blob,
                   octet_length(s2.blob)::bigint AS bytes
            FROM queen.log_segments s2
            WHERE s2.partition_id = v_pid AND s2.base_offset >= v_from
            ORDER BY s2.base_offset
        LOOP
            EXIT WHEN v_entry_used >= p_entry_bytes[v_k] OR v_call_used >= p_call_bytes
                   OR v_segments >= p_call_segments;
            base_offset := s.base_offset; msg_count := s.msg_count;
            created_at := s.created_at; codec := s.codec; blob := s.blob;
            stored_bytes := s.bytes;
            RETURN NEXT;
            v_entry_used := v_entry_used + s.bytes;
            v_call_used := v_call_used + s.bytes;
            v_segments := v_segments + 1;
        END LOOP;
    END LOOP;
END;
$$;
