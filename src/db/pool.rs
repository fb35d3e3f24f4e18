//! The bb8 pool of tokio-postgres connections.
//!
//! The manager is ours rather than bb8-postgres's for one reason: a connection whose
//! statement hit the statement timeout must be dropped instead of going back to the pool
//! (the seed's quarantine), and only the manager's `has_broken` can decide that. Each
//! connection also caches its prepared statements so the hot path pays one round trip.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;
use tracing::warn;

use super::DbError;

mod worker_pools;

use worker_pools::WorkerPools;

/// A prepared statement's key: where its SQL text lives and how long it is. Two keys are
/// equal only for the same bytes, and a lookup costs the same for the claim's three
/// kilobytes of SQL as for one line: keyed by the text, every statement run hashed all of
/// it (in `perf` of a pop+ack drain at batch 10, a third of the broker's SipHash samples,
/// which were 1 % of all).
type SqlKey = (usize, usize);

fn sql_key(sql: &'static str) -> SqlKey {
    (sql.as_ptr() as usize, sql.len())
}

/// A pooled connection: the client, its prepared statements, and the quarantine flag.
pub struct PgConn {
    client: Client,
    statements: HashMap<SqlKey, Statement, foldhash::fast::FixedState>,
    quarantined: bool,
    /// A transaction opened by [`PgConn::begin`] and not ended yet.
    in_transaction: bool,
    /// The pool's [`Db::set_distributed`] flag.
    distributed: Arc<AtomicBool>,
}

impl PgConn {
    /// The underlying client.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Whether the schema is laid out for Citus (src/db/schema/citus.rs): the statements
    /// that Citus refuses on distributed tables are then not tried, and the functions that
    /// answer the same are called instead (docs/scale-out.md).
    pub fn distributed(&self) -> bool {
        self.distributed.load(Ordering::Relaxed)
    }

    /// Prepares `sql` once per connection and returns the cached statement afterwards.
    pub async fn statement(
        &mut self,
        op: &'static str,
        sql: &'static str,
    ) -> Result<Statement, DbError> {
        if let Some(statement) = self.statements.get(&sql_key(sql)) {
            return Ok(statement.clone());
        }
        let statement = self
            .client
            .prepare(sql)
            .await
            .map_err(|e| self.note(DbError::query(op, e)))?;
        self.statements.insert(sql_key(sql), statement.clone());
        Ok(statement)
    }

    /// Opens a transaction that [`PgConn::commit`] or [`PgConn::rollback`] ends. A
    /// connection that goes back to the pool with it still open (its holder was dropped
    /// mid-way: a client that left, an error) is discarded instead of reused, so its socket
    /// closes and PostgreSQL rolls the transaction back.
    pub async fn begin(&mut self) -> Result<(), DbError> {
        self.in_transaction = true;
        let begun = self.client.batch_execute("BEGIN").await;
        begun.map_err(|e| self.note(DbError::query("begin", e)))
    }

    /// Commits the transaction [`PgConn::begin`] opened.
    pub async fn commit(&mut self) -> Result<(), DbError> {
        let done = self.client.batch_execute("COMMIT").await;
        done.map_err(|e| self.note(DbError::query("commit", e)))?;
        self.in_transaction = false;
        Ok(())
    }

    /// Rolls back the transaction [`PgConn::begin`] opened.
    pub async fn rollback(&mut self) -> Result<(), DbError> {
        let done = self.client.batch_execute("ROLLBACK").await;
        done.map_err(|e| self.note(DbError::query("rollback", e)))?;
        self.in_transaction = false;
        Ok(())
    }

    /// Runs one statement as a transaction of its own, in one round trip and without
    /// `BEGIN` or `COMMIT`: outside a transaction block, PostgreSQL runs the statement's
    /// Bind and Execute in an implicit transaction that it commits at the Sync ending the
    /// request, before it sends ReadyForQuery; and tokio-postgres hands the rows over only
    /// once ReadyForQuery arrived (an error of the commit arrives before it, as this
    /// request's error). So rows returned here are committed (and flushed, under
    /// `synchronous_commit`), and a statement that fails leaves nothing. The session is
    /// outside any transaction before and after, so a caller dropped mid-way leaves nothing
    /// open on the connection: the statement still runs to its commit, and the next
    /// request queues behind it. An explicit `BEGIN` and `COMMIT` around it would add two
    /// simple queries for PostgreSQL to parse and run to every push commit.
    pub async fn query_alone(
        &mut self,
        op: &'static str,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, DbError> {
        let rows = self.client.query(statement, params).await;
        rows.map_err(|e| self.note(DbError::query(op, e)))
    }

