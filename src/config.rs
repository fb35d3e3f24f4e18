//! The broker's settings: one typed tree read from environment-style key/value pairs.
//!
//! `main` reads the process environment once and hands the pairs to [`Config::from_vars`];
//! tests build configs from literal pairs and never touch the environment. Every variable,
//! its default and its rule are listed here and in the README's configuration table;
//! [`KNOWN_VARS`] names them all.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

mod auth;
mod ephemeral;
mod known;
mod limits;
mod mesh;
mod pg_tls;
mod retention;
mod spool;

pub use auth::{AuthConfig, JwksSource, JwtAlgorithm, DEFAULT_SKIP_PATHS};
pub use ephemeral::EphemeralConfig;
pub use known::KNOWN_VARS;
pub use limits::LimitsConfig;
pub use mesh::{MeshConfig, PeerAddress};
pub use pg_tls::{PgSslMode, PgTlsConfig};
pub use retention::RetentionConfig;
pub use spool::SpoolConfig;

/// A setting that was refused at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A variable whose value breaks its rule.
    #[error("{name}={value:?} is invalid: {rule}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// The value as given.
        value: String,
        /// What the value must be.
        rule: &'static str,
    },
}

/// A value whose debug output is masked (passwords).
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "\"***\"" })
    }
}

/// Everything the broker reads at start-up.
#[derive(Debug, Clone)]
pub struct Config {
    /// The HTTP listener.
    pub http: HttpConfig,
    /// Where PostgreSQL is and how the pool talks to it.
    pub database: DatabaseConfig,
    /// Pop defaults and the long-poll backoff.
    pub pop: PopConfig,
    /// Push encoding.
    pub push: PushConfig,
    /// Log output.
    pub log: LogConfig,
    /// The peer mesh: identity, port, peers.
    pub mesh: MeshConfig,
    /// The retention sweeper and the letting go of idle state.
    pub retention: RetentionConfig,
    /// Who may call which route: JWT authentication and roles.
    pub auth: AuthConfig,
    /// The push spool: where pushes wait while PostgreSQL is away.
    pub spool: SpoolConfig,
    /// What one tenant may create and ask for.
    pub limits: LimitsConfig,
    /// How much ephemeral queue contents this node may hold.
    pub ephemeral: EphemeralConfig,
}

/// The HTTP listener.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// `QUEEN_BIND_ADDR` (default `127.0.0.1`) and `PORT` (default 6632).
    pub bind: SocketAddr,
    /// `QUEEN_HTTP_WORKERS`: actix-web worker threads (default: the number of cores).
    pub workers: usize,
    /// `QUEEN_MAX_BODY_BYTES`: largest accepted request body (default 64 MiB).
    pub max_body_bytes: usize,
    /// `QUEEN_HTTP_MAX_CONNECTIONS`: open connections each worker serves at most (actix's
    /// default, 25,000); past it the worker stops accepting. Idle consumers each hold one,
    /// parked in a long-poll, so a node serving more raises it (README, "Parked long-polls").
    pub max_connections_per_worker: usize,
    /// `QUEEN_HTTP2`: also serve HTTP/2 over cleartext, prior knowledge (h2c), on the same
    /// port (default on; HTTP/1.1 clients see no change). Many long-polls then share one
    /// connection, and a parked pop costs a stream instead of a connection; a pop whose
    /// client resets its stream or closes the connection is dropped as over HTTP/1.1 (the
    /// patch in `vendor/actix-http/PATCHES.md`; README, "Parked long-polls").
    pub http2: bool,
}

