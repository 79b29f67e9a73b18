//! The vault's own settings files, read with a size cap: `kb.toml` at the root
//! and Obsidian's template settings.

use std::fs::{self, File, Metadata};
use std::path::Path;

use super::errors::{is_missing, too_large};
use super::read::read_capped;
use super::resolve::same_file;
use crate::error::{Error, Result};

/// Largest `kb.toml` read, in bytes.
const CONFIG_MAX_BYTES: u64 = 64 * 1024;

/// The configuration file at the vault root.
const CONFIG_FILE: &str = "kb.toml";

/// Reads `<root>/kb.toml` (capped at 64 KiB); `None` when absent.
pub fn read_vault_config(root: &Path) -> Result<Option<String>> {
    let file_path = root.join(CONFIG_FILE);
    let shown = file_path.display();
    let before = match fs::symlink_metadata(&file_path) {
        Ok(meta) => meta,
        Err(err) if is_missing(&err) => return Ok(None),
        Err(err) => return Err(Error::io(&shown, &err)),
    };
    if !before.is_file() {
        return Err(Error::invalid(format!(
            "{shown} is not a regular file (symbolic links are not followed for {CONFIG_FILE})"
        )));
    }
    let file = File::open(&file_path).map_err(|err| Error::io(&shown, &err))?;
    let opened = file.metadata().map_err(|err| Error::io(&shown, &err))?;
    if !opened.is_file() || !same_file(&before, &opened) {
        return Err(Error::invalid(format!("{shown} changed while it was being opened; try again")));
    }
    let bytes = read_capped(&file, CONFIG_MAX_BYTES).map_err(|err| Error::io(&shown, &err))?;
    if bytes.len() as u64 > CONFIG_MAX_BYTES || opened.len() > CONFIG_MAX_BYTES {
        return Err(too_large(&shown, opened.len().max(bytes.len() as u64), CONFIG_MAX_BYTES)
            .with_hint(format!("{CONFIG_FILE} holds a few settings; keep it under 64 KiB")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Error::invalid(format!("{shown} is not valid UTF-8; save {CONFIG_FILE} as UTF-8")))
}

/// Obsidian's settings files that name a templates folder, in the order read:
/// the core Templates plugin's and the Templater plugin's.
pub const TEMPLATE_SETTINGS: [&str; 2] =
    [".obsidian/templates.json", ".obsidian/plugins/templater-obsidian/data.json"];

/// Reads the Obsidian settings files that name a templates folder
/// (`.obsidian/templates.json`, then Templater's `data.json`), each `None` when
/// absent, not a regular file (symlinks are not followed), over 64 KiB or not
/// UTF-8: they are optional hints, never a reason to fail. kb-mcp never writes them.
pub fn read_template_settings(root: &Path) -> [Option<String>; 2] {
    TEMPLATE_SETTINGS.map(|rel| {
        let path = root.join(rel);
        let before = fs::symlink_metadata(&path).ok().filter(Metadata::is_file)?;
        let file = File::open(&path).ok()?;
        let opened = file.metadata().ok()?;
        if !same_file(&before, &opened) || opened.len() > CONFIG_MAX_BYTES {
            return None;
        }
        String::from_utf8(read_capped(&file, CONFIG_MAX_BYTES).ok()?).ok()
    })
}
