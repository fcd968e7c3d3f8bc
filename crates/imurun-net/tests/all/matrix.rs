//! The deny matrix, from `testdata/addresses.json` (which `fetch_url`'s tests read too).

use std::net::IpAddr;

use imurun_net::{AddressRule, Door, DoorConfig, NetError, classify, is_listed};
use serde_json::Value;

fn table() -> Value {
    let text = include_str!("../../testdata/addresses.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn every_address_has_its_class() {
    let table = table();
    let rows = table["addresses"].as_array().unwrap();
    assert!(rows.len() >= 50);
    for row in rows {
        let address = row["address"].as_str().unwrap();
        let ip: IpAddr = address.parse().unwrap();
        assert_eq!(classify(ip).as_str(), row["class"], "{address}");
        let refused = AddressRule::public_only().refuses(ip);
        assert_eq!(refused.is_none(), row["class"] == "public", "{address}");
    }
}

#[test]
fn every_url_spelling_reaches_the_class_of_its_address() {
    let door = Door::new(DoorConfig::public(std::time::Duration::from_secs(1))).unwrap();
    for row in table()["urls"].as_array().unwrap() {
        let text = row["url"].as_str().unwrap();
        let url = imurun_net::parse_http_url(text).unwrap();
        match door.check_url(&url) {
            Err(NetError::Refused { class, .. }) => {
                assert_eq!(class.as_str(), row["class"], "{text}");
            }
            other => panic!("{text}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn allowances_lift_the_rule_one_way_each() {
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
    let other: IpAddr = "127.0.0.2".parse().unwrap();
    // Regression: `::ffff:127.0.0.1` in the list did not allow `127.0.0.1`, nor the other way.
    assert!(is_listed(&[mapped], loopback));
    assert!(is_listed(&[loopback], mapped));
    assert!(!is_listed(&[mapped], other));
    assert!(!is_listed(&[], loopback));

    let exact = AddressRule {
        allowed_addresses: vec![mapped],
        ..AddressRule::default()
    };
    assert!(exact.check("h", loopback).is_ok());
    assert!(exact.check("h", other).is_err());
    let everything = AddressRule {
        allow_non_public: true,
        ..AddressRule::default()
    };
    assert!(everything.check("h", other).is_ok());
    let endpoints = AddressRule::public_and_endpoints(["http://SearX.Home.:8080/search"]);
    assert_eq!(endpoints.trusted_hosts, ["searx.home"]);
    assert!(endpoints.check("searx.home", other).is_ok());
    assert!(endpoints.check("SEARX.home.", other).is_ok());
    assert!(endpoints.check("other.home", other).is_err());
}

#[test]
fn this_machines_own_addresses_are_refused_even_when_public() {
    let own: IpAddr = "8.8.4.4".parse().unwrap();
    let rule = AddressRule {
        own_addresses: vec![own],
        ..AddressRule::default()
    };
    assert!(matches!(
        rule.check("mine.example", own),
        Err(NetError::OwnAddress { .. })
    ));
    assert!(
        rule.check("other.example", "8.8.8.8".parse().unwrap())
            .is_ok()
    );
    // Loopback is always one of them, and the system's list is what `public_only` refuses.
    let listed = imurun_net::own_addresses();
    assert!(listed.contains(&"127.0.0.1".parse().unwrap()), "{listed:?}");
    assert_eq!(AddressRule::public_only().own_addresses, listed);
}
