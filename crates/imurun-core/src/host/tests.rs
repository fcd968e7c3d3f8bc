use std::net::Ipv6Addr;

use super::*;

#[test]
fn ipv6_addresses_are_shown_as_urls_show_them() {
    let cases = [
        ("::1", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("::", "::"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("::ffff:7f00:1", "::ffff:7f00:1"),
        ("::127.0.0.1", "::7f00:1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        (
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "2001:db8::ff00:42:8329",
        ),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("fe80:0:0:1:0:0:0:0", "fe80:0:0:1::"),
        ("fe80::1:0:0:0", "fe80::1:0:0:0"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
    ];
    for (written, shown) in cases {
        let address: Ipv6Addr = written.parse().unwrap();
        assert_eq!(ipv6_text(address), shown, "{written}");
        assert_eq!(shown.parse::<Ipv6Addr>().unwrap(), address, "{shown}");
    }
}

#[test]
fn every_spelling_of_one_ipv6_address_is_one_host() {
    let spellings = [
        "[::ffff:7f00:1]",
        "[::ffff:127.0.0.1]",
        "[0:0:0:0:0:ffff:7f00:0001]",
        "[::FFFF:7F00:1]",
    ];
    for written in spellings {
        let host = parse_rule_host(written).unwrap();
        assert_eq!(host.to_string(), "[::ffff:7f00:1]", "{written}");
        for other in spellings {
            assert!(host_covers(written, other), "{written} covers {other}");
        }
    }
    assert!(!host_covers("[::ffff:7f00:1]", "[::ffff:7f00:2]"));
    assert!(!host_covers("[::ffff:7f00:1]", "127.0.0.1"));
}

#[test]
fn covering_reads_both_sides_as_hosts() {
    assert!(host_covers("example.com", "Example.COM."));
    assert!(host_covers("*.example.com", "api.example.com"));
    assert!(host_covers("*.example.com", "*.api.example.com"));
    assert!(host_covers("*.example.com", "*.example.com"));
    assert!(!host_covers("*.example.com", "example.com"));
    assert!(!host_covers("*.example.com", "badexample.com"));
    assert!(!host_covers("example.com", "*.example.com"));
    assert!(!host_covers("example.com", "example.com.evil"));
    assert!(!host_covers("not a host", "not a host"));
    assert!(!host_covers("", ""));
}

#[test]
fn localhost_and_names_below_it_are_this_machine() {
    for name in [
        "localhost",
        "localhost.",
        "LOCALHOST",
        "api.localhost",
        "a.b.localhost.",
    ] {
        assert!(is_loopback_name(name), "{name}");
    }
    for name in [
        "localhost.example",
        "notlocalhost",
        "localhost..",
        "example.com",
    ] {
        assert!(!is_loopback_name(name), "{name}");
    }
    assert!(
        parse_rule_host("*.dev.localhost")
            .unwrap()
            .is_loopback_name()
    );
    assert!(parse_rule_host("localhost.").unwrap().is_loopback_name());
    assert!(!parse_rule_host("[::1]").unwrap().is_loopback_name());
}

#[test]
fn paths_are_within_a_prefix_on_a_segment_boundary() {
    assert!(path_within("/v1/items", "/v1"));
    assert!(path_within("/v1", "/v1"));
    assert!(path_within("/v1/", "/v1/"));
    assert!(path_within("/v1/x", "/v1/"));
    assert!(!path_within("/v10", "/v1"));
    assert!(!path_within("/v", "/v1"));
}
