//! TLS for the direct fetch path, on the OpenSSL that librdkafka links (vendored): the same
//! library and the same properties as librdkafka's, so a cluster reads the same either way.
//!
//! Honoured: `ssl.ca.location` (a file or a directory; `probe`, or nothing, looks in the usual
//! system places as librdkafka's statically linked OpenSSL does), `ssl.ca.pem`,
//! `ssl.certificate.location` / `ssl.key.location` / `ssl.key.password` and their `.pem` forms,
//! `ssl.keystore.location` / `ssl.keystore.password` (PKCS#12), `ssl.cipher.suites`,
//! `ssl.curves.list`, `ssl.sigalgs.list`, `ssl.endpoint.identification.algorithm` (`https`,
//! the default, or `none`) and `enable.ssl.certificate.verification`. Any other `ssl.` property
//! leaves the cluster to librdkafka, with the property named.
//!
//! A process builds the client context of the same settings once ([`Tls::from_config`]):
//! building one costs milliseconds of CPU (OpenSSL's context, the CA store read), and each
//! task's producer or reader would pay it again.

use std::net::TcpStream;
use std::path::Path;
use std::time::UNIX_EPOCH;

use openssl::pkcs12::Pkcs12;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    HandshakeError, SslConnector, SslFiletype, SslMethod, SslStream, SslVerifyMode,
};
use openssl::x509::X509;

use super::broker::Refusal;
use super::kept::Kept;
use super::property;

/// Properties this module honours.
const HONOURED: [&str; 14] = [
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.location",
    "ssl.certificate.pem",
    "ssl.key.location",
    "ssl.key.pem",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.cipher.suites",
    "ssl.curves.list",
    "ssl.sigalgs.list",
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
];

/// Where librdkafka's statically linked OpenSSL looks for the system's CA certificates.
const PROBED: [&str; 10] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/etc/ssl/cacert.pem",
    "/usr/local/etc/ssl/cert.pem",
    "/usr/local/share/certs/ca-root-nss.crt",
    "/etc/ssl/certs",
];

/// The properties that name a file (or a directory): its size and modification time are part
/// of the settings, so a rotated certificate or key is read again.
const FILES: [&str; 4] = [
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.keystore.location",
];

/// The contexts built, by the digest of their settings ([`settings`]).
static BUILT: Kept<[u8; 32], Tls> = Kept::new();

/// A digest of the TLS settings of `config`: the honoured properties, and the size and
/// modification time of each file they name (or of the system's CA certificates probed).
fn settings(config: &[(String, String)]) -> [u8; 32] {
    let mut digest = openssl::sha::Sha256::new();
    let mut stamp = |path: &Path| {
        if let Ok(m) = std::fs::metadata(path) {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
            digest.update(&m.len().to_be_bytes());
            digest.update(&modified.unwrap_or_default().as_nanos().to_be_bytes());
        }
    };
    let mut named = Vec::new();
    for key in HONOURED {
        if let Some(value) = property(config, key).filter(|v| !v.is_empty()) {
            named.push(format!("{key}={value}"));
            if FILES.contains(&key) {
                stamp(Path::new(value));
            }
        }
    }
    let ca =
        ["ssl.ca.pem", "ssl.ca.location"].map(|k| property(config, k).filter(|v| !v.is_empty()));
    if ca[0].is_none() && ca[1].is_none_or(|v| v == "probe") {
        if let Some(found) = PROBED.iter().map(Path::new).find(|p| p.exists()) {
            stamp(found);
        }
    }
    for entry in named {
        digest.update(entry.as_bytes());
        digest.update(b"\0");
    }
    digest.finish()
}

/// A cluster's TLS client settings, ready to connect.
#[derive(Clone)]
pub struct Tls {
    connector: SslConnector,
    verify_host: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls {{ verify_host: {} }}", self.verify_host)
    }
}

fn setting(key: &str, e: impl std::fmt::Display) -> String {
    format!("{key} could not be used: {e}")
}

fn private_key(pem: &[u8], password: Option<&str>) -> Result<PKey<Private>, String> {
    match password {
        Some(p) => PKey::private_key_from_pem_passphrase(pem, p.as_bytes()),
        None => PKey::private_key_from_pem(pem),
    }
    .map_err(|e| setting("the client's private key", e))
}

