//! agentjail's HTTP front end as a library: the binary (src/main.rs) is its command line,
//! and the fuzz target `http_request` (fuzz/) feeds arbitrary requests through the same
//! decoding (the routes, the token header, the bodies of every route, the workspace paths)
//! without a socket or an engine.

pub mod answer;
pub mod auth;
pub mod body;
pub mod chan;
pub mod metrics;
pub mod multipart;
pub mod paths;
pub mod pod;
pub mod respond;
pub mod routes;
pub mod runs;
pub mod sandboxfusion;
pub mod sandboxfusion_compile;
pub mod sandboxfusion_files;
pub mod server;
pub mod state;
pub mod status;
pub mod stream;
pub mod unread;
pub mod workspaces;