    /// Records an error of a statement run on this connection; a timeout or a lost
    /// connection quarantines it so the pool drops it. Returns the error for `?`.
    pub fn note(&mut self, error: DbError) -> DbError {
        if error.poisons_connection() {
            self.quarantined = true;
        }
        error
    }
}

/// Opens connections for bb8.
#[derive(Clone)]
pub struct Manager {
    config: tokio_postgres::Config,
    /// Used only when the config's `sslmode` asks for TLS (see `super::tls`).
    tls: MakeRustlsConnect,
    stats: Arc<PoolStats>,
    /// Shared with every connection and [`Db`]: see [`PgConn::distributed`].
    distributed: Arc<AtomicBool>,
}

/// Pool counters, for `/metrics`.
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Connections ever checked out for requests.
    pub checkouts: AtomicU64,
    /// Connections ever checked out by background tasks (the maintenance refresher), kept
    /// apart so request-path counters show only what requests cost.
    pub background_checkouts: AtomicU64,
    /// Of all checkouts, those served by the calling HTTP worker's own connections.
    pub worker_checkouts: AtomicU64,
    /// Connections dropped instead of reused (statement timeout, lost connection).
    pub quarantined: AtomicU64,
    /// True while the latest attempt to open a connection failed: a pool that runs dry
    /// then is a database outage (503, retried by clients), not load (500 "pool").
    pub unreachable: AtomicBool,
}

impl bb8::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = tokio_postgres::Error;

    async fn connect(&self) -> Result<PgConn, tokio_postgres::Error> {
        let opened = self.config.connect(self.tls.clone()).await;
        self.stats
            .unreachable
            .store(opened.is_err(), Ordering::Relaxed);
        let (client, connection) = opened?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                warn!(error = %error, "database connection closed");
            }
        });
        Ok(PgConn {
            client,
            statements: HashMap::default(),
            quarantined: false,
            in_transaction: false,
            distributed: self.distributed.clone(),
        })
    }

    async fn is_valid(&self, conn: &mut PgConn) -> Result<(), tokio_postgres::Error> {
        conn.client.simple_query("").await.map(|_| ())
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        let broken = conn.quarantined || conn.in_transaction || conn.client.is_closed();
        if broken {
            self.stats.quarantined.fetch_add(1, Ordering::Relaxed);
        }
        broken
    }
}

/// The pool, cheap to clone.
#[derive(Clone)]
pub struct Db {
    /// The connections any thread may take.
    pool: bb8::Pool<Manager>,
    /// One small pool per HTTP worker, opened from that worker's thread (see
    /// [`Db::bind_worker`]).
    workers: Arc<WorkerPools>,
    stats: Arc<PoolStats>,
    checkout_timeout: Duration,
    /// Whether the schema is laid out for Citus, set once it is installed.
    distributed: Arc<AtomicBool>,
}

/// How many connections a pool keeps and how they are split.
#[derive(Debug, Clone, Copy)]
pub struct PoolShape {
    /// `DB_POOL_SIZE`: every connection, shared and per worker.
    pub size: u32,
    /// HTTP worker threads.
    pub workers: usize,
    /// Connections each worker keeps on its own thread (0: none).
    pub per_worker: u32,
}

/// A connection checked out of the pool; returned when dropped.
pub type Conn<'a> = bb8::PooledConnection<'a, Manager>;

