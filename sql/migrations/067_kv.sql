-- 067_kv: the key/value store of POST /api/v1/kv (sql/functions/kv_apply_v1.sql).
--
-- One row per live or expired-but-unswept key of a tenant's namespace. The primary key
-- starts with the tenant, as every tenant-owned table here is reached through (tenant, ...)
-- (queen.queues is UNIQUE (tenant, name)): when Citus distributes the table by tenant, a
-- batch, which names one tenant, runs on one worker, and a prefix scan of a namespace is
-- one index range there. `key` is COLLATE "C" so that index range is in byte order, the
-- order getPrefix pages in.
--
-- `version` comes from queen.kv_version: unique, strictly rising across the whole table and
-- never re-issued to a recreated key, so a later write always carries a higher version
-- (locks use it as a fencing token). `expires_at` NULL: forever. A row past its
-- expires_at is invisible to every op at once; the retention sweeper removes it later
-- (sql/functions/retention_kv_v1.sql), in batches, through kv_expires_idx.
-- No locks beyond DDL; no notifications; no data.

CREATE SEQUENCE IF NOT EXISTS queen.kv_version AS bigint;

CREATE TABLE IF NOT EXISTS queen.kv (
    tenant     text        NOT NULL,
    namespace  text        NOT NULL,
    key        text        COLLATE "C" NOT NULL,
    value      jsonb       NOT NULL,
    version    bigint      NOT NULL,
    expires_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, namespace, key)
);

CREATE INDEX IF NOT EXISTS kv_expires_idx
    ON queen.kv (expires_at) WHERE expires_at IS NOT NULL;
