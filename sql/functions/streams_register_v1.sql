-- queen.streams_register_v1(p_tenant, p_name, p_source, p_sink, p_hash, p_reset) -> jsonb
--
-- Registers the streams query p_name of p_tenant (POST /streams/v1/queries). Answers
--   {"ok": true, "query_id", "fresh": true,  "reset": false}  a new name: a row is made;
--   {"ok": true, "query_id", "fresh": false, "reset": false}  the same config hash;
--   {"ok": true, "query_id", "fresh": false, "reset": true}   another hash and p_reset: the
--        query's state is wiped (queen.streams_state) and the new hash recorded;
--   {"ok": false, "registered": <hash>}                       another hash, no p_reset:
--        nothing changed (the route answers 409).
-- A known name keeps its id; its source and sink queues become the ones given.
-- Locks: the registry row (FOR UPDATE), so two registrations of one name take turns.
-- No notifications.
CREATE OR REPLACE FUNCTION queen.streams_register_v1(
    p_tenant text,
    p_name   text,
    p_source text,
    p_sink   text,
    p_hash   text,
    p_reset  boolean
) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_id   uuid;
    v_hash text;
BEGIN
    INSERT INTO queen.streams_queries
        (id, tenant, name, source_queue, sink_queue, config_hash)
    VALUES (gen_random_uuid(), p_tenant, p_name, p_source, p_sink, p_hash)
    ON CONFLICT (tenant, name) DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
        RETURN jsonb_build_object('ok', true, 'query_id', v_id, 'fresh', true,
                                  'reset', false);
    END IF;

    SELECT q.id, q.config_hash INTO v_id, v_hash
    FROM queen.streams_queries q
    WHERE q.tenant = p_tenant AND q.name = p_name
    FOR UPDATE;

    IF v_hash <> p_hash AND NOT p_reset THEN
        RETURN jsonb_build_object('ok', false, 'registered', v_hash);
    END IF;
    IF v_hash <> p_hash THEN
        DELETE FROM queen.streams_state s WHERE s.query_id = v_id;
    END IF;
    UPDATE queen.streams_queries q
    SET source_queue = p_source, sink_queue = p_sink, config_hash = p_hash,
        updated_at = now()
    WHERE q.id = v_id;
    RETURN jsonb_build_object('ok', true, 'query_id', v_id, 'fresh', false,
                              'reset', v_hash <> p_hash);
END;
$$;