impl Db {
    /// Builds the pool and opens its first connection, so a wrong address (or a server
    /// whose certificate fails the TLS policy) fails start-up. `session` are extra
    /// settings every connection starts with (the tenant limits the schema's triggers
    /// read, `sql/functions/tenant_limit_v1.sql`).
    pub async fn connect(
        mut config: tokio_postgres::Config,
        tls: MakeRustlsConnect,
        shape: PoolShape,
        checkout_timeout: Duration,
        statement_timeout: Duration,
        session: &[(&str, u32)],
    ) -> Result<Self, DbError> {
        let mut options = format!(
            "-c statement_timeout={} -c application_name=queen",
            statement_timeout.as_millis()
        );
        for (name, value) in session {
            options.push_str(&format!(" -c {name}={value}"));
        }
        config.options(options);
        let stats = Arc::new(PoolStats::default());
        let distributed = Arc::new(AtomicBool::new(false));
        let manager = Manager {
            config,
            tls,
            stats: stats.clone(),
            distributed: distributed.clone(),
        };
        let workers = Arc::new(WorkerPools::new(&manager, shape, checkout_timeout));
        let shared = shape.size - workers.connections();
        let pool = bb8::Pool::builder()
            .max_size(shared.max(1))
            .connection_timeout(checkout_timeout)
            .test_on_check_out(false)
            .build(manager)
            .await
            .map_err(DbError::Connect)?;
        let db = Db {
            pool,
            workers,
            stats,
            checkout_timeout,
            distributed,
        };
        drop(db.conn().await?);
        Ok(db)
    }

    /// Checks out a connection for a request; waits at most the pool timeout.
    pub async fn conn(&self) -> Result<Conn<'_>, DbError> {
        self.stats.checkouts.fetch_add(1, Ordering::Relaxed);
        self.get().await
    }

    /// Checks out a connection for a background task (counted apart from requests).
    pub async fn background_conn(&self) -> Result<Conn<'_>, DbError> {
        self.stats
            .background_checkouts
            .fetch_add(1, Ordering::Relaxed);
        self.get().await
    }

    /// Makes the calling thread (an HTTP worker, from inside its runtime) worker `slot`:
    /// its own connections are opened now, their I/O tasks on this thread.
    pub fn bind_worker(&self, slot: usize) {
        self.workers.bind(slot);
    }

    /// A live connection. One whose server went away while it sat idle (a database
    /// restart closes every session) is dropped here and the next one taken, so the
    /// request does not fail on it; the check reads the client's state, no round trip.
    async fn get(&self) -> Result<Conn<'_>, DbError> {
        let started = std::time::Instant::now();
        let conn = loop {
            let pool = match self.workers.idle_on_this_thread() {
                Some(own) => {
                    self.stats.worker_checkouts.fetch_add(1, Ordering::Relaxed);
                    own
                }
                None => &self.pool,
            };
            match pool.get().await {
                Ok(mut conn) if conn.client.is_closed() => {
                    conn.quarantined = true;
                    if started.elapsed() >= self.checkout_timeout {
                        break Err(self.exhausted());
                    }
                }
                Ok(conn) => break Ok(conn),
                Err(bb8::RunError::TimedOut) => break Err(self.exhausted()),
                Err(bb8::RunError::User(e)) => break Err(DbError::Connect(e)),
            }
        };
        crate::metrics::latency::latency()
            .pool_wait
            .observe(started.elapsed().as_secs_f64());
        conn
    }

    /// The error for "no connection in time": an outage while connections cannot be
    /// opened, a busy pool otherwise.
    pub fn exhausted(&self) -> DbError {
        if self.stats.unreachable.load(Ordering::Relaxed) {
            DbError::Unavailable
        } else {
            DbError::PoolExhausted
        }
    }

    /// Records whether the schema is laid out for Citus (after the installer, from
    /// [`crate::db::schema::citus::laid_out`]); every connection, open or not yet, sees
    /// it through [`PgConn::distributed`].
    pub fn set_distributed(&self, on: bool) {
        self.distributed.store(on, Ordering::Relaxed);
    }

    /// The pool's counters.
    pub fn stats(&self) -> &PoolStats {
        &self.stats
    }

    /// Connections open and idle right now, shared and per worker (for health and
    /// metrics).
    pub fn state(&self) -> (u32, u32) {
        let state = self.pool.state();
        let (open, idle) = self.workers.state();
        (state.connections + open, state.idle_connections + idle)
    }
}
