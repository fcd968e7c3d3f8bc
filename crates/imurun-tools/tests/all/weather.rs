//! `get_weather` against a local server that answers like Open-Meteo's geocoding and
//! forecast APIs.

use std::time::{Duration, Instant};

use imurun_core::ToolOutput;
use imurun_tools::{GetWeather, WeatherConfig};
use serde_json::json;

use crate::replay::{Recorded, ReplayServer, Reply, assert_failed, assert_ok, run};

const OSLO: &str = r#"{"results":[{"id":3143244,"name":"Oslo","latitude":59.91273,"longitude":10.74609,"elevation":26.0,"feature_code":"PPLC","country_code":"NO","admin1_id":3143242,"timezone":"Europe/Oslo","population":580000,"country_id":3144096,"country":"Norway","admin1":"Oslo"}],"generationtime_ms":0.62}"#;

const PARIS_CANDIDATES: &str = r#"{"results":[
  {"id":2988507,"name":"Paris","latitude":48.85341,"longitude":2.3488,"country_code":"FR","timezone":"Europe/Paris","country":"France","admin1":"Île-de-France"},
  {"id":4717560,"name":"Paris","latitude":33.66094,"longitude":-95.55551,"country_code":"US","timezone":"America/Chicago","country":"United States","admin1":"Texas"}
],"generationtime_ms":0.9}"#;

const NOT_FOUND: &str = r#"{"generationtime_ms":0.41}"#;

const FORECAST: &str = r#"{"latitude":59.92,"longitude":10.75,"generationtime_ms":0.08,"utc_offset_seconds":3600,"timezone":"Europe/Oslo","timezone_abbreviation":"GMT+1","elevation":14.0,
"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","relative_humidity_2m":"%","apparent_temperature":"°C","weather_code":"wmo code","wind_speed_10m":"km/h"},
"current":{"time":"2026-11-30T08:45","interval":900,"temperature_2m":1.2,"relative_humidity_2m":87,"apparent_temperature":-2.3,"weather_code":3,"wind_speed_10m":9.4},
"daily_units":{"time":"iso8601","weather_code":"wmo code","temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_probability_max":"%"},
"daily":{"time":["2026-11-30","2026-12-01","2026-12-02"],"weather_code":[3,61,71],"temperature_2m_max":[2.1,3.4,0.5],"temperature_2m_min":[-1.0,0.2,-3.1],"precipitation_probability_max":[10,80,null]}}"#;

