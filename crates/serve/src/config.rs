//! What a server is started with ([`ServeConfig`]): its addresses, data roots
//! and write root, tables, login, TLS and query limits, as plain values (the
//! CLI fills it from `logsql serve`'s flags; an embedder fills it itself).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{ServeError, ServeResult};

/// How a server is started.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Directories or object-store prefixes (`s3://bucket/runs/`) queries may
    /// read below; at least one.
    pub roots: Vec<String>,
    /// Tables over a log file, directory or glob below a root, registered
    /// before the server listens.
    pub tables: Vec<TableSpec>,
    /// The address of the Postgres-wire listener (port 0: any free port).
    pub pg: SocketAddr,
    /// The address of the Arrow Flight SQL listener, if it serves Flight SQL
    /// (feature `flight`).
    pub flight: Option<SocketAddr>,
    /// The address of the MCP listener (streamable HTTP at `/mcp`), if it
    /// serves agents over MCP.
    pub mcp: Option<SocketAddr>,
    /// How clients log in.
    pub auth: Auth,
    /// The certificate and key clients may (or, with `tls_only`, must)
    /// connect with over TLS; Flight SQL serves TLS only when given.
    pub tls: Option<TlsFiles>,
    /// Whether Postgres clients that do not connect over TLS are refused.
    pub tls_only: bool,
    /// The directory (or object-store prefix) `COPY ... TO` and `INSERT` may
    /// write below; without it the server writes nothing.
    pub write_root: Option<String>,
    /// The limits of queries and connections.
    pub limits: Limits,
}

impl Default for ServeConfig {
    /// Postgres wire on `127.0.0.1:5432`, no Flight SQL, open login, no TLS,
    /// no writes, default limits, and no roots yet (a server needs one).
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            tables: Vec::new(),
            pg: SocketAddr::from(([127, 0, 0, 1], 5432)),
            flight: None,
            mcp: None,
            auth: Auth::Open,
            tls: None,
            tls_only: false,
            write_root: None,
            limits: Limits::default(),
        }
    }
}

/// A table a server names: `name` over the log file, directory or glob
/// `path` (below a root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpec {
    /// The table's name.
    pub name: String,
    /// The log file, directory or glob it reads.
    pub path: String,
}

impl TableSpec {
    /// Parses `NAME=PATH` (as `--table` gives it).
    pub fn parse(spec: &str) -> ServeResult<Self> {
        let bad = || {
            ServeError::Config(format!(
                "--table {spec}: give NAME=PATH (a log file, directory or glob)"
            ))
        };
        let (name, path) = spec.split_once('=').ok_or_else(bad)?;
        let (name, path) = (name.trim(), path.trim());
        if name.is_empty() || path.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            name: name.to_string(),
            path: path.to_string(),
        })
    }
}

/// How clients log in.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// Any client that reaches the address may query.
    Open,
    /// One user with a password: SCRAM-SHA-256 over Postgres wire, basic
    /// auth then a bearer token over Flight SQL.
    Password {
        /// The user name clients log in as.
        user: String,
        /// The password they give.
        password: String,
    },
}

impl Auth {
    /// The login of `user` with the password in `file`: its first line,
    /// without the line break (which must not be empty).
    /// On Unix the file must be its owner's only (as `ssh` and libpq's
    /// `.pgpass` ask): one that other users may read or write is refused.
    pub fn password_file(user: impl Into<String>, file: &Path) -> ServeResult<Self> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| ServeError::io(file.display().to_string(), e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(file)
                .map_err(|e| ServeError::io(file.display().to_string(), e))?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(ServeError::Config(format!(
                    "{}: the password file may be read or written by other users (mode {mode:04o}): \
                     make it its owner's only (chmod 600 {})",
                    file.display(),
                    file.display()
                )));
            }
        }
        let password = text.lines().next().unwrap_or_default().to_string();
        if password.is_empty() {
            return Err(ServeError::Config(format!(
                "{}: the password file's first line is empty",
                file.display()
            )));
        }
        Ok(Auth::Password {
            user: user.into(),
            password,
        })
    }
}

impl std::fmt::Debug for Auth {
    /// The login without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Open => f.write_str("Open"),
            Auth::Password { user, .. } => f
                .debug_struct("Password")
                .field("user", user)
                .finish_non_exhaustive(),
        }
    }
}

/// A TLS certificate chain and its private key (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The limits of a server's queries and connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Queries that run at once; others wait for a slot (at least 1).
    pub max_queries: usize,
    /// Time a query may take, waiting for a slot included.
    pub query_timeout: Option<Duration>,
    /// Memory a query may hold at once, in bytes.
    pub memory_limit: Option<usize>,
    /// Client connections open at once over Postgres wire; more are refused
    /// (at least 1).
    pub max_connections: usize,
    /// Time a Postgres-wire connection has to log in; it is closed then.
    pub login_timeout: Duration,
    /// Time a logged-in Postgres-wire connection may run no statement
    /// before it is closed (`None`: no limit).
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    /// 8 queries at once, 64 connections, 10 minutes a query, no memory
    /// limit (beyond the cap on any one value a function makes), 10 seconds
    /// to log in, 10 minutes idle.
    fn default() -> Self {
        Self {
            max_queries: 8,
            query_timeout: Some(Duration::from_secs(600)),
            memory_limit: None,
            max_connections: 64,
            login_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(600)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_specs_need_a_name_and_a_path() {
        let spec = TableSpec::parse(" runs = /data/runs/ ").expect("a spec");
        assert_eq!(spec.name, "runs");
        assert_eq!(spec.path, "/data/runs/");
        for bad in ["runs", "=/data", "runs=", " = "] {
            let e = TableSpec::parse(bad).expect_err(bad).to_string();
            assert_eq!(
                e,
                format!("--table {bad}: give NAME=PATH (a log file, directory or glob)")
            );
        }
    }

    #[test]
    fn a_password_file_gives_its_first_line() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\nignored\n").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |m| std::fs::Permissions::from_mode(m);
            std::fs::set_permissions(&file, mode(0o640)).expect("chmod");
            let e = Auth::password_file("ana", &file).expect_err("group-readable");
            assert_eq!(
                e.to_string(),
                format!(
                    "{0}: the password file may be read or written by other users (mode 0640): \
                     make it its owner's only (chmod 600 {0})",
                    file.display()
                )
            );
            std::fs::set_permissions(&file, mode(0o600)).expect("chmod");
        }
        let auth = Auth::password_file("ana", &file).expect("a login");
        assert_eq!(
            auth,
            Auth::Password {
                user: "ana".to_string(),
                password: "s3cret".to_string()
            }
        );
        assert_eq!(format!("{auth:?}"), "Password { user: \"ana\", .. }");
        std::fs::write(&file, "\nsecond").expect("write");
        let e = Auth::password_file("ana", &file).expect_err("empty first line");
        assert_eq!(
            e.to_string(),
            format!(
                "{}: the password file's first line is empty",
                file.display()
            )
        );
        let missing = dir.path().join("missing");
        let e = Auth::password_file("ana", &missing).expect_err("no file");
        assert!(
            e.to_string()
                .starts_with(&format!("{}: ", missing.display())),
            "{e}"
        );
    }
}
