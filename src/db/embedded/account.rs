//! Which operating-system user runs the server and owns its files.
//!
//! PostgreSQL refuses to run as root, and the broker is often started as
//! root (containers, systemd units). In that case the server runs as the
//! unprivileged `postgres` user: this module owns that decision, running
//! commands under it, giving it files, and checking that it can reach them.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::fs::{lchown, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{EmbeddedError, IoContext};

/// The system user the server runs as when we are root.
pub(crate) const SERVICE_USER: &str = "postgres";

/// The user the server processes run as.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub(crate) name: String,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// True when we are root and must switch to `uid`/`gid` for the server.
    switch: bool,
}

impl Account {
    /// The account for this process: ourselves, or `postgres` if we are root.
    pub(crate) fn for_this_process() -> Result<Self, EmbeddedError> {
        // SAFETY: geteuid/getegid have no preconditions and cannot fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if euid != 0 {
            return Ok(Self {
                name: format!("uid {euid}"),
                uid: euid,
                gid: egid,
                switch: false,
            });
        }
        let (uid, gid) = lookup_user(SERVICE_USER)
            .context(|| format!("look up the `{SERVICE_USER}` user"))?
            .ok_or_else(|| EmbeddedError::NoServiceUser {
                user: SERVICE_USER.to_owned(),
            })?;
        Ok(Self {
            name: SERVICE_USER.to_owned(),
            uid,
            gid,
            switch: true,
        })
    }

    /// A command that runs `program` as this account, from `/` (a root
    /// working directory such as `/root` would be unreadable after the
    /// switch, and initdb/pg_ctl complain about that).
    pub(crate) fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir("/").stdin(Stdio::null());
        if self.switch {
            // std drops supplementary groups when root sets a uid, so only
            // the primary group counts: `can_traverse` assumes the same.
            command.uid(self.uid).gid(self.gid);
        }
        command
    }

    /// Gives one file or folder to this account (no-op unless switching).
    pub(crate) fn give(&self, path: &Path) -> Result<(), EmbeddedError> {
        if !self.switch {
            return Ok(());
        }
        lchown(path, Some(self.uid), Some(self.gid))
            .context(|| format!("give {} to `{}`", path.display(), self.name))
    }

    /// Gives a whole tree to this account, but only if its root belongs to
    /// someone else (e.g. a cluster created by an earlier non-root run):
    /// files the server creates are already its own, so the walk is rare.
    pub(crate) fn give_tree_if_foreign(&self, root: &Path) -> Result<(), EmbeddedError> {
        let meta = fs::symlink_metadata(root).context(|| format!("inspect {}", root.display()))?;
        if !self.switch || meta.uid() == self.uid {
            return Ok(());
        }
        tracing::info!(dir = %root.display(), user = %self.name, "changing owner of postgres data");
        let mut pending = vec![root.to_path_buf()];
        while let Some(path) = pending.pop() {
            self.give(&path)?;
            let meta =
                fs::symlink_metadata(&path).context(|| format!("inspect {}", path.display()))?;
            if meta.is_dir() {
                for entry in fs::read_dir(&path).context(|| format!("list {}", path.display()))? {
                    pending.push(entry.context(|| format!("list {}", path.display()))?.path());
                }
            }
        }
        Ok(())
    }

    /// Checks that this account can walk down to `dir` (which must exist and
    /// be absolute), naming the highest folder that stops it.
    pub(crate) fn check_reachable(&self, dir: &Path) -> Result<(), EmbeddedError> {
        if !self.switch {
            return Ok(());
        }
        let mut chain: Vec<&Path> = dir.ancestors().collect();
        chain.reverse();
        for folder in chain {
            let meta = fs::metadata(folder).context(|| format!("inspect {}", folder.display()))?;
            if !self.can_traverse(&meta) {
                return Err(EmbeddedError::Unreachable {
                    user: self.name.clone(),
                    dir: PathBuf::from(folder),
                });
            }
        }
        Ok(())
    }

    /// Classic permission bits, owner class first (ACLs are not consulted).
    fn can_traverse(&self, meta: &fs::Metadata) -> bool {
        let mode = meta.permissions().mode();
        if meta.uid() == self.uid {
            mode & 0o100 != 0
        } else if meta.gid() == self.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        }
    }
}

/// `(uid, gid)` of a user name, via the thread-safe `getpwnam_r`.
fn lookup_user(name: &str) -> io::Result<Option<(u32, u32)>> {
    let c_name = CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids).
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf.len()` is
        // the real size of `buf`; the strings it fills are not kept.
        let rc = unsafe {
            libc::getpwnam_r(
                c_name.as_ptr(),
                &mut entry,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        return Ok((!result.is_null()).then_some((entry.pw_uid, entry.pw_gid)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_root_and_not_nonsense() {
        assert_eq!(lookup_user("root").unwrap(), Some((0, 0)));
        assert_eq!(lookup_user("queen-no-such-user").unwrap(), None);
    }

    #[test]
    fn traversal_follows_the_owner_class_first() {
        let dir = tempfile::tempdir().unwrap();
        let account = Account {
            name: "someone".into(),
            uid: 4242,
            gid: 4242,
            switch: true,
        };
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o750)).unwrap();
        assert!(!account.can_traverse(&fs::metadata(dir.path()).unwrap()));
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o751)).unwrap();
        assert!(account.can_traverse(&fs::metadata(dir.path()).unwrap()));
    }
}
