-- 073_drop_release_old_functions: functions that neither this release nor the previous one
-- calls, from any other function or from the broker (README, "Schema migrations": versions
-- are kept for one release back).
--
-- log_resolve_offsets_v1 (the ack's id resolver before p_done, a wrapper over
-- queen.log_resolve_offsets_v2) and retention_segments_v1 (the sweep before the broker-wide
-- dedup window, a wrapper over queen.retention_segments_v2). The release that called them
-- is two back, which no rolling upgrade runs beside this one.
--
-- Also marks this release's edited function file sql/functions/sweeper_lease_v1.sql (its
-- header names the live sweep). Takes only the functions' catalog locks; no data; no
-- notifications.

DROP FUNCTION IF EXISTS queen.log_resolve_offsets_v1(p_pid bigint, p_after bigint,
    p_upto bigint, p_hashes bigint[], p_txn_ids text[]);
DROP FUNCTION IF EXISTS queen.retention_segments_v1(p_after bigint, p_budget integer,
    p_default_secs integer, p_default_completed_secs integer);
