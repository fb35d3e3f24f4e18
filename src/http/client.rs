//! Noticing that a long-polling client went away.
//!
//! actix-web keeps running a handler whose client has closed its connection (it only finds
//! out when it reads or writes), so a parked pop would otherwise wake later, claim, and hand
//! a lease to a closed socket, stranding it until it expires. The listener records each
//! connection's socket, and the pop peeks at it before claiming after a wait: a peer that
//! sent FIN (or reset) reads as end-of-stream, and the pop ends without claiming.

use std::any::Any;
use std::os::fd::{AsRawFd, RawFd};

use actix_web::dev::Extensions;
use actix_web::HttpRequest;

use crate::log::pop::ClientProbe;

/// The raw socket of one HTTP connection.
#[derive(Debug, Clone, Copy)]
struct ConnSocket(RawFd);

/// `HttpServer::on_connect` callback: remembers the connection's socket.
pub fn remember_socket(connection: &dyn Any, data: &mut Extensions) {
    if let Some(tcp) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() {
        data.insert(ConnSocket(tcp.as_raw_fd()));
    }
}

/// A probe telling whether the request's client has gone away.
pub fn probe(req: &HttpRequest) -> ClientProbe {
    match req.conn_data::<ConnSocket>().copied() {
        Some(ConnSocket(fd)) => ClientProbe::new(move || peer_closed(fd)),
        None => ClientProbe::never(),
    }
}

fn peer_closed(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: the socket stays open while its request's handler runs (actix closes it only
    // after the dispatcher, which owns the handler's future, ends); MSG_PEEK | MSG_DONTWAIT
    // neither consumes data nor blocks, and the buffer is one valid byte.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n == 0 {
        return true;
    }
    if n < 0 {
        let err = std::io::Error::last_os_error();
        return !matches!(
            err.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        );
    }
    false
}
