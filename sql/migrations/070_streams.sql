-- 070_streams: the streams runtime's server side (POST /streams/v1/queries, /state/get,
-- /cycle; sql/functions/streams_*_v1.sql).
--
-- queen.streams_queries is the registry: one row per (tenant, query name), with the
-- server's id for it (the `query_id` every later call names), the source and sink queues
-- and the config hash of the operator chain that registered it. Small reference data.
--
-- queen.streams_state holds an operator's state: JSON per (query, source partition, key).
-- The primary key starts with the source partition id, so that when Citus distributes the
-- table by it a cycle's state ops and the cursor row its ack moves (queen.log_consumers,
-- keyed by partition_id too) can live on one worker; a (query, partition) is one index
-- range, and a literal key prefix within it is a range too (`key` is COLLATE "C").
-- streams_state_query_idx serves a reset, which wipes one query's state.
-- No locks beyond DDL; no notifications; no data.

CREATE TABLE IF NOT EXISTS queen.streams_queries (
    id           uuid        NOT NULL UNIQUE,
    tenant       text        NOT NULL,
    name         text        NOT NULL,
    source_queue text        NOT NULL,
    sink_queue   text,
    config_hash  text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name)
);

CREATE TABLE IF NOT EXISTS queen.streams_state (
    partition_id bigint      NOT NULL,
    query_id     uuid        NOT NULL,
    key          text        COLLATE "C" NOT NULL,
    value        jsonb       NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, query_id, key)
);

CREATE INDEX IF NOT EXISTS streams_state_query_idx ON queen.streams_state (query_id);