/// Where PostgreSQL is and how the pool talks to it.
#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    /// External server, or the embedded default.
    pub source: DatabaseSource,
    /// `DB_POOL_SIZE`: pooled connections (default 20).
    pub pool_size: u32,
    /// `QUEEN_DB_WORKER_CONNECTIONS`: of those, how many each HTTP worker keeps on its own
    /// thread, so a request's queries never wake another thread (0: none; default half the
    /// pool split among the workers, at most 4 each). At least one connection stays shared.
    pub worker_connections: u32,
    /// `QUEEN_POOL_TIMEOUT_MS`: how long a request waits for a pooled connection before it
    /// is answered `500 {"error":"pool"}` (default 5000).
    pub pool_timeout: Duration,
    /// `QUEEN_STATEMENT_TIMEOUT_MS`: server-side statement timeout (default 30000).
    pub statement_timeout: Duration,
    /// TLS to an external server (`QUEEN_PG_SSLMODE`, `QUEEN_PG_SSL_ROOT_CERT`).
    pub tls: PgTlsConfig,
    /// `QUEEN_CITUS`: lay the schema out for Citus (`true`: a database without the
    /// extension is refused; unset or `false`: plain tables, since the layout does not
    /// serve every path yet). See src/db/schema/citus.rs.
    pub citus: Option<bool>,
}

/// Which PostgreSQL the broker uses.
#[derive(Debug, Clone)]
pub enum DatabaseSource {
    /// A private cluster the broker creates and runs itself (no database settings given).
    Embedded(EmbeddedSettings),
    /// A server given by `DATABASE_URL` or the `PG_*` variables.
    External(ExternalSettings),
}

/// The embedded PostgreSQL default.
#[derive(Debug, Clone)]
pub struct EmbeddedSettings {
    /// `QUEEN_DATA_DIR`: the broker's data folder (default `./queen-data`).
    pub data_dir: PathBuf,
    /// `QUEEN_EMBEDDED_PG_PORT`: names the Unix socket of the private cluster (default 5433;
    /// it never listens on TCP).
    pub port: u16,
    /// `QUEEN_PG_BIN_DIR`: where `initdb`/`pg_ctl` live, when not found automatically.
    pub bin_dir: Option<PathBuf>,
}

/// An external PostgreSQL server.
#[derive(Debug, Clone)]
pub enum ExternalSettings {
    /// `DATABASE_URL`, a libpq URL or key/value string.
    Url(Secret),
    /// `PG_HOST`, `PG_PORT` (5432), `PG_USER` (postgres), `PG_PASSWORD`, `PG_DB` (postgres).
    Parts {
        /// Host name, address, or Unix socket directory.
        host: String,
        /// TCP port.
        port: u16,
        /// User name.
        user: String,
        /// Password.
        password: Secret,
        /// Database name.
        dbname: String,
    },
    /// A connection config built by code (tests, or a program embedding the broker).
    Given(Box<tokio_postgres::Config>),
}

/// Pop defaults and the long-poll backoff of the seed.
#[derive(Debug, Clone)]
pub struct PopConfig {
    /// `DEFAULT_TIMEOUT`: long-poll deadline when a pop gives none, ms (default 30000).
    pub default_timeout: Duration,
    /// `POP_WAIT_INITIAL_INTERVAL_MS` (default 100).
    pub wait_initial: Duration,
    /// `POP_WAIT_BACKOFF_THRESHOLD`: re-polls at the initial interval (default 3).
    pub backoff_threshold: u32,
    /// `POP_WAIT_BACKOFF_MULTIPLIER` (default 2).
    pub backoff_multiplier: f64,
    /// `POP_WAIT_MAX_INTERVAL_MS` (default 1000).
    pub wait_max: Duration,
    /// `QUEEN_HOTLIST`: candidates from the group actors' hot-list rings (default on);
    /// `0`/`false`/`off` selects the legacy SQL candidate scan.
    pub hotlist: bool,
    /// `QUEEN_ACK_SYNC_COMMIT`: whether acks wait for the WAL flush; unset (`None`), the
    /// layout decides ([`PopConfig::acks_wait`]). Off, an ack's commit returns before its WAL
    /// reaches the disk, as a leased pop's does: a PostgreSQL crash in the moment after an
    /// ack can only make those messages come again, which an expired lease does anyway.
    /// Acks inside a transaction bundle always wait (the bundle's pushes must).
    pub ack_sync_commit: Option<bool>,
    /// `QUEEN_HOTLIST_RESEED_MS`: how often a group actor refreshes its ring and the queue's
    /// deferral settings from SQL (default 5000). It bounds how long a push that reached no
    /// actor of this node (another node's push without a mesh) waits for a ring.
    pub reseed_every: Duration,
}

