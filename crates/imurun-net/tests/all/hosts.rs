//! Hosts and URLs in one normal form, and the URLs the door will not read.

use imurun_net::{NetError, normalise_host, parse_http_url};

#[test]
fn hosts_have_one_spelling() {
    let cases = [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
        ("127.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        // Regression: IPv6 came out as `Ipv6Addr` prints it (`[::ffff:127.0.0.1]`), not as
        // a parsed URL's host does, so the two spellings of one host differed.
        ("[::FFFF:127.0.0.1]", "[::ffff:7f00:1]"),
        ("[2001:DB8:0:0::1]", "[2001:db8::1]"),
    ];
    for (written, normal) in cases {
        assert_eq!(normalise_host(written).unwrap(), normal, "{written}");
    }
    // Regression: `a..b` was taken as a host name (WHATWG parsing keeps empty labels).
    // Regression: `127.0.0.1..` was read as `127.0.0.1` (one dot stripped, the IPv4
    // reading took the other), while `localhost..` was refused.
    for bad in [
        "",
        " ",
        "exa mple.com",
        "a..b",
        "[::1",
        "ex%ample.com",
        "127.0.0.1..",
        "localhost..",
    ] {
        assert!(normalise_host(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn only_plain_http_urls_are_read() {
    assert!(parse_http_url("https://example.org/a?b=c").is_ok());
    let refused = [
        ("ftp://example.org/", "`ftp` URLs are not fetched"),
        ("file:///etc/passwd", "`file` URLs are not fetched"),
        ("https://user:secret@example.org/", "user name or password"),
        ("https://user@example.org/", "user name or password"),
        ("example.org", "not a URL"),
        ("http://", "not a URL"),
        // A zone id (`%25eth0`) is no WHATWG URL host: the parser refuses it outright.
        ("http://[fe80::1%25eth0]/", "not a URL"),
    ];
    for (text, expected) in refused {
        let error = parse_http_url(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
        assert!(!error.contains("secret"), "{text}: {error}");
    }
    let long = format!("https://example.org/{}", "a".repeat(3000));
    assert!(matches!(
        parse_http_url(&long),
        Err(NetError::BadUrl { .. })
    ));
}
