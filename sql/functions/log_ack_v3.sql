-- queen.log_ack_v3(p_pid, p_group, p_lease, p_txn_ids, p_hashes, p_offsets, p_statuses,
--                  p_errors, p_tenant, p_relaxed)
--   -> queen.log_ack_answer_row, one row per item
--
-- queen.log_ack_v2 with the two things its caller did around it in the same statement
-- brought inside, so the broker's call is a bare `SELECT .. FROM queen.log_ack_v3(..)`,
-- which Citus delegates whole to the worker holding p_pid's shard (one round trip; a
-- statement with a WHERE or a join beside the call is run by the coordinator, each of the
-- function's statements then a round trip to the worker: docs/scale-out.md). The broker
-- calls it on the Citus layout; on plain PostgreSQL it keeps its one-statement acks and
-- log_ack_v2.
--
-- p_tenant: the caller's tenant. A partition of another tenant (or none) is not touched
-- and no row comes back (the broker answers every item "Message not found"). Read as the
-- partition's row (its shard) and then its queue's (a reference table) in two statements,
-- which a delegated function may run on the worker (it may not join them).
-- p_relaxed: true sets synchronous_commit off for the caller's transaction (an
-- autocommit ack whose loss in a crash only makes its messages come again); false leaves
-- it as it is (acks in a bundle, or QUEEN_ACK_SYNC_COMMIT on). Delegated, that is the
-- worker's transaction, whose commit is the one that matters.
--
-- Items, statuses, rows and locks: as queen.log_ack_v2, which it calls (the cursor row,
-- FOR UPDATE, to the end of the caller's transaction). No notifications.
CREATE OR REPLACE FUNCTION queen.log_ack_v3(
    p_pid      bigint,
    p_group    text,
    p_lease    text,
    p_txn_ids  text[],
    p_hashes   bigint[],
    p_offsets  bigint[],
    p_statuses text[],
    p_errors   text[],
    p_tenant   text,
    p_relaxed  boolean
) RETURNS SETOF queen.log_ack_answer_row LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_qid bigint;
BEGIN
    SELECT p.queue_id INTO v_qid FROM queen.log_partitions p WHERE p.id = p_pid;
    IF v_qid IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1 FROM queen.queues q WHERE q.id = v_qid AND q.tenant = p_tenant;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_relaxed THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    RETURN QUERY
        SELECT a.idx, a.success, a.error, a.lease_released, a.dlq, a.queue_name,
               a.partition_name, a.pending_after
        FROM queen.log_ack_v2(p_pid, p_group, p_lease, p_txn_ids, p_hashes, p_offsets,
                              p_statuses, p_errors) a;
END;
$$;
