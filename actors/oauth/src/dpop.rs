//! DPoP (RFC 9449): a P-256 key pair per grant, the proof JWTs (ES256) that bind a token
//! request or a resource request to that key, and the server nonces (`use_dpop_nonce`).
//!
//! Hooks: [`crate::flow`]'s token request (`exchange.rs`) sends a proof on every grant's
//! token request (refresh included) and retries once with the authorization server's nonce;
//! the HTTP transport (`transport/http/redirects.rs`, `auth.rs`) sends `Authorization: DPoP`
//! and a fresh proof (with `ath`) on every request to the server's origin, notes nonces from
//! its responses and retries a request once on a `401 use_dpop_nonce`. A proof is made for one
//! method and one URL (`htu` without query or fragment) and only ever sent to that URL's
//! origin; nonces are remembered per origin. The private key lives only in the grant (the
//! store's 0600 file) and is never logged: [`Dpop`]'s `Debug` shows the key's thumbprint.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// The one proof algorithm harness9 signs with.
pub const ALG: &str = "ES256";
/// The longest server nonce kept (a longer one is ignored).
pub const MAX_NONCE_LEN: usize = 512;
/// The most origins whose nonces one key remembers (the oldest is forgotten past it).
const MAX_NONCE_ORIGINS: usize = 16;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A grant's DPoP key pair and the nonces its servers gave. Clones share the nonces.
#[derive(Clone)]
pub struct Dpop {
    /// The PKCS#8 document (what the store keeps).
    pkcs8: Arc<[u8]>,
    pair: Arc<EcdsaKeyPair>,
    /// Origin (`scheme://host:port`) -> the latest nonce it sent, in arrival order.
    nonces: Arc<Mutex<Vec<(String, String)>>>,
}

impl Dpop {
    /// A new P-256 key pair.
    pub fn generate() -> Result<Dpop, String> {
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot generate a DPoP key pair".to_owned())?;
        Dpop::from_pkcs8(doc.as_ref())
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Result<Dpop, String> {
        let rng = ring::rand::SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|_| "the DPoP key is not a P-256 key pair (PKCS#8)".to_owned())?;
        Ok(Dpop {
            pkcs8: pkcs8.into(),
            pair: Arc::new(pair),
            nonces: Arc::default(),
        })
    }

    /// The public key as a JWK (RFC 7517): `kty`, `crv`, `x`, `y`, never the private part.
    pub fn jwk(&self) -> serde_json::Value {
        // An uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
        let p = self.pair.public_key().as_ref();
        let (x, y) = p
            .get(1..)
            .unwrap_or_default()
            .split_at(p.len().saturating_sub(1) / 2);
        serde_json::json!({"crv": "P-256", "kty": "EC", "x": b64(x), "y": b64(y)})
    }

    /// The key's JWK SHA-256 thumbprint (RFC 7638), what a bound token's `cnf.jkt` names.
    pub fn thumbprint(&self) -> String {
        // serde_json's map is ordered: the members are in the canonical (sorted) order.
        b64(&Sha256::digest(self.jwk().to_string().as_bytes()))
    }

    /// A fresh proof for `method` on `url`: `jti`, `htm`, `htu` (without query and fragment),
    /// `iat`, `ath` for a resource request with `access_token`, and the nonce `url`'s origin
    /// gave last, if any.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let header = serde_json::json!({"alg": ALG, "typ": "dpop+jwt", "jwk": self.jwk()});
        let mut claims = serde_json::json!({
            "jti": b64(&harness9_net::random(16)?),
            "htm": method,
            "htu": htu(url),
            "iat": crate::now_secs(),
        });
        if let Some(t) = access_token {
            claims["ath"] = serde_json::Value::String(ath(t));
        }
        if let Some(n) = self.nonce_for(url) {
            claims["nonce"] = serde_json::Value::String(n);
        }
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = ring::rand::SystemRandom::new();
        let sig = self
            .pair
            .sign(&rng, input.as_bytes())
            .map_err(|_| "cannot sign a DPoP proof".to_owned())?;
        Ok(format!("{input}.{}", b64(sig.as_ref())))
    }

    /// Keeps `nonce` (a `DPoP-Nonce` header's value) as the one to send to `url`'s origin;
    /// whether it was kept (an empty, over-long or not-NQCHAR value is not, RFC 9449 §8.1).
    pub fn note_nonce(&self, url: &str, nonce: &str) -> bool {
        let Some(origin) = origin(url) else {
            return false;
        };
        if !valid_nonce(nonce) {
            return false;
        }
        let Ok(mut map) = self.nonces.lock() else {
            return false;
        };
        map.retain(|(o, _)| *o != origin);
        if map.len() >= MAX_NONCE_ORIGINS {
            map.remove(0);
        }
        map.push((origin, nonce.to_owned()));
        true
    }

    /// The nonce `url`'s origin gave last.
    pub fn nonce_for(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        let map = self.nonces.lock().ok()?;
        map.iter()
            .find(|(o, _)| *o == origin)
            .map(|(_, n)| n.clone())
    }
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop")
            .field("jkt", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

/// Two keys are equal when their key pairs are: nonces are the servers' passing state.
impl PartialEq for Dpop {
    fn eq(&self, other: &Self) -> bool {
        self.pkcs8 == other.pkcs8
    }
}

impl Eq for Dpop {}

impl Serialize for Dpop {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&b64(&self.pkcs8))
    }
}