impl PopConfig {
    /// Whether an ack outside a transaction bundle waits for its WAL flush:
    /// `QUEEN_ACK_SYNC_COMMIT` when set, else only on the Citus layout (`distributed`).
    /// There a shard move loses an asynchronous commit of its last moments (the move's
    /// final catch-up waits for the old worker's WAL written so far, docs/scale-out.md,
    /// "Adding a worker under load"), and a lost ack brings back messages whose ack was
    /// answered as done; moving shards is routine there, not a crash.
    pub fn acks_wait(&self, distributed: bool) -> bool {
        self.ack_sync_commit.unwrap_or(distributed)
    }
}

/// Push encoding.
#[derive(Debug, Clone)]
pub struct PushConfig {
    /// `QUEEN_MAX_PUSH_MESSAGES` and `QUEEN_MAX_PUSH_PARTITIONS`: what one push request (or
    /// a transaction's pushes) may hold and create (defaults 100,000 messages and 1,000
    /// distinct queue partitions); over either is a 400.
    pub limits: crate::domain::PushLimits,
    /// `QUEEN_ZSTD_LEVEL`: compression level of segments (default 1: WAL bytes matter, and
    /// level 1 keeps the broker's CPU per message low).
    pub zstd_level: i32,
    /// `QUEEN_ENCRYPTION_KEY`: 64 hex digits (32 bytes), the AES-256-GCM key of queues with
    /// `encryptionEnabled`. Every node needs the same key; without one, such queues cannot
    /// be configured.
    pub payload_key: Option<crate::segment::PayloadKey>,
    /// `QUEEN_DEDUP_WINDOW_SECS`: how long a transaction id stays a duplicate in its
    /// partition for queues without `dedupWindowSeconds` (default 300, as SQS FIFO's five
    /// minutes; 0 turns dedup off for them).
    pub dedup_window_secs: i32,
    /// `QUEEN_DEDUP_MAX_ENTRIES`: transaction-id hashes the dedup windows hold in memory at
    /// most (default 4,000,000, about 150 MB); past it, the least recently pushed
    /// partitions' windows are read back from PostgreSQL on their next push.
    pub dedup_max_entries: usize,
    /// `QUEEN_PUSH_WRITERS`: push transactions written at once at most; pushes past them,
    /// and pushes to a partition being written, wait and share the next commit (default 8;
    /// 0: every push commits on its own).
    pub writers: usize,
    /// `QUEEN_PUSH_COMBINE_WINDOW_US`: how long a writer waits for more pushes after the
    /// first (default 0: it combines what arrived while the previous commit ran).
    pub combine_window: std::time::Duration,
    /// `QUEEN_TIMERS_LOOK_MS`: the longest the timers' fire loop sleeps between two looks at
    /// the earliest due time (default 150): how soon this node notices a timer another node
    /// scheduled, and what an idle node costs (one index lookup per look). A schedule on
    /// this node wakes it at its own due time whatever the setting.
    pub timers_look: std::time::Duration,
}

/// Log output (the filter itself is `RUST_LOG`, default `info`).
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `QUEEN_LOG_FORMAT`: `text` (default) or `json`.
    pub json: bool,
}

