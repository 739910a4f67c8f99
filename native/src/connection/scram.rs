//! The client side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks it:
//! no channel binding (`n,,`), no authorization id, a username with `=` and `,` escaped, at
//! least 4096 iterations (as Kafka's Java client demands) and at most 16384 (what a Kafka
//! cluster stores), and the server's signature checked before the session is trusted.
//!
//! A salted password is computed once per process for a credential and the broker's salt
//! ([`salted_password`]): PBKDF2 costs milliseconds of CPU, and every connection a task opens
//! (its control, leaders' and coordinators' connections) would pay it again.

use openssl::hash::{hash, MessageDigest};
use openssl::pkey::PKey;
use openssl::sign::Signer;

use super::kept::Kept;

/// Kafka's lowest iteration count for either mechanism.
const MIN_ITERATIONS: usize = 4096;
/// The most a Kafka cluster stores a credential with (its controller refuses more): a broker
/// asking for billions would hold the connection in PBKDF2 for hours.
const MAX_ITERATIONS: usize = 16384;

/// What a salted password is computed from: the hash, a SHA-256 digest of the password (the
/// password itself is not kept again), the broker's salt and the iteration count.
type Salting = (Hash, [u8; 32], Vec<u8>, usize);

/// The salted passwords computed (a changed credential has a new salt: computed afresh).
static SALTED: Kept<Salting, Vec<u8>> = Kept::new();

/// SCRAM's hash function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha512,
}

impl Hash {
    fn digest(self) -> MessageDigest {
        match self {
            Hash::Sha256 => MessageDigest::sha256(),
            Hash::Sha512 => MessageDigest::sha512(),
        }
    }
}

/// One SCRAM exchange: [`Scram::first`], then [`Scram::answer`] to the server's first message,
/// then [`Scram::verify`] of its final one.
pub struct Scram {
    hash: Hash,
    password: String,
    nonce: String,
    client_first_bare: String,
    server_signature: Option<Vec<u8>>,
}

fn crypto(e: openssl::error::ErrorStack) -> String {
    format!("SCRAM's cryptography failed: {e}")
}

impl Scram {
    /// An exchange for `user` with `password`, using the client nonce `nonce` (printable, no
    /// comma: see [`nonce`]).
    pub fn new(hash: Hash, user: &str, password: &str, nonce: &str) -> Self {
        let user = user.replace('=', "=3D").replace(',', "=2C");
        Scram {
            hash,
            password: password.to_string(),
            nonce: nonce.to_string(),
            client_first_bare: format!("n={user},r={nonce}"),
            server_signature: None,
        }
    }

