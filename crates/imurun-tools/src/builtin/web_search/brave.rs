//! Brave Search's web search API: `GET ?q=..&count=N` with the key in
//! `X-Subscription-Token`; results under `web.results[]` as `title`, `url`, `description`.

use imurun_net::Door;
use imurun_net::http::Url;
use serde_json::Value;

use super::{BRAVE_API_KEY_VAR, SearchConfig, SearchHit, json_object, keyed_status_failure, send};

pub(super) async fn search(
    door: &Door,
    config: &SearchConfig,
    api_key: &str,
    query: &str,
    count: usize,
) -> Result<Vec<SearchHit>, String> {
    let provider = config.provider.name();
    let count = count.to_string();
    let url = Url::parse_with_params(&config.endpoint, [("q", query), ("count", &count)]).map_err(
        |error| {
            format!(
                "the {provider} address `{}` is not valid: {error}",
                config.endpoint
            )
        },
    )?;
    let request = door
        .get(url)
        .map_err(|error| error.to_string())?
        .header("Accept", "application/json")
        .header("X-Subscription-Token", api_key);
    let (status, retry_after, body) = send(door, request, config).await?;
    if let Some(failure) = keyed_status_failure(provider, BRAVE_API_KEY_VAR, status, &retry_after) {
        return Err(failure);
    }
    let object = json_object(provider, &body)?;
    // Brave leaves `web` out when nothing matched; its answers always say `"type": "search"`,
    // so an object with neither is not a Brave answer.
    let Some(web) = object.get("web") else {
        return match object.get("type").and_then(Value::as_str) {
            Some("search") => Ok(Vec::new()),
            _ => Err(format!(
                "{provider} answered without search results (the response was malformed)"
            )),
        };
    };
    let Some(web) = web.as_object() else {
        return Err(format!(
            "{provider} answered with a malformed `web` section"
        ));
    };
    let items = super::result_list(provider, web, "results")?;
    Ok(super::hits_from(
        items.map_or(&[][..], Vec::as_slice),
        "title",
        "url",
        "description",
    ))
}