impl Config {
    /// Builds the config from key/value pairs (the process environment in production).
    pub fn from_vars<I, K, V>(vars: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars = Vars(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .filter(|(_, v)| !v.is_empty())
                .collect(),
        );
        let bind_ip: IpAddr = vars.parse(
            "QUEEN_BIND_ADDR",
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            "an IP address",
        )?;
        let port: u16 = vars.parse("PORT", 6632, "a TCP port")?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let workers: usize = vars.positive("QUEEN_HTTP_WORKERS", cores)?;
        let pool_size: u32 = vars.positive("DB_POOL_SIZE", 20)?;
        let worker_connections = worker_connections(&vars, workers, pool_size)?;
        Ok(Config {
            http: HttpConfig {
                bind: SocketAddr::new(bind_ip, port),
                workers,
                max_body_bytes: vars.positive("QUEEN_MAX_BODY_BYTES", 64 * 1024 * 1024)?,
                max_connections_per_worker: vars.positive("QUEEN_HTTP_MAX_CONNECTIONS", 25_000)?,
                http2: vars.flag("QUEEN_HTTP2", true)?,
            },
            database: DatabaseConfig {
                source: database_source(&vars)?,
                pool_size,
                worker_connections,
                pool_timeout: vars.millis("QUEEN_POOL_TIMEOUT_MS", 5_000)?,
                statement_timeout: vars.millis("QUEEN_STATEMENT_TIMEOUT_MS", 30_000)?,
                tls: pg_tls::pg_tls_config(&vars)?,
                citus: vars.optional("QUEEN_CITUS", Vars::flag)?,
            },
            pop: PopConfig {
                default_timeout: vars.millis("DEFAULT_TIMEOUT", 30_000)?,
                wait_initial: vars.millis("POP_WAIT_INITIAL_INTERVAL_MS", 100)?,
                backoff_threshold: vars.parse("POP_WAIT_BACKOFF_THRESHOLD", 3, "a whole number")?,
                backoff_multiplier: vars.parse("POP_WAIT_BACKOFF_MULTIPLIER", 2.0, "a number")?,
                wait_max: vars.millis("POP_WAIT_MAX_INTERVAL_MS", 1_000)?,
                hotlist: vars.switch("QUEEN_HOTLIST", true)?,
                ack_sync_commit: vars.optional("QUEEN_ACK_SYNC_COMMIT", Vars::switch)?,
                reseed_every: vars.millis("QUEEN_HOTLIST_RESEED_MS", 5_000)?,
            },
            push: PushConfig {
                limits: crate::domain::PushLimits {
                    max_messages: vars.positive(
                        "QUEEN_MAX_PUSH_MESSAGES",
                        crate::domain::PushLimits::DEFAULT.max_messages,
                    )?,
                    max_partitions: vars.positive(
                        "QUEEN_MAX_PUSH_PARTITIONS",
                        crate::domain::PushLimits::DEFAULT.max_partitions,
                    )?,
                },
                zstd_level: vars.parse("QUEEN_ZSTD_LEVEL", 1, "a zstd level (1-19)")?,
                dedup_window_secs: {
                    let rule = "whole seconds, 0 to 604800";
                    let secs: u32 = vars.parse("QUEEN_DEDUP_WINDOW_SECS", 300, rule)?;
                    i32::try_from(secs)
                        .ok()
                        .filter(|s| *s <= 604_800)
                        .ok_or_else(|| ConfigError::Invalid {
                            name: "QUEEN_DEDUP_WINDOW_SECS",
                            value: secs.to_string(),
                            rule,
                        })?
                },
                writers: vars.parse("QUEEN_PUSH_WRITERS", 8, "a whole number of writers")?,
                combine_window: std::time::Duration::from_micros(vars.parse(
                    "QUEEN_PUSH_COMBINE_WINDOW_US",
                    0,
                    "whole microseconds",
                )?),
                timers_look: vars.millis("QUEEN_TIMERS_LOOK_MS", 150)?,
                dedup_max_entries: vars.parse(
                    "QUEEN_DEDUP_MAX_ENTRIES",
                    4_000_000,
                    "a count of transaction ids",
                )?,
                payload_key: match vars.get("QUEEN_ENCRYPTION_KEY") {
                    None => None,
                    Some(hex) => Some(crate::segment::PayloadKey::from_hex(hex).map_err(|_| {
                        ConfigError::Invalid {
                            name: "QUEEN_ENCRYPTION_KEY",
                            value: "***".to_owned(),
                            rule: "64 hexadecimal digits (32 bytes)",
                        }
                    })?),
                },
            },
            log: LogConfig {
                json: match vars.get("QUEEN_LOG_FORMAT").unwrap_or("text") {
                    "text" => false,
                    "json" => true,
                    other => {
                        return Err(ConfigError::Invalid {
                            name: "QUEEN_LOG_FORMAT",
                            value: other.to_owned(),
                            rule: "text or json",
                        })
                    }
                },
            },
            mesh: mesh::mesh_config(&vars, bind_ip)?,
            retention: retention::retention_config(&vars)?,
            auth: auth::auth_config(&vars)?,
            spool: spool::spool_config(&vars)?,
            limits: limits::limits_config(&vars)?,
            ephemeral: ephemeral::ephemeral_config(&vars)?,
        })
    }
}

