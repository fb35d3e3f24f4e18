//! TLS to PostgreSQL: how strictly the broker checks the server it connects to.
//!
//! The modes are libpq's `sslmode` values (the ones that make sense for a server): the
//! connector that carries them out is `crate::db::tls`. The embedded PostgreSQL listens on
//! a Unix socket only, where TLS never applies.

use std::path::PathBuf;

use super::{ConfigError, Vars};

/// TLS settings of the database connection.
#[derive(Debug, Clone, Default)]
pub struct PgTlsConfig {
    /// `QUEEN_PG_SSLMODE` (default `disable`): `disable`, `prefer`, `require`, `verify-ca`
    /// or `verify-full`.
    pub mode: PgSslMode,
    /// `QUEEN_PG_SSL_ROOT_CERT`: a PEM file of the certificate authorities that may sign
    /// the server's certificate; needed by `verify-ca` and `verify-full`.
    pub root_cert: Option<PathBuf>,
}

/// libpq's `sslmode`, as far as a client of one server needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PgSslMode {
    /// Plain connections (the default; the embedded server is reached over a Unix socket).
    #[default]
    Disable,
    /// TLS when the server offers it, unchecked; plain otherwise.
    Prefer,
    /// TLS always; the server's certificate is not checked (libpq's `require`).
    Require,
    /// TLS always; the certificate must chain to `QUEEN_PG_SSL_ROOT_CERT`.
    VerifyCa,
    /// TLS always; the certificate must chain to `QUEEN_PG_SSL_ROOT_CERT` and name the host.
    VerifyFull,
}

impl PgSslMode {
    /// True when the server's certificate is checked against the root certificates.
    pub fn verifies(self) -> bool {
        matches!(self, PgSslMode::VerifyCa | PgSslMode::VerifyFull)
    }
}

/// Reads the TLS settings; the verifying modes need a root certificate file.
pub(super) fn pg_tls_config(vars: &Vars) -> Result<PgTlsConfig, ConfigError> {
    let mode = match vars
        .get("QUEEN_PG_SSLMODE")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("disable") => PgSslMode::Disable,
        Some("prefer") => PgSslMode::Prefer,
        Some("require") => PgSslMode::Require,
        Some("verify-ca") => PgSslMode::VerifyCa,
        Some("verify-full") => PgSslMode::VerifyFull,
        Some(other) => {
            return Err(ConfigError::Invalid {
                name: "QUEEN_PG_SSLMODE",
                value: other.to_owned(),
                rule: "disable, prefer, require, verify-ca or verify-full",
            })
        }
    };
    let root_cert = vars.get("QUEEN_PG_SSL_ROOT_CERT").map(PathBuf::from);
    if mode.verifies() && root_cert.is_none() {
        return Err(ConfigError::Invalid {
            name: "QUEEN_PG_SSLMODE",
            value: vars.get("QUEEN_PG_SSLMODE").unwrap_or_default().to_owned(),
            rule: "verify-ca and verify-full need QUEEN_PG_SSL_ROOT_CERT",
        });
    }
    Ok(PgTlsConfig { mode, root_cert })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn tls_is_off_by_default_and_verifying_needs_a_root_certificate() {
        let config = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
        assert_eq!(config.database.tls.mode, PgSslMode::Disable);
        let err = Config::from_vars([("QUEEN_PG_SSLMODE", "verify-full")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("QUEEN_PG_SSL_ROOT_CERT"), "{err}");
        let config = Config::from_vars([
            ("QUEEN_PG_SSLMODE", "Verify-Full"),
            ("QUEEN_PG_SSL_ROOT_CERT", "/etc/ca.pem"),
        ])
        .unwrap();
        assert_eq!(config.database.tls.mode, PgSslMode::VerifyFull);
        assert!(Config::from_vars([("QUEEN_PG_SSLMODE", "allow-anything")]).is_err());
    }
}
