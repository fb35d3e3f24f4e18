//! Fixtures: a real broker, in-process on a port-0 listener, over a fresh database on the
//! shared test PostgreSQL cluster, and a few HTTP helpers that keep tests short.

#![allow(dead_code)]

pub mod caller;
pub mod citus;
pub mod cut_proxy;
pub mod drain;
pub mod fixtures;
pub mod h2c;
pub mod load;
pub mod lock_waiters;
pub mod old_writers;
pub mod postgres;
pub mod private_postgres;
pub mod process;
pub mod qpb1;
pub mod qpf1;
pub mod tokens;
pub mod webdriver;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use queen::app::{self, App};
use queen::config::{Config, DatabaseSource, ExternalSettings};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A running broker and a client for it.
pub struct TestBroker {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// A client with a generous timeout (long-polls included).
    pub http: reqwest::Client,
    /// The broker's database, for direct assertions.
    pub pg: tokio_postgres::Config,
    /// Where the broker's mesh listens.
    pub mesh: std::net::SocketAddr,
    app: Option<App>,
    /// The broker's own push spool folder (`FILE_BUFFER_DIR`), unless the test gave one.
    _spool: Option<tempfile::TempDir>,
}

impl TestBroker {
    /// A broker with default settings on a fresh database.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// A broker with extra settings (environment-style pairs) on a fresh database (with the
    /// schema installed already on the Citus test cluster).
    pub async fn start_with(vars: &[(&str, &str)]) -> Self {
        let pg = postgres::fresh_installed_database().await;
        Self::start_on(pg, vars).await
    }

    /// A broker on a given database (several brokers can share one).
    pub async fn start_on(pg: tokio_postgres::Config, vars: &[(&str, &str)]) -> Self {
        Self::try_start_on(pg, vars).await.expect("broker starts")
    }

    /// [`start_on`](Self::start_on), answering a start-up failure (a mesh port taken
    /// between choosing it and binding it) instead of panicking.
    pub async fn try_start_on(
        pg: tokio_postgres::Config,
        vars: &[(&str, &str)],
    ) -> Result<Self, queen::app::StartupError> {
        let mut config = Config::from_vars(vars.iter().copied()).expect("test config is valid");
        config.database.source =
            DatabaseSource::External(ExternalSettings::Given(Box::new(pg.clone())));
        // The Citus test mode tests the Citus layout, which a broker takes only when asked.
        if citus::script().is_some() && !vars.iter().any(|(k, _)| *k == "QUEEN_CITUS") {
            config.database.citus = Some(true);
        }
        if !vars.iter().any(|(k, _)| *k == "QUEEN_HTTP_WORKERS") {
            config.http.workers = 2;
        }
        // Many brokers run in one test process: each takes a free mesh port.
        if !vars.iter().any(|(k, _)| *k == "QUEEN_MESH_PORT") {
            config.mesh.bind.set_port(0);
        }
        // ... and a push spool of its own (a spool folder is locked by one broker).
        let spool = match vars.iter().any(|(k, _)| *k == "FILE_BUFFER_DIR") {
            true => None,
            false => {
                let dir = tempfile::Builder::new()
                    .prefix("queen-spool-")
                    .tempdir()
                    .expect("a spool folder");
                config.spool.dir = dir.path().to_owned();
                Some(dir)
            }
        };
        // `RUST_LOG` set for the test run: the brokers' logs on stdout (`--nocapture`), so
        // a failure's database error (its SQLSTATE and text) can be read there.
        if std::env::var_os("RUST_LOG").is_some() {
            queen::telemetry::init(&config.log);
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let app = app::start(config, listener).await?;
        Ok(TestBroker {
            base: format!("http://{}", app.http_addr()),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .pool_max_idle_per_host(64)
                // Below the broker's 5 s keep-alive: never reuse a connection it is closing.
                .pool_idle_timeout(Duration::from_secs(2))
                .build()
                .expect("http client"),
            pg,
            mesh: app.mesh_addr(),
            app: Some(app),
            _spool: spool,
        })
    }

    /// Sends `Authorization: Bearer <token>` with every later request of [`Self::http`]
    /// (`None`: no header).
    pub fn authorize(&mut self, token: Option<&str>) {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token {
            let value = format!("Bearer {token}").parse().expect("a header value");
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        self.http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(Duration::from_secs(2))
            .default_headers(headers)
            .build()
            .expect("http client");
    }

    /// Absolute URL of a path on this broker.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A direct SQL connection to the broker's database.
    pub async fn sql(&self) -> tokio_postgres::Client {
        let (client, connection) = self
            .pg
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(connection);
        client
    }

    /// POSTs JSON; returns the status and the parsed body (Null when empty).
    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request reaches the broker");
        read(response).await
    }

    /// POSTs raw bytes with a content type.
    pub async fn post_raw(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url(path))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("request reaches the broker");
        read(response).await
    }