fn database_source(vars: &Vars) -> Result<DatabaseSource, ConfigError> {
    if let Some(url) = vars.get("DATABASE_URL") {
        return Ok(DatabaseSource::External(ExternalSettings::Url(
            Secret::new(url),
        )));
    }
    if let Some(host) = vars.get("PG_HOST") {
        return Ok(DatabaseSource::External(ExternalSettings::Parts {
            host: host.to_owned(),
            port: vars.parse("PG_PORT", 5432, "a TCP port")?,
            user: vars.get("PG_USER").unwrap_or("postgres").to_owned(),
            password: Secret::new(vars.get("PG_PASSWORD").unwrap_or_default()),
            dbname: vars.get("PG_DB").unwrap_or("postgres").to_owned(),
        }));
    }
    Ok(DatabaseSource::Embedded(EmbeddedSettings {
        data_dir: PathBuf::from(vars.get("QUEEN_DATA_DIR").unwrap_or("./queen-data")),
        port: vars.parse("QUEEN_EMBEDDED_PG_PORT", 5433, "a port number")?,
        bin_dir: vars.get("QUEEN_PG_BIN_DIR").map(PathBuf::from),
    }))
}

/// `QUEEN_DB_WORKER_CONNECTIONS`, checked against the pool it is taken from.
fn worker_connections(vars: &Vars, workers: usize, pool_size: u32) -> Result<u32, ConfigError> {
    let workers = u32::try_from(workers).unwrap_or(u32::MAX);
    let default = (pool_size / workers.saturating_mul(2)).min(4);
    let per_worker: u32 = vars.parse("QUEEN_DB_WORKER_CONNECTIONS", default, "a whole number")?;
    if per_worker.saturating_mul(workers) >= pool_size {
        return Err(ConfigError::Invalid {
            name: "QUEEN_DB_WORKER_CONNECTIONS",
            value: per_worker.to_string(),
            rule: "times QUEEN_HTTP_WORKERS, less than DB_POOL_SIZE",
        });
    }
    Ok(per_worker)
}

struct Vars(HashMap<String, String>);

