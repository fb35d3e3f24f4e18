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

/// `mi_option_purge_delay` in mimalloc 3's `mimalloc.h` (the position in its option enum;
/// libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed pages wait before mimalloc returns them to the system, unless
/// `MIMALLOC_PURGE_DELAY` says otherwise. mimalloc 3 waits 1,000 ms; under a flood of large
/// pushes a second of freed request buffers is tens of MiB held beside the ephemeral cap
/// (README "Ephemeral queues"): at 10 ms (mimalloc 2's default) the flood's overhead beside
/// the cap roughly halved, with no change seen in the broker's CPU per message.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

#[actix_web::main]
async fn main() -> ExitCode {
    tune_allocator();
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

/// Sets mimalloc's purge delay before the broker allocates much (see [`PURGE_DELAY_MS`]).
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a plain FFI call that sets a process-wide option.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // mimalloc 3's default purge delay is 1,000 ms; the option this binary sets must
        // be that one, and setting it must read back.
        // SAFETY: plain FFI calls on a process-wide option.
        unsafe {
            if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
                assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), 1000);
            }
            tune_allocator();
            if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
                assert_eq!(
                    libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
                    PURGE_DELAY_MS
                );
            }
        }
    }
}
