//! The push spool's section of the config: where a push is written while PostgreSQL is
//! away (or while push maintenance is on), and how much it may hold.

use std::path::PathBuf;

use super::{ConfigError, Vars};

/// Default cap on the spool's files: 1 GiB, room for minutes of heavy pushing on a node
/// while the database is away, small beside a node's disk.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// The push spool.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    /// `FILE_BUFFER_DIR` (the name Queen operators know): the spool's folder. Default
    /// `spool` inside `QUEEN_DATA_DIR` (itself `./queen-data` by default), whatever the
    /// database: a node's spool belongs to the node.
    pub dir: PathBuf,
    /// True when `FILE_BUFFER_DIR` was given: a folder that cannot be used then stops the
    /// start; the default folder that cannot be used only turns the spool off, with an
    /// error in the log (an image whose working folder is read-only still serves).
    pub dir_given: bool,
    /// `FILE_BUFFER_MAX_BYTES`: the most the spool's files may hold (default 1 GiB); a push
    /// that would pass it answers 503. `0` turns the spool off: a push during an outage
    /// answers 503 as it did before the spool existed.
    pub max_bytes: u64,
}

impl SpoolConfig {
    /// True when pushes may be spooled.
    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }
}

/// Reads the spool section.
pub(super) fn spool_config(vars: &Vars) -> Result<SpoolConfig, ConfigError> {
    let given = vars.get("FILE_BUFFER_DIR").map(PathBuf::from);
    let dir_given = given.is_some();
    let dir = given.unwrap_or_else(|| {
        PathBuf::from(vars.get("QUEEN_DATA_DIR").unwrap_or("./queen-data")).join("spool")
    });
    Ok(SpoolConfig {
        dir,
        dir_given,
        max_bytes: vars.parse(
            "FILE_BUFFER_MAX_BYTES",
            DEFAULT_MAX_BYTES,
            "a whole number of bytes (0 turns the spool off)",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    #[test]
    fn the_spool_defaults_to_a_folder_of_the_data_dir_and_follows_it() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.spool.dir, std::path::Path::new("./queen-data/spool"));
        assert!(!config.spool.dir_given);
        assert!(config.spool.enabled());
        let config = Config::from_vars([("QUEEN_DATA_DIR", "/var/lib/queen")]).unwrap();
        assert_eq!(
            config.spool.dir,
            std::path::Path::new("/var/lib/queen/spool")
        );
    }

    #[test]
    fn file_buffer_settings_are_read_and_zero_turns_the_spool_off() {
        let config = Config::from_vars([
            ("FILE_BUFFER_DIR", "/tmp/q"),
            ("FILE_BUFFER_MAX_BYTES", "0"),
        ])
        .unwrap();
        assert_eq!(config.spool.dir, std::path::Path::new("/tmp/q"));
        assert!(config.spool.dir_given);
        assert!(!config.spool.enabled());
        assert!(Config::from_vars([("FILE_BUFFER_MAX_BYTES", "lots")]).is_err());
    }
}