impl<'de> Deserialize<'de> for Dpop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dpop, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|_| serde::de::Error::custom("the DPoP key is not base64url: log in again"))?;
        Dpop::from_pkcs8(&bytes).map_err(|e| serde::de::Error::custom(format!("{e}: log in again")))
    }
}

/// `url` without its query and fragment (a proof's `htu`, RFC 9449 §4.2).
pub fn htu(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// `ath`: the base64url SHA-256 of the access token (RFC 9449 §4.2).
pub fn ath(access_token: &str) -> String {
    b64(&Sha256::digest(access_token.as_bytes()))
}

/// `scheme://host:port` of `url` (the scheme's default port made explicit), lowercase.
pub fn origin(url: &str) -> Option<String> {
    harness9_net::origin_of(url).map(|o| o.0)
}

/// A nonce RFC 9449 allows (`1*NQCHAR`), at most [`MAX_NONCE_LEN`] long.
fn valid_nonce(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= MAX_NONCE_LEN
        && n.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// Whether an authorization server's error reply asks for a nonce (`400` with
/// `"error": "use_dpop_nonce"`, RFC 9449 §8).
pub fn as_wants_nonce(status: u16, body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct E {
        error: String,
    }
    status == 400 && serde_json::from_slice::<E>(body).is_ok_and(|e| e.error == "use_dpop_nonce")
}

/// Whether a resource server's `401` asks for a nonce: a `DPoP` challenge with
/// `error="use_dpop_nonce"` among `www_authenticate`'s values (RFC 9449 §9).
pub fn rs_wants_nonce<'a>(status: u16, www_authenticate: impl Iterator<Item = &'a str>) -> bool {
    status == 401
        && www_authenticate
            .filter_map(|h| crate::parse::Challenge::parse_scheme(h, "dpop"))
            .any(|c| c.error.as_deref() == Some("use_dpop_nonce"))
}

/// Whether a token reply's `token_type` says the token is DPoP-bound.
pub fn bound(token_type: Option<&str>) -> bool {
    token_type.is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
}

/// Whether a login uses DPoP: `configured` (the server's `"oauth": {"dpop": ...}`) decides
/// when set; else when the authorization server lists [`ALG`] among its
/// `dpop_signing_alg_values_supported`. `Err` when DPoP is configured on but the server signs
/// none that harness9 can.
pub fn wanted(
    configured: Option<bool>,
    algs: Option<&[String]>,
    issuer: &str,
) -> Result<bool, String> {
    let offers = algs.is_some_and(|a| a.iter().any(|a| a == ALG));
    match configured {
        Some(false) => Ok(false),
        Some(true) if !offers && algs.is_some_and(|a| !a.is_empty()) => Err(format!(
            "authorization server {issuer} takes DPoP proofs only as {:?}; harness9 signs {ALG}: set \"dpop\": false in this server's \"oauth\" entry or use an authorization server that takes {ALG}",
            algs.unwrap_or_default()
        )),
        Some(true) => Ok(true),
        None => Ok(offers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(jwt: &str, i: usize) -> serde_json::Value {
        let p = jwt.split('.').nth(i).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(p)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn verifies(key: &Dpop, jwt: &str) -> bool {
        let jwk = part(jwt, 0)["jwk"].clone();
        assert_eq!(jwk, key.jwk());
        let d = |s: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s.as_str().unwrap())
                .unwrap()
        };
        let mut point = vec![4u8];
        point.extend(d(&jwk["x"]));
        point.extend(d(&jwk["y"]));
        let (input, sig) = jwt.rsplit_once('.').unwrap();
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig)
            .unwrap();
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &sig)
            .is_ok()
    }

    #[test]
    fn a_proof_has_the_claims_and_verifies() {
        let key = Dpop::generate().unwrap();
        let p = key
            .proof("POST", "https://rs.example/mcp?x=1#f", Some("tok"))
            .unwrap();
        // What tests/suite/dpop.rs looks for in the output, the trace and session files.
        assert!(
            p.starts_with("eyJhbGciOiJFUzI1NiIsImp3ayI6eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6")
        );
        let h = part(&p, 0);
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["alg"], "ES256");
        assert!(h["jwk"].get("d").is_none(), "no private part: {h}");
        let c = part(&p, 1);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "https://rs.example/mcp");
        assert_eq!(c["ath"], ath("tok"));
        // SHA-256("tok"), base64url, as `printf tok | sha256sum` gives it.
        assert_eq!(ath("tok"), "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI");
        assert!(c.get("nonce").is_none());
        let now = crate::now_secs();
        assert!(c["iat"].as_u64().unwrap().abs_diff(now) < 5);
        assert!(verifies(&key, &p));
        // Another proof's claims under this one's signature do not verify.
        let other = key
            .proof("GET", "https://rs.example/mcp", Some("tok"))
            .unwrap();
        let parts: Vec<&str> = p.split('.').collect();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            other.split('.').nth(1).unwrap(),
            parts[2]
        );
        assert!(!verifies(&key, &forged));
        // A token request's proof has no ath; each proof has its own jti.
        let q = key.proof("POST", "https://as.example/token", None).unwrap();
        assert!(part(&q, 1).get("ath").is_none());
        assert_ne!(part(&q, 1)["jti"], c["jti"]);
    }

    #[test]
    fn nonces_are_kept_per_origin_and_checked() {
        let key = Dpop::generate().unwrap();
        assert!(key.note_nonce("https://as.example/token", "n-1"));
        let p = key
            .proof("POST", "https://AS.example:443/other", None)
            .unwrap();
        assert_eq!(part(&p, 1)["nonce"], "n-1");
        let p = key
            .proof("POST", "https://rs.example/mcp", Some("t"))
            .unwrap();
        assert!(
            part(&p, 1).get("nonce").is_none(),
            "not sent to another origin"
        );
        assert!(!key.note_nonce("https://rs.example/mcp", "has space"));
        assert!(!key.note_nonce("https://rs.example/mcp", "quo\"te"));
        assert!(!key.note_nonce("https://rs.example/mcp", ""));
        assert!(!key.note_nonce("https://rs.example/mcp", &"n".repeat(MAX_NONCE_LEN + 1)));
        assert!(key.note_nonce("https://as.example/token", "n-2"));
        assert_eq!(
            key.nonce_for("https://as.example/x").as_deref(),
            Some("n-2")
        );
        for i in 0..MAX_NONCE_ORIGINS + 2 {
            key.note_nonce(&format!("https://h{i}.example/"), "n");
        }
        assert_eq!(key.nonces.lock().unwrap().len(), MAX_NONCE_ORIGINS);
    }

    #[test]
    fn nonce_requests_are_recognized() {
        assert!(as_wants_nonce(400, br#"{"error":"use_dpop_nonce"}"#));
        assert!(!as_wants_nonce(401, br#"{"error":"use_dpop_nonce"}"#));
        assert!(!as_wants_nonce(400, br#"{"error":"invalid_grant"}"#));
        let h = [r#"DPoP error="use_dpop_nonce", resource_metadata="x""#];
        assert!(rs_wants_nonce(401, h.into_iter()));
        assert!(!rs_wants_nonce(403, h.into_iter()));
        assert!(!rs_wants_nonce(
            401,
            [r#"Bearer error="use_dpop_nonce""#].into_iter()
        ));
        assert!(!rs_wants_nonce(
            401,
            [r#"DPoP error="invalid_token""#].into_iter()
        ));
    }

    #[test]
    fn the_key_survives_the_store_and_stays_private() {
        let key = Dpop::generate().unwrap();
        let text = serde_json::to_string(&key).unwrap();
        let back: Dpop = serde_json::from_str(&text).unwrap();
        assert_eq!(back, key);
        assert_eq!(back.jwk(), key.jwk());
        assert!(!format!("{key:?}").contains(text.trim_matches('"')));
        let bad = serde_json::from_str::<Dpop>("\"AAAA\"")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("not a P-256 key pair"), "{bad}");
        // RFC 7638: the thumbprint of the canonical JWK.
        let jwk = key.jwk();
        let canon = format!(
            r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#,
            jwk["x"], jwk["y"]
        );
        assert_eq!(key.thumbprint(), b64(&Sha256::digest(canon.as_bytes())));
    }

    #[test]
    fn dpop_is_used_when_offered_or_configured() {
        let es = vec!["ES256".to_owned()];
        let rs = vec!["RS256".to_owned()];
        assert_eq!(wanted(None, Some(&es), "i"), Ok(true));
        assert_eq!(wanted(None, Some(&rs), "i"), Ok(false));
        assert_eq!(wanted(None, None, "i"), Ok(false));
        assert_eq!(wanted(Some(false), Some(&es), "i"), Ok(false));
        assert_eq!(wanted(Some(true), None, "i"), Ok(true));
        assert!(wanted(Some(true), Some(&rs), "i")
            .unwrap_err()
            .contains("ES256"));
        assert_eq!(htu("https://h/p?q#f"), "https://h/p");
        assert_eq!(htu("https://h/p#f?q"), "https://h/p");
        assert!(
            bound(Some("DPoP")) && bound(Some("dpop")) && !bound(Some("Bearer")) && !bound(None)
        );
    }
}
