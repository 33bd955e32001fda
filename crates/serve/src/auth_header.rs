//! An `Authorization` header as the front ends that take one read it
//! (Flight SQL, MCP over HTTP): its credentials after a scheme (`Basic`,
//! `Bearer`, in any case), and secrets compared in constant time, so the
//! time an answer takes says nothing of how much of a guess was right.

use subtle::ConstantTimeEq;

/// The credentials of `header` under `scheme` (`"Bearer"`), trimmed, if the
/// header is of that scheme.
pub(crate) fn credentials<'a>(header: &'a str, scheme: &str) -> Option<&'a str> {
    let (given, rest) = header.split_at_checked(scheme.len())?;
    (given.eq_ignore_ascii_case(scheme) && rest.starts_with(' ')).then(|| rest.trim())
}

/// Whether `given` is `secret`, compared in constant time.
pub(crate) fn same_secret(given: &str, secret: &str) -> bool {
    bool::from(given.as_bytes().ct_eq(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_follow_their_scheme_in_any_case() {
        assert_eq!(credentials("Bearer abc", "Bearer"), Some("abc"));
        assert_eq!(credentials("bearer  abc ", "Bearer"), Some("abc"));
        assert_eq!(credentials("Basic abc", "Bearer"), None);
        assert_eq!(credentials("Bearerabc", "Bearer"), None);
        assert_eq!(credentials("Bear", "Bearer"), None);
        assert!(same_secret("s3cret", "s3cret") && !same_secret("s3cre", "s3cret"));
    }
}
