//! A PostgreSQL server of one test alone, so stopping it disturbs no other test: the
//! outage tests stop and start it under a running broker.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};

use super::free_port;

/// True, with the reason printed, in the harness's Citus mode: a test that stops, restarts
/// or configures a PostgreSQL of its own (this one, or an embedded server with TLS) does
/// not run on the Citus cluster, so it has nothing to check there and returns early.
pub fn left_out_on_citus() -> bool {
    let citus = super::citus::script().is_some();
    if citus {
        eprintln!("runs on a PostgreSQL of its own, not on the Citus cluster: skipped");
    }
    citus
}

/// The server, its settings, and its folder.
pub struct PrivatePostgres {
    options: EmbeddedOptions,
    server: Option<EmbeddedPostgres>,
    _dir: tempfile::TempDir,
}

impl PrivatePostgres {
    /// Creates and starts a server (blocking: call it from `spawn_blocking`).
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("queen-restart-")
            .tempdir_in("/tmp")
            .expect("a folder");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let setting = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let options = EmbeddedOptions {
            data_dir: dir.path().join("data"),
            port: free_port(),
            user: "queen".to_owned(),
            bin_dir: std::env::var_os("QUEEN_PG_BIN_DIR").map(PathBuf::from),
            server_settings: vec![setting("fsync", "off"), setting("max_connections", "100")],
        };
        let server = EmbeddedPostgres::start(options.clone()).expect("the private server starts");
        Self {
            options,
            server: Some(server),
            _dir: dir,
        }
    }

    /// Where a broker connects (the `postgres` database).
    pub fn config(&self) -> tokio_postgres::Config {
        self.server.as_ref().expect("running").pg_config("postgres")
    }

    /// A fast shutdown: every session is ended (blocking).
    pub fn stop(&mut self) {
        let mut server = self.server.take().expect("running");
        server.stop().expect("the server stops");
    }

    /// Starts the stopped server again on the same folder and socket (blocking).
    pub fn start_again(&mut self) {
        assert!(self.server.is_none(), "the server is running");
        self.server = Some(EmbeddedPostgres::start(self.options.clone()).expect("it starts again"));
    }

    /// A fast shutdown, `down` of nothing, and a start (blocking).
    pub fn restart(&mut self, down: Duration) {
        self.stop();
        std::thread::sleep(down);
        self.start_again();
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.stop_immediate();
        }
    }
}