impl Vars {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    fn parse<T: std::str::FromStr>(
        &self,
        name: &'static str,
        default: T,
        rule: &'static str,
    ) -> Result<T, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => raw.trim().parse().map_err(|_| ConfigError::Invalid {
                name,
                value: raw.to_owned(),
                rule,
            }),
        }
    }

    /// A switch: `1`/`true`/`on` or `0`/`false`/`off`, any case.
    fn flag(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("1" | "true" | "on" | "yes") => Ok(true),
            Some("0" | "false" | "off" | "no") => Ok(false),
            Some(_) => Err(ConfigError::Invalid {
                name,
                value: self.get(name).unwrap_or_default().to_owned(),
                rule: "1/true/on or 0/false/off",
            }),
        }
    }

    fn positive<T>(&self, name: &'static str, default: T) -> Result<T, ConfigError>
    where
        T: std::str::FromStr + PartialOrd + Default,
    {
        let value = self.parse(name, default, "a positive whole number")?;
        if value <= T::default() {
            return Err(ConfigError::Invalid {
                name,
                value: self.get(name).unwrap_or_default().to_owned(),
                rule: "a positive whole number",
            });
        }
        Ok(value)
    }

    /// An on/off setting: `1`/`true`/`on` or `0`/`false`/`off` (any case).
    fn switch(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("1" | "true" | "on") => Ok(true),
            Some("0" | "false" | "off") => Ok(false),
            Some(other) => Err(ConfigError::Invalid {
                name,
                value: other.to_owned(),
                rule: "1/true/on or 0/false/off",
            }),
        }
    }

    /// A setting whose absence means something of its own: `None` when `name` is unset,
    /// else what `read` makes of it.
    fn optional<T>(
        &self,
        name: &'static str,
        read: fn(&Self, &'static str, T) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError>
    where
        T: Default,
    {
        self.get(name)
            .map(|_| read(self, name, T::default()))
            .transpose()
    }

    fn millis(&self, name: &'static str, default: u64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.parse(
            name,
            default,
            "a whole number of milliseconds",
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_database_settings_means_the_embedded_default_on_loopback() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert!(matches!(
            config.database.source,
            DatabaseSource::Embedded(_)
        ));
        assert_eq!(config.http.bind, "127.0.0.1:6632".parse().unwrap());
        assert_eq!(config.pop.wait_initial, Duration::from_millis(100));
        assert_eq!(config.pop.default_timeout, Duration::from_secs(30));
    }

    #[test]
    fn database_url_wins_over_the_parts_and_the_password_is_masked() {
        let config = Config::from_vars([
            ("DATABASE_URL", "postgres://u:hunter2@db/queen"),
            ("PG_HOST", "other"),
        ])
        .unwrap();
        assert!(matches!(
            config.database.source,
            DatabaseSource::External(ExternalSettings::Url(_))
        ));
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn a_bad_value_names_the_variable_and_the_rule() {
        let err = Config::from_vars([("PORT", "http")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("PORT") && err.contains("TCP port"), "{err}");
        assert!(Config::from_vars([("DB_POOL_SIZE", "0")]).is_err());
        let pool = |vars: &[(&str, &str)]| {
            Config::from_vars(vars.iter().copied()).map(|c| c.database.worker_connections)
        };
        let two = [("QUEEN_HTTP_WORKERS", "2")];
        assert_eq!(pool(&two).ok(), Some(4));
        assert_eq!(pool(&[two[0], ("DB_POOL_SIZE", "64")]).ok(), Some(4));
        assert_eq!(pool(&[two[0], ("DB_POOL_SIZE", "7")]).ok(), Some(1));
        assert_eq!(pool(&[two[0], ("DB_POOL_SIZE", "3")]).ok(), Some(0));
        assert_eq!(
            pool(&[two[0], ("QUEEN_DB_WORKER_CONNECTIONS", "9")]).ok(),
            Some(9)
        );
        assert!(pool(&[two[0], ("QUEEN_DB_WORKER_CONNECTIONS", "10")]).is_err());
        assert!(Config::from_vars([("QUEEN_LOG_FORMAT", "xml")]).is_err());
    }

    #[test]
    fn queen_citus_unset_stays_unset_and_set_takes_yes_and_no_too() {
        let citus = |vars: &[(&str, &str)]| {
            Config::from_vars(vars.iter().copied()).map(|c| c.database.citus)
        };
        assert_eq!(citus(&[]).unwrap(), None);
        assert_eq!(citus(&[("QUEEN_CITUS", "yes")]).unwrap(), Some(true));
        assert_eq!(citus(&[("QUEEN_CITUS", "off")]).unwrap(), Some(false));
        assert!(citus(&[("QUEEN_CITUS", "maybe")]).is_err());
    }

    #[test]
    fn acks_wait_on_the_citus_layout_unless_the_operator_says_otherwise() {
        let pop = |vars: &[(&str, &str)]| Config::from_vars(vars.iter().copied()).unwrap().pop;
        let unset = pop(&[]);
        assert!(!unset.acks_wait(false));
        assert!(unset.acks_wait(true));
        let off = pop(&[("QUEEN_ACK_SYNC_COMMIT", "false")]);
        assert!(!off.acks_wait(false) && !off.acks_wait(true));
        let on = pop(&[("QUEEN_ACK_SYNC_COMMIT", "on")]);
        assert!(on.acks_wait(false) && on.acks_wait(true));
        assert!(Config::from_vars([("QUEEN_ACK_SYNC_COMMIT", "sometimes")]).is_err());
    }
}
