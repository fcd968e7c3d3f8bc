//! `get_weather`: the current weather and a three-day forecast from Open-Meteo, which needs
//! no key. Two requests: the geocoding API turns the place name into coordinates, then the
//! forecast API answers for them in the place's own time zone.
//!
//! "Paris, Texas" searches for "Paris" and prefers the match whose country, region or
//! country code is "Texas"; without a qualifier the geocoder's best match wins.

use std::time::Duration;

use imurun_core::{Availability, BoxFuture, Tool, ToolCategory, ToolContext, ToolOutput, ToolSpec};
use imurun_net::Door;
use imurun_net::http::Url;
use serde_json::{Map, Value};

use super::http;
use super::required_string;

/// How long each of the two requests may take unless the config says otherwise.
pub const WEATHER_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);
/// The longest place name looked up.
const LOCATION_CHARS_MAX: usize = 120;
/// Matches asked for when the place has a qualifier to choose among them.
const GEOCODING_CANDIDATES_MAX: usize = 10;
/// Days of forecast asked for and shown.
const FORECAST_DAYS: usize = 3;

const CURRENT_FIELDS: &str =
    "temperature_2m,relative_humidity_2m,apparent_temperature,weather_code,wind_speed_10m";
const DAILY_FIELDS: &str =
    "weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max";

pub(crate) fn spec() -> ToolSpec {
    imurun_core::builtin::get_weather()
}

/// Where the weather comes from and how long each request may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeatherConfig {
    /// Open-Meteo's geocoding search (`.../v1/search`).
    pub geocoding_endpoint: String,
    /// Open-Meteo's forecast (`.../v1/forecast`).
    pub forecast_endpoint: String,
    pub timeout: Duration,
}

impl WeatherConfig {
    /// Open-Meteo's public, keyless endpoints.
    pub fn open_meteo() -> Self {
        Self {
            geocoding_endpoint: "https://geocoding-api.open-meteo.com/v1/search".to_owned(),
            forecast_endpoint: "https://api.open-meteo.com/v1/forecast".to_owned(),
            timeout: WEATHER_TIMEOUT_DEFAULT,
        }
    }
}

impl Default for WeatherConfig {
    fn default() -> Self {
        Self::open_meteo()
    }
}

/// The weather tool over Open-Meteo.
#[derive(Debug)]
pub struct GetWeather {
    spec: ToolSpec,
    config: WeatherConfig,
    door: Result<Door, String>,
}

impl GetWeather {
    /// The tool over `config`'s endpoints (their hosts trusted, every other address public
    /// only).
    pub fn new(config: WeatherConfig) -> Self {
        let door = http::service_door(
            [
                config.geocoding_endpoint.as_str(),
                config.forecast_endpoint.as_str(),
            ],
            config.timeout,
        );
        Self {
            spec: spec(),
            config,
            door,
        }
    }

    async fn weather(&self, location: &str) -> ToolOutput {
        let door = match &self.door {
            Ok(door) => door,
            Err(reason) => return ToolOutput::failed(reason),
        };
        let place = match self.geocode(door, location).await {
            Ok(place) => place,
            Err(failure) => return failure,
        };
        let forecast = match self.forecast(door, &place).await {
            Ok(forecast) => forecast,
            Err(failure) => return failure,
        };
        // Place names and zones come from the geocoder: outside text.
        ToolOutput::ok(describe(&place, &forecast)).untrusted()
    }

    async fn geocode(&self, door: &Door, location: &str) -> Result<Place, ToolOutput> {
        let (name, qualifier) = match location.split_once(',') {
            Some((name, qualifier)) => (name.trim(), Some(qualifier.trim())),
            None => (location, None),
        };
        let count = match qualifier {
            Some(_) => GEOCODING_CANDIDATES_MAX,
            None => 1,
        }
        .to_string();
        let url = Url::parse_with_params(
            &self.config.geocoding_endpoint,
            [
                ("name", name),
                ("count", &count),
                ("language", "en"),
                ("format", "json"),
            ],
        );
        let object = self.get_json(door, url, "the geocoding service").await?;
        let candidates = match object.get("results") {
            // Open-Meteo leaves `results` out when nothing matched.
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().filter_map(Place::from_json).collect(),
            Some(_) => return Err(malformed("the geocoding service")),
        };
        let wanted = qualifier.map(str::to_lowercase);
        let chosen = candidates
            .iter()
            .find(|place| {
                wanted
                    .as_deref()
                    .is_some_and(|wanted| place.matches(wanted))
            })
            .or_else(|| candidates.first());
        chosen.cloned().ok_or_else(|| {
            ToolOutput::failed(format!(
                "no place called \"{location}\" was found; check the spelling or try a nearby \
                 city. Do not guess the weather."
            ))
        })
    }

