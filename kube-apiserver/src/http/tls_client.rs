//! Client-side TLS verification shared by the apiserver's outbound calls (kubelets, component
//! health probes): a CA when one is configured, else any certificate as Go's
//! `InsecureSkipVerify`, with the handshake's signatures still checked.

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

/// Verifies against the CA when one is configured; without one accepts any certificate (Go's
/// `InsecureSkipVerify`, upstream's default towards kubelets), still checking signatures.
#[derive(Debug)]
pub struct ServerVerifier {
    provider: Arc<CryptoProvider>,
    verifier: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(verifier) = &self.verifier else {
            return Ok(ServerCertVerified::assertion());
        };
        verifier.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
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
            &self.provider.signature_verification_algorithms,
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
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ServerVerifier {
    /// Verifies with `verifier`, or accepts any certificate without one.
    pub fn new(provider: Arc<CryptoProvider>, verifier: Option<Arc<WebPkiServerVerifier>>) -> Self {
        Self { provider, verifier }
    }

    /// Accepts any certificate (the handshake's signatures are still checked).
    pub fn accept_any(provider: Arc<CryptoProvider>) -> Self {
        Self::new(provider, None)
    }
}
