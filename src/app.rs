//! Wiring only: start or connect to PostgreSQL, build the pool, apply the schema, start the
//! group actors' arbiter, the maintenance refresher and the peer mesh, serve HTTP, and hand
//! back a handle with the bound addresses and a stop function.

use std::net::{SocketAddr, TcpListener};
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use actix::Arbiter;
use actix_web::dev::ServerHandle;
use actix_web::middleware::from_fn;
use actix_web::{web, App as ActixApp, HttpServer};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::actors::registry::Registry;
use crate::auth::Verifier;
use crate::broker::Broker;
use crate::config::{Config, DatabaseSource, EmbeddedSettings, ExternalSettings};
use crate::db::embedded::{EmbeddedError, EmbeddedOptions, EmbeddedPostgres};
use crate::db::{schema, Db, DbError, PoolShape};
use crate::http::front;
use crate::http::gate::Gate;
use crate::http::routes::routes;
use crate::http::state::AppState;
use crate::limiter::Limiter;
use crate::log::push::combiner::{CombineConfig, PushCombiner};
use crate::log::push::window::DedupWindows;
use crate::maintenance;
use crate::mesh::inbox::BrokerInbox;
use crate::mesh::Mesh;
use crate::metrics::Metrics;
use crate::retention;

/// Name of the database the broker uses inside its embedded cluster.
const EMBEDDED_DATABASE: &str = "queen";
/// Superuser the embedded cluster is created with.
const EMBEDDED_USER: &str = "queen";
/// Server settings the embedded cluster starts with.
///
/// `wal_writer_flush_after = 0`: leased pops and acks commit without waiting for the WAL
/// flush (README, "Leased pops and acks commit without waiting"). With the default (1MB)
/// the WAL writer writes their WAL out but flushes it only every `wal_writer_delay` or
/// megabyte; until it does, the flushed point lags a page or more behind, and every such
/// commit wakes the WAL writer with a signal (`XLogSetAsyncXactLSN`): one `kill` a
/// commit, about 6 % of the backends' CPU in a pop+ack drain at batch 10. With 0
/// the WAL writer flushes whenever it writes, so a commit wakes it only once a new page
/// has filled. Commits that wait for the flush (pushes) are unaffected.
pub const EMBEDDED_SERVER_SETTINGS: [(&str, &str); 3] = [
    ("max_connections", "200"),
    ("shared_buffers", "256MB"),
    ("wal_writer_flush_after", "0"),
];
/// How long a graceful stop waits for in-flight requests.
const HTTP_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client may take to send a request's head before it is answered 408. actix's
/// 5 s default turned into 408s for acks from busy consumers on a loaded machine; a broker
/// behind a load balancer does not need a tight bound here.
const HTTP_REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The embedded PostgreSQL could not be created or started.
    #[error("embedded postgres failed")]
    Embedded(#[from] EmbeddedError),
    /// `DATABASE_URL` could not be parsed.
    #[error("DATABASE_URL is not a valid PostgreSQL connection string")]
    DatabaseUrl(#[source] tokio_postgres::Error),
    /// The database refused us, or the schema failed to apply.
    #[error("database unavailable")]
    Db(#[from] DbError),
    /// The HTTP listener could not be set up.
    #[error("http listener failed")]
    Http(#[source] std::io::Error),
    /// The mesh port could not be bound.
    #[error("mesh listener failed on {addr}")]
    Mesh {
        /// The address from `QUEEN_MESH_BIND_ADDR` and `QUEEN_MESH_PORT`.
        addr: SocketAddr,
        /// Why the bind failed.
        #[source]
        source: std::io::Error,
    },
    /// The database TLS settings could not be used.
    #[error("database TLS settings unusable")]
    Tls(#[from] crate::db::tls::TlsError),
    /// The JWT keys could not be read.
    #[error("authentication settings unusable")]
    Auth(#[from] crate::auth::AuthSetupError),
    /// `FILE_BUFFER_DIR` was given and cannot be used as the push spool.
    #[error("push spool folder {dir} unusable")]
    Spool {
        /// The folder.
        dir: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A blocking start-up task panicked or was cancelled.
    #[error("start-up task failed")]
    Task(#[source] tokio::task::JoinError),
}

/// A running broker.
pub struct App {
    http_addr: SocketAddr,
    mesh_addr: SocketAddr,
    mesh: Mesh,
    broker: Arc<Broker>,
    server: ServerHandle,
    server_task: tokio::task::JoinHandle<std::io::Result<()>>,
    refresher: tokio::task::JoinHandle<()>,
    /// Follows the mesh members for the ephemeral engine (`ephemeral::serve`).
    follower: tokio::task::JoinHandle<()>,
    sweeper: tokio::task::JoinHandle<()>,
    sweeper_id: String,
    fire_loop: tokio::task::JoinHandle<()>,
    replay: Option<tokio::task::JoinHandle<()>>,
    actors: Arbiter,
    embedded: Option<EmbeddedPostgres>,
}

impl App {
    /// Where HTTP is served.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where peers connect (the mesh port).
    pub fn mesh_addr(&self) -> SocketAddr {
        self.mesh_addr
    }

    /// Stops HTTP (in-flight requests finish, within a bound), then the embedded
    /// PostgreSQL if this broker started it.
    pub async fn stop(self) {
        // Readiness turns false and parked pops answer now, before HTTP stops accepting.
        self.broker.draining.cancel();
        self.broker.registry.drain_started();
        self.server.stop(true).await;
        let _ = self.server_task.await;
        self.refresher.abort();
        self.follower.abort();
        if let Some(replay) = self.replay {
            replay.abort();
            let _ = replay.await;
        }
        if let Some(spool) = &self.broker.spool {
            spool.close();
        }
        self.sweeper.abort();
        let _ = self.sweeper.await;
        // A fire stopped here rolls back: its timers stay for the next node.
        self.fire_loop.abort();
        let _ = self.fire_loop.await;
        retention::release(&self.broker, &self.sweeper_id).await;
        self.mesh.stop();
        self.actors.stop();
        if let Some(mut pg) = self.embedded {
            let stopped = tokio::task::spawn_blocking(move || pg.stop()).await;
            if let Ok(Err(error)) = stopped {
                tracing::warn!(error = %error, "embedded postgres did not stop cleanly");
            }
        }
        info!("broker stopped");
    }
}

/// Starts the broker on an already-bound listener (port 0 in tests).
pub async fn start(config: Config, listener: TcpListener) -> Result<App, StartupError> {
    // Keys first: a broker that could not check tokens must not start anything.
    let gate = match config.auth.enabled {
        false => None,
        true => {
            let verifier = Verifier::new(&config.auth).await?;
            info!(algorithm = ?config.auth.algorithm, "jwt authentication on");
            Some(Arc::new(Gate::new(
                verifier,
                config.auth.skip_paths.clone(),
                config.auth.require_tenant,
            )))
        }
    };
    let (mut pg_config, embedded) = database(&config).await?;
    let tls = crate::db::tls::connector(&config.database.tls)?;
    if embedded.is_none() {
        let mode = crate::db::tls::ssl_mode(&config.database.tls, pg_config.get_ssl_mode());
        pg_config.ssl_mode(mode);
    }
    let db = Db::connect(
        pg_config,
        tls,
        PoolShape {
            size: config.database.pool_size,
            workers: config.http.workers,
            per_worker: config.database.worker_connections,
        },
        config.database.pool_timeout,
        config.database.statement_timeout,
        &config.limits.session_settings(),
    )
    .await?;
    {
        let mut conn = db.conn().await?;
        schema::install(conn.client(), config.database.citus).await?;
        db.set_distributed(schema::citus::laid_out(conn.client()).await?);
    }

    let mesh_listener = bind_mesh(config.mesh.bind).await?;
    let mesh_addr = mesh_listener
        .local_addr()
        .map_err(|source| StartupError::Mesh {
            addr: config.mesh.bind,
            source,
        })?;
    let mesh = Mesh::start(config.mesh.clone());

    let spool = open_spool(&config).await?;
    let metrics = Arc::new(Metrics::default());
    let actors = Arbiter::new();
    let registry = Registry::new(
        actors.handle(),
        metrics.clone(),
        config.pop.hotlist,
        config.pop.reseed_every,
        config.retention.actor_idle_stop,
    );
    let pool_size = config.database.pool_size as usize;
    let broker = Arc::new_cyclic(|this| Broker {
        db,
        limiter: Limiter::new(pool_size, 2.min(pool_size), pool_size),
        registry,
        metrics,
        maintenance: AtomicBool::new(false),
        push_maintenance: AtomicBool::new(false),
        maintenance_changes: Default::default(),
        spool: spool.clone(),
        config: Arc::new(config.clone()),
        mesh: mesh.clone(),
        draining: CancellationToken::new(),
        timers: Default::default(),
        ephemeral: Arc::new(crate::ephemeral::Ephemeral::new(config.ephemeral.max_bytes)),
        this: this.clone(),
        encrypted_queues: Default::default(),
        dedup: Arc::new(DedupWindows::new(config.push.dedup_max_entries)),
        known_partitions: Default::default(),
        leases: Default::default(),
        push_combiner: PushCombiner::new(CombineConfig {
            writers: config.push.writers,
            window: config.push.combine_window,
        }),
    });
    mesh.listen(
        mesh_listener,
        Arc::new(BrokerInbox(Arc::downgrade(&broker))),
    );
    info!(addr = %mesh_addr, node_id = %config.mesh.node_id, "mesh listening");
    let refresher = maintenance::spawn_refresher(broker.clone());
    let follower = crate::ephemeral::serve::spawn_follower(&broker);
    let replay = spool.map(|spool| crate::log::spool::replay::spawn(broker.clone(), spool));
    let sweeper_id = format!("{}/{}", config.mesh.node_id, uuid::Uuid::new_v4());
    let sweeper = retention::spawn(broker.clone(), sweeper_id.clone());
    let fire_loop = crate::timers::spawn(broker.clone());
    let state = AppState {
        broker: broker.clone(),
        gate,
    };
    let http_addr = listener.local_addr().map_err(StartupError::Http)?;
    let worker_slots = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = HttpServer::new(move || {
        state
            .broker
            .db
            .bind_worker(worker_slots.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        state.broker.registry.adopt_worker_thread();
        ActixApp::new()
            .app_data(web::Data::new(state.clone()))
            .wrap(from_fn(front::front))
            .configure(routes)
    })
    // A client that closes its connection ends its request: actix then drops the handler's
    // future, so a parked pop leaves without claiming and lent candidates go back to the
    // ring (the default, half-closed connections allowed, would run it to its deadline).
    .h1_allow_half_closed(false)
    // Replies go out as soon as they are written. An HTTP/2 reply is a HEADERS and a DATA
    // frame in two writes; with Nagle's algorithm on, the second waits for the client's
    // delayed ACK of the first (about 40 ms on Linux), which was the whole wake latency of
    // a push into a parked HTTP/2 pop (README, "Parked long-polls").
    .tcp_nodelay(true)
    .client_request_timeout(HTTP_REQUEST_HEAD_TIMEOUT)
    .workers(config.http.workers)
    .max_connections(config.http.max_connections_per_worker)
    .shutdown_timeout(HTTP_SHUTDOWN_TIMEOUT.as_secs())
    .disable_signals();
    // HTTP/2 prior knowledge beside HTTP/1.1: actix peeks at the connection's first bytes
    // for the HTTP/2 preface (README, "Parked long-polls").
    let server = match config.http.http2 {
        true => server.listen_auto_h2c(listener),
        false => server.listen(listener),
    }
    .map_err(StartupError::Http)?
    .run();
    let handle = server.handle();
    let server_task = tokio::spawn(server);
    info!(addr = %http_addr, "http listening");
    Ok(App {
        http_addr,
        mesh_addr,
        mesh,
        broker,
        server: handle,
        server_task,
        refresher,
        follower,
        sweeper,
        sweeper_id,
        fire_loop,
        replay,
        actors,
        embedded,
    })
}

/// Opens the push spool (its recovery reads what earlier runs left). A folder given by
/// `FILE_BUFFER_DIR` that cannot be used stops the start; the default one only turns the
/// spool off, with an error in the log.
async fn open_spool(
    config: &Config,
) -> Result<Option<Arc<crate::log::spool::Spool>>, StartupError> {
    if !config.spool.enabled() {
        info!("push spool off (FILE_BUFFER_MAX_BYTES=0)");
        return Ok(None);
    }
    let settings = config.spool.clone();
    let opened = tokio::task::spawn_blocking(move || crate::log::spool::Spool::open(&settings))
        .await
        .map_err(StartupError::Task)?;
    let dir = config.spool.dir.clone();
    match opened {
        Ok(spool) => {
            info!(dir = %dir.display(), max_bytes = config.spool.max_bytes, "push spool ready");
            Ok(Some(Arc::new(spool)))
        }
        Err(source) if config.spool.dir_given => Err(StartupError::Spool { dir, source }),
        Err(error) => {
            tracing::error!(error = %error, dir = %dir.display(),
                "push spool off: its default folder cannot be used (set FILE_BUFFER_DIR); pushes during a database outage answer 503");
            Ok(None)
        }
    }
}

async fn bind_mesh(addr: SocketAddr) -> Result<tokio::net::TcpListener, StartupError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartupError::Mesh { addr, source })
}

async fn database(
    config: &Config,
) -> Result<(tokio_postgres::Config, Option<EmbeddedPostgres>), StartupError> {
    match &config.database.source {
        DatabaseSource::External(ExternalSettings::Url(url)) => Ok((
            tokio_postgres::Config::from_str(url.expose()).map_err(StartupError::DatabaseUrl)?,
            None,
        )),
        DatabaseSource::External(ExternalSettings::Parts {
            host,
            port,
            user,
            password,
            dbname,
        }) => {
            let mut pg = tokio_postgres::Config::new();
            pg.host(host).port(*port).user(user).dbname(dbname);
            if !password.expose().is_empty() {
                pg.password(password.expose());
            }
            Ok((pg, None))
        }
        DatabaseSource::External(ExternalSettings::Given(pg)) => Ok(((**pg).clone(), None)),
        DatabaseSource::Embedded(settings) => {
            let pg = start_embedded(settings.clone()).await?;
            ensure_database(&pg.pg_config("postgres"), EMBEDDED_DATABASE).await?;
            Ok((pg.pg_config(EMBEDDED_DATABASE), Some(pg)))
        }
    }
}

async fn start_embedded(settings: EmbeddedSettings) -> Result<EmbeddedPostgres, StartupError> {
    let options = EmbeddedOptions {
        data_dir: settings.data_dir,
        port: settings.port,
        user: EMBEDDED_USER.to_owned(),
        bin_dir: settings.bin_dir,
        server_settings: EMBEDDED_SERVER_SETTINGS
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
    };
    let pg = tokio::task::spawn_blocking(move || EmbeddedPostgres::start(options))
        .await
        .map_err(StartupError::Task)??;
    Ok(pg)
}

/// Creates `name` on the embedded cluster when it does not exist yet.
async fn ensure_database(admin: &tokio_postgres::Config, name: &str) -> Result<(), StartupError> {
    let (client, connection) = admin
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(DbError::Connect)?;
    let connection = tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .map_err(|e| DbError::query("ensure_database", e))?
        .is_some();
    if !exists {
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .map_err(|e| DbError::query("ensure_database", e))?;
    }
    drop(client);
    let _ = connection.await;
    Ok(())
}
