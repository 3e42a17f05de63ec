//! Helpers shared by the checker's corpus tests.
#![allow(dead_code)]

pub mod python;
