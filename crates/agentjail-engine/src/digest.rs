//! The one content digest of the crate: a policy's, an action's code, a file's, a plan's
//! (lower-case hex SHA-256, the spelling the record and the policy's `sha256` fields use).
//! A leaf: every layer may name it.

use sha2::{Digest, Sha256};

pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn lower_case_hex_of_sha256() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
