//! What a parked pop travels on: a keep-alive HTTP/1.1 connection of its own, or a stream
//! of an HTTP/2 connection (cleartext, prior knowledge) that many parked pops share.

use std::net::SocketAddr;

use anyhow::Context;

use super::http::{Answer, Conn};

/// One consumer's way to the broker.
pub enum Consumer {
    /// Its own HTTP/1.1 connection, one request at a time.
    Http1(Conn),
    /// A shared HTTP/2 connection (the client is a handle to it) and the broker's address.
    Http2(reqwest::Client, SocketAddr),
}

impl Consumer {
    /// `GET path` and its answer.
    pub async fn get(&mut self, path: &str) -> anyhow::Result<Answer> {
        match self {
            Consumer::Http1(conn) => conn.get(path).await,
            Consumer::Http2(client, server) => {
                let answer = client
                    .get(format!("http://{server}{path}"))
                    .send()
                    .await
                    .context("an HTTP/2 pop")?;
                anyhow::ensure!(
                    answer.version() == reqwest::Version::HTTP_2,
                    "answered over {:?}, not HTTP/2",
                    answer.version()
                );
                let status = answer.status().as_u16();
                let body = answer.bytes().await?.to_vec();
                Ok(Answer { status, body })
            }
        }
    }
}

/// A client that speaks HTTP/2 from the first byte and keeps one connection: every
/// consumer given a clone of it shares that connection.
pub fn http2_client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .context("building the HTTP/2 client")
}
