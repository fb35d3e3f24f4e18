//! The names of the environment variables the broker reads, as one list: what a deployment
//! (the Helm chart, an env file) may set. Parsing them is [`super::Config::from_vars`]'s
//! job; this file only names them.

/// Every environment variable the broker reads: the ones [`super::Config::from_vars`]
/// parses, and `RUST_LOG`, which the log filter reads. The README's configuration table
/// documents exactly these; the integration tests check that the table and the Helm chart's
/// settings agree with this list, so a variable added here needs a README row, and a
/// setting the chart passes must be here.
pub const KNOWN_VARS: &[&str] = &[
    "PORT",
    "QUEEN_BIND_ADDR",
    "QUEEN_HTTP_WORKERS",
    "QUEEN_MAX_BODY_BYTES",
    "QUEEN_HTTP_MAX_CONNECTIONS",
    "QUEEN_HTTP2",
    "DATABASE_URL",
    "PG_HOST",
    "PG_PORT",
    "PG_USER",
    "PG_PASSWORD",
    "PG_DB",
    "DB_POOL_SIZE",
    "QUEEN_DB_WORKER_CONNECTIONS",
    "QUEEN_POOL_TIMEOUT_MS",
    "QUEEN_STATEMENT_TIMEOUT_MS",
    "QUEEN_CITUS",
    "QUEEN_DATA_DIR",
    "QUEEN_EMBEDDED_PG_PORT",
    "QUEEN_PG_BIN_DIR",
    "FILE_BUFFER_DIR",
    "FILE_BUFFER_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "POP_WAIT_INITIAL_INTERVAL_MS",
    "POP_WAIT_BACKOFF_THRESHOLD",
    "POP_WAIT_BACKOFF_MULTIPLIER",
    "POP_WAIT_MAX_INTERVAL_MS",
    "QUEEN_HOTLIST",
    "QUEEN_HOTLIST_RESEED_MS",
    "QUEEN_ACK_SYNC_COMMIT",
    "QUEEN_ZSTD_LEVEL",
    "QUEEN_MAX_PUSH_MESSAGES",
    "QUEEN_EPHEMERAL_MAX_BYTES",
    "QUEEN_MAX_PUSH_PARTITIONS",
    "QUEEN_DEDUP_WINDOW_SECS",
    "QUEEN_DEDUP_MAX_ENTRIES",
    "QUEEN_PUSH_WRITERS",
    "QUEEN_PUSH_COMBINE_WINDOW_US",
    "QUEEN_TIMERS_LOOK_MS",
    "QUEEN_ENCRYPTION_KEY",
    "QUEEN_LOG_FORMAT",
    "QUEEN_MESH_PORT",
    "QUEEN_MESH_BIND_ADDR",
    "QUEEN_PEERS",
    "QUEEN_PEER_DNS",
    "QUEEN_PEER_DNS_REFRESH_MS",
    "QUEEN_NODE_ID",
    "QUEEN_MESH_SECRET",
    "QUEEN_CLUSTER_NAME",
    "QUEEN_RETENTION_INTERVAL_MS",
    "QUEEN_RETENTION_BATCH",
    "QUEEN_RETENTION_PAUSE_MS",
    "QUEEN_RETENTION_SECS",
    "QUEEN_COMPLETED_RETENTION_SECS",
    "QUEEN_DEAD_LETTER_RETENTION_SECS",
    "QUEEN_TRACE_RETENTION_SECS",
    "QUEEN_EMPTY_PARTITION_IDLE_SECS",
    "QUEEN_IDLE_GROUP_SECS",
    "QUEEN_GROUP_IDLE_STOP_MS",
    "QUEEN_MESH_INSECURE",
    "QUEEN_PG_SSLMODE",
    "QUEEN_PG_SSL_ROOT_CERT",
    "JWT_ENABLED",
    "JWT_ALGORITHM",
    "JWT_SECRET",
    "JWT_PUBLIC_KEY",
    "JWT_JWKS_URL",
    "JWT_ISSUER",
    "JWT_AUDIENCE",
    "JWT_CLOCK_SKEW",
    "JWT_SKIP_PATHS",
    "QUEEN_JWT_ROLE_CLAIM",
    "QUEEN_JWT_ROLES_CLAIM",
    "QUEEN_JWT_TENANT_CLAIM",
    "QUEEN_JWT_REQUIRE_TENANT",
    "QUEEN_TENANT_MAX_QUEUES",
    "QUEEN_TENANT_MAX_PARTITIONS_PER_QUEUE",
    "QUEEN_TENANT_MAX_CONSUMER_GROUPS",
    "QUEEN_TENANT_MAX_POP_BATCH",
    "QUEEN_TENANT_MAX_POP_TIMEOUT_MS",
    "RUST_LOG",
];

#[cfg(test)]
mod tests {
    use super::KNOWN_VARS;
    use crate::config::Config;

    /// Each listed variable other than the free-form ones is really parsed: a value no rule
    /// accepts is refused naming it (free-form ones take any string, and `RUST_LOG` is the
    /// log filter's).
    #[test]
    fn every_known_variable_with_a_rule_refuses_a_bad_value_by_name() {
        let free_form = [
            "DATABASE_URL",
            "PG_HOST",
            "PG_USER",
            "PG_PASSWORD",
            "PG_DB",
            "QUEEN_DATA_DIR",
            "QUEEN_PG_BIN_DIR",
            "FILE_BUFFER_DIR",
            "QUEEN_NODE_ID",
            "QUEEN_MESH_SECRET",
            "QUEEN_CLUSTER_NAME",
            "QUEEN_PG_SSL_ROOT_CERT",
            "JWT_SECRET",
            "JWT_PUBLIC_KEY",
            "JWT_JWKS_URL",
            "JWT_ISSUER",
            "JWT_AUDIENCE",
            "JWT_SKIP_PATHS",
            "QUEEN_JWT_ROLE_CLAIM",
            "QUEEN_JWT_ROLES_CLAIM",
            "QUEEN_JWT_TENANT_CLAIM",
            "RUST_LOG",
        ];
        for name in KNOWN_VARS.iter().filter(|n| !free_form.contains(n)) {
            // PG_PORT is read only with an external server, the embedded settings without.
            let refused = [
                vec![(*name, "not valid!")],
                vec![("PG_HOST", "db"), (*name, "not valid!")],
            ]
            .into_iter()
            .filter_map(|vars| Config::from_vars(vars).err())
            .any(|err| err.to_string().contains(name));
            assert!(refused, "{name} accepted a bad value");
        }
    }
}
