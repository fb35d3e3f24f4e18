//! Where the cluster's files go inside the broker's data folder, and where
//! its Unix socket goes when the data folder's path is too long for one.

use std::fs::{self, DirBuilder};
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::account::Account;
use super::{EmbeddedError, IoContext};

/// `sockaddr_un.sun_path` holds 108 bytes including the final NUL;
/// PostgreSQL and libpq refuse anything longer.
const SOCKET_PATH_MAX: usize = 107;

/// The files and folders of one embedded cluster.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The broker's data folder (absolute, symlinks resolved).
    pub(crate) data_dir: PathBuf,
    /// PostgreSQL's own data directory.
    pub(crate) pgdata: PathBuf,
    /// Where initdb builds a new cluster before it is renamed to `pgdata`,
    /// so a crash during initdb never leaves a half-made `pgdata` behind.
    pub(crate) staging: PathBuf,
    /// The server log (`pg_ctl -l`).
    pub(crate) log: PathBuf,
}

impl Layout {
    /// The layout under an absolute, canonical data folder.
    pub(crate) fn new(data_dir: PathBuf) -> Self {
        Self {
            pgdata: data_dir.join("pgdata"),
            staging: data_dir.join("pgdata.initdb"),
            log: data_dir.join("postgres.log"),
            data_dir,
        }
    }

    /// The socket folder: `<data_dir>/socket`, or a short private folder
    /// under /tmp named after the data folder when that path is too long.
    pub(crate) fn socket_dir(&self, port: u16) -> SocketDir {
        let preferred = self.data_dir.join("socket");
        if socket_file(&preferred, port).as_os_str().len() <= SOCKET_PATH_MAX {
            SocketDir::InData(preferred)
        } else {
            let hash = fnv1a(self.data_dir.as_os_str().as_bytes());
            SocketDir::Short(PathBuf::from(format!("/tmp/queen-pg-{hash:016x}")))
        }
    }
}

/// The socket file PostgreSQL creates in `dir` for `port`.
pub(crate) fn socket_file(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!(".s.PGSQL.{port}"))
}

/// A socket folder and whether it lives inside our data folder (ours to
/// fix) or in /tmp (shared with everyone, so only trusted if it is private).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SocketDir {
    InData(PathBuf),
    Short(PathBuf),
}

impl SocketDir {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::InData(path) | Self::Short(path) => path,
        }
    }

    /// Creates the folder (mode 0700, owned by `account`): the socket grants
    /// superuser access without a password, so nobody else may reach it.
    pub(crate) fn prepare(&self, account: &Account) -> Result<(), EmbeddedError> {
        let path = self.path();
        let created = match DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
            Err(e) => return Err(e).context(|| format!("create {}", path.display())),
        };
        match self {
            Self::InData(_) => {
                fs::set_permissions(path, fs::Permissions::from_mode(0o700))
                    .context(|| format!("restrict {}", path.display()))?;
                account.give(path)
            }
            Self::Short(_) if created => account.give(path),
            Self::Short(_) => {
                let meta =
                    fs::symlink_metadata(path).context(|| format!("inspect {}", path.display()))?;
                let private = meta.is_dir()
                    && meta.uid() == account.uid
                    && meta.permissions().mode() & 0o077 == 0;
                if private {
                    Ok(())
                } else {
                    Err(EmbeddedError::UnsafeSocketDir {
                        dir: path.to_path_buf(),
                        user: account.name.clone(),
                    })
                }
            }
        }
    }
}

/// 64-bit FNV-1a: a hash that stays the same across Rust releases, so a
/// new broker build finds the socket folder an older one chose.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_data_dir_keeps_the_socket_inside() {
        let layout = Layout::new(PathBuf::from("/var/lib/queen"));
        assert_eq!(
            layout.socket_dir(5432),
            SocketDir::InData(PathBuf::from("/var/lib/queen/socket"))
        );
    }

    #[test]
    fn long_data_dir_moves_the_socket_to_a_stable_short_folder() {
        let long = PathBuf::from(format!("/srv/{}", "x".repeat(100)));
        let dir = Layout::new(long.clone()).socket_dir(5432);
        let SocketDir::Short(path) = &dir else {
            panic!("expected a short socket folder, got {dir:?}");
        };
        assert!(path.starts_with("/tmp"));
        assert!(socket_file(path, 65535).as_os_str().len() <= SOCKET_PATH_MAX);
        assert_eq!(Layout::new(long).socket_dir(5432), dir);
        assert_ne!(
            Layout::new(PathBuf::from(format!("/srv/{}", "y".repeat(100)))).socket_dir(5432),
            dir
        );
    }

    #[test]
    fn the_limit_is_exactly_107_bytes() {
        // "/.s.PGSQL.5432" is 14 bytes.
        let fits = PathBuf::from(format!("/{}", "a".repeat(107 - 14 - 1 - "/socket".len())));
        assert!(matches!(
            Layout::new(fits.clone()).socket_dir(5432),
            SocketDir::InData(_)
        ));
        let too_long = PathBuf::from(format!("{}b", fits.display()));
        assert!(matches!(
            Layout::new(too_long).socket_dir(5432),
            SocketDir::Short(_)
        ));
    }

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
