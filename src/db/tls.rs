//! TLS to PostgreSQL with rustls (through `tokio-postgres-rustls`): the connector every
//! pooled connection is opened with, built from `QUEEN_PG_SSLMODE` and
//! `QUEEN_PG_SSL_ROOT_CERT` as libpq reads them.
//!
//! `require` (and `prefer`) encrypt without checking the server's certificate, as libpq
//! does without a root certificate; `verify-ca` checks it chains to the given authorities;
//! `verify-full` checks that and that it names the host connected to. The signature checks
//! of the handshake are always rustls's own; only the certificate policy is chosen here.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::config::{PgSslMode, PgTlsConfig};

/// Why the TLS settings could not be turned into a connector.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The root certificate file could not be read as PEM certificates.
    #[error("QUEEN_PG_SSL_ROOT_CERT {path} holds no readable PEM certificate")]
    RootCert {
        /// The file.
        path: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration refused")]
    Rustls(#[from] rustls::Error),
    /// The verifier could not be built from the roots.
    #[error("TLS verifier could not be built")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
}

/// The `sslmode` a connection must use: the setting's, or with the default `disable`, what a
/// `DATABASE_URL` asked for only if it asked for `require` (tokio-postgres reads a missing
/// `sslmode` as `prefer`, which would turn on TLS behind the setting's back).
pub fn ssl_mode(config: &PgTlsConfig, asked: SslMode) -> SslMode {
    match config.mode {
        PgSslMode::Disable if asked == SslMode::Require => SslMode::Require,
        PgSslMode::Disable => SslMode::Disable,
        PgSslMode::Prefer => SslMode::Prefer,
        _ => SslMode::Require,
    }
}

/// The connector for `config` (used only by connections whose `sslmode` asks for TLS).
pub fn connector(config: &PgTlsConfig) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let verifier: Arc<dyn ServerCertVerifier> = match config.mode {
        PgSslMode::Disable | PgSslMode::Prefer | PgSslMode::Require => {
            Arc::new(AcceptAnyCertificate(provider))
        }
        PgSslMode::VerifyCa | PgSslMode::VerifyFull => {
            let path = config
                .root_cert
                .as_deref()
                .expect("the config requires a root certificate for the verifying modes");
            let roots = Arc::new(roots(path)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider).build()?;
            match config.mode {
                PgSslMode::VerifyFull => webpki,
                _ => Arc::new(ChainOnly(webpki)),
            }
        }
    };
    let tls = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(tls))
}

fn roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let unreadable = || TlsError::RootCert {
        path: path.display().to_string(),
    };
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|_| unreadable())? {
        store.add(cert.map_err(|_| unreadable())?)?;
    }
    if store.is_empty() {
        return Err(unreadable());
    }
    Ok(store)
}

/// libpq's `require`: any certificate, but the handshake's signatures are still checked
/// (the session is encrypted to whoever holds the certificate's key).
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// libpq's `verify-ca`: the chain must reach the roots; the name is not compared.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_plain_unless_a_url_requires_tls_and_a_setting_wins() {
        let with = |mode| PgTlsConfig {
            mode,
            root_cert: None,
        };
        assert_eq!(
            ssl_mode(&with(PgSslMode::Disable), SslMode::Prefer),
            SslMode::Disable
        );
        assert_eq!(
            ssl_mode(&with(PgSslMode::Disable), SslMode::Require),
            SslMode::Require
        );
        assert_eq!(
            ssl_mode(&with(PgSslMode::Prefer), SslMode::Disable),
            SslMode::Prefer
        );
        for mode in [
            PgSslMode::Require,
            PgSslMode::VerifyCa,
            PgSslMode::VerifyFull,
        ] {
            assert_eq!(ssl_mode(&with(mode), SslMode::Disable), SslMode::Require);
        }
    }

    #[test]
    fn a_root_certificate_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.pem");
        std::fs::write(&file, "not a certificate").unwrap();
        let config = PgTlsConfig {
            mode: PgSslMode::VerifyFull,
            root_cert: Some(file),
        };
        assert!(matches!(connector(&config), Err(TlsError::RootCert { .. })));
    }
}
