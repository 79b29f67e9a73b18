//! Fuzzes the patch edit engine: `kb_mcp::write::apply_edits` with a text and edits
//! decoded from the bytes (see `harness::patch_edits`).

#![no_main]

#[allow(dead_code, reason = "each target uses one of the harness's three bodies")]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::patch_edits(data));
