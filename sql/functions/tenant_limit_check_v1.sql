-- queen.tenant_limit_check_v1(p_max integer, p_count bigint, p_what text) -> void
--
-- The verdict of the limit triggers (queen.tenant_limit_guard_v1), called under the
-- advisory lock of the limit at hand for a row that is new (a known row passes without
-- being counted): p_count, the rows that count now, must be below p_max; otherwise it
-- raises SQLSTATE QLIMT with the message 'tenant limit reached: at most <p_max> <p_what>'
-- (p_what names the setting). See queen.tenant_limit_v1 for how the limits work.
--
-- Reads no table: no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.tenant_limit_check_v1(
    p_max   integer,
    p_count bigint,
    p_what  text
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_count >= p_max THEN
        RAISE EXCEPTION 'tenant limit reached: at most % %', p_max, p_what
            USING ERRCODE = 'QLIMT';
    END IF;
END;
$$;
