//! Who may query over Flight SQL: without a password every client; with
//! one, a client that sends `authorization: Basic base64(user:password)` (and
//! gets back a bearer token) or that bearer token.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use datafusion_postgres::pgwire::api::auth::sasl::scram::random_nonce;
use subtle::ConstantTimeEq;
use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::config::Auth;

/// Base64 as basic auth sends it, padded or not (Go's Flight client, under
/// ADBC, leaves the padding out).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Who may query over Flight SQL.
pub(super) enum FlightLogin {
    /// Any client that reaches the address.
    Open,
    /// The one user with its password, and the bearer token given to
    /// clients that logged in with them (one per server process).
    Password {
        user: String,
        password: String,
        token: String,
    },
}

impl FlightLogin {
    /// The login of `auth`, with a fresh bearer token when it has a password.
    pub(super) fn new(auth: &Auth) -> Self {
        match auth {
            Auth::Open => FlightLogin::Open,
            Auth::Password { user, password } => FlightLogin::Password {
                user: user.clone(),
                password: password.clone(),
                token: random_nonce(),
            },
        }
    }

    /// Checks the `authorization` header of a call; on a good `Basic` login,
    /// returns the bearer token to hand back.
    #[allow(clippy::result_large_err)]
    pub(super) fn check(&self, metadata: &MetadataMap) -> Result<Option<&str>, Status> {
        let FlightLogin::Password {
            user,
            password,
            token,
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
        let same = |a: &str, b: &str| bool::from(a.as_bytes().ct_eq(b.as_bytes()));
        if let Some(given) = strip_prefix_ignore_case(header, "Bearer ") {
            return match same(given.trim(), token) {
                true => Ok(None),
                false => Err(Status::unauthenticated(
                    "unknown bearer token: log in again with the user name and password",
                )),
            };
        }
        let given = strip_prefix_ignore_case(header, "Basic ")
            .and_then(|b| BASE64.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                Status::unauthenticated("the authorization header is neither Basic nor Bearer")
            })?;
        let (given_user, given_password) = given.split_once(':').unwrap_or((&given, ""));
        // Both compared, whichever fails, so the time says nothing of which.
        let user_ok = same(given_user, user);
        let password_ok = same(given_password, password);
        match user_ok && password_ok {
            true => Ok(Some(token)),
            false => Err(Status::unauthenticated("wrong user name or password")),
        }
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}
