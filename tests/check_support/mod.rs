//! Helpers shared by the checker's corpus tests (apart from tests/common, the jail attack
//! harness, which they do not need).
#![allow(dead_code)]

pub mod python;
