//! imurun's one door to the network.
//!
//! - [`address`]: the deny matrix — what kind of address an IP is, and whether it is public;
//! - [`AddressRule`]: which addresses a door may reach (public ones, and what a person
//!   allowed);
//! - [`url`](parse_http_url): URLs and hosts in one normal form;
//! - [`Door`]: the HTTP client every tool, provider, connector and MCP server over HTTP goes
//!   through — names resolved and checked by the door, the connection pinned to the checked
//!   addresses, redirects checked again, no proxy, a timeout on the whole exchange and a bound
//!   on every body read ([`read_body`]).
//!
//! Nothing else in imurun's tools opens a connection, so the rule is written once; Keep's
//! egress broker builds on the same door.

pub mod address;
mod door;
mod error;
mod rule;
mod url;

pub use address::{AddressClass, LOOPBACK, classify, is_listed, is_public, own_addresses};
pub use door::{
    Body, Door, DoorConfig, Lookup, REDIRECTS_MAX_DEFAULT, SystemLookup, USER_AGENT, error_chain,
    read_body,
};
pub use error::{NetError, describe_duration};
pub use rule::AddressRule;
pub use url::{HOST_CHARS_MAX, URL_CHARS_MAX, check_http_url, normalise_host, parse_http_url};

/// The HTTP vocabulary callers build requests with, so they need no HTTP client of their own.
pub mod http {
    pub use reqwest::header;
    pub use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};
}
