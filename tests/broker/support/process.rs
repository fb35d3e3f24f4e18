//! Child processes the tests start (brokers, nodes): signalling them and waiting for them
//! to exit.

use std::process::Child;
use std::time::{Duration, Instant};

/// Polls a child until it exits or the deadline passes; true when it exited.
pub fn wait_until(child: &mut Child, deadline: Instant) -> bool {
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to a child.
pub fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child we have not reaped yet.
    unsafe { libc::kill(child.id() as i32, signal) };
}
