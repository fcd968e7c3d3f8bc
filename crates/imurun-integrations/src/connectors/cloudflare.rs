//! Cloudflare: a zone's DNS records through the API v4
//! (<https://developers.cloudflare.com/api/resources/dns/subresources/records/>), with an API
//! token in `IMURUN_CLOUDFLARE_API_TOKEN`.

use imurun_core::ToolCategory;
use serde_json::{Map, Value, json};

use super::summary::{items, listing, text};
use super::{Body, ConnectorSpec, Credential, HttpMethod, Service};

pub static CLOUDFLARE: Service = Service {
    id: "cloudflare",
    display_name: "Cloudflare",
    // Record types are written in capitals when they mean DNS ("an A record"); lower-case
    // "a record" is any record ("keep a record of expenses"), so those cues are
    // case-sensitive.
    cues: &[
        "cloudflare",
        "dns",
        "A record",
        "AAAA record",
        "CNAME",
        "MX record",
        "TXT record",
        "NS record",
        "SRV record",
        "nameserver",
        "name server",
        // "the domain's records" too: a possessive `'s` is dropped before matching.
        "domain record",
        "dns zone",
        "zone id",
        "point domain",
        "point subdomain",
    ],
    not_cues: &[],
    credential: Credential {
        token_var: "IMURUN_CLOUDFLARE_API_TOKEN",
        token_kind: "a Cloudflare API token with DNS permission",
    },
    base_url: "https://api.cloudflare.com/client/v4",
    base_url_var: "IMURUN_CLOUDFLARE_API_URL",
    headers: &[("Accept", "application/json")],
    error_message,
    body_failure,
    tools: &[
        ConnectorSpec {
            name: "cloudflare_list_dns_records",
            description: "List the DNS records of a Cloudflare zone, optionally only those with one name.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "zone_id": {"type": "string", "description": "the zone's id"},
                    "name": {"type": "string", "description": "only records with this full name (e.g. www.example.com)"}
                }, "required": ["zone_id"]})
            },
            method: HttpMethod::Get,
            path: "/zones/{zone_id}/dns_records",
            query: &[("name", "name")],
            fixed_query: &[],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &["list_dns_records", "dns_list"],
            summarise: summarise_list,
        },
        ConnectorSpec {
            name: "cloudflare_create_dns_record",
            description: "Create a DNS record in a Cloudflare zone.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "zone_id": {"type": "string", "description": "the zone's id"},
                    "type": {"type": "string", "description": "the record type: A, AAAA, CNAME, MX, TXT, ..."},
                    "name": {"type": "string", "description": "the record's name (e.g. www.example.com)"},
                    "content": {"type": "string", "description": "the address, target or text"},
                    "ttl": {"type": "integer", "description": "time to live in seconds; 1 means automatic"},
                    "proxied": {"type": "boolean", "description": "route traffic through Cloudflare"}
                }, "required": ["zone_id", "type", "name", "content"]})
            },
            method: HttpMethod::Post,
            path: "/zones/{zone_id}/dns_records",
            query: &[],
            fixed_query: &[],
            body: Body::Fields(&[
                ("type", "type"),
                ("name", "name"),
                ("content", "content"),
                ("ttl", "ttl"),
                ("proxied", "proxied"),
            ]),
            category: ToolCategory::External,
            aliases: &["create_dns_record", "add_dns_record"],
            summarise: summarise_created,
        },
        ConnectorSpec {
            name: "cloudflare_delete_dns_record",
            description: "Delete a DNS record from a Cloudflare zone.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "zone_id": {"type": "string", "description": "the zone's id"},
                    "record_id": {"type": "string", "description": "the record's id"}
                }, "required": ["zone_id", "record_id"]})
            },
            method: HttpMethod::Delete,
            path: "/zones/{zone_id}/dns_records/{record_id}",
            query: &[],
            fixed_query: &[],
            body: Body::None,
            category: ToolCategory::External,
            aliases: &["delete_dns_record"],
            summarise: summarise_deleted,
        },
    ],
};

/// Cloudflare's `{"success": false, "errors": [{"code", "message"}]}`.
fn error_message(body: &Value) -> Option<String> {
    let messages: Vec<String> = items(body, Some("errors"))
        .iter()
        .map(|error| {
            let code = text(error, &["code"]);
            let message = text(error, &["message"]);
            if code.is_empty() {
                message
            } else {
                format!("{message} (code {code})")
            }
        })
        .filter(|message| !message.is_empty())
        .collect();
    (!messages.is_empty()).then(|| messages.join("; "))
}

/// A 200 answer can still say `"success": false`.
fn body_failure(body: &Value) -> Option<String> {
    (body.get("success") == Some(&Value::Bool(false)))
        .then(|| error_message(body).unwrap_or_else(|| "no reason given".to_owned()))
}

fn record_line(record: &Value) -> String {
    let ttl = match text(record, &["ttl"]).as_str() {
        "1" => "auto".to_owned(),
        seconds => format!("{seconds} s"),
    };
    let proxied = if record.get("proxied") == Some(&Value::Bool(true)) {
        ", proxied"
    } else {
        ""
    };
    format!(
        "{} {} -> {} (ttl {ttl}{proxied}) id {}",
        text(record, &["type"]),
        text(record, &["name"]),
        text(record, &["content"]),
        text(record, &["id"]),
    )
}

fn summarise_list(value: &Value, _args: &Map<String, Value>) -> String {
    let lines: Vec<String> = items(value, Some("result"))
        .iter()
        .map(record_line)
        .collect();
    if lines.is_empty() {
        return "No DNS records match.".to_owned();
    }
    listing(format!("{} DNS records:", lines.len()), lines)
}

fn summarise_created(value: &Value, _args: &Map<String, Value>) -> String {
    let record = value.get("result").unwrap_or(&Value::Null);
    format!("Created {}", record_line(record))
}

fn summarise_deleted(value: &Value, args: &Map<String, Value>) -> String {
    let id = text(value, &["result", "id"]);
    let id = if id.is_empty() {
        args.get("record_id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    } else {
        id
    };
    format!("Deleted DNS record {id}.")
}
