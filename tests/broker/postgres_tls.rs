//! TLS to PostgreSQL against a real server: a PostgreSQL of its own, listening on loopback
//! TCP with a certificate this test signs with a certificate authority it makes (the
//! `openssl` command), whose `pg_hba.conf` refuses every connection that is not TLS.
//!
//! `require` connects (so the connection really is TLS), `verify-full` connects with the
//! right authority and host name and refuses another authority or a host the certificate
//! does not name, `verify-ca` accepts that host, and `disable` is refused by the server.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use queen::db::embedded::{EmbeddedOptions, EmbeddedPostgres};
use serde_json::json;

use crate::support::{free_port, TestBroker};

/// A refused connection fails start-up after this wait for the pool, not the default 5 s.
const FAIL_FAST: (&str, &str) = ("QUEEN_POOL_TIMEOUT_MS", "1000");

/// A TLS-only PostgreSQL and the files that configure it.
struct TlsServer {
    pg: Option<EmbeddedPostgres>,
    port: u16,
    ca: PathBuf,
    other_ca: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsServer {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("queen-tls-")
            .tempdir_in("/tmp")
            .expect("a folder");
        let root = dir.path();
        fs::set_permissions(root, fs::Permissions::from_mode(0o755)).unwrap();
        let certs = root.join("certs");
        fs::create_dir(&certs).unwrap();
        fs::set_permissions(&certs, fs::Permissions::from_mode(0o755)).unwrap();
        // A CA, a server certificate for "localhost" signed by it, and an unrelated CA.
        let ca = certs.join("ca.pem");
        let other_ca = certs.join("other-ca.pem");
        openssl(
            &certs,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=queen test ca",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
        );
        openssl(
            &certs,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=someone else",
                "-keyout",
                "other-ca.key",
                "-out",
                "other-ca.pem",
            ],
        );
        openssl(
            &certs,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=localhost",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ],
        );
        fs::write(certs.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
        openssl(
            &certs,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "san.ext",
                "-out",
                "server.pem",
            ],
        );
        // Only TLS over TCP; the launcher's own checks use the Unix socket.
        let hba = certs.join("pg_hba.conf");
        fs::write(
            &hba,
            "local all all trust\nhostnossl all all 127.0.0.1/32 reject\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .unwrap();
        give_to_postgres(&certs);
        let port = free_port();
        let setting = |k: &str, v: String| (k.to_owned(), v);
        let pg = EmbeddedPostgres::start(EmbeddedOptions {
            data_dir: root.join("data"),
            port,
            user: "queen".to_owned(),
            bin_dir: std::env::var_os("QUEEN_PG_BIN_DIR").map(PathBuf::from),
            server_settings: vec![
                setting("listen_addresses", "127.0.0.1".into()),
                setting("ssl", "on".into()),
                setting(
                    "ssl_cert_file",
                    certs.join("server.pem").display().to_string(),
                ),
                setting(
                    "ssl_key_file",
                    certs.join("server.key").display().to_string(),
                ),
                setting("hba_file", hba.display().to_string()),
                setting("fsync", "off".into()),
            ],
        })
        .expect("the TLS PostgreSQL starts");
        TlsServer {
            pg: Some(pg),
            port,
            ca,
            other_ca,
            _dir: dir,
        }
    }

    /// A connection config over TCP to `host` (the server listens on 127.0.0.1).
    fn tcp(&self, host: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(host)
            .hostaddr("127.0.0.1".parse().unwrap())
            .port(self.port)
            .user("queen")
            .dbname("postgres");
        config
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(pg) = self.pg.take() {
            let _ = pg.stop_immediate();
        }
    }
}

/// Each mode against the TLS-only server: which start, and that a started broker works.
#[actix_rt::test]
async fn the_broker_reaches_a_tls_only_postgres_with_require_and_verify_modes() {
    if crate::support::private_postgres::left_out_on_citus() {
        return;
    }
    // Arrange
    let server = tokio::task::spawn_blocking(TlsServer::start).await.unwrap();
    let ca = server.ca.display().to_string();
    let other = server.other_ca.display().to_string();

    // Act + Assert: plain TCP is refused by the server, so every success below is TLS.
    let plain = TestBroker::try_start_on(server.tcp("localhost"), &[FAIL_FAST]).await;
    assert!(plain.is_err(), "a plain connection was accepted");
    let require =
        TestBroker::try_start_on(server.tcp("localhost"), &[("QUEEN_PG_SSLMODE", "require")])
            .await
            .expect("require connects");
    require
        .push("tls-queue", "Default", &[json!({"over": "tls"})])
        .await;
    let popped = require.pop_messages("/api/v1/pop/queue/tls-queue").await;
    assert_eq!(popped.len(), 1);
    require.stop().await;
    let full = [
        ("QUEEN_PG_SSLMODE", "verify-full"),
        ("QUEEN_PG_SSL_ROOT_CERT", ca.as_str()),
    ];
    let verified = TestBroker::try_start_on(server.tcp("localhost"), &full).await;
    let verified = verified.expect("verify-full with the right CA and host connects");
    let (status, _) = verified.get("/health").await;
    assert!(status.is_success());
    verified.stop().await;
    let wrong_ca = [
        ("QUEEN_PG_SSLMODE", "verify-full"),
        ("QUEEN_PG_SSL_ROOT_CERT", other.as_str()),
        FAIL_FAST,
    ];
    assert!(
        TestBroker::try_start_on(server.tcp("localhost"), &wrong_ca)
            .await
            .is_err(),
        "verify-full accepted a certificate of another authority"
    );
    assert!(
        TestBroker::try_start_on(server.tcp("127.0.0.1"), &[full[0], full[1], FAIL_FAST])
            .await
            .is_err(),
        "verify-full accepted a certificate that does not name the host"
    );
    let ca_only = [
        ("QUEEN_PG_SSLMODE", "verify-ca"),
        ("QUEEN_PG_SSL_ROOT_CERT", ca.as_str()),
    ];
    let chain = TestBroker::try_start_on(server.tcp("127.0.0.1"), &ca_only)
        .await
        .expect("verify-ca ignores the host name");
    chain.stop().await;
    let wrong_chain = [
        ("QUEEN_PG_SSLMODE", "verify-ca"),
        ("QUEEN_PG_SSL_ROOT_CERT", other.as_str()),
        FAIL_FAST,
    ];
    assert!(
        TestBroker::try_start_on(server.tcp("127.0.0.1"), &wrong_chain)
            .await
            .is_err()
    );
    drop(server);
}

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command runs (apt-get install openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// As root the server runs as `postgres`: it must own its key (mode 0600) and read the rest.
fn give_to_postgres(certs: &Path) {
    for entry in fs::read_dir(certs).unwrap().flatten() {
        let mode = if entry.file_name() == "server.key" {
            0o600
        } else {
            0o644
        };
        fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode)).unwrap();
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let output = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(certs)
        .output()
        .expect("chown runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
