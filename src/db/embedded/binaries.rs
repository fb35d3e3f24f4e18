//! Finding the PostgreSQL server programs (`initdb`, `pg_ctl`).
//!
//! Only the lookup lives here; running them is the launcher's business.
//! `pg_ctl` finds the `postgres` executable next to its own (resolved) path,
//! so we never look for `postgres` ourselves.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::EmbeddedError;

/// Where Debian installs each major version: `/usr/lib/postgresql/<v>/bin`.
const VERSIONED_ROOT: &str = "/usr/lib/postgresql";

/// The two programs the launcher runs directly.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub(crate) initdb: PathBuf,
    pub(crate) pg_ctl: PathBuf,
}

/// Looks for the programs in the documented order: the explicit directory
/// (and nothing else if one is given, so an override never silently falls
/// back), `pg_config --bindir`, `PATH`, then the newest Debian version.
pub(crate) fn find(explicit: Option<&Path>) -> Result<Binaries, EmbeddedError> {
    find_in(
        explicit,
        Some(OsStr::new("pg_config")),
        std::env::var_os("PATH"),
        Path::new(VERSIONED_ROOT),
    )
}

fn find_in(
    explicit: Option<&Path>,
    pg_config: Option<&OsStr>,
    path_var: Option<OsString>,
    versioned_root: &Path,
) -> Result<Binaries, EmbeddedError> {
    if let Some(dir) = explicit {
        return in_dir(dir).ok_or_else(|| not_found(vec![dir.display().to_string()]));
    }
    let mut searched = Vec::new();
    if let Some(dir) = pg_config.and_then(pg_config_bindir) {
        if let Some(found) = in_dir(&dir) {
            return Ok(found);
        }
        searched.push(format!("{} (from pg_config)", dir.display()));
    }
    if let Some(path_var) = path_var {
        let dirs: Vec<PathBuf> = std::env::split_paths(&path_var).collect();
        if let (Some(initdb), Some(pg_ctl)) = (first_in(&dirs, "initdb"), first_in(&dirs, "pg_ctl"))
        {
            return Ok(Binaries { initdb, pg_ctl });
        }
        searched.push("PATH".to_owned());
    }
    if let Some(found) = versioned_bin_dirs(versioned_root)
        .iter()
        .find_map(|d| in_dir(d))
    {
        return Ok(found);
    }
    searched.push(format!("{}/*/bin", versioned_root.display()));
    Err(not_found(searched))
}

fn not_found(searched: Vec<String>) -> EmbeddedError {
    EmbeddedError::BinariesNotFound {
        searched: searched.join(", "),
    }
}

/// Both programs from one directory, if it has them.
fn in_dir(dir: &Path) -> Option<Binaries> {
    let initdb = dir.join("initdb");
    let pg_ctl = dir.join("pg_ctl");
    (is_executable(&initdb) && is_executable(&pg_ctl)).then_some(Binaries { initdb, pg_ctl })
}

fn first_in(dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// `pg_config --bindir`, when a `pg_config` runs at all.
fn pg_config_bindir(program: &OsStr) -> Option<PathBuf> {
    let output = Command::new(program)
        .arg("--bindir")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8(output.stdout).ok()?;
    let dir = dir.trim();
    (output.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
}

/// `<root>/<version>/bin` for every version-named entry, newest first.
fn versioned_bin_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let version = name
                .to_str()?
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fake_bin_dir(dir: &Path) {
        fs::create_dir_all(dir).unwrap();
        for name in ["initdb", "pg_ctl"] {
            let path = dir.join(name);
            fs::write(&path, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn missing_explicit_dir_does_not_fall_back_and_names_the_package() {
        let root = tempfile::tempdir().unwrap();
        fake_bin_dir(&root.path().join("15/bin"));
        let err = find_in(
            Some(Path::new("/nonexistent/pg/bin")),
            None,
            None,
            root.path(),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, EmbeddedError::BinariesNotFound { .. }));
        assert!(message.contains("/nonexistent/pg/bin"), "{message}");
        assert!(
            message.contains("install the Debian package `postgresql`"),
            "{message}"
        );
        assert!(message.contains("QUEEN_PG_BIN_DIR"), "{message}");
    }

    #[test]
    fn newest_debian_version_wins_numerically() {
        let root = tempfile::tempdir().unwrap();
        for version in ["9.6", "15", "14", "not-a-version"] {
            fake_bin_dir(&root.path().join(version).join("bin"));
        }
        let found = find_in(None, None, None, root.path()).unwrap();
        assert_eq!(found.initdb, root.path().join("15/bin/initdb"));
    }

    #[test]
    fn path_is_searched_before_debian_versions() {
        let root = tempfile::tempdir().unwrap();
        fake_bin_dir(&root.path().join("versions/15/bin"));
        fake_bin_dir(&root.path().join("on-path"));
        let path_var =
            std::env::join_paths([root.path().join("empty"), root.path().join("on-path")]).unwrap();
        let found = find_in(
            None,
            Some(OsStr::new("queen-no-such-pg-config")),
            Some(path_var),
            &root.path().join("versions"),
        )
        .unwrap();
        assert_eq!(found.pg_ctl, root.path().join("on-path/pg_ctl"));
    }

    #[test]
    fn nothing_anywhere_lists_what_was_searched() {
        let root = tempfile::tempdir().unwrap();
        let err = find_in(None, None, Some(OsString::new()), root.path()).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("PATH"), "{message}");
        assert!(message.contains("*/bin"), "{message}");
    }
}
