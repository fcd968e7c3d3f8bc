//! Serper's Google search API: `POST {"q", "num"}` with the key in `X-API-KEY`; results
//! under `organic[]` as `title`, `link`, `snippet`, `position`.

use imurun_net::Door;
use imurun_net::http::Method;
use serde_json::json;

use super::{
    SERPER_API_KEY_VAR, SearchConfig, SearchHit, endpoint, json_object, keyed_status_failure, send,
};

pub(super) async fn search(
    door: &Door,
    config: &SearchConfig,
    api_key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let body = json!({"q": query, "num": count}).to_string();
    let request = door
        .request(Method::POST, endpoint(config)?)
        .map_err(|error| error.to_string())?
        .header("X-API-KEY", api_key)
        .header("Content-Type", "application/json")
        .body(body);
    let (status, retry_after, body) = send(door, request, config).await?;
    if let Some(failure) = keyed_status_failure(provider, SERPER_API_KEY_VAR, status, &retry_after)
    {
        return Err(failure);
    }
    let object = json_object(provider, &body)?;
    // Serper may leave `organic` out when nothing matched, but always echoes
    // `searchParameters`; an object with neither is not a Serper answer.
    match super::result_list(provider, &object, "organic")? {
        Some(items) => Ok(super::hits_from(items, "title", "link", "snippet")),
        None if object.contains_key("searchParameters") => Ok(Vec::new()),
        None => Err(format!(
            "{provider} answered without an `organic` list (the response was malformed)"
        )),
    }
}
