//! Who may talk to a worker, and how: a shared token, TLS and mutual TLS.
//!
//! A worker executes the plans it is sent, so it answers only peers that
//! prove themselves before any request is decoded:
//! - a **token** (a shared secret of at least [`MIN_TOKEN_LEN`] characters,
//!   from a file or [`TOKEN_ENV`]) sent by every coordinator and worker as
//!   `authorization: Bearer ...` and compared in constant time by a layer in
//!   front of the worker service, which reads headers only;
//! - **TLS** with the worker's certificate and key, and with a cluster CA
//!   **mutual TLS**: a peer without a certificate the CA signed is refused
//!   in the handshake. Workers present their own certificate when they fetch
//!   from other workers, and verify theirs with the CA (or, without one, with
//!   the system's roots).
//!
//! [`ClusterAuth`] holds one process's side of both; [`SecureChannels`] is
//! the channel resolver of coordinators and workers that uses it.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion_distributed::grpc::{BoxCloneSyncChannel, create_worker_client};
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use http::HeaderValue;
use parking_lot::Mutex;
use subtle::ConstantTimeEq;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};
use tower::ServiceExt;
use url::Url;

/// The environment variable a token is read from when no file names one.
pub const TOKEN_ENV: &str = "LOGSQL_WORKER_TOKEN";

/// The shortest token accepted (characters).
pub const MIN_TOKEN_LEN: usize = 16;

/// The largest token, certificate or key file read.
const MAX_SECRET_FILE: u64 = 1 << 20;

/// A shared secret (never printed).
#[derive(Clone)]
pub struct Token(Arc<str>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token from its text: at least [`MIN_TOKEN_LEN`] visible ASCII
    /// characters (surrounding whitespace is trimmed).
    pub fn new(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.len() < MIN_TOKEN_LEN {
            return Err(config_err(format!(
                "a worker token has at least {MIN_TOKEN_LEN} characters (this one has {})",
                text.len()
            )));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(config_err(
                "a worker token is visible ASCII characters only (no spaces or control characters)"
                    .into(),
            ));
        }
        Ok(Self(text.into()))
    }

    /// The token in a file (its first line; surrounding whitespace trimmed).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = read_secret(path)?;
        let text = String::from_utf8(text)
            .map_err(|_| config_err(format!("token file {}: not UTF-8 text", path.display())))?;
        Self::new(text.lines().next().unwrap_or(""))
            .map_err(|e| config_err(format!("token file {}: {e}", path.display())))
    }

    /// The token in [`TOKEN_ENV`], if it is set.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(TOKEN_ENV) {
            Ok(text) => Self::new(&text)
                .map(Some)
                .map_err(|e| config_err(format!("{TOKEN_ENV}: {e}"))),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(config_err(format!("{TOKEN_ENV}: {e}"))),
        }
    }

    fn header(&self) -> HeaderValue {
        let mut value =
            HeaderValue::try_from(format!("Bearer {}", self.0)).expect("a token is visible ASCII");
        value.set_sensitive(true);
        value
    }

    fn matches(&self, header: &[u8]) -> bool {
        let expected = format!("Bearer {}", self.0);
        bool::from(expected.as_bytes().ct_eq(header))
    }
}

/// TLS material of one process: the cluster CA and its own certificate.
#[derive(Clone, Default)]
pub struct TlsFiles {
    /// The CA that signs every worker's and coordinator's certificate.
    ca: Option<Certificate>,
    /// This process's certificate chain and key.
    identity: Option<Identity>,
}

impl fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsFiles")
            .field("ca", &self.ca.is_some())
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

impl TlsFiles {
    /// Reads PEM files: a CA certificate, and a certificate with its key
    /// (both or neither).
    pub fn load(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> Result<Self> {
        let identity = match (cert, key) {
            (Some(cert), Some(key)) => {
                Some(Identity::from_pem(read_secret(cert)?, read_secret(key)?))
            }
            (None, None) => None,
            _ => {
                return Err(config_err(
                    "a TLS certificate and its key are given together".into(),
                ));
            }
        };
        let ca = ca.map(read_secret).transpose()?.map(Certificate::from_pem);
        Ok(Self { ca, identity })
    }

    /// Whether there is anything to use.
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.identity.is_none()
    }
}

/// One process's side of the workers' authentication: the token it sends
/// and checks, and its TLS material.
#[derive(Clone, Debug, Default)]
pub struct ClusterAuth {
    /// The shared token, if the cluster uses one.
    pub token: Option<Token>,
    /// TLS files, if the cluster uses TLS.
    pub tls: TlsFiles,
}

impl ClusterAuth {
    /// Whether a worker with this configuration authenticates its peers (a
    /// token, or mutual TLS: a CA to check client certificates against).
    pub fn authenticates_peers(&self) -> bool {
        self.token.is_some() || (self.tls.ca.is_some() && self.tls.identity.is_some())
    }

