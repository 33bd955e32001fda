//! Object stores registered on first use: `s3://`, `gs://`, `az://` (and
//! `abfs://`, `abfss://`, `azure://`), `http(s)://`, configured from the usual
//! environment variables, as datafusion-cli does.
//!
//! `StoreRegistry` is the object-store registry of the contexts logsql builds
//! ([`crate::session_context`]): any URL DataFusion asks for (`FROM`,
//! `CREATE EXTERNAL TABLE ... LOCATION`, `COPY ... TO`) gets its store built
//! when first seen. On a context the user built, [`ensure`] does the same for
//! the paths logsql's own tables and table functions resolve.
//!
//! Credentials and endpoints come from the environment, read by `object_store`'s
//! builders: S3 `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`, `AWS_ENDPOINT` (an S3-compatible server), `AWS_ALLOW_HTTP`;
//! GCS `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`; Azure
//! `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, ....
//!
//! Requests fail fast by default: `RemoteLimits` (`LOGSQL_REMOTE_RETRIES`,
//! `LOGSQL_REMOTE_TIMEOUT`, `LOGSQL_REMOTE_REQUEST_TIMEOUT`) bounds retries,
//! connection waits and requests, and
//! `describe_error` turns a failed request into its cause (connection refused,
//! unresolvable host, HTTP 403/404, timeout) for the user.

use std::sync::Arc;
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::object_store::ObjectStore;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};
use url::Url;

use logsql_readers::error::Error;

/// Environment variable: how many times a failed remote request is retried.
pub(crate) const RETRIES_VAR: &str = "LOGSQL_REMOTE_RETRIES";
/// Environment variable: seconds to wait for a connection, and for a request's retries in all.
pub(crate) const TIMEOUT_VAR: &str = "LOGSQL_REMOTE_TIMEOUT";
/// Environment variable: seconds one request may take, its answer's transfer included.
pub(crate) const REQUEST_TIMEOUT_VAR: &str = "LOGSQL_REMOTE_REQUEST_TIMEOUT";

/// How long remote requests may take before they fail, from the environment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RemoteLimits {
    /// Retries of a failed request (connection errors, 5xx answers); default 2.
    pub retries: usize,
    /// The wait for a connection, and the time after which no retry starts; default 5 s.
    pub(crate) timeout: Duration,
    /// The time one request may take, body included (large chunk reads); default 30 s.
    pub(crate) request_timeout: Duration,
}

impl Default for RemoteLimits {
    fn default() -> Self {
        Self {
            retries: 2,
            timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
        }
    }
}

impl RemoteLimits {
    /// The limits `LOGSQL_REMOTE_RETRIES`, `LOGSQL_REMOTE_TIMEOUT` and
    /// `LOGSQL_REMOTE_REQUEST_TIMEOUT` (seconds, decimals allowed) set, the
    /// defaults for those not set; an unreadable value is an error naming the variable.
    pub(crate) fn from_env() -> Result<Self> {
        Self::parse(|name| std::env::var(name).ok())
    }

    /// The limits given how to look a variable up.
    pub(crate) fn parse(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut limits = Self::default();
        if let Some(v) = var(RETRIES_VAR) {
            limits.retries = v.trim().parse().map_err(|_| {
                DataFusionError::Configuration(format!(
                    "{RETRIES_VAR}={v:?}: expected a whole number of retries (0: none)"
                ))
            })?;
        }
        let seconds = |name: &str, default: Duration| -> Result<Duration> {
            let Some(v) = var(name) else {
                return Ok(default);
            };
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    DataFusionError::Configuration(format!(
                        "{name}={v:?}: expected a number of seconds greater than 0"
                    ))
                })
        };
        limits.timeout = seconds(TIMEOUT_VAR, limits.timeout)?;
        limits.request_timeout = seconds(REQUEST_TIMEOUT_VAR, limits.request_timeout)?;
        Ok(limits)
    }

    /// The retry policy of object_store's clients.
    pub(crate) fn retry_config(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(1),
                base: 2.0,
            },
            max_retries: self.retries,
            retry_timeout: self.timeout,
        }
    }

    /// The client settings the limits give, as object_store configuration values.
    fn client_config(&self) -> [(ClientConfigKey, String); 2] {
        let ms = |d: Duration| format!("{}ms", d.as_millis().max(1));
        [
            (ClientConfigKey::ConnectTimeout, ms(self.timeout)),
            (ClientConfigKey::Timeout, ms(self.request_timeout)),
        ]
    }

    /// `builder` with the retry policy, and the client settings the environment
    /// does not set itself (`AWS_CONNECT_TIMEOUT`, `AWS_TIMEOUT`, ... win), given
    /// the builder's configuration getter and setter for client keys.
    fn apply<B>(
        &self,
        builder: B,
        with_retry: impl Fn(B, RetryConfig) -> B,
        get: impl Fn(&B, ClientConfigKey) -> Option<String>,
        set: impl Fn(B, ClientConfigKey, String) -> B,
    ) -> B {
        let mut b = with_retry(builder, self.retry_config());
        for (key, value) in self.client_config() {
            if get(&b, key).is_none() {
                b = set(b, key, value);
            }
        }
        b
    }
}

