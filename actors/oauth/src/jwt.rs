//! Signing keys and the JWTs this client signs: private_key_jwt client assertions (RFC 7523
//! section 2.2) with RS256 or ES256, from a PEM key (PKCS#8, or PKCS#1 for RSA). Pure: no IO
//! beyond the system random source. A key's bytes never show in `Debug` or in an error.

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::json;

use super::parse::b64url;

/// A JWS algorithm this client signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
}

impl Alg {
    /// `RS256` or `ES256` (case-insensitive); `None` for anything else.
    pub fn parse(s: &str) -> Option<Alg> {
        match s.to_ascii_uppercase().as_str() {
            "RS256" => Some(Alg::Rs256),
            "ES256" => Some(Alg::Es256),
            _ => None,
        }
    }

    /// Its JWS name.
    pub fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
        }
    }
}

/// A private key checked at load: the DER of a key ring accepts, and its algorithm.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    der: Vec<u8>,
    /// PKCS#1 (`RSA PRIVATE KEY`) rather than PKCS#8.
    pkcs1: bool,
    alg: Alg,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The key of PEM text `pem`, for `alg` (else the key's own: RS256 for RSA, ES256 for
    /// P-256). Errors say what is wrong and what to do, never any of the key.
    pub fn from_pem(pem: &str, alg: Option<Alg>) -> Result<SigningKey, String> {
        let (label, der) = pem_block(pem)?;
        let pkcs1 = match label.as_str() {
            "PRIVATE KEY" => false,
            "RSA PRIVATE KEY" => true,
            "EC PRIVATE KEY" => {
                return Err("an EC key in SEC1 form (BEGIN EC PRIVATE KEY) is not read: convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8`".to_owned())
            }
            "ENCRYPTED PRIVATE KEY" => {
                return Err("the key is encrypted: give an unencrypted PKCS#8 key (`openssl pkcs8 -topk8 -nocrypt`)".to_owned())
            }
            other => {
                return Err(format!(
                    "a PEM block \"{other}\" is not a private key: give a PKCS#8 key (BEGIN PRIVATE KEY)"
                ))
            }
        };
        let rsa_ok = if pkcs1 {
            RsaKeyPair::from_der(&der).is_ok()
        } else {
            RsaKeyPair::from_pkcs8(&der).is_ok()
        };
        let ec_ok = !pkcs1
            && EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &SystemRandom::new(),
            )
            .is_ok();
        let own = match (rsa_ok, ec_ok) {
            (true, _) => Alg::Rs256,
            (_, true) => Alg::Es256,
            _ => {
                return Err("the key is neither an RSA key (2048 bits or more) nor a P-256 EC key: those are the keys RS256 and ES256 sign with".to_owned())
            }
        };
        if let Some(a) = alg.filter(|a| *a != own) {
            return Err(format!(
                "alg {} does not fit the key, which signs {}: remove alg or give a matching key",
                a.name(),
                own.name()
            ));
        }
        Ok(SigningKey {
            der,
            pkcs1,
            alg: own,
        })
    }

    /// The algorithm it signs with.
    pub fn alg(&self) -> Alg {
        self.alg
    }

    /// A compact JWS of `claims` with this key (header `alg`, `typ` JWT).
    pub fn sign(&self, claims: &serde_json::Value) -> Result<String, String> {
        let header = json!({"alg": self.alg.name(), "typ": "JWT"});
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let sig = match self.alg {
            Alg::Rs256 => {
                let key = if self.pkcs1 {
                    RsaKeyPair::from_der(&self.der)
                } else {
                    RsaKeyPair::from_pkcs8(&self.der)
                }
                .map_err(|_| "the RSA key cannot sign".to_owned())?;
                let mut sig = vec![0u8; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .map_err(|_| "the RSA key cannot sign".to_owned())?;
                sig
            }
            Alg::Es256 => {
                let key = EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &self.der,
                    &rng,
                )
                .map_err(|_| "the EC key cannot sign".to_owned())?;
                key.sign(&rng, input.as_bytes())
                    .map_err(|_| "the EC key cannot sign".to_owned())?
                    .as_ref()
                    .to_vec()
            }
        };
        Ok(format!("{input}.{}", b64url(&sig)))
    }
}

