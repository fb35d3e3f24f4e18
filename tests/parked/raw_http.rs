//! A bare HTTP/1.1 client connection: the tests write request bytes as they like (several
//! at once, to pipeline them) and read answers that carry a `content-length`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest a test waits for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// One keep-alive connection.
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A status and a body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl RawConn {
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr)
            .await
            .expect("connect to the server");
        stream.set_nodelay(true).expect("nodelay");
        RawConn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes request bytes (one request or several).
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write a request");
    }

    /// Reads the next answer (answers of pipelined requests come in order).
    pub async fn answer(&mut self) -> Answer {
        tokio::time::timeout(ANSWER_TIMEOUT, self.read_answer())
            .await
            .expect("an answer in time")
    }

    async fn read_answer(&mut self) -> Answer {
        let (status, length, head_len) = loop {
            if let Some(head) = parse_head(&self.buf) {
                break head;
            }
            self.read_more().await;
        };
        while self.buf.len() < head_len + length {
            self.read_more().await;
        }
        let body = self.buf[head_len..head_len + length].to_vec();
        self.buf.drain(..head_len + length);
        Answer { status, body }
    }

    async fn read_more(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await.expect("read an answer");
        assert!(n > 0, "the server closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

/// `GET path` with a `host` header.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n").into_bytes()
}

/// `POST path` with extra header lines (each ending in `\r\n`) and a body.
pub fn post(path: &str, extra_headers: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "POST {path} HTTP/1.1\r\nhost: test\r\ncontent-type: {content_type}\r\n\
         {extra_headers}content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Status, body length and head length of an answer whose head is complete in `buf`.
fn parse_head(buf: &[u8]) -> Option<(u16, usize, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).expect("an answer head in UTF-8");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let mut length = 0;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("a content-length");
            }
            assert!(
                !name.trim().eq_ignore_ascii_case("transfer-encoding"),
                "chunked answers are not read here"
            );
        }
    }
    Some((status, length, end + 4))
}