impl Tls {
    /// The TLS settings of this configuration, or why the direct path does not serve it: built
    /// once per process for the same settings.
    pub fn from_config(config: &[(String, String)]) -> Result<Self, String> {
        if let Some((key, _)) = config.iter().find(|(k, _)| {
            (k.starts_with("ssl.") || k.starts_with("ssl_")) && !HONOURED.contains(&k.as_str())
        }) {
            return Err(format!("{key} is set (the direct path does not honour it)"));
        }
        BUILT.get_or_make(settings(config), || Self::build(config))
    }

    fn build(config: &[(String, String)]) -> Result<Self, String> {
        let get = |key: &str| property(config, key).filter(|v| !v.is_empty());
        let mut b =
            SslConnector::builder(SslMethod::tls_client()).map_err(|e| setting("TLS", e))?;
        match (get("ssl.ca.location"), get("ssl.ca.pem")) {
            (_, Some(pem)) => {
                for cert in
                    X509::stack_from_pem(pem.as_bytes()).map_err(|e| setting("ssl.ca.pem", e))?
                {
                    b.cert_store_mut()
                        .add_cert(cert)
                        .map_err(|e| setting("ssl.ca.pem", e))?;
                }
            }
            (Some(location), None) if location != "probe" => {
                let path = Path::new(location);
                let (file, dir) = if path.is_dir() {
                    (None, Some(path))
                } else {
                    (Some(path), None)
                };
                b.load_verify_locations(file, dir)
                    .map_err(|e| setting("ssl.ca.location", e))?;
            }
            _ => {
                let found = PROBED.iter().map(Path::new).find(|p| p.exists());
                let path = found.ok_or(
                    "no ssl.ca.location, and no CA certificates in the system's usual places",
                )?;
                let (file, dir) = if path.is_dir() {
                    (None, Some(path))
                } else {
                    (Some(path), None)
                };
                b.load_verify_locations(file, dir).map_err(|e| {
                    setting(
                        &format!("the system's CA certificates ({})", path.display()),
                        e,
                    )
                })?;
            }
        }
        let password = get("ssl.key.password");
        if let Some(location) = get("ssl.certificate.location") {
            b.set_certificate_chain_file(location)
                .map_err(|e| setting("ssl.certificate.location", e))?;
        }
        if let Some(pem) = get("ssl.certificate.pem") {
            let mut chain = X509::stack_from_pem(pem.as_bytes())
                .map_err(|e| setting("ssl.certificate.pem", e))?
                .into_iter();
            let leaf = chain
                .next()
                .ok_or("ssl.certificate.pem holds no certificate")?;
            b.set_certificate(&leaf)
                .map_err(|e| setting("ssl.certificate.pem", e))?;
            for cert in chain {
                b.add_extra_chain_cert(cert)
                    .map_err(|e| setting("ssl.certificate.pem", e))?;
            }
        }
        if let Some(location) = get("ssl.key.location") {
            match password {
                Some(_) => {
                    let pem =
                        std::fs::read(location).map_err(|e| setting("ssl.key.location", e))?;
                    let key = private_key(&pem, password)?;
                    b.set_private_key(&key)
                        .map_err(|e| setting("ssl.key.location", e))?;
                }
                None => b
                    .set_private_key_file(location, SslFiletype::PEM)
                    .map_err(|e| setting("ssl.key.location", e))?,
            }
        }
        if let Some(pem) = get("ssl.key.pem") {
            let key = private_key(pem.as_bytes(), password)?;
            b.set_private_key(&key)
                .map_err(|e| setting("ssl.key.pem", e))?;
        }
        if let Some(location) = get("ssl.keystore.location") {
            let der = std::fs::read(location).map_err(|e| setting("ssl.keystore.location", e))?;
            let store = Pkcs12::from_der(&der)
                .and_then(|p| p.parse2(get("ssl.keystore.password").unwrap_or_default()))
                .map_err(|e| setting("ssl.keystore.location", e))?;
            if let Some(cert) = store.cert {
                b.set_certificate(&cert)
                    .map_err(|e| setting("ssl.keystore.location", e))?;
            }
            if let Some(key) = store.pkey {
                b.set_private_key(&key)
                    .map_err(|e| setting("ssl.keystore.location", e))?;
            }
            for cert in store.ca.into_iter().flatten() {
                b.add_extra_chain_cert(cert)
                    .map_err(|e| setting("ssl.keystore.location", e))?;
            }
        }
        if ["ssl.key.location", "ssl.key.pem", "ssl.keystore.location"]
            .iter()
            .any(|k| get(k).is_some())
        {
            b.check_private_key()
                .map_err(|e| setting("the client's key pair", e))?;
        }
        if let Some(list) = get("ssl.cipher.suites") {
            b.set_cipher_list(list)
                .map_err(|e| setting("ssl.cipher.suites", e))?;
        }
        if let Some(list) = get("ssl.curves.list") {
            b.set_groups_list(list)
                .map_err(|e| setting("ssl.curves.list", e))?;
        }
        if let Some(list) = get("ssl.sigalgs.list") {
            b.set_sigalgs_list(list)
                .map_err(|e| setting("ssl.sigalgs.list", e))?;
        }
        if get("enable.ssl.certificate.verification")
            .is_some_and(|v| v.eq_ignore_ascii_case("false"))
        {
            b.set_verify(SslVerifyMode::NONE);
        }
        let verify_host = !get("ssl.endpoint.identification.algorithm")
            .is_some_and(|v| v.eq_ignore_ascii_case("none"));
        Ok(Tls {
            connector: b.build(),
            verify_host,
        })
    }

