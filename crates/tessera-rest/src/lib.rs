//! The OpenSearch REST API over HTTP. `server::app(node)` is the whole API as an axum router
//! (tests call it in-process); routing, parameters, content types and every error body follow
//! OpenSearch's behaviour, and one handler module serves each API family. `security` puts
//! authentication, roles, TLS and the Host/Origin checks in front of it (`security::serve`).

pub mod cat_table;
pub mod handlers;
pub mod http_guard;
pub mod request;
pub mod response;
pub mod router;
pub mod routes;
pub mod security;
pub mod server;

pub use server::{app, serve};
