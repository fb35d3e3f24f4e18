-- 061_tenant_limits: what one tenant may create, checked where rows are created.
--
-- The limits are the broker's settings (QUEEN_TENANT_MAX_QUEUES,
-- QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE, QUEEN_TENANT_MAX_CONSUMER_GROUPS), handed to
-- PostgreSQL as the session settings queen.max_queues, queen.max_partitions and
-- queen.max_groups of every pooled connection (unset or 0: no limit). The checks are
-- BEFORE INSERT triggers, so every path that creates a queue, a partition or a consumer
-- group's cursor is covered (the push functions, configure, the pop's first contact, seek)
-- without touching those functions, and they cost nothing on the per-message paths: a row
-- is inserted once per queue, partition, or (partition, group).
--
-- Each check takes a transaction-scoped advisory lock (per tenant for queues and groups,
-- per queue for partitions) before it counts, so concurrent creations are counted one
-- after the other and never overshoot: the second waits for the first's commit, then its
-- count (a new statement, a new snapshot) sees the first's row. A row that exists already
-- (an INSERT ... ON CONFLICT DO NOTHING of a known name) always passes.
--
-- The partition limit counts a queue's named partitions: its `Default` partition (which
-- configure creates, and which a push naming no partition lands in) is always allowed.
--
-- Over a limit: an exception with SQLSTATE QLIMT and a message naming the setting; the
-- caller's transaction rolls back, so nothing is stored. The broker answers it 403.

CREATE OR REPLACE FUNCTION queen.tenant_limit_v1(p_name text)
RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT nullif(nullif(current_setting(p_name, true), ''), '0')::integer;
$$;

CREATE OR REPLACE FUNCTION queen.queues_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max   integer := queen.tenant_limit_v1('queen.max_queues');
    v_count bigint;
BEGIN
    IF v_max IS NULL THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.queues/' || NEW.tenant, 0));
    PERFORM 1 FROM queen.queues q WHERE q.tenant = NEW.tenant AND q.name = NEW.name;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(*) INTO v_count FROM queen.queues q WHERE q.tenant = NEW.tenant;
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % queues (QUEEN_TENANT_MAX_QUEUES)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION queen.partitions_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max   integer := queen.tenant_limit_v1('queen.max_partitions');
    v_count bigint;
BEGIN
    -- Every queue may have its Default partition besides the limit: configure creates it
    -- (configuring a queue whose named partitions are at the limit must still work).
    IF v_max IS NULL OR NEW.name = 'Default' THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('queen.limit.partitions/' || NEW.queue_id, 0));
    PERFORM 1 FROM queen.log_partitions p WHERE p.queue_id = NEW.queue_id AND p.name = NEW.name;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(*) INTO v_count FROM queen.log_partitions p
    WHERE p.queue_id = NEW.queue_id AND p.name <> 'Default';
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % partitions per queue (QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION queen.groups_limit_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_max    integer;
    v_qid    bigint;
    v_tenant text;
    v_count  bigint;
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
    PERFORM 1 FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    JOIN queen.log_consumers c
      ON c.partition_id = p.id AND c.consumer_group = NEW.consumer_group
    WHERE q.tenant = v_tenant;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    SELECT count(DISTINCT c.consumer_group) INTO v_count
    FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    JOIN queen.log_consumers c ON c.partition_id = p.id
    WHERE q.tenant = v_tenant AND c.consumer_group <> '__QUEUE_MODE__';
    IF v_count >= v_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % consumer groups (QUEEN_TENANT_MAX_CONSUMER_GROUPS)', v_max
            USING ERRCODE = 'QLIMT';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER queues_limit BEFORE INSERT ON queen.queues
    FOR EACH ROW EXECUTE FUNCTION queen.queues_limit_v1();
CREATE OR REPLACE TRIGGER partitions_limit BEFORE INSERT ON queen.log_partitions
    FOR EACH ROW EXECUTE FUNCTION queen.partitions_limit_v1();
CREATE OR REPLACE TRIGGER groups_limit BEFORE INSERT ON queen.log_consumers
    FOR EACH ROW EXECUTE FUNCTION queen.groups_limit_v1();
