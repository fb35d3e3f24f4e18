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
    o         record;
    v_try     integer;
    v_found   boolean;
    v_late    boolean;
    v_at      timestamptz;
    v_txn     text;
    v_mid     uuid;
    v_status  text;
BEGIN
    -- The ops in order, each read once into its typed fields (a field an op does not
    -- carry is NULL).
    FOR o IN
        SELECT x.op, x.queue, x.key, x.txn, x.partition, x.payload,
               x."delayMs" AS delay_ms, x."messageId" AS message_id
        FROM jsonb_to_recordset(p_ops) AS x (op text, queue text, key text, txn text,
            partition text, payload text, "delayMs" double precision, "messageId" uuid)
    LOOP
        v_status := NULL;
        v_try := 0;
        LOOP
            v_try := v_try + 1;
            v_late := false;
            SELECT t.txn, t.message_id INTO v_txn, v_mid
              FROM queen.timers t
             WHERE t.tenant = p_tenant AND t.queue = o.queue AND t.timer_key = o.key
               FOR UPDATE SKIP LOCKED;
            v_found := FOUND;
            IF NOT v_found THEN
                PERFORM 1 FROM queen.timers t
                  WHERE t.tenant = p_tenant AND t.queue = o.queue AND t.timer_key = o.key;
                IF FOUND THEN
                    SELECT t.txn, t.message_id INTO v_txn, v_mid
                      FROM queen.timers t
                     WHERE t.tenant = p_tenant AND t.queue = o.queue
                       AND t.timer_key = o.key
                       FOR UPDATE;
                    v_found := FOUND;
                    v_late := NOT v_found;
                END IF;
            END IF;

            IF v_late THEN
                v_status := 'too_late';
                v_txn := COALESCE(o.txn, v_txn);
                EXIT;
            END IF;

            IF o.op = 'cancel' THEN
                IF v_found THEN
                    DELETE FROM queen.timers t
                     WHERE t.tenant = p_tenant AND t.queue = o.queue
                       AND t.timer_key = o.key;
                    v_status := 'cancelled';
                ELSE
                    v_status := 'absent';
                    v_txn := o.txn;
                END IF;
                EXIT;
            END IF;

            v_at := clock_timestamp() + make_interval(secs => o.delay_ms / 1000.0);
            v_txn := o.txn;
            v_mid := o.message_id;
            IF v_found THEN
                UPDATE queen.timers t
                   SET partition = o.partition,
                       payload = decode(o.payload, 'base64'),
                       txn = v_txn, message_id = v_mid,
                       deliver_at = v_at, due_at = v_at, attempts = 0,
                       updated_at = clock_timestamp()
                 WHERE t.tenant = p_tenant AND t.queue = o.queue AND t.timer_key = o.key;
                v_status := 'rescheduled';
                EXIT;
            END IF;
            INSERT INTO queen.timers (tenant, queue, timer_key, partition, payload, txn,
                                      message_id, deliver_at, due_at, updated_at)
            VALUES (p_tenant, o.queue, o.key, o.partition,
                    decode(o.payload, 'base64'), v_txn, v_mid, v_at, v_at,
                    clock_timestamp())
            ON CONFLICT (tenant, queue, timer_key) DO NOTHING;
            IF FOUND THEN
                v_status := 'scheduled';
                EXIT;
            END IF;
            -- A concurrent create committed first: take its row as an existing one.
            IF v_try >= 5 THEN
                RAISE EXCEPTION 'timers_apply_v1: key % kept changing under the call', o.key
                    USING ERRCODE = '40001';
            END IF;
        END LOOP;

        IF v_status IN ('scheduled', 'rescheduled') THEN
            v_results := v_results || jsonb_build_object(
                'ok', true, 'status', v_status, 'queue', o.queue, 'timerKey', o.key,
                'txn', v_txn, 'messageId', v_mid,
                'deliverAt', to_char(v_at AT TIME ZONE 'UTC',
                                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
        ELSIF v_status = 'cancelled' THEN
            v_results := v_results || jsonb_build_object(
                'ok', true, 'status', v_status, 'queue', o.queue, 'timerKey', o.key,
                'txn', v_txn, 'messageId', v_mid);
        ELSE
            v_results := v_results || jsonb_build_object(
                'ok', false, 'status', v_status, 'queue', o.queue, 'timerKey', o.key,
                'txn', v_txn);
        END IF;
    END LOOP;
    RETURN jsonb_build_object('results', to_jsonb(v_results));
END;
$$;
