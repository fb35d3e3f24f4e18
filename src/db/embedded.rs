//! TEMPORARY stub: replaced by the real launcher.
#![allow(missing_docs, dead_code)]
use std::path::{Path, PathBuf};
pub struct EmbeddedOptions {
    pub data_dir: PathBuf,
    pub port: u16,
    pub user: String,
    pub bin_dir: Option<PathBuf>,
    pub server_settings: Vec<(String, String)>,
}
pub struct EmbeddedPostgres {
    dir: PathBuf,
}
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("stub")]
    Stub,
}
impl EmbeddedPostgres {
    pub fn start(_o: EmbeddedOptions) -> Result<Self, EmbeddedError> {
        Err(EmbeddedError::Stub)
    }
    pub fn pg_config(&self, _db: &str) -> tokio_postgres::Config {
        tokio_postgres::Config::new()
    }
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }
    pub fn stop(&mut self) -> Result<(), EmbeddedError> {
        Ok(())
    }
}
