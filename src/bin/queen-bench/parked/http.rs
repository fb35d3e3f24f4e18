//! A bare HTTP/1.1 keep-alive connection: one request at a time, answers with a
//! `content-length` (the broker's are). Tens of thousands of these cost the tool a socket
//! and a small buffer each, where a pooled HTTP client per connection would cost far more.

use std::net::{IpAddr, SocketAddr};

use anyhow::{bail, Context};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Largest answer head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// One keep-alive connection to the broker.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A status and a body.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status code.
    pub status: u16,
    /// The body (empty for 204).
    pub body: Vec<u8>,
}

impl Conn {
    /// Connects to `server` from `local` (any port): loopback addresses other than
    /// 127.0.0.1 give more than one address's worth of ephemeral ports.
    pub async fn connect(server: SocketAddr, local: IpAddr) -> anyhow::Result<Self> {
        let socket = TcpSocket::new_v4()?;
        // The ports of an earlier run's connections may still be in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(SocketAddr::new(local, 0))?;
        let stream = socket
            .connect(server)
            .await
            .with_context(|| format!("connecting from {local} to {server}"))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::new(),
        })
    }

    /// `GET path` and its answer.
    pub async fn get(&mut self, path: &str) -> anyhow::Result<Answer> {
        let head = format!("GET {path} HTTP/1.1\r\nhost: queen\r\n\r\n");
        self.stream.write_all(head.as_bytes()).await?;
        self.answer().await
    }

    /// `POST path` with a JSON body, and its answer.
    pub async fn post_json(&mut self, path: &str, body: &str) -> anyhow::Result<Answer> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: queen\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.stream.write_all(head.as_bytes()).await?;
        self.answer().await
    }

    async fn answer(&mut self) -> anyhow::Result<Answer> {
        self.buf.clear();
        let (status, length, head_len) = loop {
            if let Some(head) = parse_head(&self.buf)? {
                break head;
            }
            if self.buf.len() > MAX_HEAD {
                bail!("answer head longer than {MAX_HEAD} bytes");
            }
            self.read_more().await?;
        };
        while self.buf.len() < head_len + length {
            self.read_more().await?;
        }
        let body = self.buf[head_len..head_len + length].to_vec();
        // Keep-alive: one request at a time, so nothing follows the body.
        self.buf.clear();
        Ok(Answer { status, body })
    }

    async fn read_more(&mut self) -> anyhow::Result<()> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("the broker closed the connection");
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

/// The status, body length and head length of an answer whose head is complete in `buf`;
/// `None` while it is not. A chunked answer is an error (the broker sends lengths).
pub fn parse_head(buf: &[u8]) -> anyhow::Result<Option<(u16, usize, usize)>> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..end]).context("answer head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut length = 0;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().context("bad content-length")?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("chunked answers are not supported");
        }
    }
    Ok(Some((status, length, end + 4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_parsed_only_once_complete_and_gives_status_and_lengths() {
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ndate: x\r\n\r\nhello";
        assert_eq!(parse_head(&answer[..20]).unwrap(), None);
        assert_eq!(
            parse_head(answer).unwrap(),
            Some((200, 5, answer.len() - 5))
        );
        let empty = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse_head(empty).unwrap(), Some((204, 0, empty.len())));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").is_err());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
    }
}
