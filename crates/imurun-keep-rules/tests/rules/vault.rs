//! The vault's sealing.

use imurun_keep_rules::vault::VaultKey;

use super::Counter;

#[test]
fn a_sealed_value_opens_only_for_its_owner_name_and_key() {
    let random = Counter::default();
    let key = VaultKey::generate(&random).expect("key");
    let sealed = key
        .seal(&random, "alice", "github", b"ghp_canary")
        .expect("seal");
    assert!(!sealed.windows(10).any(|window| window == b"ghp_canary"));
    assert_eq!(
        key.open("alice", "github", &sealed).expect("open").expose(),
        b"ghp_canary"
    );
    assert!(key.open("bob", "github", &sealed).is_err());
    assert!(key.open("alice", "gitlab", &sealed).is_err());
    let other = VaultKey::generate(&random).expect("key");
    assert!(other.open("alice", "github", &sealed).is_err());
    let mut flipped = sealed.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(key.open("alice", "github", &flipped).is_err());
    assert_eq!(
        format!("{:?}", key.open("alice", "github", &sealed).expect("open")),
        "[redacted]"
    );
}
