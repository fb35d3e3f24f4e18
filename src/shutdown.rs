//! Shutdown: what ends the process and in which order things stop.
//!
//! Drain order: (1) SIGINT or SIGTERM arrives; (2) the broker starts draining: readiness
//! answers 503 and every parked long-poll answers 204 at once instead of at its deadline
//! (the group actors let go of their parked pops' gates);
//! (3) the HTTP server stops accepting and gives in-flight requests a bounded time to
//! finish; (4) the mesh's connections and the group actors stop; (5) the pool's connections
//! close as the last handles drop; (6) the embedded PostgreSQL, if this broker started it,
//! gets a fast shutdown. [`crate::app::App::stop`] performs 2 to 6.

/// Resolves when the process is asked to stop (SIGINT or SIGTERM).
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
