-- 008_log_ack: acknowledge messages of one (partition, consumer group), as brokers before
-- log_ack_v2 (017) call it.
--
-- queen.log_ack_v1(p_pid, p_group, p_lease, p_txn_ids, p_offsets, p_statuses, p_errors)
--   queen.log_ack_v2 with the transaction-id hashes computed here (queen.txn_hash), for
--   rolling upgrades: same items, statuses, locks and rows; see 017_log_ack_v2.

CREATE OR REPLACE FUNCTION queen.log_ack_v1(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[]
) RETURNS TABLE (
    idx            integer,
    success        boolean,
    error          text,
    lease_released boolean,
    dlq            boolean,
    queue_name     text,
    partition_name text,
    pending_after  bigint
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY
        SELECT * FROM queen.log_ack_v2(
            p_pid, p_group, p_lease, p_txn_ids,
            (SELECT array_agg(queen.txn_hash(t.txn) ORDER BY t.i)
             FROM unnest(p_txn_ids) WITH ORDINALITY AS t (txn, i)),
            p_offsets, p_statuses, p_errors);
END;
$$;
