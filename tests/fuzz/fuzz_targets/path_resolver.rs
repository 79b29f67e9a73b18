//! Fuzzes the path resolver: `NotePath::parse`, `Policy::area_of`, and `Sandbox::resolve_read`,
//! `read` and `resolve_note_target` against a small vault with secrets and
//! symlinks, built once per process (see `harness::path_resolver`).

#![no_main]

#[allow(dead_code, reason = "each target uses one of the harness's three bodies")]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::path_resolver(data));
