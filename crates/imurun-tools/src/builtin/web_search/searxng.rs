//! A SearXNG instance's JSON API: `GET {base}/search?q=..&format=json`; results under
//! `results[]` as `title`, `url`, `content`. Instances ship with the JSON format off, and
//! answer 403 until `json` is listed under `search.formats` in their `settings.yml`.

use imurun_net::Door;
use imurun_net::http::Url;

use super::{SEARXNG_URL_VAR, SearchConfig, SearchHit, common_status_failure, json_object, send};

/// The search address for an instance given as its base (`https://searx.example`) or
/// already as its search page (`https://searx.example/search`).
pub(super) fn search_endpoint(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/search") {
        base.to_owned()
    } else {
        format!("{base}/search")
    }
}

pub(super) async fn search(
    door: &Door,
    config: &SearchConfig,
    query: &str,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let url = Url::parse_with_params(&config.endpoint, [("q", query), ("format", "json")])
        .map_err(|error| {
            format!(
                "the SearXNG address `{}` (from {SEARXNG_URL_VAR}) is not a valid URL: {error}",
                config.endpoint
            )
        })?;
    let request = door
        .get(url)
        .map_err(|error| error.to_string())?
        .header("Accept", "application/json");
    let (status, retry_after, body) = send(door, request, config).await?;
    match status {
        200..=299 => {}
        403 => {
            return Err(format!(
                "the SearXNG instance at {} refused JSON results (HTTP 403): enable `json` \
                 under `search.formats` in its settings.yml, or set {SEARXNG_URL_VAR} to an \
                 instance that allows it",
                config.endpoint
            ));
        }
        code => return Err(common_status_failure(provider, code, &retry_after)),
    }
    let object = json_object(provider, &body)?;
    match super::result_list(provider, &object, "results")? {
        Some(items) => Ok(super::hits_from(items, "title", "url", "content")),
        None => Err(format!(
            "{provider} answered without a `results` list (the response was malformed)"
        )),
    }
}
