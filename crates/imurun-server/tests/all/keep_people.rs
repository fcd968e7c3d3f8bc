//! People over HTTP: the operator's alone; adding answers a working token and a code once;
//! revoking a person ends her token at once and leaves everyone else's.

use serde_json::json;

use crate::support::Keep;

#[tokio::test]
async fn people_are_the_operators_and_a_revoked_person_is_shut_out_at_once() {
    let keep = Keep::start().await;
    for (method, path, body) in [
        ("GET", "/v1/people", None),
        ("POST", "/v1/people", Some(json!({"user": "carol"}))),
        ("DELETE", "/v1/people/bob", None),
    ] {
        let (status, answer) = keep.call(&keep.alice, method, path, body).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
    }
    // A code lifetime out of bounds is refused before anything is made.
    let (status, _) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "dave", "enrol_code_ttl_s": 0})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, added) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "carol", "enrol_code_ttl_s": 600})),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["enrol_code_expires_in_s"], 600);
    let carol = added["token"].as_str().expect("token").to_owned();
    let (status, who) = keep.call(&carol, "GET", "/v1/whoami", None).await;
    assert_eq!((status, &who["user"]), (200, &json!("carol")));
    // A name outside the rules is refused, and nothing is made.
    let (status, _) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "Bad Name"})),
        )
        .await;
    assert_eq!(status, 400);
    let (status, unknown) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/people",
            Some(json!({"user": "x", "admin": true})),
        )
        .await;
    assert_eq!(status, 400, "{unknown}");

    let (_, listed) = keep.call(&keep.operator, "GET", "/v1/people", None).await;
    let names: Vec<&str> = listed["people"]
        .as_array()
        .expect("people")
        .iter()
        .filter_map(|person| person["user"].as_str())
        .collect();
    assert_eq!(names, ["alice", "bob", "carol"]);

    let (status, revoked) = keep
        .call(&keep.operator, "DELETE", "/v1/people/alice", None)
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["user"], "alice");
    assert_eq!(revoked["tokens_revoked"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        keep.call(&keep.alice, "GET", "/v1/whoami", None).await.0,
        401
    );
    assert_eq!(keep.call(&keep.bob, "GET", "/v1/whoami", None).await.0, 200);
    let (status, _) = keep
        .call(&keep.operator, "DELETE", "/v1/people/nobody", None)
        .await;
    assert_eq!(status, 404);
}
