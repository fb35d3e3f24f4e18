//! A bare HTTP/2 client over cleartext with prior knowledge (h2c), for tests that need to
//! reset one stream or drop a whole connection while its requests are parked: what a
//! consumer that gives up or dies does to its long-polls.

use std::net::SocketAddr;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::{Reason, RecvStream, SendStream};
use http::{Request, StatusCode};
use serde_json::Value;
use tokio::task::JoinHandle;

/// One h2c connection to a broker; dropping it (or [`H2c::close`]) closes the socket.
pub struct H2c {
    send: SendRequest<Bytes>,
    driver: JoinHandle<()>,
}

/// A request in flight on an [`H2c`] connection.
pub struct H2Request {
    /// Resolves with the answer (status and JSON body, `Null` when empty).
    pub answer: JoinHandle<Result<(StatusCode, Value), h2::Error>>,
    stream: SendStream<Bytes>,
}

impl H2c {
    /// Opens a connection to the broker at `base` (`http://host:port`).
    pub async fn connect(base: &str) -> Self {
        let addr: SocketAddr = base
            .trim_start_matches("http://")
            .parse()
            .expect("a broker address");
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connect to the broker");
        let (send, connection) = h2::client::handshake(tcp)
            .await
            .expect("an HTTP/2 handshake");
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        H2c { send, driver }
    }

    /// Sends `GET url` (absolute) as a new stream of this connection.
    pub async fn get(&mut self, url: &str) -> H2Request {
        let request = Request::get(url).body(()).expect("a request");
        let mut send = self.send.clone().ready().await.expect("a stream slot");
        let (response, stream) = send.send_request(request, true).expect("a stream");
        let answer = tokio::spawn(async move {
            let response = response.await?;
            let status = response.status();
            let body = read_body(response.into_body()).await?;
            let body = match body.is_empty() {
                true => Value::Null,
                false => serde_json::from_slice(&body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into())),
            };
            Ok((status, body))
        });
        H2Request { answer, stream }
    }

    /// Closes the socket at once, with every stream still open on it.
    pub fn close(self) {
        self.driver.abort();
    }
}

impl Drop for H2c {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl H2Request {
    /// Resets the stream (`RST_STREAM` with `CANCEL`), as a client that gives up does, and
    /// stops waiting for its answer.
    pub fn reset(mut self) {
        self.stream.send_reset(Reason::CANCEL);
        self.answer.abort();
    }
}

/// The whole body of an answer, its flow-control capacity handed back as it comes.
async fn read_body(mut body: RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