    /// The server side: TLS (mutual with a CA) when there is a certificate.
    pub(crate) fn server_tls(&self) -> Result<Option<ServerTlsConfig>> {
        let Some(identity) = &self.tls.identity else {
            if self.tls.ca.is_some() {
                return Err(config_err(
                    "a worker with a client CA needs its own certificate and key (--tls-cert, --tls-key)"
                        .into(),
                ));
            }
            return Ok(None);
        };
        let mut config = ServerTlsConfig::new().identity(identity.clone());
        if let Some(ca) = &self.tls.ca {
            config = config.client_ca_root(ca.clone());
        }
        Ok(Some(config))
    }

    fn client_tls(&self, url: &Url) -> ClientTlsConfig {
        let mut config = ClientTlsConfig::new();
        if let Some(host) = url.host_str() {
            config = config.domain_name(host);
        }
        config = match &self.tls.ca {
            Some(ca) => config.ca_certificate(ca.clone()),
            None => config.with_native_roots(),
        };
        if let Some(identity) = &self.tls.identity {
            config = config.identity(identity.clone());
        }
        config
    }

    /// The layer in front of a worker service that refuses requests without
    /// the token (a no-op without a token).
    pub(crate) fn token_check(&self) -> TokenCheck {
        TokenCheck(self.token.clone())
    }
}

/// The interceptor that refuses a request whose `authorization` header is
/// not the token; it sees headers only, never a request's body.
#[derive(Clone)]
pub(crate) struct TokenCheck(Option<Token>);

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let Some(token) = &self.0 else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        match token.matches(given) {
            true => Ok(request),
            false => Err(tonic::Status::unauthenticated(
                "logsql worker: missing or wrong token (the coordinator's --worker-token-file or LOGSQL_WORKER_TOKEN)",
            )),
        }
    }
}

/// The channel resolver of coordinators and workers: one channel per worker
/// URL, TLS for `https://` URLs, the token on every request.
#[derive(Clone)]
pub struct SecureChannels {
    auth: Arc<ClusterAuth>,
    channels: Arc<Mutex<HashMap<Url, BoxCloneSyncChannel>>>,
}

impl SecureChannels {
    /// Channels that authenticate with `auth`.
    pub fn new(auth: ClusterAuth) -> Self {
        Self {
            auth: Arc::new(auth),
            channels: Arc::default(),
        }
    }

    fn channel(&self, url: &Url) -> Result<BoxCloneSyncChannel> {
        if let Some(channel) = self.channels.lock().get(url) {
            return Ok(channel.clone());
        }
        let mut endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| config_err(format!("worker URL {url}: {e}")))?;
        match url.scheme() {
            "https" => {
                endpoint = endpoint
                    .tls_config(self.auth.client_tls(url))
                    .map_err(|e| config_err(format!("worker {url}: TLS: {e}")))?;
            }
            _ if !self.auth.tls.is_empty() => {
                return Err(config_err(format!(
                    "worker {url}: TLS files are given, so worker URLs are https://"
                )));
            }
            _ => {}
        }
        // Connected on first use; a worker that cannot be reached fails the
        // request that needs it, naming the transport error.
        let channel = endpoint.connect_lazy();
        let token = self.auth.token.as_ref().map(Token::header);
        let channel = channel.map_request(move |mut request: http::Request<tonic::body::Body>| {
            if let Some(token) = &token {
                request
                    .headers_mut()
                    .insert(http::header::AUTHORIZATION, token.clone());
            }
            request
        });
        let channel = BoxCloneSyncChannel::new(channel);
        self.channels.lock().insert(url.clone(), channel.clone());
        Ok(channel)
    }
}

#[async_trait]
impl ChannelResolver for SecureChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>> {
        self.channel(url).map(create_worker_client)
    }
}

/// Reads a small regular file (a token, certificate or key).
fn read_secret(path: &Path) -> Result<Vec<u8>> {
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| config_err(format!("{name}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| config_err(format!("{name}: {e}")))?;
    if !meta.is_file() {
        return Err(config_err(format!("{name}: not a regular file")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SECRET_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| config_err(format!("{name}: {e}")))?;
    if bytes.len() as u64 > MAX_SECRET_FILE {
        return Err(config_err(format!(
            "{name}: larger than {MAX_SECRET_FILE} bytes"
        )));
    }
    Ok(bytes)
}

fn config_err(message: String) -> DataFusionError {
    DataFusionError::Configuration(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn tokens_are_long_visible_and_compared_whole() {
        assert!(Token::new("short").is_err());
        assert!(Token::new("sixteen chars!!!").is_err(), "spaces refused");
        let token = Token::new("  0123456789abcdef\n").unwrap();
        assert!(token.matches(b"Bearer 0123456789abcdef"));
        assert!(!token.matches(b"Bearer 0123456789abcde"));
        assert!(!token.matches(b"Bearer 0123456789abcdefg"));
        assert!(!token.matches(b""));
        assert_eq!(format!("{token:?}"), "Token(..)");

        let mut check = TokenCheck(Some(token));
        let mut request = tonic::Request::new(());
        assert_eq!(
            check.call(tonic::Request::new(())).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        request
            .metadata_mut()
            .insert("authorization", "Bearer 0123456789abcdef".parse().unwrap());
        assert!(check.call(request).is_ok());
    }
}
