//! A TCP proxy in front of the test database (the test cluster's Unix socket, or the Citus
//! coordinator's TCP port in the Citus test mode) that cuts one connection at a
//! chosen moment: after the broker sent a statement carrying a marker (and, optionally, a
//! later one such as `COMMIT`), the server's answer is withheld, the statement is left to
//! run, and both sockets close. The broker then sees what a network failure after sending
//! looks like: no answer, outcome unknown. Every other connection passes untouched.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio_postgres::config::Host;

/// Either kind of connection to the database, for [`pump`].
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Where the proxy forwards to: the database's Unix socket when it has one, else its
/// first TCP host.
enum Upstream {
    Unix(PathBuf),
    Tcp(String, u16),
}

impl Upstream {
    fn of(pg: &tokio_postgres::Config) -> Self {
        let port = pg.get_ports().first().copied().unwrap_or(5432);
        let hosts = pg.get_hosts();
        if let Some(dir) = hosts.iter().find_map(|h| match h {
            Host::Unix(dir) => Some(dir.clone()),
            Host::Tcp(_) => None,
        }) {
            return Upstream::Unix(dir.join(format!(".s.PGSQL.{port}")));
        }
        let host = hosts
            .iter()
            .find_map(|h| match h {
                Host::Tcp(host) => Some(host.clone()),
                Host::Unix(_) => None,
            })
            .expect("the test database has a host");
        Upstream::Tcp(host, port)
    }

    async fn connect(&self) -> std::io::Result<Box<dyn Stream>> {
        Ok(match self {
            Upstream::Unix(socket) => Box::new(UnixStream::connect(socket).await?),
            Upstream::Tcp(host, port) => {
                Box::new(TcpStream::connect((host.as_str(), *port)).await?)
            }
        })
    }
}

/// When to cut: the first connection that sends `marker`, at the chunk that holds `then`
/// (sent after the marker), or at the marker's own chunk when `then` is `None`.
#[derive(Clone)]
pub struct Cut {
    /// Bytes of a statement's parameters (a key name) that pick the connection.
    pub marker: &'static [u8],
    /// Bytes of the later statement to cut after (`b"COMMIT"`).
    pub then: Option<&'static [u8]>,
}

/// The proxy: point a broker at [`CutProxy::config`].
pub struct CutProxy {
    port: u16,
    upstream: tokio_postgres::Config,
    fired: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    /// Listens on a free local port and forwards to `pg`; cuts once.
    pub async fn start(pg: &tokio_postgres::Config, cut: Cut) -> Self {
        let upstream = Upstream::of(pg);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("an address").port();
        let armed = Arc::new(Mutex::new(Some(cut)));
        let fired = Arc::new(AtomicBool::new(false));
        let task = {
            let fired = fired.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = upstream.connect().await else {
                        continue;
                    };
                    tokio::spawn(pump(client, server, armed.clone(), fired.clone()));
                }
            })
        };
        CutProxy {
            port,
            upstream: pg.clone(),
            fired,
            task,
        }
    }

    /// The database settings through the proxy.
    pub fn config(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config.host("127.0.0.1").port(self.port);
        if let Some(user) = self.upstream.get_user() {
            config.user(user);
        }
        if let Some(dbname) = self.upstream.get_dbname() {
            config.dbname(dbname);
        }
        config
    }

    /// Whether a connection was cut.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pump(
    client: TcpStream,
    server: Box<dyn Stream>,
    armed: Arc<Mutex<Option<Cut>>>,
    fired: Arc<AtomicBool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let muted = Arc::new(AtomicBool::new(false));
    let answers = {
        let muted = muted.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match server_read.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if muted.load(Ordering::SeqCst) {
                    continue;
                }
                if client_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        })
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut marked = false;
    loop {
        let n = match client_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let cut_here = {
            let mut armed = armed.lock().expect("the trigger");
            let hit = match armed.as_ref() {
                Some(cut) if !marked && contains(chunk, cut.marker) => {
                    marked = true;
                    cut.then.is_none()
                }
                Some(cut) if marked => cut.then.is_some_and(|then| contains(chunk, then)),
                _ => false,
            };
            if hit {
                armed.take();
            }
            hit
        };
        if cut_here {
            // The statement goes through and runs; its answer never comes back.
            muted.store(true, Ordering::SeqCst);
            let _ = server_write.write_all(chunk).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            fired.store(true, Ordering::SeqCst);
            break;
        }
        if server_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    answers.abort();
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
