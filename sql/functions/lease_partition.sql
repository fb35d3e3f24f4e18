-- queen.lease_partition(p_lease text) -> bigint
--
-- The partition id a lease id names: the n of "<uuid>.<n>", the form the broker's
-- one-partition claim grants; NULL for a bare uuid (a several-partition claim's lease, or a
-- previous version's). How the lease paths use it: see queen.lease_holders_v1.
--
-- Immutable and strict: no table access, no locks. No notifications.
CREATE OR REPLACE FUNCTION queen.lease_partition(p_lease text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT substring(p_lease FROM '^[0-9a-f-]{36}\.([0-9]{1,18})$')::bigint
$$;
