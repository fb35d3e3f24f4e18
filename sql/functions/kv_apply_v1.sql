-- queen.kv_apply_v1(p_tenant, p_ops) -> jsonb
--
-- The engine of POST /api/v1/kv (and later of the transaction rider's `kv` ops): applies
-- the ops of p_ops (a jsonb array the broker already checked and normalised, see
-- src/db/kv.rs) in order, for tenant p_tenant, in one call, and answers
--   {"results": [r0, r1, ...]}  one result per op, index-aligned; or
--   {"ok": false, "reason": "kv_precondition", "failedIndex", "kvReason", "version",
--    "value"}  when an op with "required": true lost its precondition: then nothing of
--   the batch is applied (the ops run in an exception block that is rolled back).
-- Ops (every one has "op" and "ns"; "key" unless noted):
--   get                        found, key, value, version, expiresAt, updatedAt
--   getMany   keys             rows, missing, truncated (rows past 4 MiB of values cut)
--   getPrefix prefix, after, limit, keysOnly
--                              rows in byte order from after (exclusive), truncated,
--                              nextAfter
--   put       value, ttl, expect, required
--   putIfAbsent value, ttl, required
--   delete    expect, required
--   check     expect, required
--   incr      delta, min, max, ttl, required
-- ttl: seconds, or null for forever. expect: 0 = must not exist (an expired row does not
-- exist), N = must be at version N. Writes answer applied, key, value, version and, when
-- not applied, reason (exists, absent, version; incr: limit, type) with the key's current
-- value and version (null when absent). incr: a missing or expired key counts as 0, its
-- ttl applies only when it creates the key, bounds refuse rather than cap.
-- Every write takes the next value of queen.kv_version, so versions rise strictly and
-- never repeat. Expired rows (expires_at <= clock_timestamp()) are invisible to every op.
-- A write's new version (queen.kv_version) and an incr's new expiry are computed into
-- variables before its UPDATE: on the Citus layout (queen.kv distributed by tenant) Citus
-- refuses a volatile function in an UPDATE of a distributed table, and a non-IMMUTABLE
-- one inside its CASE. Same rows on PostgreSQL.
--
-- Locks: each write locks its row (SELECT ... FOR UPDATE); a create is INSERT ... ON
-- CONFLICT DO NOTHING then a retry of the lock, so concurrent putIfAbsent/expect/incr
-- serialise on the row. Reads see the batch's earlier writes. No notifications.
CREATE OR REPLACE FUNCTION queen.kv_apply_v1(p_tenant text, p_ops jsonb)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_version bigint;
    v_expires timestamptz;
    c_many_budget constant bigint := 4194304;
    v_results jsonb[] := ARRAY[]::jsonb[];
    v_fail    jsonb;
    v_op      jsonb;
    v_kind    text;
    v_ns      text;
    v_key     text;
    v_i       integer;
    v_now     timestamptz;
    v_found   boolean;
    v_live    boolean;
    v_creates boolean;
    v_expect  bigint;
    v_ttl     bigint;
    v_new     jsonb;
    v_reason  text;
    v_applied boolean;
    v_base    numeric;
    v_sum     numeric;
    v_rows    jsonb[];
    v_missing text[];
    v_trunc   boolean;
    v_bytes   bigint;
    v_lo      text;
    v_hi      text;
    v_cp      integer;
    v_limit   integer;
    v_next    text;
    r_value   jsonb;
    r_version bigint;
    r_exp     timestamptz;
    r_upd     timestamptz;
    r         record;
BEGIN
    BEGIN
        FOR v_i IN 0 .. jsonb_array_length(p_ops) - 1 LOOP
            v_op := p_ops -> v_i;
            v_kind := v_op ->> 'op';
            v_ns := v_op ->> 'ns';
            v_key := v_op ->> 'key';
            v_now := clock_timestamp();

            IF v_kind = 'get' THEN
                SELECT k.value, k.version, k.expires_at, k.updated_at
                  INTO r_value, r_version, r_exp, r_upd
                  FROM queen.kv k
                 WHERE k.tenant = p_tenant AND k.namespace = v_ns AND k.key = v_key
                   AND (k.expires_at IS NULL OR k.expires_at > v_now);
                IF FOUND THEN
                    v_results := v_results || jsonb_build_object(
                        'found', true, 'key', v_key, 'value', r_value,
                        'version', r_version,
                        'expiresAt', to_char(r_exp AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                        'updatedAt', to_char(r_upd AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
                ELSE
                    v_results := v_results
                        || jsonb_build_object('found', false, 'key', v_key);
                END IF;
                CONTINUE;
            END IF;

            IF v_kind = 'getMany' THEN
                v_rows := ARRAY[]::jsonb[];
                v_missing := ARRAY[]::text[];
                v_trunc := false;
                v_bytes := 0;
                FOR r IN
                    SELECT a.k AS key, k.value, k.version, k.expires_at, k.updated_at
                      FROM jsonb_array_elements_text(v_op -> 'keys')
                           WITH ORDINALITY AS a(k, n)
                      LEFT JOIN queen.kv k
                        ON k.tenant = p_tenant AND k.namespace = v_ns AND k.key = a.k
                       AND (k.expires_at IS NULL OR k.expires_at > v_now)
                     ORDER BY a.n
                LOOP
                    IF r.version IS NULL THEN
                        v_missing := v_missing || r.key;
                        CONTINUE;
                    END IF;
                    v_bytes := v_bytes + octet_length(r.value::text);
                    IF v_bytes > c_many_budget AND cardinality(v_rows) > 0 THEN
                        v_trunc := true;
                        EXIT;
                    END IF;
                    v_rows := v_rows || jsonb_build_object(
                        'key', r.key, 'value', r.value, 'version', r.version,
                        'expiresAt', to_char(r.expires_at AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                        'updatedAt', to_char(r.updated_at AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
                END LOOP;
                v_results := v_results || jsonb_build_object(
                    'rows', to_jsonb(v_rows), 'missing', to_jsonb(v_missing),
                    'truncated', v_trunc);
                CONTINUE;
            END IF;

            IF v_kind = 'getPrefix' THEN
                -- The first key after `after` is after || chr(1): no key holds a NUL.
                v_lo := v_op ->> 'prefix';
                IF v_op ->> 'after' IS NOT NULL
                   AND (v_op ->> 'after') || chr(1) COLLATE "C" > v_lo COLLATE "C" THEN
                    v_lo := (v_op ->> 'after') || chr(1);
                END IF;
                -- The least string above every key starting with the prefix: its last
                -- character raised by one code point (dropped when it is the highest).
                -- A prefix of only U+10FFFF has none: 129 of them are above every key
                -- (keys are at most 512 bytes), so the scan stays one index range.
                v_hi := v_op ->> 'prefix';
                LOOP
                    EXIT WHEN v_hi = '';
                    v_cp := ascii(right(v_hi, 1));
                    IF v_cp < 1114111 THEN
                        v_cp := v_cp + 1;
                        IF v_cp BETWEEN 55296 AND 57343 THEN
                            v_cp := 57344;
                        END IF;
                        v_hi := left(v_hi, -1) || chr(v_cp);
                        EXIT;
                    END IF;
                    v_hi := left(v_hi, -1);
                END LOOP;
                IF v_hi = '' THEN
                    v_hi := repeat(chr(1114111), 129);
                END IF;
                v_limit := (v_op ->> 'limit')::integer;
                v_rows := ARRAY[]::jsonb[];
                v_trunc := false;
                v_next := NULL;
                FOR r IN
                    SELECT k.key, k.value, k.version, k.expires_at, k.updated_at
                      FROM queen.kv k
                     WHERE k.tenant = p_tenant AND k.namespace = v_ns
                       AND k.key >= v_lo COLLATE "C"
                       AND k.key < v_hi COLLATE "C"
                       AND (k.expires_at IS NULL OR k.expires_at > v_now)
                     ORDER BY k.key
                     LIMIT v_limit + 1
                LOOP
                    IF cardinality(v_rows) = v_limit THEN
                        v_trunc := true;
                        EXIT;
                    END IF;
                    v_next := r.key;
                    v_rows := v_rows || (jsonb_build_object(
                        'key', r.key, 'version', r.version,
                        'expiresAt', to_char(r.expires_at AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                        'updatedAt', to_char(r.updated_at AT TIME ZONE 'UTC',
                                             'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                        || CASE WHEN (v_op ->> 'keysOnly')::boolean THEN '{}'::jsonb
                                ELSE jsonb_build_object('value', r.value) END);
                END LOOP;
                v_results := v_results || jsonb_build_object(
                    'rows', to_jsonb(v_rows), 'truncated', v_trunc,
                    'nextAfter', CASE WHEN v_trunc THEN v_next END);
                CONTINUE;
            END IF;

            -- The writes and check: lock the key's row, creating it when the op may.
            v_expect := (v_op ->> 'expect')::bigint;
            v_ttl := (v_op ->> 'ttl')::bigint;
            v_new := v_op -> 'value';
            IF v_kind = 'incr' THEN
                v_sum := (v_op ->> 'delta')::numeric;
                v_new := to_jsonb(v_sum);
            END IF;
            v_creates := CASE v_kind
                WHEN 'put' THEN v_expect IS NULL OR v_expect = 0
                WHEN 'putIfAbsent' THEN true
                WHEN 'incr' THEN NOT (v_sum < (v_op ->> 'min')::numeric
                                      OR v_sum > (v_op ->> 'max')::numeric)
                                 IS TRUE
                ELSE false
            END;
            v_applied := false;
            LOOP
                SELECT k.value, k.version, k.expires_at
                  INTO r_value, r_version, r_exp
                  FROM queen.kv k
                 WHERE k.tenant = p_tenant AND k.namespace = v_ns AND k.key = v_key
                   FOR UPDATE;
                v_found := FOUND;
                EXIT WHEN v_found OR NOT v_creates;
                v_now := clock_timestamp();
                INSERT INTO queen.kv AS k (tenant, namespace, key, value, version,
                                           expires_at, updated_at)
                VALUES (p_tenant, v_ns, v_key, v_new, nextval('queen.kv_version'),
                        v_now + make_interval(secs => v_ttl), v_now)
                ON CONFLICT (tenant, namespace, key) DO NOTHING
                RETURNING k.value, k.version INTO r_value, r_version;
                IF FOUND THEN
                    v_applied := true;
                    EXIT;
                END IF;
            END LOOP;
            v_now := clock_timestamp();
            v_live := v_found AND (r_exp IS NULL OR r_exp > v_now);
            IF NOT v_live AND NOT v_applied THEN
                r_value := NULL;
                r_version := NULL;
            END IF;
            v_reason := NULL;

            IF v_applied THEN
                NULL;
            ELSIF v_kind IN ('put', 'putIfAbsent', 'delete', 'check') THEN
                IF v_kind = 'putIfAbsent' OR v_expect = 0 THEN
                    IF v_live THEN
                        v_reason := 'exists';
                    END IF;
                ELSIF v_expect IS NOT NULL THEN
                    IF NOT v_live THEN
                        v_reason := 'absent';
                    ELSIF r_version <> v_expect THEN
                        v_reason := 'version';
                    END IF;
                ELSIF v_kind = 'delete' AND NOT v_live THEN
                    v_reason := 'absent';
                END IF;
                IF v_reason IS NULL AND v_kind = 'delete' THEN
                    IF v_live THEN
                        DELETE FROM queen.kv k
                         WHERE k.tenant = p_tenant AND k.namespace = v_ns
                           AND k.key = v_key;
                        v_applied := true;
                    ELSE
                        v_reason := 'absent';
                    END IF;
                ELSIF v_reason IS NULL AND v_kind = 'check' THEN
                    v_applied := true;
                ELSIF v_reason IS NULL THEN
                    v_version := nextval('queen.kv_version');
                    UPDATE queen.kv k
                       SET value = v_new, version = v_version,
                           expires_at = v_now + make_interval(secs => v_ttl),
                           updated_at = v_now
                     WHERE k.tenant = p_tenant AND k.namespace = v_ns AND k.key = v_key
                    RETURNING k.value, k.version INTO r_value, r_version;
                    v_applied := true;
                END IF;
            ELSE -- incr on an existing row, live or expired
                IF v_live AND jsonb_typeof(r_value) <> 'number' THEN
                    v_reason := 'type';
                ELSE
                    v_base := CASE WHEN v_live THEN r_value::text::numeric ELSE 0 END;
                    v_sum := v_base + (v_op ->> 'delta')::numeric;
                    IF v_sum < (v_op ->> 'min')::numeric
                       OR v_sum > (v_op ->> 'max')::numeric THEN
                        v_reason := 'limit';
                        r_value := to_jsonb(v_base);
                    ELSE
                        -- A live counter keeps its expiry: the TTL is create-only.
                        v_version := nextval('queen.kv_version');
                        v_expires := v_now + make_interval(secs => v_ttl);
                        UPDATE queen.kv k
                           SET value = to_jsonb(v_sum),
                               version = v_version,
                               expires_at = CASE WHEN v_live THEN k.expires_at
                                   ELSE v_expires END,
                               updated_at = v_now
                         WHERE k.tenant = p_tenant AND k.namespace = v_ns
                           AND k.key = v_key
                        RETURNING k.value, k.version INTO r_value, r_version;
                        v_applied := true;
                    END IF;
                END IF;
            END IF;
            IF NOT v_applied AND v_reason IS NULL THEN
                -- incr refused before any row existed (its bounds exclude 0 + delta).
                v_reason := 'limit';
                r_value := to_jsonb(0);
            END IF;

            IF v_applied THEN
                v_results := v_results || jsonb_build_object(
                    'applied', true, 'key', v_key, 'value', r_value,
                    'version', r_version);
            ELSIF (v_op ->> 'required')::boolean THEN
                v_fail := jsonb_build_object(
                    'ok', false, 'reason', 'kv_precondition', 'failedIndex', v_i,
                    'kvReason', v_reason, 'version', r_version, 'value', r_value);
                RAISE EXCEPTION USING ERRCODE = 'QKVRQ',
                    MESSAGE = 'kv precondition lost';
            ELSE
                v_results := v_results || jsonb_build_object(
                    'applied', false, 'reason', v_reason, 'key', v_key,
                    'value', r_value, 'version', r_version);
            END IF;
        END LOOP;
    EXCEPTION WHEN SQLSTATE 'QKVRQ' THEN
        RETURN v_fail;
    END;
    RETURN jsonb_build_object('results', to_jsonb(v_results));
END;
$$;
