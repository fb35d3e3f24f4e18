-- queen.log_pop_wildcard_bin_v2(p_pop, p_queue) -> SETOF queen.log_pop_wire_row
--
-- Pops across a queue's partitions for the pop p_pop (queen.log_pop_args), choosing them
-- in SQL (the candidate scan); the broker's hot list (queen.log_pop_list_v2) is the other
-- way. In order:
--   1. Creates the queue row when missing: a group may subscribe before the first push.
--   2. A group's first contact with the queue (no subscription row yet) registers it
--      through queen.log_register_group_at_v1, which seeds every partition's cursor in one
--      statement (one elected seeder when several pops arrive together, no per-partition
--      lazy-insert convoy).
--   3. Candidates: partitions written since the group's empty-scan watermark minus two
--      minutes, not caught up, not under a live lease, in random order, capped at 512 when
--      the pop's partitions >= 128, else at clamp(partitions * 4, 64, 512).
--   4. Claims through queen.log_pop_v3 with a global budget of the pop's batch over at most
--      its partitions, all leased to its worker (for its lease_seconds, else the queue's
--      lease_time, else 60 s), with the queue's options and the group's conflation flag
--      read once (queen.log_pop_options_v1; at first contact the flag is the one the
--      registration stored).
--   5. After an empty scan, at most every 30 s: re-checks for pending data ignoring leases
--      and advances the watermark to now only when the queue is really empty. The check
--      takes the subscription row with SKIP LOCKED: a pop that cannot lock it leaves the
--      check to the one that can.
--
-- A cursor the claims create (first contact) is checked against the tenant's
-- consumer-group limit first (queen.tenant_group_admit_v1; over it SQLSTATE QLIMT).
-- Rows: queue_name, partition_name and the columns of queen.log_pop_row, per claimed
-- segment slice. Locks: as queen.log_pop_v3 per claim, plus the subscription row during a
-- watermark check; when it creates the queue, the lock order of Citus's reference-table
-- shard locks (subscriptions, then queues) is taken first. Never waits on another pop's transaction except a concurrent seeder's
-- first-contact insert (one short wait, no chain). No notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_wildcard_bin_v2(
    p_pop   queen.log_pop_args,
    p_queue text
) RETURNS SETOF queen.log_pop_wire_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_watermark  timestamptz;
    v_checked_at timestamptz;
    v_cap        integer;
    v_budget     integer := p_pop.batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_q          record;
    v_qid        bigint;
    v_lease      integer;
    v_cand       record;
    v_rows       queen.log_pop_row[];
BEGIN
    IF p_pop.batch IS NULL OR p_pop.batch <= 0
       OR p_pop.partitions IS NULL OR p_pop.partitions <= 0 THEN
        RETURN;
    END IF;

    SELECT * INTO v_q
    FROM queen.log_pop_options_v1(p_pop.tenant, p_queue, p_pop.consumer_group);
    IF v_q.queue_id IS NULL THEN
        -- The subscriptions' lock before the queue's: a row lock on no row (locks nothing
        -- on plain PostgreSQL). On the Citus layout it takes Citus's locks on the
        -- reference-table shards of the subscriptions, then of the queues, the order every
        -- write of a subscription takes them in (its foreign key to queen.queues); creating
        -- the queue first and registering the group after took them the other way round,
        -- and racing first pops deadlocked (docs/scale-out.md, "Part eight").
        PERFORM 1 FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_pop.consumer_group AND m.queue_id = 0
        FOR UPDATE;
        INSERT INTO queen.queues (tenant, name) VALUES (p_pop.tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT * INTO v_q
        FROM queen.log_pop_options_v1(p_pop.tenant, p_queue, p_pop.consumer_group);
    END IF;
    v_qid := v_q.queue_id;
    v_lease := coalesce(p_pop.lease_seconds, v_q.lease_time, 60);

    SELECT m.watermark, m.watermark_checked_at INTO v_watermark, v_checked_at
    FROM queen.consumer_groups_metadata m
    WHERE m.consumer_group = p_pop.consumer_group AND m.queue_id = v_qid;

    IF v_watermark IS NULL THEN
        -- First contact of this (queue, group): register the durable subscription and seed
        -- every partition's cursor (queen.log_register_group_at_v1; one elected
        -- seeder when several pops arrive together).
        v_q.conflate := queen.log_register_group_at_v1(v_qid, p_pop.consumer_group, p_pop.sub_mode,
                                                        p_pop.sub_from, false);
        v_watermark := '-infinity';
        v_checked_at := '-infinity';
    END IF;

    v_cap := CASE WHEN p_pop.partitions >= 128 THEN 512
                  ELSE least(greatest(p_pop.partitions * 4, 64), 512) END;

    FOR v_cand IN
        SELECT p.id, p.name, c.partition_id IS NULL AS fresh
        FROM queen.log_partitions p
        LEFT JOIN queen.log_consumers c
          ON c.partition_id = p.id AND c.consumer_group = p_pop.consumer_group
        WHERE p.queue_id = v_qid
          AND p.last_write_at >= v_watermark - interval '2 minutes'
          AND (c.partition_id IS NULL OR p.last_offset > c.committed)
          AND (c.worker_id IS NULL OR c.lease_expires_at IS NULL OR c.lease_expires_at < v_now)
        ORDER BY random()
        LIMIT v_cap
    LOOP
        IF v_cand.fresh THEN
            -- The claim creates the group's cursor here: the group limit first.
            PERFORM queen.tenant_group_admit_v1(v_qid, v_cand.id, p_pop.consumer_group);
        END IF;
        SELECT array_agg(r) INTO v_rows
        FROM queen.log_pop_v3(v_qid, v_cand.id, p_pop.consumer_group, p_pop.worker,
                              v_budget, v_lease, p_pop.auto_ack, p_pop.sub_mode,
                              p_pop.sub_from, false, v_q.delay_secs, v_q.window_secs,
                              v_q.conflate, v_q.ttl_secs, v_q.max_wait_secs,
                              v_q.retry_limit, v_q.dead_letters, v_q.retry_dead_letters) r;
        v_got := coalesce((SELECT sum(r.take) FROM unnest(v_rows) r), 0);
        RETURN QUERY SELECT p_queue, v_cand.name, r.* FROM unnest(v_rows) r;
        IF v_got > 0 THEN
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
        END IF;
        EXIT WHEN v_claimed >= p_pop.partitions OR v_budget <= 0;
    END LOOP;

    IF v_claimed = 0 AND v_checked_at < v_now - interval '30 seconds' THEN
        -- The empty-scan watermark, throttled and non-blocking: a pop that cannot take
        -- the metadata row right now leaves the check to the one that can.
        PERFORM 1 FROM queen.consumer_groups_metadata m
        WHERE m.consumer_group = p_pop.consumer_group AND m.queue_id = v_qid
          AND m.watermark_checked_at < v_now - interval '30 seconds'
        FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            UPDATE queen.consumer_groups_metadata m SET
                watermark_checked_at = v_now,
                watermark = CASE
                    WHEN EXISTS (
                        SELECT 1
                        FROM queen.log_partitions p
                        LEFT JOIN queen.log_consumers c
                          ON c.partition_id = p.id AND c.consumer_group = p_pop.consumer_group
                        WHERE p.queue_id = v_qid
                          AND p.last_offset > coalesce(c.committed, -1))
                    THEN m.watermark
                    ELSE v_now END
            WHERE m.consumer_group = p_pop.consumer_group AND m.queue_id = v_qid;
        END IF;
    END IF;
END;
$$;