/// Fails when no AWS credential source is configured and the instance metadata
/// service is disabled (`AWS_EC2_METADATA_DISABLED`): object_store would
/// otherwise send unsigned requests nowhere useful, or wait for the service.
fn check_aws_credentials(url: &Url, builder: &AmazonS3Builder) -> Result<()> {
    let set = |k: AmazonS3ConfigKey| builder.get_config_value(&k).is_some_and(|v| !v.is_empty());
    let skip_signature = builder
        .get_config_value(&AmazonS3ConfigKey::SkipSignature)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let configured = skip_signature
        || set(AmazonS3ConfigKey::AccessKeyId)
        || set(AmazonS3ConfigKey::WebIdentityTokenFile)
        || set(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || set(AmazonS3ConfigKey::ContainerCredentialsFullUri);
    let imds_disabled = std::env::var("AWS_EC2_METADATA_DISABLED")
        .is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    if configured || !imds_disabled {
        return Ok(());
    }
    Err(DataFusionError::External(Box::new(Error::Remote {
        url: url.to_string(),
        message: format!(
            "no AWS credentials found: {AWS_CREDENTIAL_SOURCES}; the instance metadata \
             service is disabled (AWS_EC2_METADATA_DISABLED)"
        ),
    })))
}

/// Where object_store looks for AWS credentials, for error messages.
const AWS_CREDENTIAL_SOURCES: &str = "looked for AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, \
     AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/\
     _FULL_URI in the environment (profile files such as ~/.aws/credentials are not read: \
     export the keys, or set AWS_SKIP_SIGNATURE=true for a public bucket)";

/// The store for `url`'s scheme and bucket (or host), built from the
/// environment; `None` for schemes logsql does not build stores for.
pub(crate) fn store_from_env(url: &Url) -> Result<Option<Arc<dyn ObjectStore>>> {
    let fail = |e: object_store::Error| {
        DataFusionError::Configuration(format!("cannot open the object store for {url}: {e}"))
    };
    let limits = RemoteLimits::from_env()?;
    let store: Arc<dyn ObjectStore> = match url.scheme() {
        "s3" | "s3a" => {
            let b = limits.apply(
                AmazonS3Builder::from_env().with_url(url.as_str()),
                AmazonS3Builder::with_retry,
                |b, k| b.get_config_value(&AmazonS3ConfigKey::Client(k)),
                |b, k, v| b.with_config(AmazonS3ConfigKey::Client(k), v),
            );
            check_aws_credentials(url, &b)?;
            Arc::new(b.build().map_err(fail)?)
        }
        "gs" | "gcs" => Arc::new(
            limits
                .apply(
                    GoogleCloudStorageBuilder::from_env().with_url(url.as_str()),
                    GoogleCloudStorageBuilder::with_retry,
                    |b, k| b.get_config_value(&GoogleConfigKey::Client(k)),
                    |b, k, v| b.with_config(GoogleConfigKey::Client(k), v),
                )
                .build()
                .map_err(fail)?,
        ),
        "az" | "azure" | "abfs" | "abfss" | "adl" => Arc::new(
            limits
                .apply(
                    MicrosoftAzureBuilder::from_env().with_url(url.as_str()),
                    MicrosoftAzureBuilder::with_retry,
                    |b, k| b.get_config_value(&AzureConfigKey::Client(k)),
                    |b, k, v| b.with_config(AzureConfigKey::Client(k), v),
                )
                .build()
                .map_err(fail)?,
        ),
        // `http://` URLs need plain HTTP allowed (object_store's clients refuse it by default).
        "http" | "https" => Arc::new(
            limits
                .apply(
                    HttpBuilder::new().with_url(&url[..url::Position::BeforePath]),
                    HttpBuilder::with_retry,
                    |_, _| None,
                    HttpBuilder::with_config,
                )
                .with_config(ClientConfigKey::AllowHttp, "true")
                .build()
                .map_err(fail)?,
        ),
        _ => return Ok(None),
    };
    Ok(Some(store))
}

/// What went wrong with a request for `url`, said plainly: the object is not
/// there (HTTP 404), access is denied (401/403), the host name does not resolve,
/// the connection is refused or times out; otherwise object_store's own message.
pub(crate) fn describe_error(e: &object_store::Error) -> String {
    use object_store::Error as E;
    let status = match e {
        E::NotFound { .. } => Some("not found (HTTP 404)"),
        E::PermissionDenied { .. } => Some("access denied (HTTP 403): check the credentials"),
        E::Unauthenticated { .. } => Some("not authenticated (HTTP 401): check the credentials"),
        _ => None,
    };
    if let Some(status) = status {
        return status.to_string();
    }
    let cause = cause(e);
    // A request to the EC2 instance metadata service (credentials) failed.
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if text.contains("/latest/api/token") || text.contains("/latest/meta-data/") {
            return format!(
                "no AWS credentials found: {AWS_CREDENTIAL_SOURCES}; the instance metadata \
                 service (AWS_METADATA_ENDPOINT, default http://169.254.169.254; \
                 AWS_EC2_METADATA_DISABLED=true skips it) failed: {cause}"
            );
        }
        cur = err.source();
    }
    cause
}

