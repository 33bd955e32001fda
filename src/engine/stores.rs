//! Object stores registered on first use: `s3://`, `gs://`, `az://` (and
//! `abfs://`, `abfss://`, `azure://`), `http(s)://`, configured from the usual
//! environment variables, as datafusion-cli does.
//!
//! [`StoreRegistry`] is the object-store registry of the contexts logsql builds
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

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use url::Url;

/// The store for `url`'s scheme and bucket (or host), built from the
/// environment; `None` for schemes logsql does not build stores for.
pub fn store_from_env(url: &Url) -> Result<Option<Arc<dyn ObjectStore>>> {
    let fail = |e: object_store::Error| {
        DataFusionError::Configuration(format!("cannot open the object store for {url}: {e}"))
    };
    let store: Arc<dyn ObjectStore> = match url.scheme() {
        "s3" | "s3a" => Arc::new(
            AmazonS3Builder::from_env()
                .with_url(url.as_str())
                .build()
                .map_err(fail)?,
        ),
        "gs" | "gcs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(url.as_str())
                .build()
                .map_err(fail)?,
        ),
        "az" | "azure" | "abfs" | "abfss" | "adl" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .build()
                .map_err(fail)?,
        ),
        "http" | "https" => Arc::new(
            HttpBuilder::new()
                .with_url(&url[..url::Position::BeforePath])
                .build()
                .map_err(fail)?,
        ),
        _ => return Ok(None),
    };
    Ok(Some(store))
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

/// An object-store registry that builds stores for cloud URLs when first asked.
#[derive(Debug, Default)]
pub struct StoreRegistry {
    inner: DefaultObjectStoreRegistry,
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
}