/// How long a client assertion is valid.
pub const ASSERTION_LIFETIME_SECS: u64 = 60;

/// A private_key_jwt client assertion (RFC 7523 section 2.2): `iss` = `sub` = the client id,
/// `aud` the authorization server's issuer (as the client credentials extension asks), a
/// random `jti`, `iat` now and `exp` a minute on.
pub fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
    now: u64,
) -> Result<String, String> {
    let jti = b64url(&harness9_net::random(16)?);
    key.sign(&json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": jti,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME_SECS,
    }))
}

/// The label and the decoded body of the first PEM block of `text`.
fn pem_block(text: &str) -> Result<(String, Vec<u8>), String> {
    let no_pem = || "not a PEM key (no -----BEGIN ...----- line)".to_owned();
    let start = text.find("-----BEGIN ").ok_or_else(no_pem)?;
    let rest = &text[start + "-----BEGIN ".len()..];
    let (label, rest) = rest.split_once("-----").ok_or_else(no_pem)?;
    let end_marker = format!("-----END {label}-----");
    let body = rest
        .split(end_marker.as_str())
        .next()
        .filter(|_| rest.contains(end_marker.as_str()))
        .ok_or_else(|| format!("the PEM block \"{label}\" has no END line"))?;
    let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| format!("the PEM block \"{label}\" is not valid base64"))?;
    Ok((label.trim().to_owned(), der))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key in PKCS#8 (generated for this test, used nowhere else).
    const EC: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgxGxvDIRsysKzhNw3
BF55nR8zNLJALXak3uQEeDZ2zIOhRANCAARLjwIJRT1Cl8J7mUg+WcWmOCQxxB4Q
iEzkNV9AGwWsSN4S+4KzV1vDxS+k7eQHx0UcEW42OuyfdeLVyER+/3OW
-----END PRIVATE KEY-----";

    /// A 2048-bit RSA key in PKCS#8 (generated for this test, used nowhere else).
    const RSA: &str = "-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCitIb4FHtmWJg4
