-- queen.timers_apply_v1(p_tenant, p_ops) -> jsonb
--
-- The engine of POST /api/v1/timers, DELETE /api/v1/timers/{queue}/{key...} and the
-- transaction rider's `timers` ops: applies p_ops (a jsonb array the broker already
-- checked and normalised, see src/domain/timers/ops.rs) in order, for tenant p_tenant, in
-- one call, and answers {"results": [r0, r1, ...]}, one result per op, index-aligned.
-- Ops (every one has "op", "queue", "key"):
--   schedule | reschedule  payload (base64 of the message bytes), delayMs, txn,
--                          partition, messageId (minted by the broker, uuid v7)
--        one upsert on (tenant, queue, key): payload, partition, txn, messageId and the
--        due time replaced, attempts back to 0. Answers ok, status (scheduled when no row
--        existed, rescheduled when one did), queue, timerKey, txn, messageId, deliverAt
--        (clock_timestamp() + delayMs, ISO 8601 UTC with milliseconds).
--   cancel                 txn (optional, echoed on absent)
--        cancelled (ok, with the stored txn and messageId) when a pending row was removed;
--        absent (not ok) when there is none, which may mean already delivered.
-- too_late (not ok), for any op: the row existed but another transaction held it (the fire
-- loop's claim, sql/functions/timers_claim_v1.sql, deletes the rows it pushes), this call
-- waited for it, and the row was gone when the holder committed. A holder that rolled back
-- leaves the row, which the op then handles as usual.
-- Locks: each op locks its row (SELECT ... FOR UPDATE SKIP LOCKED, then a waiting FOR
-- UPDATE only when the row exists and is held); a create is INSERT ... ON CONFLICT DO
-- NOTHING, retried when a concurrent create won. The fire loop claims with SKIP LOCKED,
-- so it never fires a row a call holds. No notifications.
CREATE OR REPLACE FUNCTION queen.timers_apply_v1(p_tenant text, p_ops jsonb)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    v_results jsonb[] := ARRAY[]::jsonb[];
    v_op      jsonb;
    v_kind    text;
    v_queue   text;
    v_key     text;
    v_i       integer;
    v_try     integer;
    v_found   boolean;
    v_late    boolean;
    v_at      timestamptz;
    v_txn     text;
    v_mid     uuid;
    v_status  text;
BEGIN
    FOR v_i IN 0 .. jsonb_array_length(p_ops) - 1 LOOP
        v_op := p_ops -> v_i;
        v_kind := v_op ->> 'op';
        v_queue := v_op ->> 'queue';
        v_key := v_op ->> 'key';
        v_status := NULL;
        v_try := 0;
        LOOP
            v_try := v_try + 1;
            v_late := false;
            SELECT t.txn, t.message_id INTO v_txn, v_mid
              FROM queen.timers t
             WHERE t.tenant = p_tenant AND t.queue = v_queue AND t.timer_key = v_key
               FOR UPDATE SKIP LOCKED;
            v_found := FOUND;
            IF NOT v_found THEN
                PERFORM 1 FROM queen.timers t
                  WHERE t.tenant = p_tenant AND t.queue = v_queue AND t.timer_key = v_key;
                IF FOUND THEN
                    SELECT t.txn, t.message_id INTO v_txn, v_mid
                      FROM queen.timers t
                     WHERE t.tenant = p_tenant AND t.queue = v_queue
                       AND t.timer_key = v_key
                       FOR UPDATE;
                    v_found := FOUND;
                    v_late := NOT v_found;
                END IF;
            END IF;

            IF v_late THEN
                v_status := 'too_late';
                v_txn := COALESCE(v_op ->> 'txn', v_txn);
                EXIT;
            END IF;

            IF v_kind = 'cancel' THEN
                IF v_found THEN
                    DELETE FROM queen.timers t
                     WHERE t.tenant = p_tenant AND t.queue = v_queue
                       AND t.timer_key = v_key;
                    v_status := 'cancelled';
                ELSE
                    v_status := 'absent';
                    v_txn := v_op ->> 'txn';
                END IF;
                EXIT;
            END IF;

            v_at := clock_timestamp()
                + make_interval(secs => (v_op ->> 'delayMs')::double precision / 1000.0);
            v_txn := v_op ->> 'txn';
            v_mid := (v_op ->> 'messageId')::uuid;
            IF v_found THEN
                UPDATE queen.timers t
                   SET partition = v_op ->> 'partition',
                       payload = decode(v_op ->> 'payload', 'base64'),
                       txn = v_txn, message_id = v_mid,
                       deliver_at = v_at, due_at = v_at, attempts = 0,
                       updated_at = clock_timestamp()
                 WHERE t.tenant = p_tenant AND t.queue = v_queue AND t.timer_key = v_key;
                v_status := 'rescheduled';
                EXIT;
            END IF;
            INSERT INTO queen.timers (tenant, queue, timer_key, partition, payload, txn,
                                      message_id, deliver_at, due_at, updated_at)
            VALUES (p_tenant, v_queue, v_key, v_op ->> 'partition',
                    decode(v_op ->> 'payload', 'base64'), v_txn, v_mid, v_at, v_at,
                    clock_timestamp())
            ON CONFLICT (tenant, queue, timer_key) DO NOTHING;
            IF FOUND THEN
                v_status := 'scheduled';
                EXIT;
            END IF;
            -- A concurrent create committed first: take its row as an existing one.
            IF v_try >= 5 THEN
                RAISE EXCEPTION 'timers_apply_v1: key % kept changing under the call', v_key
                    USING ERRCODE = '40001';
            END IF;
        END LOOP;

        IF v_status IN ('scheduled', 'rescheduled') THEN
            v_results := v_results || jsonb_build_object(
                'ok', true, 'status', v_status, 'queue', v_queue, 'timerKey', v_key,
                'txn', v_txn, 'messageId', v_mid,
                'deliverAt', to_char(v_at AT TIME ZONE 'UTC',
                                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
        ELSIF v_status = 'cancelled' THEN
            v_results := v_results || jsonb_build_object(
                'ok', true, 'status', v_status, 'queue', v_queue, 'timerKey', v_key,
                'txn', v_txn, 'messageId', v_mid);
        ELSE
            v_results := v_results || jsonb_build_object(
                'ok', false, 'status', v_status, 'queue', v_queue, 'timerKey', v_key,
                'txn', v_txn);
        END IF;
    END LOOP;
    RETURN jsonb_build_object('results', to_jsonb(v_results));
END;
$$;
