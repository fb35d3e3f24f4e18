-- queen.locks_apply_v1(p_tenant, p_ops) -> jsonb
--
-- The engine of POST /api/v1/locks: applies the lock ops of p_ops (a jsonb array the
-- broker already checked and normalised, see src/domain/locks/) for tenant p_tenant, in
-- one call, and answers {"results": [r0, r1, ...]}, one result per op, index-aligned.
-- The ops are independent: one refused op does not undo another (no exception block).
--
-- A permit is a row of queen.kv (sql/migrations/067_kv.sql): namespace 'queen-locks',
-- key '<name>#<slot>', value {"owner": <owner or null>, "since": <acquire time>}, the
-- permit's TTL as expires_at, and the row's version as the fencing token. Every write takes
-- nextval('queen.kv_version'), so tokens rise strictly across holders and change at every
-- renew. Expired rows are invisible here (a lock's live permits are queen.lock_slots_v1)
-- and the KV sweeper removes them.
-- Ops (every one has "op" and "name"; names hold no '#'):
--   acquire name, ttl, owner, limit
--     owner given and already holding a live slot below limit: that permit, with
--     "already": true and no write. Else the free slots (absent or expired) lowest first:
--     {acquired: true, slot, token, owner, guard}. None won: {acquired: false, reason,
--     holders: [{slot, owner}]}, reason 'held' when no slot looked free, 'contended' when
--     the free-looking ones were all taken by concurrent acquirers first.
--   renew   name, token, ttl, slot, owner
--     the live row of the slot at version = token, or (owner given) whose value.owner is
--     owner: new expiry, updated_at and version, value kept. {renewed: true, slot, token,
--     guard}, else {renewed: false, reason: 'lost', holders}.
--   release name, token, slot
--     deletes the live row of the slot at version = token: {released: true}, else
--     {released: false, reason: 'lost'}.
--   get     name
--     {held, holders: [{slot, owner, token, since, expiresAt, renewedAt}]} by slot.
-- guard = {"op": "check", "ns": "queen-locks", "key": "<name>#<slot>", "expect": token,
-- "required": true}, a KV op as POST /api/v1/kv and the transaction rider take it.
-- Races: a slot is taken by INSERT ... ON CONFLICT DO NOTHING or by UPDATE ... WHERE
-- expires_at <= now (an expired row), renew and release are one conditional UPDATE or
-- DELETE: a concurrent writer of the row makes PostgreSQL re-check the condition on the
-- row it committed, so two acquirers never both win a slot. A won slot's token is drawn
-- after the win (the insert's own was drawn before any wait), so it is above every
-- earlier holder's; a renew locks the row (FOR UPDATE, re-checked on a concurrent
-- writer's commit) before it draws the new token. On the Citus layout (queen.kv
-- distributed by tenant) every statement names its tenant, and the new versions are drawn
-- into variables before the UPDATE, which Citus refuses with nextval inside. No
-- notifications.
CREATE OR REPLACE FUNCTION queen.locks_apply_v1(p_tenant text, p_ops jsonb)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    c_ns       constant text := 'queen-locks';
    c_time     constant text := 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
    v_results  jsonb[] := ARRAY[]::jsonb[];
    o          record;
    v_key      text;
    v_slot     integer;
    v_try      integer;
    v_now      timestamptz;
    v_ttl      interval;
    v_token    bigint;
    v_held     jsonb;
    v_taken    integer[];
    v_mine     integer;
    v_contended boolean;
    v_value    jsonb;
    r          record;
BEGIN
    -- The ops in order, each read once into its typed fields (a field an op does not
    -- carry is NULL).
    FOR o IN
        SELECT x.op, x.name, x.owner, x.ttl, x.slot, x.token, x."limit" AS slots
        FROM jsonb_to_recordset(p_ops) AS x (op text, name text, owner text, ttl bigint,
            slot integer, token bigint, "limit" integer)
    LOOP
        v_ttl := make_interval(secs => o.ttl);
        v_slot := COALESCE(o.slot, 0);
        v_key := o.name || '#' || v_slot;
        v_now := clock_timestamp();

        IF o.op = 'get' THEN
            SELECT COALESCE(jsonb_agg(jsonb_build_object(
                       'slot', h.slot, 'owner', h.value -> 'owner', 'token', h.version,
                       'since', h.value -> 'since',
                       'expiresAt', to_char(h.expires_at AT TIME ZONE 'UTC', c_time),
                       'renewedAt', to_char(h.updated_at AT TIME ZONE 'UTC', c_time))
                       ORDER BY h.slot), '[]'::jsonb)
              INTO v_held
              FROM queen.lock_slots_v1(p_tenant, o.name, v_now) h;
            v_results := v_results || jsonb_build_object(
                'held', jsonb_array_length(v_held) > 0, 'holders', v_held);
            CONTINUE;
        END IF;

        IF o.op = 'acquire' THEN
            -- One look at the live permits: the owner's own, and the slots to skip.
            v_taken := ARRAY[]::integer[];
            v_mine := NULL;
            v_token := NULL;
            FOR r IN
                SELECT h.slot, h.value ->> 'owner' AS owner, h.version
                  FROM queen.lock_slots_v1(p_tenant, o.name, v_now) h
                 ORDER BY h.slot
            LOOP
                v_taken := v_taken || r.slot;
                IF v_mine IS NULL AND o.owner IS NOT NULL AND r.owner = o.owner
                   AND r.slot < o.slots THEN
                    v_mine := r.slot;
                    v_token := r.version;
                END IF;
            END LOOP;
            IF v_mine IS NOT NULL THEN
                v_results := v_results || jsonb_build_object(
                    'acquired', true, 'already', true, 'slot', v_mine, 'token', v_token,
                    'owner', o.owner,
                    'guard', jsonb_build_object('op', 'check', 'ns', c_ns,
                        'key', o.name || '#' || v_mine, 'expect', v_token,
                        'required', true));
                CONTINUE;
            END IF;
            v_contended := false;
            v_mine := NULL;
            FOR v_slot IN 0 .. o.slots - 1 LOOP
                CONTINUE WHEN v_slot = ANY (v_taken);
                v_key := o.name || '#' || v_slot;
                -- A slot that vanishes between the two tries (a release) is tried again.
                FOR v_try IN 1 .. 3 LOOP
                    v_now := clock_timestamp();
                    INSERT INTO queen.kv AS k (tenant, namespace, key, value, version,
                                               expires_at, updated_at)
                    VALUES (p_tenant, c_ns, v_key,
                            jsonb_build_object('owner', o.owner,
                                               'since', to_char(v_now AT TIME ZONE 'UTC',
                                                                c_time)),
                            nextval('queen.kv_version'), v_now + v_ttl, v_now)
                    ON CONFLICT (tenant, namespace, key) DO NOTHING
                    RETURNING k.version INTO v_token;
                    EXIT WHEN FOUND;
                    -- An expired permit: taken by making it live again; the owner, since
                    -- and token are stamped below, as for an inserted one.
                    UPDATE queen.kv k SET expires_at = v_now + v_ttl
                     WHERE k.tenant = p_tenant AND k.namespace = c_ns AND k.key = v_key
                       AND k.expires_at <= v_now
                    RETURNING k.version INTO v_token;
                    EXIT WHEN FOUND;
                    v_token := NULL;
                    -- Still there and live: another acquirer won it since the look.
                    EXIT WHEN EXISTS (SELECT 1 FROM queen.kv k
                                       WHERE k.tenant = p_tenant AND k.namespace = c_ns
                                         AND k.key = v_key);
                END LOOP;
                IF v_token IS NOT NULL THEN
                    -- Won. The token and the lease are drawn only now: the insert's
                    -- version was drawn before it waited on a conflicting row, and while
                    -- it waited another acquirer may have held and released the slot
                    -- with a later version.
                    -- Drawn into variables first (the row is this transaction's now):
                    -- Citus refuses a VOLATILE function in an UPDATE of a distributed
                    -- table.
                    v_now := clock_timestamp();
                    v_value := jsonb_build_object('owner', o.owner,
                        'since', to_char(v_now AT TIME ZONE 'UTC', c_time));
                    v_token := nextval('queen.kv_version');
                    UPDATE queen.kv k
                       SET value = v_value, version = v_token,
                           expires_at = v_now + v_ttl, updated_at = v_now
                     WHERE k.tenant = p_tenant AND k.namespace = c_ns AND k.key = v_key;
                    v_mine := v_slot;
                    EXIT;
                END IF;
                v_contended := true;
            END LOOP;
            IF v_mine IS NOT NULL THEN
                v_results := v_results || jsonb_build_object(
                    'acquired', true, 'slot', v_mine, 'token', v_token,
                    'owner', o.owner,
                    'guard', jsonb_build_object('op', 'check', 'ns', c_ns,
                        'key', v_key, 'expect', v_token, 'required', true));
                CONTINUE;
            END IF;
            v_results := v_results || jsonb_build_object(
                'acquired', false,
                'reason', CASE WHEN v_contended THEN 'contended' ELSE 'held' END);
        ELSIF o.op = 'renew' THEN
            -- The row locked first, then its new version drawn and written: Citus
            -- refuses nextval in an UPDATE of a distributed table, and a version drawn
            -- before the lock could be lower than one a concurrent renew wrote.
            PERFORM 1 FROM queen.kv k
             WHERE k.tenant = p_tenant AND k.namespace = c_ns AND k.key = v_key
               AND COALESCE(k.expires_at, 'infinity') > v_now
               AND (k.version = o.token
                    OR (o.owner IS NOT NULL AND k.value ->> 'owner' = o.owner))
               FOR UPDATE;
            IF FOUND THEN
                v_token := nextval('queen.kv_version');
                UPDATE queen.kv k
                   SET version = v_token, expires_at = v_now + v_ttl, updated_at = v_now
                 WHERE k.tenant = p_tenant AND k.namespace = c_ns AND k.key = v_key;
                v_results := v_results || jsonb_build_object(
                    'renewed', true, 'slot', v_slot, 'token', v_token,
                    'guard', jsonb_build_object('op', 'check', 'ns', c_ns,
                        'key', v_key, 'expect', v_token, 'required', true));
                CONTINUE;
            END IF;
            v_results := v_results
                || jsonb_build_object('renewed', false, 'reason', 'lost');
        ELSE -- release
            DELETE FROM queen.kv k
             WHERE k.tenant = p_tenant AND k.namespace = c_ns AND k.key = v_key
               AND COALESCE(k.expires_at, 'infinity') > v_now
               AND k.version = o.token;
            v_results := v_results || CASE WHEN FOUND
                THEN jsonb_build_object('released', true)
                ELSE jsonb_build_object('released', false, 'reason', 'lost') END;
            CONTINUE;
        END IF;

        -- A refused acquire or renew: who holds the lock now.
        v_now := clock_timestamp();
        SELECT COALESCE(jsonb_agg(jsonb_build_object('slot', h.slot,
                                                     'owner', h.value -> 'owner')
                                  ORDER BY h.slot), '[]'::jsonb)
          INTO v_held
          FROM queen.lock_slots_v1(p_tenant, o.name, v_now) h;
        v_results[cardinality(v_results)] := v_results[cardinality(v_results)]
            || jsonb_build_object('holders', v_held);
    END LOOP;
    RETURN jsonb_build_object('results', to_jsonb(v_results));
END;
$$;
