-- 002_log_push: append one segment to one partition (brokers before log_push_v2 in
-- 016; kept for rolling upgrades: it still writes the legacy dedup rows, and txn_hashes).
--
-- queen.log_push_v1(p_tenant, p_queue, p_partition, p_txn_ids, p_msg_ids, p_blob, p_codec,
--                   p_producer)
--   Creates the queue and partition rows when missing, locks the partition row (so pushes
--   to one partition are serialised and offsets stay dense), then checks the transaction
--   ids against queen.dedup.
--   * If any id is already stored: returns one row per stored duplicate
--     (duplicate = true, its transaction id, message id and offset) and writes NOTHING; the
--     caller rebuilds the segment without them and calls again in the same transaction
--     (the partition lock is still held, so the second answer is authoritative).
--   * Otherwise: inserts the dedup rows and the segment, bumps last_offset/last_write_at,
--     and returns one row (duplicate = false) with the partition id and the base offset.
--   p_txn_ids and p_msg_ids are in frame order and must be free of duplicates among
--   themselves (the broker dedups within a request first).
--   Locks: the partition row (FOR NO KEY UPDATE) until the caller's transaction ends.
--   Not FOR UPDATE: a group's first pop inserts log_consumers rows whose foreign key takes
--   FOR KEY SHARE on the same partition rows in its own order, and FOR UPDATE conflicts
--   with that, which deadlocked (40P01) pushes against first pops across partitions. Two
--   pushes still exclude each other, since FOR NO KEY UPDATE conflicts with itself.
--   Callers pushing several partitions in one transaction must call in a fixed order
--   (queue, partition) so two such transactions cannot deadlock.

CREATE OR REPLACE FUNCTION queen.log_push_v1(
    p_tenant    text,
    p_queue     text,
    p_partition text,
    p_txn_ids   text[],
    p_msg_ids   uuid[],
    p_blob      bytea,
    p_codec     smallint,
    p_producer  text
) RETURNS TABLE (
    partition_id   bigint,
    duplicate      boolean,
    transaction_id text,
    message_id     uuid,
    base_offset    bigint
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid        bigint;
    v_pid        bigint;
    v_last       bigint;
    v_count      integer := cardinality(p_txn_ids);
    v_created    timestamptz;
    v_prev_at    timestamptz;
    v_inserted   text[];
BEGIN
    IF v_count IS NULL OR v_count = 0 OR v_count <> cardinality(p_msg_ids) THEN
        RAISE EXCEPTION 'log_push_v1: transaction and message id arrays must be non-empty and equal'
            USING ERRCODE = '22023';
    END IF;

    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;

    SELECT p.id, p.last_offset INTO v_pid, v_last
    FROM queen.log_partitions p
    WHERE p.queue_id = v_qid AND p.name = p_partition
    FOR NO KEY UPDATE;
    IF v_pid IS NULL THEN
        INSERT INTO queen.log_partitions (queue_id, name) VALUES (v_qid, p_partition)
        ON CONFLICT (queue_id, name) DO NOTHING;
        SELECT p.id, p.last_offset INTO v_pid, v_last
        FROM queen.log_partitions p
        WHERE p.queue_id = v_qid AND p.name = p_partition
        FOR NO KEY UPDATE;
    END IF;

    -- Dedup: insert first and let the primary key find repeats (one index probe per
    -- message instead of a lookup and then an insert). The partition lock means nobody
    -- else inserts for this partition meanwhile. If any id was already stored, undo this
    -- call's rows and report the stored ones instead.
    WITH inserted AS (
        INSERT INTO queen.dedup (partition_id, transaction_id, message_offset, message_id)
        SELECT v_pid, t.txn, v_last + t.ord, t.mid
        FROM unnest(p_txn_ids, p_msg_ids) WITH ORDINALITY AS t (txn, mid, ord)
        ON CONFLICT (partition_id, transaction_id) DO NOTHING
        RETURNING transaction_id
    )
    SELECT array_agg(i.transaction_id) INTO v_inserted FROM inserted i;
    IF coalesce(cardinality(v_inserted), 0) < v_count THEN
        DELETE FROM queen.dedup d
        USING unnest(v_inserted) AS t (txn)
        WHERE d.partition_id = v_pid AND d.transaction_id = t.txn;
        -- One primary-key probe per id (a plain "= ANY" lets the planner read the whole
        -- partition's rows and filter them).
        RETURN QUERY
            SELECT v_pid, true, d.transaction_id, d.message_id, d.message_offset
            FROM unnest(p_txn_ids) AS t (txn)
            JOIN queen.dedup d ON d.partition_id = v_pid AND d.transaction_id = t.txn;
        RETURN;
    END IF;

    -- created_at must never go backwards within a partition (delayedProcessing and
    -- windowBuffer rely on it); the lock above orders pushes, the GREATEST guards the clock.
    SELECT s.created_at INTO v_prev_at
    FROM queen.log_segments s
    WHERE s.partition_id = v_pid
    ORDER BY s.base_offset DESC
    LIMIT 1;
    v_created := GREATEST(clock_timestamp(), v_prev_at);

    -- txn_hashes too, so brokers on log_push_v2 see these ids (rolling upgrades).
    INSERT INTO queen.log_segments
        (partition_id, base_offset, end_offset, msg_count, created_at, codec, producer, blob,
         txn_hashes)
    VALUES
        (v_pid, v_last + 1, v_last + v_count, v_count, v_created, p_codec, p_producer, p_blob,
         (SELECT array_agg(queen.txn_hash(t.txn) ORDER BY t.i)
          FROM unnest(p_txn_ids) WITH ORDINALITY AS t (txn, i)));

    UPDATE queen.log_partitions p
    SET last_offset = v_last + v_count,
        last_write_at = date_trunc('second', v_created)
    WHERE p.id = v_pid;

    RETURN QUERY SELECT v_pid, false, NULL::text, NULL::uuid, v_last + 1;
END;
$$;
