//! Tavily's search API: `POST {"query", "max_results"}` with `Authorization: Bearer KEY`;
//! results under `results[]` as `title`, `url`, `content`, `score`.

use reqwest::Client;
use serde_json::json;

use super::{SearchConfig, SearchHit, TAVILY_API_KEY_VAR, json_object, keyed_status_failure, send};

pub(super) async fn search(
    client: &Client,
    config: &SearchConfig,
    api_key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let body = json!({"query": query, "max_results": count}).to_string();
    let request = client
        .post(&config.endpoint)
        .bearer_auth(api_key)
        .header("Content-Type", "application/json")
        .body(body);
    let (status, retry_after, body) = send(request, config).await?;
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
