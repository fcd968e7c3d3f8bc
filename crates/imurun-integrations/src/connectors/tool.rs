//! [`ConnectorTool`]: one declared connector tool, run as an HTTP request — URL from the path
//! template, query and body from the arguments, the credential as a bearer token — and its
//! answer turned into short text, or into a failure that says what to do about it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_net::http::header::{self, HeaderMap, RETRY_AFTER};
use imurun_net::http::{RequestBuilder, StatusCode, Url};
use imurun_net::{AddressRule, Door, DoorConfig, REDIRECTS_MAX_DEFAULT};
use serde_json::{Map, Value};

use super::encode::percent_encode_segment;
use super::{Body, ConnectorSpec, Service, ServiceConfig};

/// How long one request may take when the configuration does not say.
pub const CONNECTOR_TIMEOUT_DEFAULT: Duration = Duration::from_secs(20);

/// A connector result is cut to this many characters: the seed's largest tool result.
pub const CONNECTOR_OUTPUT_CHARS_MAX: usize = 6000;

/// A response body larger than this is not read to the end: no answer the summarisers use
/// is this large, and a runaway body must not fill memory.
const RESPONSE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// A connector tool: a [`ConnectorSpec`] of a [`Service`], run with that service's
/// configuration.
pub struct ConnectorTool {
    service: &'static Service,
    declaration: &'static ConnectorSpec,
    spec: ToolSpec,
    config: Arc<ServiceConfig>,
    /// `Err` when the HTTP client could not be set up (the TLS stack failed to start).
    door: Result<Door, String>,
}

impl ConnectorTool {
    pub(crate) fn new(
        service: &'static Service,
        declaration: &'static ConnectorSpec,
        config: Arc<ServiceConfig>,
        door: Result<Door, String>,
    ) -> Self {
        Self {
            service,
            declaration,
            spec: declaration.tool_spec(),
            config,
            door,
        }
    }

