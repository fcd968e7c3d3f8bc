//! Tavily's search API: `POST {"query", "max_results"}` with `Authorization: Bearer KEY`;
//! results under `results[]` as `title`, `url`, `content`, `score`.

use imurun_net::Door;
use imurun_net::http::Method;
use serde_json::json;

use super::{
    SearchConfig, SearchHit, TAVILY_API_KEY_VAR, endpoint, json_object, keyed_status_failure, send,
};

pub(super) async fn search(
    door: &Door,
    config: &SearchConfig,
    api_key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let body = json!({"query": query, "max_results": count}).to_string();
    let request = door
        .request(Method::POST, endpoint(config)?)
        .map_err(|error| error.to_string())?
        .bearer_auth(api_key)
        .header("Content-Type", "application/json")
        .body(body);
    let (status, retry_after, body) = send(door, request, config).await?;
    if let Some(failure) = keyed_status_failure(provider, TAVILY_API_KEY_VAR, status, &retry_after)
    {
        return Err(failure);
    }
    let object = json_object(provider, &body)?;
    match super::result_list(provider, &object, "results")? {
        Some(items) => Ok(super::hits_from(items, "title", "url", "content")),
        None => Err(format!(
            "{provider} answered without a `results` list (the response was malformed)"
        )),
    }
}