    /// GETs a path; returns the status and the parsed body (Null when empty).
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the broker");
        read(response).await
    }

    /// Pushes payloads to one partition and asserts each was queued; returns the answers.
    pub async fn push(&self, queue: &str, partition: &str, payloads: &[Value]) -> Vec<Value> {
        let items: Vec<Value> = payloads
            .iter()
            .map(|p| json!({"queue": queue, "partition": partition, "payload": p}))
            .collect();
        let (status, body) = self.post("/api/v1/push", &json!({ "items": items })).await;
        assert!(status.is_success(), "push answered {status}: {body}");
        let answers = body.as_array().expect("push answers an array").clone();
        assert_eq!(answers.len(), payloads.len());
        for a in &answers {
            assert_eq!(a["status"], "queued", "{a}");
        }
        answers
    }

    /// Pops; returns the messages (empty on 204) and asserts the status is 200 or 204.
    pub async fn pop_messages(&self, path_and_query: &str) -> Vec<Value> {
        let (status, body) = self.get(path_and_query).await;
        match status {
            StatusCode::NO_CONTENT => Vec::new(),
            StatusCode::OK => body["messages"].as_array().expect("messages array").clone(),
            other => panic!("pop answered {other}: {body}"),
        }
    }

    /// Acks messages (as popped) with one status; returns the per-item answers.
    pub async fn ack_all(
        &self,
        messages: &[Value],
        status: &str,
        group: Option<&str>,
    ) -> Vec<Value> {
        ack_batch(&self.http, &self.base, messages, status, group).await
    }

    /// Stops the broker.
    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- postgres log (tail) ----\n{}\n-----------------------------",
                postgres::log_tail(60)
            );
        }
    }
}

/// The status and the parsed body of an answer (Null when empty, a string when not JSON).
pub async fn read(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let bytes = response.bytes().await.expect("read the answer");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    (status, body)
}

/// Two brokers on one fresh database: what a behaviour across nodes is tested with.
pub async fn two_nodes() -> [TestBroker; 2] {
    let pg = postgres::fresh_installed_database().await;
    let a = TestBroker::start_on(pg.clone(), &[]).await;
    let b = TestBroker::start_on(pg, &[]).await;
    [a, b]
}

/// Acks messages (as popped) with one status through `POST {base}/api/v1/ack/batch`;
/// asserts a 200 and returns the per-item answers. Any broker, in-process or not.
pub async fn ack_batch(
    http: &reqwest::Client,
    base: &str,
    messages: &[Value],
    status: &str,
    group: Option<&str>,
) -> Vec<Value> {
    let acks: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "transactionId": m["transactionId"],
                "partitionId": m["partitionId"],
                "leaseId": m["leaseId"],
                "status": status,
                "error": if status == "failed" { json!("handler failed") } else { Value::Null },
            })
        })
        .collect();
    let response = http
        .post(format!("{base}/api/v1/ack/batch"))
        .json(&json!({ "acknowledgments": acks, "consumerGroup": group }))
        .send()
        .await
        .unwrap_or_else(|e| panic!("ack on {base}: {e:?}"));
    let (code, body) = read(response).await;
    assert_eq!(
        code,
        StatusCode::OK,
        "ack on {base} answered {code}: {body}"
    );
    body.as_array().expect("ack answers an array").clone()
}

/// A loopback port that was free a moment ago (for settings that take a port number
/// before the broker binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Polls `check` until it returns `Some` or `timeout` passes (never a bare sleep).
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `data` values of popped messages.
pub fn payloads(messages: &[Value]) -> Vec<Value> {
    messages.iter().map(|m| m["data"].clone()).collect()
}
