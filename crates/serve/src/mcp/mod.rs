//! The Model Context Protocol front end: language-model agents ask the
//! recordings below the data roots through tools, over stdio (`logsql mcp`)
//! and over streamable HTTP beside a server's other front ends (`logsql
//! serve --mcp ADDR`, [`http`]), on the official Rust SDK (`rmcp`).
//!
//! Every query a tool runs, the agent's own (`query`) and those the other
//! tools build, runs through the one [`ServeSession`] of the server's policy
//! ([`ServeSession::query`]): the statement checks (no `COPY`, DDL or
//! `SET`; one statement), the plan guard (files below the roots only) and
//! the query limits (slots, time, memory) hold as for Postgres wire and
//! Flight SQL. A path an agent names is taken from the first root when it
//! is relative, and refused before anything is read when it is outside the
//! roots. Answers are cut at a number of rows and bytes ([`answer`]), and a
//! failure is a tool result the agent reads (the SQL error, with the names
//! it could have used), never a protocol error that ends its session.
//!
//! - [`args`]: each tool's arguments and their JSON schema;
//! - [`answer`]: a result's rows as a text table and as JSON, within caps;
//! - [`tools`]: what each tool does;
//! - `reference`: the SQL reference of the user guide, as resources.

pub(crate) mod answer;
pub mod args;
pub mod http;
mod reference;
mod tools;

use std::sync::Arc;

use logsql::DataRoots;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};

use crate::error::{ServeError, ServeResult};
use crate::session::ServeSession;

/// What the server tells an agent when it connects.
const INSTRUCTIONS: &str = "logsql answers SQL over robot log files (MCAP, ROS 1 bags, ROS 2 \
bags, Apollo records, BDDF, CARLA logs) where they lie, without loading them. Start with \
list_recordings, then describe_recording (topics, types, counts, rates, time span, gaps, \
cameras) and describe_topic (a topic's decoded columns with sample rows), then query with \
SQL: FROM 'file.mcap' is the raw messages (topic, log_time, data, ...); \
read_topic('file.mcap', '/topic') is one topic's decoded fields as typed columns (struct \
fields as a.b); topics('path') and chunks('path') answer from the file's index. \
sample_frames shows a camera's images. The resources are the SQL reference. Queries are read-only and their answers are cut at \
a number of rows: aggregate (count, avg, min, max, date_bin) rather than fetch raw rows.";

/// The MCP server of a [`ServeSession`] (see the module documentation).
#[derive(Clone)]
pub struct McpServer {
    session: ServeSession,
    roots: Arc<DataRoots>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("session", &self.session)
            .field("roots", &self.roots.to_string())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// The server of `session` (made by [`crate::Policy::session`]); an
    /// agent's relative paths are taken from its first local root.
    pub fn new(session: ServeSession) -> ServeResult<Self> {
        let roots = DataRoots::of(session.state().config()).ok_or_else(|| {
            ServeError::Config("an MCP server needs a session with data roots".to_string())
        })?;
        let mut tool_router = Self::tool_router();
        // The tools that write are there only when writes are allowed.
        if session.write_dir().is_none() {
            tool_router.remove_route("export_clip");
            tool_router.remove_route("export_dataset");
        }
        Ok(Self {
            session,
            roots,
            tool_router,
        })
    }

    /// Serves one agent over stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> ServeResult {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Config(format!("MCP over stdio: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| ServeError::Config(format!("MCP over stdio: {e}")))?;
        Ok(())
    }
}

#[tool_router]
impl McpServer {
    #[tool(
        description = "The recordings (log files) below the data roots, or below a directory or glob: each file with its topics and their message types. Filter by a topic. Answered from the files' indexes."
    )]
    async fn list_recordings(
        &self,
        Parameters(args): Parameters<args::ListRecordings>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.list(args).await))
    }

    #[tool(
        description = "What a recording holds, as `logsql info --format json` says it: format, size, time span, each topic with its message type, count and rate, per-topic timelines with their gaps, cameras (encoding, size), chunks, compression, metadata, attachments and damage."
    )]
    async fn describe_recording(
        &self,
        Parameters(args): Parameters<args::DescribeRecording>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.describe(args).await))
    }

    #[tool(
        description = "One topic as a query sees it: its message type, count and time span, the columns read_topic(path, topic) gives (decoded fields with their Arrow types, structs as a.b in queries) and a few sample rows, and the minimum, maximum and mean of each numeric field over every message."
    )]
    async fn describe_topic(
        &self,
        Parameters(args): Parameters<args::DescribeTopic>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.topic(args).await))
    }

    #[tool(
        description = "Runs one read-only SQL query over the recordings and returns its rows as a text table and as JSON, cut at max_rows (and a byte limit) with a note when the result had more. Paths in FROM are below the data roots. Errors come back as text naming what was wrong (for a column, the columns there are)."
    )]
    async fn query(
        &self,
        Parameters(args): Parameters<args::Query>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.run_query(args).await))
    }

    #[tool(
        description = "Shows a camera topic: PNG thumbnails of the first image at or after each given log time, or of `count` images spread evenly over the topic, each labelled with its log time."
    )]
    async fn sample_frames(
        &self,
        Parameters(args): Parameters<args::SampleFrames>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.frames(args).await))
    }

    #[tool(
        description = "Draws a query's result as a PNG chart (MCP image content): the first column is the x axis (timestamps as UTC times), every other numeric column a series (struct columns one series per numeric field). Long results are reduced to each pixel column's first, last, lowest and highest point, so spikes stay visible. Aggregate with date_bin for long spans."
    )]
    async fn plot(
        &self,
        Parameters(args): Parameters<args::Plot>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.draw(args).await))
    }

    #[tool(
        description = "Writes one window of a recording (every message from start to end, both included, of every topic or of `topics`) as a complete recording with its channels, schemas and metadata: an MCAP file, a ROS 1 bag or a ROS 2 bag directory, named `name` in the server's write directory. Only on a server started with --allow-write."
    )]
    async fn export_clip(
        &self,
        Parameters(args): Parameters<args::ExportClip>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.clip(args).await))
    }

    #[tool(
        description = "Writes a LeRobot v3 dataset from recordings, as a `logsql dataset` spec (TOML: input, fps, [features], [cameras], task) describes it, into the directory `name` of the server's write directory; says how many frames and episodes it wrote. Only on a server started with --allow-write."
    )]
    async fn export_dataset(
        &self,
        Parameters(args): Parameters<args::ExportDataset>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(tools::reply(self.dataset(args).await))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("logsql", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(reference::list())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match reference::read(&request.uri) {
            Some(page) => Ok(page.into()),
            None => Err(ErrorData::resource_not_found(
                format!("no resource {} (resources/list names them)", request.uri),
                None,
            )),
        }
    }
}