/// The cause at the bottom of a failed request: a timeout, a refused
/// connection, a failed DNS lookup, or else the innermost message.
fn cause(e: &object_store::Error) -> String {
    let mut innermost = e.to_string();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(http) = err.downcast_ref::<object_store::client::HttpError>()
            && matches!(http.kind(), object_store::client::HttpErrorKind::Timeout)
        {
            let limits = RemoteLimits::from_env().unwrap_or_default();
            return format!(
                "timed out (connections wait {:?} and requests {:?}, with {} retries: \
                 {TIMEOUT_VAR}, {REQUEST_TIMEOUT_VAR}, {RETRIES_VAR})",
                limits.timeout, limits.request_timeout, limits.retries
            );
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return "connection refused (nothing listens at this address)".to_string();
        }
        let text = err.to_string();
        if text.starts_with("dns error") || text.contains("failed to lookup address") {
            return "cannot resolve the host name (DNS lookup failed)".to_string();
        }
        innermost = text;
        cur = err.source();
    }
    innermost
}

/// A failed request for `url` as a logsql error naming the URL and the cause.
pub(crate) fn remote_error(url: impl Into<String>, e: &object_store::Error) -> Error {
    Error::Remote {
        url: url.into(),
        message: describe_error(e),
    }
}

/// Registers the store for `url` in `runtime` unless one is registered already.
pub fn ensure(runtime: &RuntimeEnv, url: &Url) -> Result<()> {
    if runtime.object_store_registry.get_store(url).is_ok() {
        return Ok(());
    }
    if let Some(store) = store_from_env(url)? {
        runtime.register_object_store(url, store);
    }
    Ok(())
}

/// An object-store registry that builds stores for cloud URLs when first
/// asked; `file://` is the local file system listed by
/// [`super::local_walk::SafeLocalFileSystem`].
#[derive(Debug)]
pub(crate) struct StoreRegistry {
    inner: DefaultObjectStoreRegistry,
}

impl Default for StoreRegistry {
    fn default() -> Self {
        let inner = DefaultObjectStoreRegistry::new();
        inner.register_store(
            &local_url(),
            Arc::new(super::local_walk::SafeLocalFileSystem::new()),
        );
        Self { inner }
    }
}

/// The URL of the local file system's store, `file://`.
pub(crate) fn local_url() -> Url {
    Url::parse("file://").expect("file:// is a URL")
}

