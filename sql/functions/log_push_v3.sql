-- queen.log_push_v3(p_tenant, p_queue, p_partition, p_known_last, p_default_window,
--                   p_counts, p_codecs, p_blobs, p_keys_hi, p_keys_lo, p_producer)
--   -> queen.log_push_answer_row rows
--
-- Appends segments to one partition, with transaction-id dedup decided by the broker
-- against a window it keeps in memory. Creates the queue and partition rows when missing
-- and locks the partition row. The queue's dedup window is dedup_window_seconds, or
-- p_default_window when that is NULL; 0 turns dedup off.
--
-- p_known_last is the last offset whose transaction ids the broker already holds in its
-- window for this partition (NULL: none). The broker has checked the new ids against them.
-- When the partition's last_offset is the same (or the partition is empty, or dedup is
-- off), that check is complete and this call appends:
--   one segment per element of p_counts/p_codecs/p_blobs, at consecutive offsets, each
--   with its slice of p_keys_hi/p_keys_lo (every message's 48-bit key, see queen.txn_key,
--   in order), created_at never before the previous segment's (delayedProcessing and
--   windowBuffer rely on it); last_offset/last_write_at bumped; one row: stale = false,
--   the partition id, the last offset BEFORE the append, the window.
-- Otherwise (other writers appended since) it writes NOTHING and answers stale = true: a
-- first row with the partition id, its last offset and the window, then one row per
-- segment above p_known_last created within the window, newest first, with its base and
-- end offsets, its age in ms, and its ids as stored: key columns (seg_keys_hi,
-- seg_keys_lo), or hashes (seg_hashes) for a segment an earlier broker wrote, or, for a
-- segment with neither, its codec and blob, from which the broker reads the ids. The
-- broker adds them to its window, checks again and calls again in the same transaction:
-- the lock is still held, so the second answer is authoritative.
--
-- maxSize: when the queue's max_size is above 0, an append that would make the messages
-- the queue stores (over its partitions, from the first stored segment's offset to
-- last_offset, consumed or not, until retention deletes them) exceed max_size writes
-- NOTHING and answers one row: stale = NULL, the partition id, last_offset = the messages
-- stored now, window_seconds = max_size.
--
-- The stale answer and the append are queen.log_push_at_v1's, called here on the partition
-- this function found or created. Bad input (arrays of unequal length, a count below 1, not
-- one key per message) raises SQLSTATE 22023 there; the rows created here go with the
-- statement.
-- Locks: the partition row FOR NO KEY UPDATE, held to the caller's COMMIT, so pushes to
-- one partition are serialised and offsets stay dense. Not FOR UPDATE, which would conflict
-- with the KEY SHARE lock a group's first pop takes when it inserts cursor rows. Callers
-- appending to several partitions in one transaction lock them in a fixed order (queue,
-- partition), so two such transactions cannot deadlock. With maxSize, a
-- transaction-scoped advisory lock per queue, taken before the partition lock, serialises
-- the queue's pushes. A partition is created by queen.log_partition_ensure_v1 (its
-- directory row too). Creating rows fires the queues_limit and partitions_limit triggers
-- (queen.tenant_limit_guard_v1). No notifications.
CREATE OR REPLACE FUNCTION queen.log_push_v3(
    p_tenant         text,
    p_queue          text,
    p_partition      text,
    p_known_last     bigint,
    p_default_window integer,
    p_counts         integer[],
    p_codecs         smallint[],
    p_blobs          bytea[],
    p_keys_hi        integer[],
    p_keys_lo        smallint[],
    p_producer       text
) RETURNS SETOF queen.log_push_answer_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid    bigint;
    v_window integer;
    v_pid    bigint;
    v_last   bigint;
    v_total  integer;
    v_max    integer;
    v_size   bigint;
    v_full   queen.log_push_answer_row;
BEGIN
    SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
    INTO v_qid, v_window
    FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        -- The directory's lock before the queue's, as queen.log_partition_resolve_v1
        -- takes them (a row lock on no row; nothing on plain PostgreSQL).
        PERFORM 1 FROM queen.log_partition_names n WHERE n.id = 0 FOR UPDATE;
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id, coalesce(q.dedup_window_seconds, p_default_window)
        INTO v_qid, v_window
        FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    SELECT q.max_size INTO v_max FROM queen.queues q WHERE q.id = v_qid;
    IF v_max > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('queen.max_size/' || v_qid, 0));
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        PERFORM queen.log_partition_ensure_v1(v_qid, p_partition);
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    -- The stale answer and the append are queen.log_push_at_v1's, on the row locked above
    -- (locking it again there is free); the maxSize check sits between the two, so a full
    -- queue with a stale window still answers stale first.
    IF v_max > 0 AND NOT (v_window > 0 AND v_last >= 0
                          AND v_last IS DISTINCT FROM p_known_last) THEN
        SELECT coalesce(sum(p.last_offset + 1 - coalesce(
                   (SELECT s.base_offset FROM queen.log_segments s
                    WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1),
                   p.last_offset + 1)), 0)
        INTO v_size
        FROM queen.log_partitions p WHERE p.queue_id = v_qid;
        SELECT sum(c) INTO v_total FROM unnest(p_counts) AS c;
        IF v_size + v_total > v_max THEN
            v_full.partition_id := v_pid; v_full.last_offset := v_size;
            v_full.window_seconds := v_max;
            RETURN NEXT v_full;
            RETURN;
        END IF;
    END IF;

    RETURN QUERY SELECT * FROM queen.log_push_at_v1(
        v_pid, v_window, p_known_last, p_counts, p_codecs, p_blobs, p_keys_hi, p_keys_lo,
        p_producer);
END;
$$;
