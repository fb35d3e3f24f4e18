//! Shutdown: what ends the process and in which order things stop.
//!
//! Drain order: (1) SIGINT or SIGTERM arrives; (2) the HTTP server stops accepting and gives
//! in-flight requests (parked long-polls included) a bounded time to finish; (3) the pool's
//! connections close as the last handles drop; (4) the embedded PostgreSQL, if this broker
//! started it, gets a fast shutdown. [`crate::app::App::stop`] performs 2 to 4.

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
