//! actix-http's HTTP/1.1 dispatcher gives its read and write buffers back while its
//! service future waits (vendor/actix-http/PATCHES.md), and a connection whose buffers
//! went serves what comes next as before: answers larger than a buffer, request heads and
//! bodies larger than one, pipelined requests. The waiting route sheds its request's
//! headers as the broker's pop routes do (`src/http/pop/headers.rs`): the header values
//! share the read buffer's block, so the block goes only with both.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, App, Error, HttpRequest, HttpResponse, HttpServer};
use tokio::sync::watch;

use crate::live_heap::{blocks_by_size, growth, live_bytes};
use crate::raw_http::{get, post, RawConn};
use crate::support::eventually;
use crate::MEASURING;

/// Connections whose requests wait at once.
const WAITING: usize = 100;
/// Most heap bytes one connection may hold while its request waits: the dispatcher's
/// two buffers of 8 KiB each are not among them.
const MOST_PER_WAITING: isize = 8 * 1024;

/// What the handlers share: how many requests reached `/wait`, and its gate.
struct Gate {
    entered: AtomicUsize,
    open: watch::Sender<bool>,
}

/// `GET /wait`: answers `woken` once the gate opens.
async fn wait(gate: web::Data<Gate>) -> HttpResponse {
    gate.entered.fetch_add(1, Ordering::SeqCst);
    let mut open = gate.open.subscribe();
    let _ = open.wait_for(|open| *open).await;
    HttpResponse::Ok().body("woken")
}

/// Sheds a request's headers as the broker's front middleware does for a pop
/// (`queen::http::pop::headers::shed`, which knows only the broker's pop paths).
async fn shed(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    *req.headers_mut() = HeaderMap::new();
    next.call(req).await
}

/// `POST /echo`: the length of the `x-pad` header, a space, and the body.
async fn echo(req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let pad = req.headers().get("x-pad").map_or(0, |v| v.len());
    let mut answer = format!("{pad} ").into_bytes();
    answer.extend_from_slice(&body);
    HttpResponse::Ok().body(answer)
}

async fn start(gate: web::Data<Gate>) -> (SocketAddr, actix_web::dev::ServerHandle) {
    let server = HttpServer::new(move || {
        App::new()
            .app_data(gate.clone())
            .service(
                web::resource("/wait")
                    .wrap(from_fn(shed))
                    .route(web::get().to(wait)),
            )
            .route("/echo", web::post().to(echo))
            .route("/plain", web::get().to(|| async { "plain" }))
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .expect("bind a loopback port");
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (addr, handle)
}

/// A request body of `len` bytes that is not all one byte.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

/// A hundred connections whose requests wait hold well under the two 8 KiB buffers each;
/// woken, each answers, then serves a pipelined request whose head (9,000 bytes) and body
/// (20,000 bytes) are larger than a buffer, and the request behind it.
#[actix_rt::test]
async fn a_waiting_connection_holds_no_buffers_and_serves_large_requests_after() {
    // Arrange
    let _alone = MEASURING.lock().await;
    let (open, _) = watch::channel(false);
    let gate = web::Data::new(Gate {
        entered: AtomicUsize::new(0),
        open,
    });
    let (addr, server) = start(gate.clone()).await;
    let mut warm = RawConn::connect(addr).await;
    warm.send(&get("/plain")).await;
    assert_eq!(warm.answer().await.text(), "plain");
    drop(warm);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (before, sizes_before) = (live_bytes(), blocks_by_size());

    // Act
    let mut conns = Vec::with_capacity(WAITING);
    for _ in 0..WAITING {
        let mut conn = RawConn::connect(addr).await;
        conn.send(&get("/wait")).await;
        conns.push(conn);
    }
    let entered = eventually(Duration::from_secs(30), || {
        let gate = gate.clone();
        async move { (gate.entered.load(Ordering::SeqCst) == WAITING).then_some(()) }
    })
    .await;
    assert!(entered.is_some(), "not every request reached the handler");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let per_waiting = (live_bytes() - before) / WAITING as isize;
    let grown = growth(&sizes_before, &blocks_by_size(), WAITING);
    gate.open.send_replace(true);

    // Assert
    assert!(
        per_waiting <= MOST_PER_WAITING,
        "a waiting connection holds {per_waiting} heap bytes (at most {MOST_PER_WAITING}):\n\
         {grown}"
    );
    let pad = "p".repeat(9_000);
    let body = pattern(20_000);
    for conn in &mut conns {
        let woken = conn.answer().await;
        assert_eq!((woken.status, woken.text().as_str()), (200, "woken"));
        let mut both = post("/echo", &format!("x-pad: {pad}\r\n"), "text/plain", &body);
        both.extend_from_slice(&get("/plain"));
        conn.send(&both).await;
        let echoed = conn.answer().await;
        assert_eq!(echoed.status, 200);
        let mut expected = b"9000 ".to_vec();
        expected.extend_from_slice(&body);
        assert!(
            echoed.body == expected,
            "the echo differs from what was sent"
        );
        let plain = conn.answer().await;
        assert_eq!((plain.status, plain.text().as_str()), (200, "plain"));
    }
    server.stop(true).await;
}