    async fn forecast(&self, door: &Door, place: &Place) -> Result<Map<String, Value>, ToolOutput> {
        let latitude = place.latitude.to_string();
        let longitude = place.longitude.to_string();
        let days = FORECAST_DAYS.to_string();
        let url = Url::parse_with_params(
            &self.config.forecast_endpoint,
            [
                ("latitude", latitude.as_str()),
                ("longitude", &longitude),
                ("current", CURRENT_FIELDS),
                ("daily", DAILY_FIELDS),
                ("timezone", "auto"),
                ("forecast_days", &days),
            ],
        );
        let object = self.get_json(door, url, "the weather service").await?;
        if !object.get("current").is_some_and(Value::is_object) {
            return Err(malformed("the weather service"));
        }
        Ok(object)
    }

    /// One GET whose answer must be a JSON object without Open-Meteo's `error` flag.
    async fn get_json(
        &self,
        door: &Door,
        url: Result<Url, impl std::fmt::Display>,
        service: &str,
    ) -> Result<Map<String, Value>, ToolOutput> {
        let url = url.map_err(|error| {
            ToolOutput::failed(format!("the address of {service} is not valid: {error}"))
        })?;
        let request = door
            .get(url)
            .map_err(|error| ToolOutput::failed(error.to_string()))?
            .header("Accept", "application/json");
        let answer = http::exchange(door, request, service)
            .await
            .map_err(|error| ToolOutput::failed(error.to_string()))?;
        let (status, retry_after) = (answer.status, answer.retry_after);
        let parsed = serde_json::from_slice::<Value>(&answer.bytes).ok();
        // Open-Meteo explains refusals as `{"error": true, "reason": "..."}`, with 400 or 200.
        if let Some(reason) = parsed
            .as_ref()
            .filter(|value| value.get("error").and_then(Value::as_bool) == Some(true))
            .and_then(|value| value.get("reason").and_then(Value::as_str))
        {
            return Err(ToolOutput::failed(format!(
                "{service} refused the request: {}",
                http::clip(reason, 300)
            ))
            .untrusted());
        }
        match status {
            200..=299 => {}
            429 => {
                return Err(ToolOutput::failed(format!(
                    "{service} rate-limited the request (HTTP 429){retry_after}; try again \
                     later. Do not guess the weather."
                )));
            }
            code => {
                return Err(ToolOutput::failed(format!(
                    "{service} answered HTTP {code}; try again later. Do not guess the weather."
                )));
            }
        }
        match parsed {
            Some(Value::Object(object)) => Ok(object),
            _ => Err(malformed(service)),
        }
    }
}

impl Tool for GetWeather {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Network
    }

    fn available(&self) -> Availability {
        http::availability(&self.door)
    }

    fn run<'a>(
        &'a self,
        _context: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let location = match required_string(args, "location") {
                Ok(location) => location.trim(),
                Err(failure) => return failure,
            };
            if location.is_empty() {
                return ToolOutput::failed("`location` is empty; name a city or place");
            }
            if location.chars().count() > LOCATION_CHARS_MAX {
                return ToolOutput::failed("`location` is too long to be a place name");
            }
            self.weather(location).await
        })
    }
}

fn malformed(service: &str) -> ToolOutput {
    ToolOutput::failed(format!(
        "{service} answered with something that is not the expected JSON (the response was \
         malformed). Do not guess the weather."
    ))
}

/// A geocoded place.
#[derive(Debug, Clone)]
struct Place {
    name: String,
    admin1: Option<String>,
    country: Option<String>,
    country_code: Option<String>,
    latitude: f64,
    longitude: f64,
}

impl Place {
    fn from_json(item: &Value) -> Option<Self> {
        let text = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        Some(Self {
            name: text("name")?,
            admin1: text("admin1"),
            country: text("country"),
            country_code: text("country_code"),
            latitude: item.get("latitude")?.as_f64()?,
            longitude: item.get("longitude")?.as_f64()?,
        })
    }

    /// Whether a lower-case qualifier ("texas", "france", "us") names this place's region,
    /// country or country code.
    fn matches(&self, wanted: &str) -> bool {
        [&self.admin1, &self.country, &self.country_code]
            .into_iter()
            .flatten()
            .any(|field| field.to_lowercase() == wanted)
    }

    /// "Oslo, Oslo, Norway": the name, then the region and country the geocoder gave.
    fn label(&self) -> String {
        let mut parts = vec![self.name.as_str()];
        parts.extend(
            [&self.admin1, &self.country]
                .into_iter()
                .flatten()
                .map(String::as_str),
        );
        parts.join(", ")
    }
}

