//! The ways starting or stopping the embedded server can fail, worded for
//! the operator who has to fix them.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why the embedded PostgreSQL server could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// No directory with both `initdb` and `pg_ctl` was found.
    #[error(
        "postgresql server programs (initdb, pg_ctl) not found in {searched}; \
         install the Debian package `postgresql` (or set QUEEN_PG_BIN_DIR)"
    )]
    BinariesNotFound {
        /// The places that were looked at, in order.
        searched: String,
    },

    /// We run as root, so the server needs an unprivileged user, and there
    /// is none.
    #[error(
        "running as root needs the `{user}` system user to run postgres, and it does not exist; \
         install the Debian package `postgresql` or run the broker as an ordinary user"
    )]
    NoServiceUser {
        /// The user name that was looked up.
        user: String,
    },

    /// The server's user cannot walk down to the data folder.
    #[error(
        "the `{user}` user cannot enter {}; give it access (chmod o+x) \
         or set QUEEN_DATA_DIR to a folder it can reach",
        dir.display()
    )]
    Unreachable {
        /// The account the server runs as.
        user: String,
        /// The highest folder on the way that blocks it.
        dir: PathBuf,
    },

    /// The short socket folder under /tmp exists but someone else could use
    /// or replace the socket in it.
    #[error(
        "{} is not a private folder owned by `{user}`; remove it or use a shorter data folder path",
        dir.display()
    )]
    UnsafeSocketDir {
        /// The socket folder.
        dir: PathBuf,
        /// The account that should own it.
        user: String,
    },

    /// The data folder path cannot be passed through `pg_ctl`, which hands
    /// it to `/bin/sh` inside double quotes.
    #[error(
        "data folder path {} is not UTF-8 or contains one of \" \\ $ ` or a newline, \
         which pg_ctl cannot pass on; choose another folder",
        path.display()
    )]
    UnsupportedPath {
        /// The offending path.
        path: PathBuf,
    },

    /// A file-system operation failed.
    #[error("could not {action}: {source}")]
    Io {
        /// What was being done, e.g. "create /var/lib/queen".
        action: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// `initdb` or `pg_ctl` exited with an error.
    #[error("{program} failed ({status}): {output}")]
    Command {
        /// The program and sub-command, e.g. "pg_ctl start".
        program: String,
        /// How it exited.
        status: String,
        /// Its output, and the end of the server log when relevant.
        output: String,
    },

    /// The server did not accept connections before the deadline.
    #[error(
        "postgres did not accept connections within {} s; the server log ends with:\n{log_tail}",
        waited.as_secs()
    )]
    NotReady {
        /// How long we waited.
        waited: Duration,
        /// The last lines of the server log.
        log_tail: String,
    },
}

/// `.context(|| "what we were doing")` for I/O results.
pub(crate) trait IoContext<T> {
    fn context(self, action: impl FnOnce() -> String) -> Result<T, EmbeddedError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn context(self, action: impl FnOnce() -> String) -> Result<T, EmbeddedError> {
        self.map_err(|source| EmbeddedError::Io {
            action: action(),
            source,
        })
    }
}
