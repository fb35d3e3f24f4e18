-- queen.log_pop_list_v2(p_pop, p_queue, p_candidates, p_skip_window)
--   -> queen.log_pop_verdict_row rows
--
-- The hot-list pop: claims for the pop p_pop (queen.log_pop_args) from a list of candidate
-- partition ids the broker keeps. Tries them in the given order through queen.log_pop_v3
-- with a global budget of the pop's batch over at most its partitions. The queue's options
-- and the group's conflation flag are read once per call (queen.log_pop_options_v1) and
-- passed down, which keeps a pop to a few statements (reading them per candidate cost
-- about fourteen statements a pop, each with its executor start-up).
--
-- Returns the claimed segment rows (verdict = 'row', the slice in slice) and then exactly
-- one verdict row per candidate, so the broker can check every candidate back into its
-- ring (slice then holds only the queue, the partition's name and its id):
--   claimed  delivered; retry_at = lease expiry (NULL with auto-ack); pending_after = the
--            messages beyond the claim
--   drained  nothing to deliver to this group (caught up, or not this queue's partition)
--   leased   another worker holds a live lease; retry_at = its expiry
--   window   windowBuffer holds it (only when p_skip_window is false); retry_at = the
--            end of the quiet period
--   delayed  delayedProcessing holds it (retry_at = when the oldest pending segment shows),
--            or a failed ack's retryDelay does (retry_at = the row's retry_at)
--   busy     locked by a concurrent pop, or its row is being created: try again soon
--   skipped  not tried: the budget or the partition count ran out first
-- p_skip_window = true makes the broker's revisit wheel the authority on windowBuffer;
-- delayedProcessing is always enforced here.
--
-- A candidate whose cursor the claim would create is first checked against the tenant's
-- consumer-group limit (queen.tenant_group_admit_v1; over it SQLSTATE QLIMT; with a
-- limit set that is one cursor read per candidate more, none without one).
-- Locks: as queen.log_pop_v3 for each claim, and the limit's advisory lock for a group
-- new to the tenant. The state explaining an empty claim is read without locks. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.log_pop_list_v2(
    p_pop         queen.log_pop_args,
    p_queue       text,
    p_candidates  bigint[],
    p_skip_window boolean
) RETURNS SETOF queen.log_pop_verdict_row LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_now        timestamptz := now();
    v_q          record;
    v_qid        bigint;
    v_lease      integer;
    v_delay      integer;
    v_window     integer;
    v_budget     integer := p_pop.batch;
    v_claimed    integer := 0;
    v_got        integer;
    v_pid        bigint;
    v_name       text;
    v_rows       queen.log_pop_row[];
    v_end        bigint;
    v_c          record;
    v_last       bigint;
    v_at         timestamptz;
    v_verdicts   text[] := '{}';
    v_retry      timestamptz[] := '{}';
    v_pending    bigint[] := '{}';
    v_names      text[] := '{}';
    i            integer;
    -- Whether a group limit applies to this pop: read once, not per candidate.
    v_limited    boolean := p_pop.consumer_group <> '__QUEUE_MODE__'
                            AND queen.tenant_limit_v1('queen.max_groups') IS NOT NULL;
BEGIN
    SELECT * INTO v_q
    FROM queen.log_pop_options_v1(p_pop.tenant, p_queue, p_pop.consumer_group);
    v_qid := v_q.queue_id;
    v_delay := v_q.delay_secs;
    v_window := v_q.window_secs;
    v_lease := coalesce(p_pop.lease_seconds, v_q.lease_time, 60);

    FOR i IN 1 .. coalesce(cardinality(p_candidates), 0) LOOP
        v_pid := p_candidates[i];
        IF v_claimed >= p_pop.partitions OR v_budget <= 0 THEN
            -- Not even looked up: the pop is full, the candidate goes back as it was.
            v_names := v_names || NULL::text;
            v_verdicts := v_verdicts || 'skipped'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;
        SELECT p.name, p.last_offset INTO v_name, v_last
        FROM queen.log_partitions p WHERE p.id = v_pid AND p.queue_id = v_qid;
        v_names := v_names || v_name;
        IF v_name IS NULL THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
            v_pending := v_pending || 0::bigint;
            CONTINUE;
        END IF;
        -- The claim may create the group's cursor (first contact): the group limit first.
        IF v_limited THEN
            PERFORM queen.tenant_group_admit_v1(v_qid, v_pid, p_pop.consumer_group);
        END IF;

        SELECT array_agg(r), coalesce(sum(r.take), 0), max(r.claim_end)
        INTO v_rows, v_got, v_end
        FROM queen.log_pop_v3(v_qid, v_pid, p_pop.consumer_group, p_pop.worker, v_budget, v_lease,
                              p_pop.auto_ack, p_pop.sub_mode, p_pop.sub_from, p_skip_window,
                              v_delay, v_window, coalesce(v_q.conflate, false),
                              v_q.ttl_secs, v_q.max_wait_secs, v_q.retry_limit,
                              coalesce(v_q.dead_letters, true),
                              coalesce(v_q.retry_dead_letters, true)) r;
        IF v_got > 0 THEN
            RETURN QUERY
                SELECT 'row'::text, NULL::timestamptz, NULL::bigint,
                       ROW(p_queue, v_name, r.*)::queen.log_pop_wire_row
                FROM unnest(v_rows) r;
            v_claimed := v_claimed + 1;
            v_budget := v_budget - v_got;
            v_verdicts := v_verdicts || 'claimed'::text;
            v_retry := v_retry || CASE WHEN p_pop.auto_ack THEN NULL::timestamptz
                                       ELSE v_now + make_interval(secs => v_lease) END;
            v_pending := v_pending || greatest(v_last - v_end, 0);
            CONTINUE;
        END IF;

        -- Nothing claimed: say why, from an unlocked look at the partition's state.
        SELECT c.committed, c.worker_id, c.lease_expires_at, c.retry_at INTO v_c
        FROM queen.log_consumers c
        WHERE c.partition_id = v_pid AND c.consumer_group = p_pop.consumer_group;
        SELECT p.last_offset INTO v_last FROM queen.log_partitions p WHERE p.id = v_pid;
        IF NOT FOUND OR v_c IS NULL OR v_c.committed IS NULL THEN
            v_verdicts := v_verdicts || 'busy'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.worker_id IS NOT NULL AND v_c.lease_expires_at >= v_now THEN
            v_verdicts := v_verdicts || 'leased'::text;
            v_retry := v_retry || v_c.lease_expires_at;
        ELSIF v_last <= v_c.committed THEN
            v_verdicts := v_verdicts || 'drained'::text;
            v_retry := v_retry || NULL::timestamptz;
        ELSIF v_c.retry_at IS NOT NULL AND v_c.retry_at > v_now THEN
            v_verdicts := v_verdicts || 'delayed'::text;
            v_retry := v_retry || v_c.retry_at;
        ELSE
            v_at := NULL;
            IF coalesce(v_window, 0) > 0 AND NOT p_skip_window THEN
                SELECT s.created_at + make_interval(secs => v_window) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid
                ORDER BY s.base_offset DESC LIMIT 1;
                IF v_at IS NOT NULL AND v_at > v_now THEN
                    v_verdicts := v_verdicts || 'window'::text;
                    v_retry := v_retry || v_at;
                    v_pending := v_pending || (v_last - v_c.committed);
                    CONTINUE;
                END IF;
                v_at := NULL;
            END IF;
            IF coalesce(v_delay, 0) > 0 THEN
                SELECT s.created_at + make_interval(secs => v_delay) INTO v_at
                FROM queen.log_segments s
                WHERE s.partition_id = v_pid AND s.end_offset > v_c.committed
                ORDER BY s.base_offset LIMIT 1;
            END IF;
            IF v_at IS NOT NULL AND v_at > v_now THEN
                v_verdicts := v_verdicts || 'delayed'::text;
                v_retry := v_retry || v_at;
            ELSE
                v_verdicts := v_verdicts || 'busy'::text;
                v_retry := v_retry || NULL::timestamptz;
            END IF;
        END IF;
        v_pending := v_pending || greatest(v_last - coalesce(v_c.committed, -1), 0);
    END LOOP;

    RETURN QUERY
        SELECT v.verdict, v.retry_at, v.pending,
               ROW(p_queue, v.name, v.pid, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL, NULL)::queen.log_pop_wire_row
        FROM unnest(v_verdicts, v_retry, v_pending, v_names, p_candidates)
             AS v (verdict, retry_at, pending, name, pid);
END;
$$;