    /// The TLS handshake with `host` over `tcp`; a refusal when the broker's certificate or
    /// name does not verify, or the handshake breaks the protocol.
    pub fn handshake(&self, host: &str, tcp: TcpStream) -> Result<SslStream<TcpStream>, Refusal> {
        let mut connect = self
            .connector
            .configure()
            .map_err(|e| Refusal::Unreachable(setting("TLS", e)))?;
        connect.set_verify_hostname(self.verify_host);
        match connect.connect(host, tcp) {
            Ok(stream) => Ok(stream),
            Err(HandshakeError::Failure(mid)) => {
                let verified = mid.ssl().verify_result();
                let error = mid.error();
                if error.io_error().is_some() {
                    Err(Refusal::Unreachable(format!(
                        "the TLS handshake with {host} failed: {error}"
                    )))
                } else if verified.as_raw() != 0 {
                    Err(Refusal::Refused(format!(
                        "the TLS handshake with {host} failed: the broker's certificate does not \
                         verify ({})",
                        verified.error_string()
                    )))
                } else {
                    Err(Refusal::Refused(format!(
                        "the TLS handshake with {host} failed: {error}"
                    )))
                }
            }
            Err(HandshakeError::WouldBlock(_)) => Err(Refusal::Unreachable(format!(
                "the TLS handshake with {host} timed out"
            ))),
            Err(HandshakeError::SetupFailure(e)) => Err(Refusal::Unreachable(setting("TLS", e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::asn1::Asn1Time;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::x509::{X509Builder, X509NameBuilder};

    /// A self-signed certificate named `name`, as PEM.
    fn certificate(name: &str) -> Vec<u8> {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
        let mut subject = X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", name).unwrap();
        let subject = subject.build();
        let mut b = X509Builder::new().unwrap();
        b.set_version(2).unwrap();
        b.set_subject_name(&subject).unwrap();
        b.set_issuer_name(&subject).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        b.build().to_pem().unwrap()
    }

    #[test]
    fn a_context_is_built_once_per_settings_and_again_for_a_rotated_file() {
        let dir = std::env::temp_dir().join(format!("dk-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, certificate("first")).unwrap();
        let config = |ciphers: &str| {
            vec![
                ("ssl.ca.location".to_string(), ca.display().to_string()),
                ("ssl.cipher.suites".to_string(), ciphers.to_string()),
            ]
        };
        let same = |a: &Tls, b: &Tls| std::ptr::eq(a.connector.context(), b.connector.context());
        let first = Tls::from_config(&config("DEFAULT")).unwrap();
        assert!(same(&first, &Tls::from_config(&config("DEFAULT")).unwrap()));
        // Another property: another context.
        assert!(!same(&first, &Tls::from_config(&config("HIGH")).unwrap()));
        // The CA file rotated (another certificate): read again.
        std::fs::write(&ca, certificate("second, rotated")).unwrap();
        let rotated = Tls::from_config(&config("DEFAULT")).unwrap();
        assert!(!same(&first, &rotated));
        assert!(same(
            &rotated,
            &Tls::from_config(&config("DEFAULT")).unwrap()
        ));
        // A refused setting is refused each time, never kept.
        std::fs::write(&ca, b"not a certificate").unwrap();
        for _ in 0..2 {
            let refused = Tls::from_config(&config("DEFAULT")).unwrap_err();
            assert!(refused.contains("ssl.ca.location"), "{refused}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