/// A server for both APIs: `geocoding` answers `/v1/search`, `forecast` `/v1/forecast`.
async fn weather_server(geocoding: Reply, forecast: Reply) -> (GetWeather, ReplayServer) {
    let server = ReplayServer::start(move |request: &Recorded| match request.path.as_str() {
        "/v1/search" => geocoding.clone(),
        "/v1/forecast" => forecast.clone(),
        _ => Reply::json(404, r#"{"error":true,"reason":"Not Found"}"#),
    })
    .await;
    let tool = GetWeather::new(WeatherConfig {
        geocoding_endpoint: server.url("/v1/search"),
        forecast_endpoint: server.url("/v1/forecast"),
        timeout: Duration::from_millis(400),
    });
    (tool, server)
}

async fn check(geocoding: Reply, forecast: Reply, location: &str) -> (ToolOutput, ReplayServer) {
    let (tool, server) = weather_server(geocoding, forecast).await;
    let output = run(&tool, json!({"location": location})).await;
    (output, server)
}

#[tokio::test]
async fn names_the_place_the_time_the_values_and_three_days() {
    let (output, server) = check(Reply::json(200, OSLO), Reply::json(200, FORECAST), "Oslo").await;
    assert_ok(
        &output,
        &[
            "Weather for Oslo, Oslo, Norway (59.91, 10.75), observed 2026-11-30T08:45 (Europe/Oslo)",
            "Now: overcast, 1.2 °C, feels like -2.3 °C, humidity 87 %, wind 9.4 km/h",
            "- 2026-11-30: overcast, -1 °C to 2.1 °C, chance of precipitation 10 %",
            "- 2026-12-01: slight rain, 0.2 °C to 3.4 °C, chance of precipitation 80 %",
            "- 2026-12-02: slight snowfall, -3.1 °C to 0.5 °C",
        ],
    );
    assert!(output.untrusted, "place names come from the geocoder");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let geocoding = &requests[0];
    assert_eq!(geocoding.path, "/v1/search");
    assert_eq!(geocoding.query["name"], "Oslo");
    assert_eq!(geocoding.query["count"], "1");
    assert_eq!(geocoding.query["language"], "en");
    assert_eq!(geocoding.query["format"], "json");
    let forecast = &requests[1];
    assert_eq!(forecast.path, "/v1/forecast");
    assert_eq!(forecast.query["latitude"], "59.91273");
    assert_eq!(forecast.query["longitude"], "10.74609");
    assert_eq!(
        forecast.query["current"],
        "temperature_2m,relative_humidity_2m,apparent_temperature,weather_code,wind_speed_10m"
    );
    assert_eq!(
        forecast.query["daily"],
        "weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max"
    );
    assert_eq!(forecast.query["timezone"], "auto");
    assert_eq!(forecast.query["forecast_days"], "3");
}

#[tokio::test]
async fn a_qualifier_after_a_comma_chooses_among_places_of_that_name() {
    let (output, server) = check(
        Reply::json(200, PARIS_CANDIDATES),
        Reply::json(200, FORECAST),
        "Paris, Texas",
    )
    .await;
    assert_ok(
        &output,
        &["Weather for Paris, Texas, United States (33.66, -95.56)"],
    );
    let requests = server.requests();
    assert_eq!(requests[0].query["name"], "Paris");
    assert_eq!(requests[1].query["latitude"], "33.66094");
}

#[tokio::test]
async fn an_unknown_place_fails_naming_it() {
    let (output, server) = check(
        Reply::json(200, NOT_FOUND),
        Reply::json(200, FORECAST),
        "Atlantis",
    )
    .await;
    assert_failed(&output, &["no place called \"Atlantis\" was found"]);
    assert_eq!(server.requests().len(), 1, "no forecast without a place");
}

#[tokio::test]
async fn api_errors_rate_limits_and_malformed_answers_fail() {
    let error = r#"{"error":true,"reason":"Cannot initialize WeatherVariable from invalid String value tempeture_2m for key current"}"#;
    let (output, _server) = check(Reply::json(200, OSLO), Reply::json(400, error), "Oslo").await;
    assert_failed(
        &output,
        &["refused the request", "Cannot initialize WeatherVariable"],
    );

    let (output, _server) = check(
        Reply::json(429, r#"{"error":true,"reason":"Minutely API request limit exceeded. Please try again in one minute."}"#),
        Reply::json(200, FORECAST),
        "Oslo",
    )
    .await;
    assert_failed(&output, &["Minutely API request limit exceeded"]);

    let (output, _server) = check(
        Reply::new(429, "text/plain", "Too Many Requests").with_header("retry-after", "60"),
        Reply::json(200, FORECAST),
        "Oslo",
    )
    .await;
    assert_failed(&output, &["rate-limited", "HTTP 429", "wait 60 s"]);

    let (output, _server) = check(
        Reply::json(200, OSLO),
        Reply::json(502, "<html>bad gateway</html>"),
        "Oslo",
    )
    .await;
    assert_failed(&output, &["HTTP 502"]);

    for body in [r#"{"current": "#, "[]", r#"{"daily": {}}"#] {
        let (output, _server) = check(Reply::json(200, OSLO), Reply::json(200, body), "Oslo").await;
        assert_failed(&output, &["malformed"]);
    }
    let (output, _server) = check(
        Reply::json(200, r#"{"results": 5}"#),
        Reply::json(200, FORECAST),
        "Oslo",
    )
    .await;
    assert_failed(&output, &["malformed"]);
}

#[tokio::test]
async fn a_hanging_service_fails_within_the_timeout() {
    for (geocoding, forecast) in [
        (
            Reply::json(200, OSLO).after(Duration::from_secs(10)),
            Reply::json(200, FORECAST),
        ),
        (
            Reply::json(200, OSLO),
            Reply::json(200, FORECAST).after(Duration::from_secs(10)),
        ),
    ] {
        let started = Instant::now();
        let (output, _server) = check(geocoding, forecast, "Oslo").await;
        assert_failed(&output, &["did not answer within 400 ms"]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn bad_arguments_fail_without_a_request() {
    let (tool, server) = weather_server(Reply::json(200, OSLO), Reply::json(200, FORECAST)).await;
    for (args, expected) in [
        (json!({"location": "  "}), "`location` is empty"),
        (json!({"location": 3}), "`location` must be a string"),
        (json!({}), "`location` is required"),
        (json!({"location": "x".repeat(500)}), "too long"),
    ] {
        assert_failed(&run(&tool, args).await, &[expected]);
    }
    assert!(server.requests().is_empty());
}
