//! How a Postgres-wire client logs in: TLS required when the server says
//! so, then SCRAM-SHA-256 against the one user and password (or no login at
//! all), as PostgreSQL answers logins:
//!
//! - an unknown user and a wrong password fail alike: an unknown user is
//!   given a salt of its own (derived from its name and a secret of the
//!   process, so it is the same on every try, as a real user's is) and the
//!   exchange fails at the proof, as a wrong password does, with the same
//!   error (28P01, `password authentication failed for user "NAME"`);
//! - a failed login is answered only after [`FAILED_LOGIN_DELAY`], so
//!   guessing costs time (PostgreSQL's `auth_delay`);
//! - a connection that has logged in tells its [`Activity`], which the
//!   accept loop watches for the login and idle timeouts.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use datafusion_postgres::pgwire::api::auth::noop::NoopStartupHandler;
use datafusion_postgres::pgwire::api::auth::sasl::SASLAuthStartupHandler;
use datafusion_postgres::pgwire::api::auth::sasl::scram::{
    SCRAM_ITERATIONS, gen_salted_password, random_nonce,
};
use datafusion_postgres::pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
};
use datafusion_postgres::pgwire::api::{
    ClientInfo, ConnectionManager, METADATA_USER, PgWireConnectionState,
};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use futures::Sink;

use crate::activity::Activity;

/// How long a failed login waits before it is answered.
pub const FAILED_LOGIN_DELAY: Duration = Duration::from_secs(1);

/// The one user and its salted password (the SCRAM verifier's input), and
/// the secret unknown users' salts derive from.
#[derive(Debug)]
pub struct Credentials {
    user: String,
    salt: Vec<u8>,
    salted: Vec<u8>,
    mock_secret: Vec<u8>,
}

impl Credentials {
    /// The login of `user` with `password`.
    pub fn new(user: String, password: &str) -> Self {
        let salt = random_nonce().into_bytes();
        let salted = gen_salted_password(password, &salt, SCRAM_ITERATIONS);
        Self {
            user,
            salt,
            salted,
            mock_secret: random_nonce().into_bytes(),
        }
    }

    /// An unknown user's salt: the same length and alphabet as a real one
    /// (a random nonce's base64), the same on every try.
    fn mock_salt(&self, user: &str) -> Vec<u8> {
        let derived = gen_salted_password(user, &self.mock_secret, 1);
        STANDARD.encode(&derived[..18]).into_bytes()
    }
}

#[async_trait]
impl AuthSource for Credentials {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        if user == self.user {
            return Ok(Password::new(Some(self.salt.clone()), self.salted.clone()));
        }
        // No password matches this: the proof fails as a wrong one does.
        let salt = self.mock_salt(user);
        let salted = gen_salted_password(&random_nonce(), &salt, 1);
        Ok(Password::new(Some(salt), salted))
    }
}

/// Start-up without a password.
pub struct OpenStartup {
    /// The server's connections (for cancel requests).
    pub connections: Arc<ConnectionManager>,
}

impl NoopStartupHandler for OpenStartup {
    fn connection_manager(&self) -> Option<Arc<ConnectionManager>> {
        Some(Arc::clone(&self.connections))
    }
}

/// Which login a connection goes through.
pub enum StartupKind {
    /// None: any client may query.
    Open(OpenStartup),
    /// SCRAM-SHA-256.
    Scram(Box<SASLAuthStartupHandler<DefaultServerParameterProvider>>),
}

/// A connection's start-up: TLS required if the server says so, then its
/// login, its failures answered alike and late.
pub struct Startup {
    /// The login.
    pub kind: StartupKind,
    /// Whether plain connections are refused.
    pub tls_only: bool,
    /// The connection's activity, told when it has logged in.
    pub activity: Arc<Activity>,
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.tls_only && !client.is_secure() {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_string(),
                "28000".to_string(),
                "this server accepts TLS connections only (sslmode=require)".to_string(),
            ))));
        }
        let done = match &self.kind {
            StartupKind::Open(h) => h.on_startup(client, message).await,
            StartupKind::Scram(h) => h.on_startup(client, message).await,
        };
        match done {
            Err(PgWireError::InvalidPassword(_)) => {
                tokio::time::sleep(FAILED_LOGIN_DELAY).await;
                let user = client
                    .metadata()
                    .get(METADATA_USER)
                    .cloned()
                    .unwrap_or_default();
                log::info!(
                    "failed login from {} as user {user:?}",
                    client.socket_addr()
                );
                Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".to_string(),
                    "28P01".to_string(),
                    format!("password authentication failed for user \"{user}\""),
                ))))
            }
            Ok(()) => {
                if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
                    self.activity.logged_in();
                }
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_users_salt_looks_like_a_real_one_and_stays() {
        let credentials = Credentials::new("ana".to_string(), "s3cret");
        let mock = credentials.mock_salt("bob");
        assert_eq!(mock.len(), credentials.salt.len());
        assert!(
            mock.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"+/=".contains(c))
        );
        assert_eq!(mock, credentials.mock_salt("bob"));
        assert_ne!(mock, credentials.mock_salt("eve"));
    }
}