/// The answer text: place, observation time, current values with units, and the forecast.
fn describe(place: &Place, forecast: &Map<String, Value>) -> String {
    let empty = Map::new();
    let section = |key: &str| {
        forecast
            .get(key)
            .and_then(Value::as_object)
            .unwrap_or(&empty)
    };
    let (current, current_units) = (section("current"), section("current_units"));
    let (daily, daily_units) = (section("daily"), section("daily_units"));
    let zone = forecast
        .get("timezone")
        .and_then(Value::as_str)
        .unwrap_or("local time");
    let observed = current
        .get("time")
        .and_then(Value::as_str)
        .unwrap_or("unknown time");
    let reading = |key: &str| {
        let unit = current_units.get(key).and_then(Value::as_str).unwrap_or("");
        current
            .get(key)
            .and_then(Value::as_f64)
            .map(|value| with_unit(value, unit))
    };
    let mut text = format!(
        "Weather for {} ({:.2}, {:.2}), observed {observed} ({zone}):\n",
        place.label(),
        place.latitude,
        place.longitude
    );
    let mut now = vec![
        current
            .get("weather_code")
            .and_then(Value::as_u64)
            .map_or("unknown conditions", weather_words)
            .to_owned(),
    ];
    if let Some(temperature) = reading("temperature_2m") {
        now.push(temperature);
    }
    if let Some(feels) = reading("apparent_temperature") {
        now.push(format!("feels like {feels}"));
    }
    if let Some(humidity) = reading("relative_humidity_2m") {
        now.push(format!("humidity {humidity}"));
    }
    if let Some(wind) = reading("wind_speed_10m") {
        now.push(format!("wind {wind}"));
    }
    text.push_str(&format!("Now: {}\n", now.join(", ")));
    text.push_str(&describe_days(daily, daily_units));
    text.trim_end().to_owned()
}

fn describe_days(daily: &Map<String, Value>, units: &Map<String, Value>) -> String {
    let column = |key: &str| daily.get(key).and_then(Value::as_array);
    let Some(days) = column("time") else {
        return "Forecast: not given\n".to_owned();
    };
    let at = |key: &str, index: usize| column(key).and_then(|values| values.get(index)?.as_f64());
    let unit = |key: &str| units.get(key).and_then(Value::as_str).unwrap_or("");
    let mut text = String::from("Forecast:\n");
    for (index, day) in days.iter().take(FORECAST_DAYS).enumerate() {
        let day = day.as_str().unwrap_or("?");
        let words = daily
            .get("weather_code")
            .and_then(Value::as_array)
            .and_then(|codes| codes.get(index)?.as_u64())
            .map_or("unknown conditions", weather_words);
        let mut parts = vec![words.to_owned()];
        match (
            at("temperature_2m_min", index),
            at("temperature_2m_max", index),
        ) {
            (Some(low), Some(high)) => parts.push(format!(
                "{} to {}",
                with_unit(low, unit("temperature_2m_min")),
                with_unit(high, unit("temperature_2m_max"))
            )),
            _ => parts.push("temperatures not given".to_owned()),
        }
        if let Some(chance) = at("precipitation_probability_max", index) {
            parts.push(format!(
                "chance of precipitation {}",
                with_unit(chance, unit("precipitation_probability_max"))
            ));
        }
        text.push_str(&format!("- {day}: {}\n", parts.join(", ")));
    }
    text
}

/// `3.2 °C`, `81 %`, `12.4 km/h`: whole numbers without a decimal point.
fn with_unit(value: f64, unit: &str) -> String {
    let number = if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    };
    if unit.is_empty() {
        number
    } else {
        format!("{number} {unit}")
    }
}

/// WMO weather interpretation codes, as Open-Meteo documents them.
fn weather_words(code: u64) -> &'static str {
    match code {
        0 => "clear sky",
        1 => "mainly clear",
        2 => "partly cloudy",
        3 => "overcast",
        45 => "fog",
        48 => "depositing rime fog",
        51 => "light drizzle",
        53 => "moderate drizzle",
        55 => "dense drizzle",
        56 => "light freezing drizzle",
        57 => "dense freezing drizzle",
        61 => "slight rain",
        63 => "moderate rain",
        65 => "heavy rain",
        66 => "light freezing rain",
        67 => "heavy freezing rain",
        71 => "slight snowfall",
        73 => "moderate snowfall",
        75 => "heavy snowfall",
        77 => "snow grains",
        80 => "slight rain showers",
        81 => "moderate rain showers",
        82 => "violent rain showers",
        85 => "slight snow showers",
        86 => "heavy snow showers",
        95 => "thunderstorm",
        96 => "thunderstorm with slight hail",
        99 => "thunderstorm with heavy hail",
        _ => "unknown conditions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_units() {
        assert_eq!(weather_words(0), "clear sky");
        assert_eq!(weather_words(63), "moderate rain");
        assert_eq!(weather_words(42), "unknown conditions");
        assert_eq!(with_unit(3.0, "°C"), "3 °C");
        assert_eq!(with_unit(-0.25, "°C"), "-0.2 °C");
        assert_eq!(with_unit(81.0, ""), "81");
    }
}