    pub fn service(&self) -> &'static Service {
        self.service
    }

    pub fn declaration(&self) -> &'static ConnectorSpec {
        self.declaration
    }

    /// Why the tool cannot run, or `None` when it can.
    fn unavailable_reason(&self) -> Option<String> {
        let service = self.service;
        if !self.config.has_token() {
            return Some(format!(
                "{} is not connected: set {} to {}",
                service.display_name, service.credential.token_var, service.credential.token_kind
            ));
        }
        if let Err(reason) = self.config.base_url() {
            return Some(reason.to_owned());
        }
        if let Err(reason) = &self.door {
            return Some(reason.clone());
        }
        None
    }

    async fn call(&self, args: &Map<String, Value>) -> ToolOutput {
        if let Some(reason) = self.unavailable_reason() {
            return ToolOutput::failed(format!(
                "`{}` is unavailable: {reason}. Do not guess what it would have returned.",
                self.spec.name
            ));
        }
        let (Some(token), Ok(base_url), Ok(door)) =
            (&self.config.token, self.config.base_url(), &self.door)
        else {
            // `unavailable_reason` returned `None`, so all three are present.
            return ToolOutput::failed("the connector is not configured");
        };
        let request = match self.build_request(door, base_url, token, args) {
            Ok(request) => request,
            Err(reason) => return ToolOutput::failed(reason),
        };
        let name = self.service.display_name;
        let response = match door.send(request, name).await {
            Ok(response) => response,
            Err(error) => return ToolOutput::failed(error.to_string()),
        };
        let status = response.status();
        let headers = response.headers().clone();
        let body = match imurun_net::read_body(door, response, RESPONSE_BYTES_MAX, name).await {
            Ok(body) => body,
            Err(error) => return ToolOutput::failed(error.to_string()),
        };
        if body.cut && status.is_success() {
            return ToolOutput::failed(format!(
                "{} answered {} with a body larger than {} MiB, more than is read, so the \
                 result cannot be read; ask for fewer items",
                self.service.display_name,
                status.as_u16(),
                RESPONSE_BYTES_MAX / (1024 * 1024)
            ));
        }
        self.answer(status, &headers, &body.bytes, args)
    }

    fn build_request(
        &self,
        door: &Door,
        base_url: &str,
        token: &str,
        args: &Map<String, Value>,
    ) -> Result<RequestBuilder, String> {
        let declaration = self.declaration;
        let path = fill_path(declaration.path, args)?;
        let mut url = Url::parse(&format!("{base_url}{path}"))
            .map_err(|error| format!("cannot build the request URL: {error}"))?;
        {
            let mut pairs = url.query_pairs_mut();
            for (key, value) in declaration.fixed_query {
                pairs.append_pair(key, value);
            }
            for (argument, key) in declaration.query {
                if let Some(value) = scalar_argument(args, argument)? {
                    pairs.append_pair(key, &value);
                }
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        let mut request = door
            .request(declaration.method.as_http(), url)
            .map_err(|error| error.to_string())?
            .bearer_auth(token);
        for (name, value) in self.service.headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = build_body(declaration.body, args)? {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        Ok(request)
    }

    /// The result for an answer that arrived.
    fn answer(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        args: &Map<String, Value>,
    ) -> ToolOutput {
        let parsed: Option<Value> = if body.iter().all(u8::is_ascii_whitespace) {
            Some(Value::Null)
        } else {
            serde_json::from_slice(body).ok()
        };
        if !status.is_success() {
            let message = parsed.as_ref().and_then(self.service.error_message);
            return ToolOutput::failed(self.status_failure(status, headers, message)).untrusted();
        }
        let Some(value) = parsed else {
            return ToolOutput::failed(format!(
                "{} answered {} with a body that is not JSON, so the result cannot be read",
                self.service.display_name,
                status.as_u16()
            ));
        };
        if let Some(message) = (self.service.body_failure)(&value) {
            return ToolOutput::failed(format!(
                "{} refused the request: {message}",
                self.service.display_name
            ))
            .untrusted();
        }
        let text = (self.declaration.summarise)(&value, args);
        // Issue bodies, emails and DNS names are written by other people: outside text.
        ToolOutput::ok(cap(text, CONNECTOR_OUTPUT_CHARS_MAX)).untrusted()
    }

    /// The failure sentence for an HTTP error status.
    fn status_failure(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        message: Option<String>,
    ) -> String {
        let name = self.service.display_name;
        let var = self.service.credential.token_var;
        let code = status.as_u16();
        let said = message
            .map(|message| format!(": {message}"))
            .unwrap_or_default();
        // GitHub answers 403 for both limits: the primary one says `x-ratelimit-remaining: 0`,
        // the secondary one sends `retry-after`.
        let rate_limited = code == 429
            || (code == 403
                && (header(headers, "x-ratelimit-remaining").as_deref() == Some("0")
                    || headers.contains_key(RETRY_AFTER)));
        if rate_limited {
            return format!(
                "{name}'s rate limit is used up ({code}){said}. {} Do not retry now.",
                retry_hint(headers)
            );
        }
        match code {
            401 => format!(
                "{name} refused the credential in {var} ({code}){said}. The token is wrong, \
                 expired or revoked: set {var} to a valid one."
            ),
            403 => format!(
                "{name} refused this request with the credential in {var} ({code}){said}. \
                 The token may lack the permission this needs."
            ),
            404 => format!(
                "{name} found nothing there ({code}){said}. Check the names in the call; a \
                 private resource the token cannot see also answers 404."
            ),
            422 | 400 => format!("{name} rejected the request as invalid ({code}){said}"),
            500..=599 => format!("{name} had a server error ({code}){said}. Try again later."),
            _ => format!("{name} answered {code}{said}"),
        }
    }

    /// A stopped read is simply abandoned; a stopped send or change may already have
    /// reached the service, and the model must not claim either way.
    fn stopped_failure(&self) -> String {
        let name = self.service.display_name;
        match self.declaration.category {
            ToolCategory::External => format!(
                "the turn was stopped while waiting for {name}; the request may already have taken effect there, so check before repeating it"
            ),
            _ => format!("the turn was stopped while waiting for {name}"),
        }
    }
}

impl fmt::Debug for ConnectorTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectorTool")
            .field("service", &self.service.id)
            .field("name", &self.spec.name)
            .field("config", &self.config)
            .finish()
    }
}

impl Tool for ConnectorTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.declaration.category
    }

    fn available(&self) -> Availability {
        match self.unavailable_reason() {
            None => Availability::Ready,
            Some(reason) => Availability::Unavailable(reason),
        }
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            tokio::select! {
                output = self.call(args) => output,
                () = context.stop.stopped() => ToolOutput::failed(self.stopped_failure()),
            }
        })
    }
}

