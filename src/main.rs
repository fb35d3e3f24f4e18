//! The `queen` binary: read the config, start tracing, run until a stop signal.

use std::net::TcpListener;
use std::process::ExitCode;

use queen::config::Config;
use queen::{app, shutdown, telemetry};
use tracing::{error, info};

/// mimalloc instead of the system allocator: glibc's malloc, free and their chunk
/// consolidation were about a sixth of the broker's CPU in the push and pop+ack profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> ExitCode {
    let config = match Config::from_vars(std::env::vars()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("queen: {e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init(&config.log);
    info!(config = ?config, "starting");
    match run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = format!("{e:#}"), "fatal");
            eprintln!("queen: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.http.bind)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.http.bind))?;
    let app = app::start(config, listener).await?;
    shutdown::signal().await;
    info!("stop requested");
    app.stop().await;
    Ok(())
}
