-- queen.log_register_group_v1(p_tenant, p_queue, p_group, p_sub_mode, p_sub_from,
--                             p_conflation) -> boolean
--
-- queen.log_register_group_at_v1 by queue name: resolves (p_tenant, p_queue), creating the
-- queue row when missing, and registers the group there. The broker calls it for pops that
-- ask for conflation, before the claim, so the policy is stored by the time the claim reads
-- it. Returns and locks as queen.log_register_group_at_v1. No notifications.
CREATE OR REPLACE FUNCTION queen.log_register_group_v1(
    p_tenant      text,
    p_queue       text,
    p_group       text,
    p_sub_mode    text,
    p_sub_from    timestamptz,
    p_conflation  boolean
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_qid bigint;
BEGIN
    SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    IF v_qid IS NULL THEN
        INSERT INTO queen.queues (tenant, name) VALUES (p_tenant, p_queue)
        ON CONFLICT (tenant, name) DO NOTHING;
        SELECT q.id INTO v_qid FROM queen.queues q WHERE q.tenant = p_tenant AND q.name = p_queue;
    END IF;
    RETURN queen.log_register_group_at_v1(v_qid, p_group, p_sub_mode, p_sub_from, p_conflation);
END;
$$;
