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
    raise_open_file_limit();
    let listener = TcpListener::bind(config.http.bind)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.http.bind))?;
    let app = app::start(config, listener).await?;
    shutdown::signal().await;
    info!("stop requested");
    app.stop().await;
    Ok(())
}

/// Raises the soft open-file limit to the hard one: every consumer parked in a long-poll
/// holds a connection, and the usual soft limit (1,024) would refuse the thousand-and-first
/// while the hard limit allows far more. A limit that cannot be read or raised is logged.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "cannot read the open-file limit");
        return;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "cannot raise the open-file limit");
            return;
        }
    }
    info!(open_files = limit.rlim_max, "open-file limit");
}
