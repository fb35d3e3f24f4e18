-- 076_drop_pop_wrapper_and_dlq_list_v1: functions that neither this release nor the
-- previous one calls, from any other function or from the broker (README, "Schema
-- migrations": versions are kept for one release back).
--
-- dead_letters_list_v1 (the DLQ listing before its byte bound, a wrapper over
-- queen.dead_letters_list_v2): the release that called it from the broker is two back, as
-- for the functions 073_drop_release_old_functions.sql dropped, whose v2 came in the same
-- release (queen.dead_letters_count_v1 still read through it: its file now reads v2).
-- log_pop_v1 (the per-partition claim that read the queue's options itself, a wrapper over
-- queen.log_pop_v3): no broker ever called it, only the SQL pops
-- queen.log_pop_specific_v1 and queen.log_pop_wildcard_bin_v1, whose files now read the
-- options once through queen.log_pop_options_v1 and claim through queen.log_pop_v3. Their
-- new bodies are applied after this migration, in the same start-up; an old body that
-- still names log_pop_v1 runs only between the two, under the schema lock.
--
-- Also marks this release's edited function files: log_pop_list_v1, log_pop_specific_v1,
-- log_pop_wildcard_bin_v1, log_pop_v3, locks_apply_v1, dead_letters_count_v1 (which
-- counted through dead_letters_list_v1 and now counts through v2, unbounded) and the
-- headers of dead_letters_list_v2 and dead_letter_find_v1; for the Citus layout
-- (docs/scale-out.md) set_switch_v1, sweeper_lease_v1, log_ack_v2, log_dead_letter_span_v1,
-- log_pending_partitions_v1, lease_require_v2, retention_rows_v1 and
-- log_register_group_at_v1; and timers_next_due_v1 (PL/pgSQL, so its plan is kept).
-- Takes only the functions' catalog locks; no data; no notifications.

DROP FUNCTION IF EXISTS queen.dead_letters_list_v1(p_tenant text, p_queue text,
    p_group text, p_partition text, p_from timestamp with time zone,
    p_to timestamp with time zone, p_limit integer, p_offset integer);
DROP FUNCTION IF EXISTS queen.log_pop_v1(p_qid bigint, p_pid bigint, p_group text,
    p_worker text, p_budget integer, p_lease_seconds integer, p_auto_ack boolean,
    p_sub_mode text, p_sub_from timestamp with time zone, p_skip_window boolean);
