//! The web page: `web/`'s files, embedded at compile time and served at `GET /` and
//! `GET /assets/{file}`. They are not part of the API and not in its OpenAPI document: they
//! are a client of that API, served from the same origin so that the page needs no CDN and
//! no build step. The Markdown renderer and sanitiser the page imports are vendored in
//! `web/vendor/` (see its README) and served here by their file names, like the page's own.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The page's paths, served without the API token: they are the same static files for
/// everyone, and the page itself asks for the token before it calls the API.
pub(crate) const INDEX_PATH: &str = "/";
pub(crate) const ASSETS_PREFIX: &str = "/assets/";

/// What a browser may do with the page: scripts, styles, fetches and the event stream from
/// this origin only, no inline script or style, no plugins, no framing, forms post nowhere
/// else, images from this origin (and `data:`) only. A script injected into a model's answer
/// therefore cannot run even if the page had a bug that let it through: the page renders the
/// model's text as Markdown sanitised to a few inert elements, and everything else as text.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded file: its name under `/assets/`, its path under `web/`, its content type and
/// its bytes.
struct Asset {
    name: &'static str,
    path: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const INDEX_HTML: &[u8] = include_bytes!("../../../../web/index.html");

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// The `web/` file `name` (or `path`, served as `name`), embedded, with its content type.
macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        asset!($name, $name, $content_type)
    };
    ($name:literal, $path:literal, $content_type:expr) => {
        Asset {
            name: $name,
            path: $path,
            content_type: $content_type,
            bytes: include_bytes!(concat!("../../../../web/", $path)),
        }
    };
}

/// Every file under `/assets/`. The list is short and fixed, so a linear search is enough; a
/// new file in `web/` is served only once it is added here.
const ASSETS: &[Asset] = &[
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JAVASCRIPT),
    asset!("api.js", JAVASCRIPT),
    asset!("chat.js", JAVASCRIPT),
    asset!("settings.js", JAVASCRIPT),
    asset!("dom.js", JAVASCRIPT),
    asset!("markdown.js", JAVASCRIPT),
    asset!("keep.js", JAVASCRIPT),
    asset!("keep-talk.js", JAVASCRIPT),
    asset!("keep-console.js", JAVASCRIPT),
    asset!("device.js", JAVASCRIPT),
    asset!("canonical.js", JAVASCRIPT),
    asset!("icon.svg", "image/svg+xml"),
    // Vendored, byte for byte as their npm packages ship them (web/vendor/README.md).
    asset!("marked.esm.js", "vendor/marked.esm.js", JAVASCRIPT),
    asset!("purify.es.mjs", "vendor/purify.es.mjs", JAVASCRIPT),
];

/// `GET /` → the page.
pub(crate) async fn index() -> Response {
    file_response("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /assets/{file}` → one of the page's files; 404 in the API's error shape otherwise.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|asset| asset.name == file) {
        Some(asset) => file_response(asset.content_type, asset.bytes),
        None => ApiError::not_found("the page has no such file").into_response(),
    }
}

/// The names of the embedded assets, for tests and documentation.
pub fn asset_names() -> Vec<&'static str> {
    ASSETS.iter().map(|asset| asset.name).collect()
}

/// The paths under `web/` of the embedded assets, for tests.
pub fn asset_paths() -> Vec<&'static str> {
    ASSETS.iter().map(|asset| asset.path).collect()
}

/// A file with its type, `no-cache` (a browser asks again each time, so a new build of the
/// server is never mixed with an old cached script) and the security headers.
fn file_response(content_type: &'static str, bytes: &'static [u8]) -> Response {
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