NUl7hfUJYyKcyZQwVOGRZ70alM7nNP6DxhAZHeas61PyERJhMWpLXuXZ93CJjlNB
ulfezy8Flq3grhguKnGk9zTDrycADbg0E1/iYoIbUnj+f8Yw9G/CA2JSo5drqgkA
rS7RqQrJ8Olef//EbTFj5VtG/mvyXBylyQg6bDXX8Xr9KEee0q2ORWdMhcoewMSx
qU16Bbktj6BDbbg8ET+lcvkOofS3e9KoOFf1BeU++eHeU2sdyaRgkpp6W5lcoFlG
V2RPYyyvgjn5S9HfuhOPeIBKC41qaSSot3UCU5esve0T3ZtTI9kw7iW9c5+0YoNL
nCKHhcJ9AgMBAAECggEAIYH1sNYBAtcYhCzfNP/lspj2uhzedqSobqpTXMvMH3v/
tXIfAxkwFikBuP6wjxEe76Y7xmuJwt5rgYQHkCSRbcB2DykzZCCMFnntpSYnbUCm
EJ1z1/rLCibuMZVtYswYTvek8llr9/mE0J2Z4IZEaUnCudo4+YI2U3ka1vBTGU5w
By3LTj++aLY7zolNSJ7PzfS5M2cWvLxvfcrchWDthgpHK+XQcGfD5QmbeN1nz+da
P9UECkpIJx97/Q+koztlzKOguB/2InAnLn8pbaOy6GffVxgYCtripswdy3XF/DNd
nvNREdV9Xj8oBmKUY1KyXA6yIOH+9UW0ZOBpdlnG0QKBgQDg72GVLKFzCapjHg2f
goLfmpoAr8ppgYCKEadAZX0Ay7PBBZmQsxSxs7KydtCAYXPI7RD+dhMT33eCwx9y
erfiFQyXW0ezksV6X24OPyAD9TPxK3q5BsUPl9KTAuaNknPEkMk9l6cdQy/gwZSt
Kr2CH2zApxsJj5vS9lLI8bUV0QKBgQC5LP9I6D6wABQ408OkTej2x3NxkrT0SNeU
sVjdQPdqpjFzE2roHiSwVhH/RpF/T/kPbC1oS1O27e3ZUWQH++1FA4dj2KSjfoBB
fNVzPUZNVA+N2eVGotWpe+r59gOt4XHxeT1pBzT29UdZ2uuUx6i1ciwjFWLFNNy8
Qx6LFKuQ7QKBgQC1WYqNYMxSGUrcWtCU9/5YFSdwwkopQhXGO3FjA/ACgjlMuB0V
gqx+kOjT5eM4flmBd1CqN7wt249ZR8PE4pf6mQnrxdZLO1wny2TJ667+QeU83dc1
8fVTGw7VJBOJtLfNlQYKuIgtmYuyY6Bg9QKRNJDTymaMENKLBbm89NMQ4QKBgQCG
RuXbVWXXtEb1qkGNDF3pTVoeOjbziTqifTOmRSzkbh0fiC4WoX0TTWaBiQeKnVBK
abRHk4/h74hw9L8ntvwn9lYgBgHk+J9CXaZeiUlIW7NntmC2pu9ulggfN9EVLoy0
gKkSVwKGLfiOZNw9p8ZjxKXSzvgvbpS+A6HLUrLSRQKBgHxgtUhWZNFE7LXVAiny
V14HYQ6Hj9v21XfcGs4zliZ+43o8Y2UOLGf7URGido1GZgbTRqyzLif1BUGlYW9U
JkIgj0HhHJv4/AH5NsrEogA7EdNiWvn0+9YVtVYtwAOQk03vEPYbb/DO4JoQ6EtY
mNbWjvSC8bIYmdJK19oPF+I8
-----END PRIVATE KEY-----";

    #[test]
    fn ec_keys_sign_es256_and_refuse_rs256() {
        let k = SigningKey::from_pem(EC, None).unwrap();
        assert_eq!(k.alg(), Alg::Es256);
        let jwt = client_assertion(&k, "cid", "https://as.example", 1000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        use base64::Engine as _;
        let d = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap()
        };
        let claims: serde_json::Value = serde_json::from_slice(&d(parts[1])).unwrap();
        assert_eq!(claims["iss"], "cid");
        assert_eq!(claims["sub"], "cid");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["exp"], 1000 + ASSERTION_LIFETIME_SECS);
        assert_eq!(d(parts[2]).len(), 64, "ES256 signatures are r||s");
        let e = SigningKey::from_pem(EC, Some(Alg::Rs256)).unwrap_err();
        assert!(e.contains("alg RS256 does not fit"), "{e}");
        assert!(!format!("{k:?}").contains("MIGH"));
        let rsa = SigningKey::from_pem(RSA, None).unwrap();
        assert_eq!(rsa.alg(), Alg::Rs256);
        let jwt = client_assertion(&rsa, "cid", "aud", 1).unwrap();
        assert_eq!(jwt.split('.').count(), 3);
    }

    #[test]
    fn bad_keys_are_named_not_shown() {
        for (text, says) in [
            ("hello", "not a PEM key"),
            (
                "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----",
                "SEC1",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
                "neither an RSA key",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----",
                "not valid base64",
            ),
            (
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
                "not a private key",
            ),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n", "no END line"),
        ] {
            let e = SigningKey::from_pem(text, None).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains("AAAA"));
        }
        assert_eq!(Alg::parse("es256"), Some(Alg::Es256));
        assert_eq!(Alg::parse("HS256"), None);
    }
}
