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
-- Read only: no locks. No notifications.
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
BEGIN
    -- PL/pgSQL: on the Citus layout a parameterized LANGUAGE sql body reading
    -- distributed tables is refused.
    RETURN QUERY
        WITH matching AS (
            SELECT d.id, d.partition_id, q.name AS queue_name, p.name AS partition_name,
                   d.consumer_group, d.message_offset, d.transaction_id, d.error_message,
                   d.retry_count, d.failed_at, d.created_at, octet_length(d.blob) AS bytes,
                   count(*) OVER () AS total
            FROM queen.dead_letters d
            JOIN queen.log_partitions p ON p.id = d.partition_id
            JOIN queen.queues q ON q.id = p.queue_id
            WHERE q.tenant = p_tenant
              AND (p_queue IS NULL OR q.name = p_queue)
              AND (p_group IS NULL OR d.consumer_group = p_group)
              AND (p_partition IS NULL OR p.name = p_partition)
              AND (p_from IS NULL OR d.failed_at >= p_from)
              AND (p_to IS NULL OR d.failed_at <= p_to)
            ORDER BY d.failed_at DESC, d.id DESC
            LIMIT p_limit OFFSET p_offset
        ), counted AS (
            SELECT m.*,
                   row_number() OVER w AS k,
                   sum(m.bytes) OVER w AS running
            FROM matching m
            WINDOW w AS (ORDER BY m.failed_at DESC, m.id DESC
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
        )
        SELECT c.id, c.partition_id, c.queue_name, c.partition_name, c.consumer_group,
               c.message_offset, c.transaction_id, c.error_message, c.retry_count,
               c.failed_at, c.created_at, d.segment_base, d.codec, d.producer, d.blob, c.total
        FROM counted c JOIN queen.dead_letters d ON d.id = c.id
        WHERE c.k = 1 OR c.running <= p_max_bytes
        ORDER BY c.failed_at DESC, c.id DESC;
END;
$$;
