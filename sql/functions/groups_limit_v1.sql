-- queen.groups_limit_v1() RETURNS trigger, called by trigger groups_limit
--   (BEFORE INSERT ON queen.log_consumers, FOR EACH ROW)
--
-- Enforces QUEEN_TENANT_MAX_CONSUMER_GROUPS (the session setting queen.max_groups) when a
-- cursor row is inserted: a tenant may have at most that many distinct consumer groups
-- with a cursor on any of its queues. Queue mode (__QUEUE_MODE__) never counts and always
-- passes, and so does a group that already has a cursor on the same queue (checked before
-- any lock: a new partition's cursor is nothing new) or on another queue of the tenant.
--
-- Locks: the transaction-scoped advisory lock 'queen.limit.groups/<tenant>' before it
-- counts. Over the limit queen.tenant_limit_check_v1 raises SQLSTATE QLIMT; the insert
-- and the caller's transaction roll back. Why limits are triggers and how the lock keeps
-- counts exact: see queen.tenant_limit_v1. No notifications.
CREATE OR REPLACE FUNCTION queen.groups_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max    integer;
    v_qid    bigint;
    v_tenant text;
BEGIN
    IF NEW.consumer_group = '__QUEUE_MODE__' THEN
        RETURN NEW;
    END IF;
    v_max := queen.tenant_limit_v1('queen.max_groups');
    IF v_max IS NULL THEN
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
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.groups/' || v_tenant, 0));
    -- A group that reads another queue of the tenant is nothing new either; only a new
    -- one is counted against the tenant's groups.
    IF NOT EXISTS (SELECT 1 FROM queen.queues q
                   JOIN queen.log_partitions p ON p.queue_id = q.id
                   JOIN queen.log_consumers c
                     ON c.partition_id = p.id AND c.consumer_group = NEW.consumer_group
                   WHERE q.tenant = v_tenant) THEN
        PERFORM queen.tenant_limit_check_v1(v_max,
            (SELECT count(DISTINCT c.consumer_group)
             FROM queen.queues q
             JOIN queen.log_partitions p ON p.queue_id = q.id
             JOIN queen.log_consumers c ON c.partition_id = p.id
             WHERE q.tenant = v_tenant AND c.consumer_group <> '__QUEUE_MODE__'),
            'consumer groups (QUEEN_TENANT_MAX_CONSUMER_GROUPS)');
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER groups_limit BEFORE INSERT ON queen.log_consumers
    FOR EACH ROW EXECUTE FUNCTION queen.groups_limit_v1();
