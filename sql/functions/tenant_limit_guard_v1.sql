-- queen.tenant_limit_guard_v1() RETURNS trigger, called FOR EACH ROW by the triggers
--   queues_limit (BEFORE INSERT ON queen.queues), partitions_limit (BEFORE INSERT ON
--   queen.log_partition_names, the partitions' directory) and groups_limit (BEFORE INSERT
--   ON queen.log_consumers), each naming its session setting as the trigger's argument,
--   which also tells the function which table NEW belongs to (on Citus the trigger fires
--   on a shard or placement, whose table name carries a shard id)
--
-- Enforces the tenant limits (queen.tenant_limit_v1 explains them) when a row that may be
-- new is inserted; the setting unset, the row passes:
--   queues_limit      QUEEN_TENANT_MAX_QUEUES (queen.max_queues): a tenant's queues.
--   partitions_limit  QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE (queen.max_partitions): a
--                     queue's named partitions. Its `Default` partition never counts and
--                     always passes, since configuring a queue creates it (configuring a
--                     queue whose named partitions are at the limit must still work) and a
--                     push naming no partition lands in it.
--   groups_limit      QUEEN_TENANT_MAX_CONSUMER_GROUPS (queen.max_groups): the distinct
--                     consumer groups with a cursor on any of the tenant's queues. Queue
--                     mode (__QUEUE_MODE__) never counts and always passes, and so does a
--                     group with a cursor on the same queue already (checked before any
--                     lock: a new partition's cursor is nothing new).
-- partitions_limit sits on the directory (one row per partition, written once where the
-- partition is created, by queen.log_partition_ensure_v1 and the first-push statement),
-- not on queen.log_partitions: on the Citus layout the directory is a reference table,
-- written through the coordinator, whose copy fires the trigger in the writing session
-- (the one that has the limit settings) and holds every partition of the queue to count;
-- a shard of queen.log_partitions fires on its worker, which has neither.
-- Not yet on the Citus layout: groups_limit fires on the worker of the cursor's shard,
-- where the session settings are not set, so the consumer-group limit is not enforced
-- there (docs/scale-out.md).
-- A row that is not new passes uncounted: a queue or partition that exists (an INSERT ...
-- ON CONFLICT DO NOTHING of a known name), a group that reads another queue of the tenant.
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.queues/<tenant>',
-- 'queen.limit.partitions/<queue id>' or 'queen.limit.groups/<tenant>' before it looks
-- whether the row is new and counts, in a later statement, so it sees the rows the lock's
-- previous holder committed. Over the limit queen.tenant_limit_check_v1 raises SQLSTATE
-- QLIMT; the insert and the caller's transaction roll back. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_limit_guard_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max    integer;
    v_qid    bigint;
    v_tenant text;
    v_lock   text;
    v_new    boolean;
    v_count  bigint;
BEGIN
    -- NEW's fields are named only in the branch of NEW's table: an expression that names a
    -- field the row lacks fails even where it need not be evaluated.
    v_max := queen.tenant_limit_v1(TG_ARGV[0]);
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    CASE TG_ARGV[0]
    WHEN 'queen.max_queues' THEN
        v_lock := 'queues/' || NEW.tenant;
    WHEN 'queen.max_partitions' THEN
        IF NEW.name = 'Default' THEN
            RETURN NEW;
        END IF;
        v_lock := 'partitions/' || NEW.queue_id;
    ELSE
        IF NEW.consumer_group = '__QUEUE_MODE__' THEN
            RETURN NEW;
        END IF;
        SELECT p.queue_id, q.tenant INTO v_qid, v_tenant
        FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
        WHERE p.id = NEW.partition_id;
        -- The group already reads this queue: another partition's cursor, nothing new.
        PERFORM 1 FROM queen.log_partitions p
        JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = NEW.consumer_group
        WHERE p.queue_id = v_qid;
        IF FOUND THEN
            RETURN NEW;
        END IF;
        v_lock := 'groups/' || v_tenant;
    END CASE;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.' || v_lock, 0));
    CASE TG_ARGV[0]
    WHEN 'queen.max_queues' THEN
        v_new := NOT EXISTS (SELECT 1 FROM queen.queues q
                             WHERE q.tenant = NEW.tenant AND q.name = NEW.name);
        v_count := CASE WHEN v_new THEN
            (SELECT count(*) FROM queen.queues q WHERE q.tenant = NEW.tenant) END;
    WHEN 'queen.max_partitions' THEN
        v_new := NOT EXISTS (SELECT 1 FROM queen.log_partition_names n
                             WHERE n.queue_id = NEW.queue_id AND n.name = NEW.name);
        v_count := CASE WHEN v_new THEN
            (SELECT count(*) FROM queen.log_partition_names n
             WHERE n.queue_id = NEW.queue_id AND n.name <> 'Default') END;
    ELSE
        v_new := NOT EXISTS (SELECT 1 FROM queen.queues q
                             JOIN queen.log_partitions p ON p.queue_id = q.id
                             JOIN queen.log_consumers c
                               ON c.partition_id = p.id
                              AND c.consumer_group = NEW.consumer_group
                             WHERE q.tenant = v_tenant);
        v_count := CASE WHEN v_new THEN
            (SELECT count(DISTINCT c.consumer_group)
             FROM queen.queues q
             JOIN queen.log_partitions p ON p.queue_id = q.id
             JOIN queen.log_consumers c ON c.partition_id = p.id
             WHERE q.tenant = v_tenant AND c.consumer_group <> '__QUEUE_MODE__') END;
    END CASE;
    IF v_new THEN
        PERFORM queen.tenant_limit_check_v1(v_max, v_count, CASE TG_ARGV[0]
            WHEN 'queen.max_queues' THEN 'queues (QUEEN_TENANT_MAX_QUEUES)'
            WHEN 'queen.max_partitions'
            THEN 'partitions per queue (QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE)'
            ELSE 'consumer groups (QUEEN_TENANT_MAX_CONSUMER_GROUPS)' END);
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER queues_limit BEFORE INSERT ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.tenant_limit_guard_v1('queen.max_queues');
-- Moved to the directory (see above); a database of an earlier release has it here.
DROP TRIGGER IF EXISTS partitions_limit ON queen.log_partitions;
CREATE OR REPLACE TRIGGER partitions_limit BEFORE INSERT ON queen.log_partition_names
    FOR EACH ROW EXECUTE FUNCTION queen.tenant_limit_guard_v1('queen.max_partitions');
CREATE OR REPLACE TRIGGER groups_limit BEFORE INSERT ON queen.log_consumers
    FOR EACH ROW EXECUTE FUNCTION queen.tenant_limit_guard_v1('queen.max_groups');
