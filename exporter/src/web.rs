//! The web configuration file of Prometheus' exporter-toolkit (`--web.config.file`), so that
//! one file serves every exporter of a node: TLS (`tls_server_config`: `cert_file`,
//! `key_file`, `client_ca_file`, `client_auth_type`, `min_version`, `max_version`) and basic
//! authentication (`basic_auth_users`: user and bcrypt hash). Relative paths are relative to
//! the file. A key glk does not know is an error, never silently ignored: a setting that is
//! not applied must not look applied.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use yaml_rust2::{Yaml, YamlLoader};

/// What the web configuration asks for.
#[derive(Clone, Default)]
pub struct WebConfig {
    /// TLS, when `tls_server_config` is given.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Users and their bcrypt hashes; empty: no authentication.
    pub users: BTreeMap<String, String>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A bcrypt hash of a password nobody has, verified against when the user is unknown, so
/// that an unknown user takes as long to refuse as a wrong password.
const NOBODY: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

fn invalid(path: &Path, what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

impl WebConfig {
    /// Reads and checks `path` (the certificate and key files included).
    pub fn load(path: &Path) -> io::Result<WebConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        WebConfig::parse(&text, path)
    }

    /// Parses the text of `path`.
    pub fn parse(text: &str, path: &Path) -> io::Result<WebConfig> {
        let docs =
            YamlLoader::load_from_str(text).map_err(|e| invalid(path, format!("not YAML: {e}")))?;
        let mut cfg = WebConfig::default();
        let Some(doc) = docs.first() else {
            return Ok(cfg);
        };
        let top = mapping(doc, path, "the file")?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for (k, v) in top {
            match k.as_str() {
                "basic_auth_users" => {
                    for (user, hash) in mapping(v, path, "basic_auth_users")? {
                        let hash = scalar(hash).ok_or_else(|| {
                            invalid(path, format!("basic_auth_users: {user:?} needs a bcrypt hash"))
                        })?;
                        if bcrypt::verify("", &hash).is_err() {
                            return Err(invalid(
                                path,
                                format!("basic_auth_users: the hash of {user:?} is not a bcrypt hash (make one with `htpasswd -nBC 10 \"\" | tr -d ':'`)"),
                            ));
                        }
                        cfg.users.insert(user, hash);
                    }
                }
                "tls_server_config" => cfg.tls = Some(Arc::new(tls(v, dir, path)?)),
                other => {
                    return Err(invalid(
                        path,
                        format!("{other:?} is not supported by glk (it reads tls_server_config and basic_auth_users)"),
                    ))
                }
            }
        }
        Ok(cfg)
    }

    /// Whether a request with this `Authorization` header may be served.
    pub fn authorized(&self, authorization: Option<&str>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some((user, pass)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        let hash = self.users.get(&user);
        let ok = bcrypt::verify(&pass, hash.map_or(NOBODY, |h| h.as_str())).unwrap_or(false);
        ok && hash.is_some()
    }
}

/// The user and password of a `Basic` authorization header.
fn basic_credentials(h: &str) -> Option<(String, String)> {
    let (scheme, b64) = h.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

/// A mapping's keys (strings) and values.
fn mapping<'a>(y: &'a Yaml, path: &Path, what: &str) -> io::Result<Vec<(String, &'a Yaml)>> {
    match y {
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| {
                scalar(k)
                    .map(|k| (k, v))
                    .ok_or_else(|| invalid(path, format!("{what}: keys must be strings")))
            })
            .collect(),
        Yaml::Null => Ok(Vec::new()),
        _ => Err(invalid(path, format!("{what} must be a mapping"))),
    }
}

fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// How clients are asked for certificates (exporter-toolkit's `client_auth_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuth {
    None,
    VerifyIfGiven,
    Require,
}