/// The door a service's connector tools share: the service's API root trusted (a person may
/// point it at a self-hosted instance), every other address public only. `Err` when the HTTP
/// client could not be set up.
pub(crate) fn service_door(base_url: Option<&str>, timeout: Duration) -> Result<Door, String> {
    Door::new(DoorConfig {
        rule: AddressRule::public_and_endpoints(base_url),
        timeout,
        redirects_max: REDIRECTS_MAX_DEFAULT,
    })
    .map_err(|error| format!("cannot set up the HTTP client: {error}"))
}

/// `template` with each `{name}` replaced by that argument, percent-encoded.
fn fill_path(template: &str, args: &Map<String, Value>) -> Result<String, String> {
    let mut path = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        path.push_str(&rest[..start]);
        let Some(length) = rest[start..].find('}') else {
            return Err(format!("the path template `{template}` is not closed"));
        };
        let name = &rest[start + 1..start + length];
        let value = scalar_argument(args, name)?.ok_or_else(|| format!("`{name}` is required"))?;
        // `..` would climb out of the declared path once the URL is normalised.
        if value.is_empty() || value == "." || value == ".." {
            return Err(format!("`{name}` must be a name, not `{value}`"));
        }
        path.push_str(&percent_encode_segment(&value));
        rest = &rest[start + length + 1..];
    }
    path.push_str(rest);
    Ok(path)
}

/// A string, number or boolean argument as text; absent or `null` is `None`.
fn scalar_argument(args: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Number(number)) => Ok(Some(number.to_string())),
        Some(Value::Bool(flag)) => Ok(Some(flag.to_string())),
        Some(_) => Err(format!("`{name}` must be a string or a number")),
    }
}

fn build_body(body: Body, args: &Map<String, Value>) -> Result<Option<Value>, String> {
    match body {
        Body::None => Ok(None),
        Body::Fields(fields) => {
            let mut object = Map::new();
            for (argument, key) in fields {
                match args.get(*argument) {
                    None | Some(Value::Null) => {}
                    Some(value) => {
                        object.insert((*key).to_owned(), value.clone());
                    }
                }
            }
            Ok(Some(Value::Object(object)))
        }
        Body::Build(build) => build(args).map(Some),
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
}

/// When to try again, from `Retry-After` (seconds, or an HTTP date said as it is) or GitHub's
/// `x-ratelimit-reset` (Unix seconds).
fn retry_hint(headers: &HeaderMap) -> String {
    if let Some(retry_after) = header(headers, RETRY_AFTER.as_str()) {
        return if retry_after.parse::<u64>().is_ok() {
            format!("Retry after {retry_after} seconds.")
        } else {
            format!("Retry after {retry_after}.")
        };
    }
    let reset = header(headers, "x-ratelimit-reset").and_then(|reset| reset.parse::<i64>().ok());
    match reset.and_then(|reset| jiff::Timestamp::from_second(reset).ok()) {
        Some(at) => format!("It resets at {at}."),
        None => "Try again later.".to_owned(),
    }
}

/// `text` cut to `chars_max` characters, saying so.
fn cap(text: String, chars_max: usize) -> String {
    match text.char_indices().nth(chars_max) {
        None => text,
        Some((end, _)) => format!("{}\n[cut at {chars_max} characters]", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn path_placeholders_are_filled_and_encoded() {
        let args = json!({"owner": "a b", "repo": "x/y?z"});
        let args = args.as_object().unwrap();
        assert_eq!(
            fill_path("/repos/{owner}/{repo}/issues", args).unwrap(),
            "/repos/a%20b/x%2Fy%3Fz/issues"
        );
        assert_eq!(
            fill_path("/repos/{owner}/{missing}", args).unwrap_err(),
            "`missing` is required"
        );
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        // Regression: an HTTP date read "Retry after <date> seconds."
        let hint = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, value.parse().unwrap());
            retry_hint(&headers)
        };
        assert_eq!(hint("120"), "Retry after 120 seconds.");
        assert_eq!(
            hint("Wed, 21 Oct 2026 07:28:00 GMT"),
            "Retry after Wed, 21 Oct 2026 07:28:00 GMT."
        );
        assert_eq!(retry_hint(&HeaderMap::new()), "Try again later.");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let text = "é".repeat(10);
        assert_eq!(cap(text.clone(), 20), text);
        assert_eq!(cap(text, 3), "ééé\n[cut at 3 characters]");
    }
}
