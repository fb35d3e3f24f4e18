-- 077_one_tenant_limit_guard: the three tenant-limit trigger functions become one.
--
-- queen.queues_limit_v1, queen.partitions_limit_v1 and queen.groups_limit_v1 took the same
-- lock, asked the same "is the row new" and gave the same verdict, each for its table;
-- sql/functions/tenant_limit_guard_v1.sql is now the one trigger function of the triggers
-- queues_limit, partitions_limit and groups_limit, and creates them again, pointing at it.
-- No broker calls a trigger function, so no release needs the old ones. Their triggers go
-- with them here (a function a trigger uses cannot be dropped); the function files,
-- applied after the migrations in the same start-up under the schema lock, put them back.
-- Between the two, inserts of other nodes are not checked against the tenant limits.
--
-- Also marks this release's edited function files: tenant_limit_check_v1,
-- tenant_limit_v1 and configure_queue_v1 (their headers name the new trigger function).
-- Takes the three tables' trigger locks and the functions' catalog locks; no data; no
-- notifications.

DROP TRIGGER IF EXISTS queues_limit ON queen.queues;
DROP TRIGGER IF EXISTS partitions_limit ON queen.log_partitions;
DROP TRIGGER IF EXISTS groups_limit ON queen.log_consumers;
DROP FUNCTION IF EXISTS queen.queues_limit_v1();
DROP FUNCTION IF EXISTS queen.partitions_limit_v1();
DROP FUNCTION IF EXISTS queen.groups_limit_v1();