/// The TLS server configuration of `tls_server_config`.
fn tls(y: &Yaml, dir: &Path, path: &Path) -> io::Result<rustls::ServerConfig> {
    let mut cert = None;
    let mut key = None;
    let mut ca = None;
    let mut auth = ClientAuth::None;
    let mut min = "TLS12".to_string();
    let mut max = "TLS13".to_string();
    for (k, v) in mapping(y, path, "tls_server_config")? {
        let v = scalar(v)
            .ok_or_else(|| invalid(path, format!("tls_server_config: {k} needs a value")))?;
        let file = || dir.join(&v);
        match k.as_str() {
            "cert_file" => cert = Some(file()),
            "key_file" => key = Some(file()),
            "client_ca_file" => ca = Some(file()),
            "client_auth_type" => {
                auth = match v.as_str() {
                    "NoClientCert" => ClientAuth::None,
                    "VerifyClientCertIfGiven" => ClientAuth::VerifyIfGiven,
                    "RequireAndVerifyClientCert" => ClientAuth::Require,
                    _ => {
                        return Err(invalid(
                            path,
                            format!("client_auth_type {v:?}: glk knows NoClientCert, VerifyClientCertIfGiven and RequireAndVerifyClientCert"),
                        ))
                    }
                }
            }
            "min_version" => min = v,
            "max_version" => max = v,
            other => {
                return Err(invalid(
                    path,
                    format!("tls_server_config: {other:?} is not supported by glk"),
                ))
            }
        }
    }
    let (Some(cert), Some(key)) = (cert, key) else {
        return Err(invalid(
            path,
            "tls_server_config needs cert_file and key_file".into(),
        ));
    };
    let versions = versions(&min, &max).ok_or_else(|| {
        invalid(
            path,
            format!("min_version {min:?} / max_version {max:?}: glk serves TLS12 and TLS13"),
        )
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<Result<_, _>>())
        .map_err(|e| invalid(&cert, format!("no certificate read: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(&cert, "no certificate in the file".into()));
    }
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| invalid(&key, format!("no private key read: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| invalid(path, e.to_string()))?;
    let builder = match (auth, ca) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(invalid(
                path,
                "client_auth_type needs client_ca_file".into(),
            ));
        }
        (auth, Some(ca)) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(&ca).map_err(|e| invalid(&ca, e.to_string()))? {
                let c = c.map_err(|e| invalid(&ca, e.to_string()))?;
                roots.add(c).map_err(|e| invalid(&ca, e.to_string()))?;
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let v = if auth == ClientAuth::VerifyIfGiven {
                v.allow_unauthenticated()
            } else {
                v
            };
            builder.with_client_cert_verifier(v.build().map_err(|e| invalid(&ca, e.to_string()))?)
        }
    };
    builder
        .with_single_cert(certs, key)
        .map_err(|e| invalid(path, format!("certificate and key: {e}")))
}

fn versions(min: &str, max: &str) -> Option<Vec<&'static rustls::SupportedProtocolVersion>> {
    let rank = |v: &str| match v {
        "TLS12" => Some(0),
        "TLS13" => Some(1),
        _ => None,
    };
    let (lo, hi) = (rank(min)?, rank(max)?);
    let all = [&rustls::version::TLS12, &rustls::version::TLS13];
    let v: Vec<_> = all[lo..=hi.max(lo)].to_vec();
    (lo <= hi).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> io::Result<WebConfig> {
        WebConfig::parse(text, Path::new("/etc/glk/web.yml"))
    }

    #[test]
    fn basic_auth_users_with_bcrypt_hashes() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let c = parse(&format!("basic_auth_users:\n  alice: {hash}\n")).unwrap();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert!(c.authorized(Some(&format!("Basic {}", b64("alice:s3cret")))));
        assert!(!c.authorized(Some(&format!("Basic {}", b64("alice:wrong")))));
        assert!(!c.authorized(Some(&format!("Basic {}", b64("bob:s3cret")))));
        assert!(!c.authorized(Some("Bearer x")));
        assert!(!c.authorized(Some("Basic !!!")));
        assert!(!c.authorized(None));
        // No users: no authentication.
        assert!(parse("").unwrap().authorized(None));
        // The hash an unknown user is checked against is a valid one.
        assert_eq!(bcrypt::verify("x", NOBODY).ok(), Some(false));
    }

    #[test]
    fn what_is_not_applied_is_an_error_naming_the_file() {
        for (text, says) in [
            (
                "basic_auth_users:\n  alice: plain\n",
                "is not a bcrypt hash",
            ),
            (
                "http_server_config:\n  http2: false\n",
                "\"http_server_config\" is not supported",
            ),
            (
                "tls_server_config:\n  cert_file: a.pem\n",
                "needs cert_file and key_file",
            ),
            (
                "tls_server_config:\n  cipher_suites: [x]\n",
                "needs a value",
            ),
            (
                "tls_server_config:\n  client_auth_type: Maybe\n  cert_file: a\n  key_file: b\n",
                "glk knows NoClientCert",
            ),
            (
                "tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: k.pem\n",
                "/nonexistent.pem: no certificate read",
            ),
            ("basic_auth_users: [a, b]\n", "must be a mapping"),
            ("a: [\n", "not YAML"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
            assert!(e.contains("web.yml") || e.contains(".pem"), "{e}");
        }
    }
}
