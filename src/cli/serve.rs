//! `logsql serve` and `logsql mcp`: their flags as a [`ServeConfig`], the
//! session the CLI makes (every table function, `read_topic`, ASOF JOIN and
//! global option) with the server's data roots installed, then logsql-serve
//! runs it (Postgres wire and Flight SQL, or MCP over stdio). Its errors
//! become the CLI's here.

use logsql_serve::{
    Auth, Limits, McpServer, Policy, ServeConfig, ServeError, Server, TableSpec, TlsFiles,
};

use super::App;
use super::args::{Args, McpArgs, ServeArgs};
use super::error::{CliError, CliResult};

/// Runs `logsql serve` until the process is stopped.
pub fn run(args: &Args, serve: &ServeArgs) -> CliResult {
    let server = Server::new(config(serve)?)?;
    let app = App::with_config(args, |config| server.session_config(config))?;
    let listening = app.rt.block_on(server.bind(app.ctx.clone()))?;
    listening.announce();
    app.rt.block_on(listening.serve());
    Ok(())
}

/// Runs `logsql mcp` until the agent disconnects: the session under the
/// serving policy of `mcp`'s roots and limits (read-only unless
/// `--allow-write DIR`), served over stdio.
pub fn run_mcp(args: &Args, mcp: &McpArgs) -> CliResult {
    let config = ServeConfig {
        roots: mcp.roots.clone(),
        write_root: mcp.allow_write.clone(),
        limits: Limits {
            max_queries: mcp.max_queries as usize,
            query_timeout: Some(mcp.query_timeout),
            memory_limit: mcp.memory_limit,
            ..Limits::default()
        },
        ..ServeConfig::default()
    };
    let policy = Policy::new(&config)?;
    // Relative paths, in a tool's arguments and in the agent's SQL alike,
    // are the first root's.
    if let Some(root) = policy.roots().first_local() {
        std::env::set_current_dir(root)
            .map_err(|e| CliError::io(format!("entering {}", root.display()), e))?;
    }
    let app = App::with_config(args, |config| policy.session_config(config))?;
    let session = app.rt.block_on(policy.session(app.ctx.clone()))?;
    log::info!(
        "logsql mcp: serving MCP over stdio, reading below {}",
        policy.roots()
    );
    app.rt.block_on(McpServer::new(session)?.serve_stdio())?;
    app.close();
    Ok(())
}

/// The server configuration `serve`'s flags give.
fn config(serve: &ServeArgs) -> CliResult<ServeConfig> {
    if serve.login_timeout.is_zero() {
        return Err(CliError::msg(
            "--login-timeout 0 would close every connection before it logs in; give a \
             duration such as 10s"
                .to_string(),
        ));
    }
    let auth = match &serve.password_file {
        Some(file) => Auth::password_file(serve.user.clone(), file)?,
        None => Auth::Open,
    };
    let tls = match (&serve.tls_cert, &serve.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    Ok(ServeConfig {
        roots: serve.roots.clone(),
        tables: serve
            .tables
            .iter()
            .map(|spec| TableSpec::parse(spec))
            .collect::<Result<_, _>>()?,
        pg: serve.pg,
        flight: serve.flight,
        mcp: serve.mcp,
        auth,
        tls,
        tls_only: serve.tls_only,
        write_root: serve.allow_write.clone(),
        limits: Limits {
            max_queries: serve.max_queries as usize,
            query_timeout: Some(serve.query_timeout).filter(|t| !t.is_zero()),
            memory_limit: serve.memory_limit,
            max_connections: serve.max_connections as usize,
            login_timeout: serve.login_timeout,
            idle_timeout: Some(serve.idle_timeout).filter(|t| !t.is_zero()),
        },
    })
}

impl From<ServeError> for CliError {
    fn from(e: ServeError) -> Self {
        match e {
            ServeError::DataFusion(e) => CliError::from(e),
            ServeError::Io { what, source } => CliError::io(what, source),
            e @ (ServeError::Config(_) | ServeError::Tls(_) | ServeError::Refused(_)) => {
                CliError::msg(e.to_string())
            }
        }
    }
}
