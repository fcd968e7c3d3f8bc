//! An agent that tries every door out of its cell and reports what happened at each, one
//! reply per door: `"<door>: refused: <why>"`, or `"<door>: OPEN: <what it got>"` (which must
//! never happen).
//!
//! A message `{"deploy_url": "...", "manifest_url": "..."}` tries the filesystem, sockets,
//! name lookups, the environment, the deploy route and the agent's own manifest; `"spin"`
//! loops for ever, `"bomb"` allocates until something stops it, and `"sleep"` sleeps for an
//! hour.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs, UdpSocket};

use serde_json::Value;

wit_bindgen::generate!({ path: "../../../crates/imurun-cell/wit", world: "agent" });

use imurun::cell::http;
use imurun::cell::types::{Header, Request};

struct Doors;

impl Guest for Doors {
    fn handle(message: String) -> Result<Vec<String>, String> {
        match message.trim() {
            "spin" => spin(),
            "bomb" => Ok(vec![bomb()]),
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(3_600));
                Ok(vec!["slept an hour".to_owned()])
            }
            _ => {
                let targets: Value = serde_json::from_str(&message).unwrap_or(Value::Null);
                Ok(try_every_door(&targets))
            }
        }
    }
}

fn spin() -> Result<Vec<String>, String> {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

fn bomb() -> String {
    let mut held: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; 16 << 20];
        block[0] = 1;
        held.push(std::hint::black_box(block));
        if held.len() > 100_000 {
            return "OPEN: allocated without end".to_owned();
        }
    }
}

fn report(door: &str, result: Result<String, String>) -> String {
    match result {
        Ok(what) => format!("{door}: OPEN: {what}"),
        Err(why) => format!("{door}: refused: {why}"),
    }
}

fn try_every_door(targets: &Value) -> Vec<String> {
    let mut lines = vec![
        report("read /etc/passwd", read_file("/etc/passwd")),
        report("read .", std::fs::read_dir(".").map(|_| "a listing".to_owned()).map_err(|e| e.to_string())),
        report("write /tmp/imurun-cell", write_file("/tmp/imurun-cell")),
        report("tcp connect 127.0.0.1:22", tcp("127.0.0.1:22")),
        report("tcp listen 127.0.0.1:0", TcpListener::bind("127.0.0.1:0").map(|_| "a listener".to_owned()).map_err(|e| e.to_string())),
        report("udp bind 0.0.0.0:0", UdpSocket::bind("0.0.0.0:0").map(|_| "a socket".to_owned()).map_err(|e| e.to_string())),
        report("dns localhost", dns("localhost:80")),
        report("dns example.com", dns("example.com:443")),
        report("environment", environment()),
    ];
    if let Some(url) = targets["deploy_url"].as_str() {
        lines.push(report(
            "deploy route",
            send("POST", url, br#"{"bundle":"","manifest":{}}"#.to_vec()),
        ));
    }
    if let Some(url) = targets["manifest_url"].as_str() {
        lines.push(report("own manifest", send("GET", url, Vec::new())));
    }
    lines
}

fn read_file(path: &str) -> Result<String, String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .map(|n| format!("{n} bytes"))
        .map_err(|error| error.to_string())
}

fn write_file(path: &str) -> Result<String, String> {
    std::fs::File::create(path)
        .and_then(|mut file| file.write_all(b"out"))
        .map(|()| "wrote".to_owned())
        .map_err(|error| error.to_string())
}

fn tcp(address: &str) -> Result<String, String> {
    TcpStream::connect(address)
        .map(|_| "a connection".to_owned())
        .map_err(|error| error.to_string())
}

fn dns(name: &str) -> Result<String, String> {
    name.to_socket_addrs()
        .map_err(|error| error.to_string())
        .and_then(|mut addresses| match addresses.next() {
            Some(address) => Ok(address.to_string()),
            None => Err("no address".to_owned()),
        })
}

fn environment() -> Result<String, String> {
    let vars: Vec<String> = std::env::vars().map(|(name, _)| name).collect();
    let args: Vec<String> = std::env::args().collect();
    // WASI's C library names `/` as the working folder when none was given; with no folder
    // preopened it leads nowhere (the filesystem doors above say so).
    if vars.is_empty() && args.is_empty() {
        Err("no variables and no arguments".to_owned())
    } else {
        Ok(format!("vars {vars:?}, args {args:?}"))
    }
}

fn send(method: &str, url: &str, body: Vec<u8>) -> Result<String, String> {
    http::send(&Request {
        method: method.to_owned(),
        url: url.to_owned(),
        headers: vec![Header {
            name: "content-type".to_owned(),
            value: "application/json".to_owned(),
        }],
        body,
    })
    .map(|response| format!("HTTP {}", response.status))
}

export!(Doors);
