-- queen.log_resolve_offsets_v1(p_pid, p_after, p_upto, p_hashes, p_txn_ids) -> bigint[]
--
-- The previous release's signature, kept for its nodes during a rolling upgrade (README
-- "Schema migrations"); this release calls queen.log_resolve_offsets_v2. Answers as v2 with
-- no offsets done already (p_done NULL): an id that occurs more than once in the lease's
-- span takes its first occurrence not taken by an earlier item of the same call.
--
-- Read only: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.log_resolve_offsets_v1(
    p_pid     bigint,
    p_after   bigint,
    p_upto    bigint,
    p_hashes  bigint[],
    p_txn_ids text[]
) RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT queen.log_resolve_offsets_v2(p_pid, p_after, p_upto, p_hashes, p_txn_ids, NULL);
$$;