/// Registers [`super::local_walk::SafeLocalFileSystem`] as `runtime`'s
/// `file://` store when the one there is DataFusion's default
/// `LocalFileSystem` (a context logsql did not build); a store the
/// application registered itself is kept.
pub fn ensure_safe_local(runtime: &RuntimeEnv) {
    let url = local_url();
    let default = runtime
        .object_store_registry
        .get_store(&url)
        .is_ok_and(|s| s.to_string() == "LocalFileSystem(file:///)");
    if default && !is_safe_local(runtime) {
        runtime.register_object_store(
            &url,
            Arc::new(super::local_walk::SafeLocalFileSystem::new()),
        );
    }
}

/// Whether `runtime`'s `file://` store is [`super::local_walk::SafeLocalFileSystem`].
fn is_safe_local(runtime: &RuntimeEnv) -> bool {
    runtime
        .object_store_registry
        .get_store(&local_url())
        .is_ok_and(|s| format!("{s:?}").starts_with("SafeLocalFileSystem"))
}

impl ObjectStoreRegistry for StoreRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        match self.inner.get_store(url) {
            Ok(store) => Ok(store),
            Err(not_found) => match store_from_env(url)? {
                Some(store) => {
                    self.inner.register_store(url, Arc::clone(&store));
                    Ok(store)
                }
                None => Err(not_found),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_urls_get_a_store_and_others_do_not() {
        let registry = StoreRegistry::default();
        // No request is made when building: only configuration is checked.
        let s3 = Url::parse("s3://logs/fleet/").unwrap();
        assert!(registry.get_store(&s3).is_ok());
        // The same bucket is the same store.
        let again = registry
            .get_store(&Url::parse("s3://logs/other").unwrap())
            .unwrap();
        assert!(Arc::ptr_eq(&again, &registry.get_store(&s3).unwrap()));
        let http = Url::parse("https://example.com/data/run.mcap").unwrap();
        assert!(registry.get_store(&http).is_ok());
        let unknown = Url::parse("ftp://example.com/run.mcap").unwrap();
        assert!(registry.get_store(&unknown).is_err());
    }

    #[test]
    fn remote_limits_read_the_three_variables() {
        let parse = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            RemoteLimits::parse(move |name| {
                vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
            })
        };
        assert_eq!(parse(&[]).unwrap(), RemoteLimits::default());
        let l = parse(&[
            (RETRIES_VAR, "0"),
            (TIMEOUT_VAR, "1.5"),
            (REQUEST_TIMEOUT_VAR, "60"),
        ])
        .unwrap();
        assert_eq!(l.retries, 0);
        assert_eq!(l.timeout, Duration::from_millis(1500));
        assert_eq!(l.request_timeout, Duration::from_secs(60));
        let retry = l.retry_config();
        assert_eq!(retry.max_retries, 0);
        assert_eq!(retry.retry_timeout, Duration::from_millis(1500));
        assert_eq!(
            l.client_config(),
            [
                (ClientConfigKey::ConnectTimeout, "1500ms".to_string()),
                (ClientConfigKey::Timeout, "60000ms".to_string())
            ]
        );
        let e = parse(&[(RETRIES_VAR, "-1")]).unwrap_err().to_string();
        assert!(
            e.contains("LOGSQL_REMOTE_RETRIES=\"-1\": expected a whole number"),
            "{e}"
        );
        for bad in ["0", "-2", "soon", "inf"] {
            for var in [TIMEOUT_VAR, REQUEST_TIMEOUT_VAR] {
                let e = parse(&[(var, bad)]).unwrap_err().to_string();
                assert!(
                    e.contains(&format!(
                        "{var}={bad:?}: expected a number of seconds greater than 0"
                    )),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn http_statuses_are_said_plainly() {
        let source: Box<dyn std::error::Error + Send + Sync> = "x".into();
        let e = object_store::Error::NotFound {
            path: "a".into(),
            source,
        };
        assert_eq!(describe_error(&e), "not found (HTTP 404)");
        let e = object_store::Error::PermissionDenied {
            path: "a".into(),
            source: "x".into(),
        };
        assert_eq!(
            describe_error(&e),
            "access denied (HTTP 403): check the credentials"
        );
        let e = object_store::Error::Generic {
            store: "S3",
            source: "something else".into(),
        };
        assert_eq!(describe_error(&e), "something else");
    }
}
