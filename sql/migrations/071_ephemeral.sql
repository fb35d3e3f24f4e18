-- 071_ephemeral: the declarations of ephemeral queues (the /api/v1/ephemeral/* routes).
--
-- One row per declared (tenant, queue): the bounds and delivery settings of POST
-- /api/v1/ephemeral/configure, as the broker checked them (src/domain/ephemeral/options.rs).
-- Only declarations are durable: an ephemeral queue's messages, cursors and leases live in
-- the owning broker's memory (src/ephemeral/) and never reach PostgreSQL. A queue a push
-- or a pop creates implicitly has no row and runs with the defaults.
--
-- The primary key starts with the tenant, as every tenant-owned table here (Citus can
-- distribute it by tenant). Written by sql/functions/ephemeral_declare_v1.sql, removed by
-- ephemeral_forget_v1.sql, read by ephemeral_declaration_v1.sql and
-- ephemeral_declarations_v1.sql. No locks beyond DDL; no notifications; no data.

CREATE TABLE IF NOT EXISTS queen.ephemeral_queues (
    tenant        text        NOT NULL,
    queue         text        NOT NULL,
    max_bytes     bigint      NOT NULL,
    max_length    bigint      NOT NULL,
    policy        text        NOT NULL,
    ttl_seconds   bigint,
    lease_seconds bigint      NOT NULL,
    retry_limit   integer     NOT NULL,
    window_buffer jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, queue)
);
