//! Who may query over Flight SQL: without a password every client; with
//! one, a client that sends `authorization: Basic base64(user:password)` (and
//! gets back a bearer token of its own) or such a token. Each login gets a
//! new random token, which expires when unused for [`TOKEN_IDLE`]; at most
//! [`MAX_TOKENS`] are kept (a login past that forgets the token used least
//! recently), so logins cannot grow the server's memory.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use datafusion_postgres::pgwire::api::auth::sasl::scram::random_nonce;
use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::auth_header::{credentials, same_secret};
use crate::config::Auth;

/// Base64 as basic auth sends it, padded or not (Go's Flight client, under
/// ADBC, leaves the padding out).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// How long a bearer token lasts unused.
pub(super) const TOKEN_IDLE: Duration = Duration::from_secs(3600);

/// Bearer tokens kept at most.
pub(super) const MAX_TOKENS: usize = 1024;

/// Who may query over Flight SQL.
pub(super) enum FlightLogin {
    /// Any client that reaches the address.
    Open,
    /// The one user with its password, and the bearer tokens given to the
    /// logins with them, each with when it was last used.
    Password {
        user: String,
        password: String,
        tokens: Mutex<HashMap<String, Instant>>,
    },
}

impl FlightLogin {
    /// The login of `auth`.
    pub(super) fn new(auth: &Auth) -> Self {
        match auth {
            Auth::Open => FlightLogin::Open,
            Auth::Password { user, password } => FlightLogin::Password {
                user: user.clone(),
                password: password.clone(),
                tokens: Mutex::new(HashMap::new()),
            },
        }
    }

    /// Checks the `authorization` header of a call; on a good `Basic` login,
    /// returns the new bearer token to hand back.
    #[allow(clippy::result_large_err)]
    pub(super) fn check(&self, metadata: &MetadataMap) -> Result<Option<String>, Status> {
        let FlightLogin::Password {
            user,
            password,
            tokens,
        } = self
        else {
            return Ok(None);
        };
        let header = metadata
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                Status::unauthenticated(
                    "this server needs a user name and password (Flight SQL basic auth)",
                )
            })?;
        if let Some(given) = credentials(header, "Bearer") {
            return match use_token(tokens, given, Instant::now()) {
                true => Ok(None),
                false => Err(Status::unauthenticated(
                    "unknown or expired bearer token: log in again with the user name and password",
                )),
            };
        }
        let given = credentials(header, "Basic")
            .and_then(|b| BASE64.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                Status::unauthenticated("the authorization header is neither Basic nor Bearer")
            })?;
        let (given_user, given_password) = given.split_once(':').unwrap_or((&given, ""));
        // Both compared, whichever fails, so the time says nothing of which.
        let user_ok = same_secret(given_user, user);
        let password_ok = same_secret(given_password, password);
        match user_ok && password_ok {
            true => Ok(Some(new_token(tokens, Instant::now()))),
            false => Err(Status::unauthenticated("wrong user name or password")),
        }
    }
}

fn lock(
    tokens: &Mutex<HashMap<String, Instant>>,
) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
    tokens.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tokens still live at `now` (the expired ones forgotten).
fn live(
    tokens: &Mutex<HashMap<String, Instant>>,
    now: Instant,
) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
    let mut tokens = lock(tokens);
    tokens.retain(|_, used| now.duration_since(*used) < TOKEN_IDLE);
    tokens
}

/// Whether `given` is a live token at `now` (its last use then noted);
/// expired tokens are forgotten.
fn use_token(tokens: &Mutex<HashMap<String, Instant>>, given: &str, now: Instant) -> bool {
    match live(tokens, now).get_mut(given) {
        Some(used) => {
            *used = now;
            true
        }
        None => false,
    }
}

/// A new token, kept from `now`; the least recently used is forgotten when
/// [`MAX_TOKENS`] are kept.
fn new_token(tokens: &Mutex<HashMap<String, Instant>>, now: Instant) -> String {
    let token = random_nonce();
    let mut tokens = live(tokens, now);
    if tokens.len() >= MAX_TOKENS
        && let Some(oldest) = tokens
            .iter()
            .min_by_key(|(_, used)| **used)
            .map(|(t, _)| t.clone())
    {
        tokens.remove(&oldest);
    }
    tokens.insert(token.clone(), now);
    token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_login_gets_its_own_token_which_expires_unused() {
        let tokens = Mutex::new(HashMap::new());
        let t0 = Instant::now();
        let a = new_token(&tokens, t0);
        let b = new_token(&tokens, t0);
        assert_ne!(a, b);
        assert!(use_token(&tokens, &a, t0 + TOKEN_IDLE / 2));
        // b unused for the whole idle time: gone; a used since: kept.
        assert!(!use_token(&tokens, &b, t0 + TOKEN_IDLE));
        assert!(use_token(&tokens, &a, t0 + TOKEN_IDLE));
        assert!(!use_token(&tokens, "forged", t0 + TOKEN_IDLE));
    }

    #[test]
    fn logins_past_the_cap_forget_the_least_recently_used_token() {
        let tokens = Mutex::new(HashMap::new());
        let t0 = Instant::now();
        let first = new_token(&tokens, t0);
        let second = new_token(&tokens, t0 + Duration::from_secs(1));
        assert!(use_token(&tokens, &first, t0 + Duration::from_secs(2)));
        for i in 0..MAX_TOKENS {
            new_token(&tokens, t0 + Duration::from_secs(3 + i as u64));
        }
        assert!(lock(&tokens).len() <= MAX_TOKENS);
        assert!(!lock(&tokens).contains_key(&second));
    }
}
