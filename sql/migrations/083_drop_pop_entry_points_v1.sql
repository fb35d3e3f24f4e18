-- 083_drop_pop_entry_points_v1: functions that neither this release nor the previous one
-- calls (README, "Schema migrations": versions are kept for one release back).
--
-- The previous release (migration 080) moved the broker to the pop entry points' _v2,
-- which take what a pop asks as one queen.log_pop_args row, and stopped calling three
-- wrappers. Dropped here:
-- - queen.log_pop_wildcard_bin_v1, queen.log_pop_specific_v1, queen.log_pop_list_v1 and
--   queen.log_pop_discover_wire_v1 (their _v2 are the live entry points);
-- - queen.resources_namespaces_v1 and queen.resources_tasks_v1 (the broker calls
--   queen.resources_grouped_v1, their one body);
-- - queen.log_register_group_v1 (the broker calls queen.log_register_group_at_v1 on
--   queen.queue_ensure_v1).
-- Also marks this release's edited function files (headers that named the dropped
-- functions now name the live ones).
-- Takes only the functions' catalog locks; no data; no notifications.

DROP FUNCTION IF EXISTS queen.log_pop_discover_wire_v1(p_tenant text, p_namespace text,
    p_task text, p_group text, p_worker text, p_batch integer, p_partitions integer,
    p_lease_seconds integer, p_auto_ack boolean, p_sub_mode text,
    p_sub_from timestamp with time zone);
DROP FUNCTION IF EXISTS queen.log_pop_wildcard_bin_v1(p_tenant text, p_queue text,
    p_group text, p_worker text, p_batch integer, p_partitions integer,
    p_lease_seconds integer, p_auto_ack boolean, p_sub_mode text,
    p_sub_from timestamp with time zone);
DROP FUNCTION IF EXISTS queen.log_pop_specific_v1(p_tenant text, p_queue text,
    p_partition text, p_group text, p_worker text, p_batch integer,
    p_lease_seconds integer, p_auto_ack boolean, p_sub_mode text,
    p_sub_from timestamp with time zone);
DROP FUNCTION IF EXISTS queen.log_pop_list_v1(p_tenant text, p_queue text, p_group text,
    p_worker text, p_batch integer, p_partitions integer, p_lease_seconds integer,
    p_auto_ack boolean, p_sub_mode text, p_sub_from timestamp with time zone,
    p_candidates bigint[], p_skip_window boolean);
DROP FUNCTION IF EXISTS queen.resources_namespaces_v1(p_tenant text);
DROP FUNCTION IF EXISTS queen.resources_tasks_v1(p_tenant text);
DROP FUNCTION IF EXISTS queen.log_register_group_v1(p_tenant text, p_queue text,
    p_group text, p_sub_mode text, p_sub_from timestamp with time zone,
    p_conflation boolean);