    /// The client's first message.
    pub fn first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// The client's final message (with its proof), given the server's first message.
    pub fn answer(&mut self, server_first: &str) -> Result<String, String> {
        let field = |name: char| {
            server_first
                .split(',')
                .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
        };
        if let Some(error) = field('e') {
            return Err(format!("the broker refused the SCRAM exchange: {error}"));
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (field('r'), field('s'), field('i'))
        else {
            return Err("the broker's SCRAM message lacks its nonce, salt or iterations".into());
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("the broker's SCRAM nonce does not extend the client's".into());
        }
        let salt = openssl::base64::decode_block(salt)
            .map_err(|_| "the broker's SCRAM salt is not base64".to_string())?;
        let iterations: usize = iterations
            .parse()
            .map_err(|_| "the broker's SCRAM iteration count is not a number".to_string())?;
        if iterations < MIN_ITERATIONS {
            return Err(format!(
                "the broker asks for {iterations} SCRAM iterations, fewer than {MIN_ITERATIONS}"
            ));
        }
        if iterations > MAX_ITERATIONS {
            return Err(format!(
                "the broker asks for {iterations} SCRAM iterations, more than a Kafka cluster \
                 stores ({MAX_ITERATIONS})"
            ));
        }
        let digest = self.hash.digest();
        let salted = salted_password(self.hash, &self.password, &salt, iterations)?;
        let client_key = self.hmac(&salted, b"Client Key")?;
        let stored_key = hash(digest, &client_key).map_err(crypto)?;
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = self.hmac(&stored_key, auth.as_bytes())?;
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = self.hmac(&salted, b"Server Key")?;
        self.server_signature = Some(self.hmac(&server_key, auth.as_bytes())?);
        Ok(format!(
            "{without_proof},p={}",
            openssl::base64::encode_block(&proof)
        ))
    }

    /// Check the server's final message: its signature proves it knows the password's keys.
    pub fn verify(&self, server_final: &str) -> Result<(), String> {
        if let Some(error) = server_final.strip_prefix("e=") {
            return Err(format!("the broker refused the SCRAM proof: {error}"));
        }
        let expected = self
            .server_signature
            .as_deref()
            .ok_or("the SCRAM exchange ended before the client's proof")?;
        let given = server_final
            .strip_prefix("v=")
            .and_then(|v| openssl::base64::decode_block(v.split(',').next()?).ok());
        match given {
            Some(v) if v.len() == expected.len() && openssl::memcmp::eq(&v, expected) => Ok(()),
            _ => Err(
                "the broker's SCRAM signature does not match: not the broker the \
                      credentials belong to"
                    .into(),
            ),
        }
    }

    fn hmac(&self, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
        let key = PKey::hmac(key).map_err(crypto)?;
        let mut signer = Signer::new(self.hash.digest(), &key).map_err(crypto)?;
        signer.update(data).map_err(crypto)?;
        signer.sign_to_vec().map_err(crypto)
    }
}

/// PBKDF2 of `password` with `salt` and `iterations` (RFC 5802's SaltedPassword), computed once
/// per process for the same inputs.
fn salted_password(
    hash: Hash,
    password: &str,
    salt: &[u8],
    iterations: usize,
) -> Result<Vec<u8>, String> {
    let salting = (
        hash,
        openssl::sha::sha256(password.as_bytes()),
        salt.to_vec(),
        iterations,
    );
    SALTED.get_or_make(salting, || {
        let digest = hash.digest();
        let mut salted = vec![0u8; digest.size()];
        openssl::pkcs5::pbkdf2_hmac(password.as_bytes(), salt, iterations, digest, &mut salted)
            .map_err(crypto)?;
        Ok(salted)
    })
}

/// A fresh client nonce: 24 random bytes, base64 (printable, never a comma).
pub fn nonce() -> Result<String, String> {
    let mut bytes = [0u8; 24];
    openssl::rand::rand_bytes(&mut bytes).map_err(crypto)?;
    Ok(openssl::base64::encode_block(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_7677_scram_sha_256_test_vector() {
        let mut s = Scram::new(Hash::Sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(s.first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                            s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        assert_eq!(
            s.answer(server_first).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        s.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
        assert!(s
            .verify("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .is_err());
        assert!(s
            .verify("e=invalid-proof")
            .unwrap_err()
            .contains("invalid-proof"));
    }

    #[test]
    fn the_server_first_message_is_checked() {
        let mut s = Scram::new(Hash::Sha512, "a=b,c", "p", "abc");
        assert_eq!(s.first(), "n,,n=a=3Db=2Cc,r=abc");
        for (first, why) in [
            ("r=xyz123,s=QUJD,i=4096", "does not extend"),
            ("r=abc,s=QUJD,i=4096", "does not extend"),
            ("r=abc1,s=QUJD,i=1000", "fewer than 4096"),
            (
                "r=abc1,s=QUJD,i=4294967295",
                "more than a Kafka cluster stores",
            ),
            ("r=abc1,s=***,i=4096", "not base64"),
            ("r=abc1,i=4096", "lacks"),
            ("e=unknown-user", "unknown-user"),
        ] {
            assert!(s.answer(first).unwrap_err().contains(why), "{first}");
        }
        let proof = s.answer("r=abc1,s=QUJD,i=4096").unwrap();
        assert!(proof.starts_with("c=biws,r=abc1,p="));
        // SHA-512's proof is 64 bytes.
        let p = openssl::base64::decode_block(proof.rsplit("p=").next().unwrap()).unwrap();
        assert_eq!(p.len(), 64);
        let n = nonce().unwrap();
        assert_eq!(n.len(), 32);
        assert!(!n.contains(','));
    }

    #[test]
    fn a_salted_password_is_computed_once_per_credential_and_salt() {
        let held = |salt: &[u8]| {
            let digest = openssl::sha::sha256(b"kept");
            SALTED.get(&(Hash::Sha512, digest, salt.to_vec(), 4096))
        };
        let mut expected = vec![0u8; 64];
        let sha512 = MessageDigest::sha512();
        openssl::pkcs5::pbkdf2_hmac(b"kept", b"salt-1", 4096, sha512, &mut expected).unwrap();
        assert_eq!(held(b"salt-1"), None);
        let salted = salted_password(Hash::Sha512, "kept", b"salt-1", 4096).unwrap();
        assert_eq!(
            (salted, held(b"salt-1")),
            (expected.clone(), Some(expected.clone()))
        );
        // Another salt (a changed credential) is its own.
        let other = salted_password(Hash::Sha512, "kept", b"salt-2", 4096).unwrap();
        assert_ne!(other, expected);
    }
}
