//! What Obsidian's own settings say about the vault, read but never written.
//!
//! Obsidian's core Templates plugin names its folder in `.obsidian/templates.json`
//! (`folder`), the Templater plugin in its `data.json` (`templates_folder`). The
//! notes there are placeholders (`{{date}}`, `<% tp.file.title %>`), not
//! knowledge: counting their tags or ranking them in searches misleads an agent,
//! so the engine leaves them out of the walk (they stay readable by path).

use serde_json::Value;

use crate::sandbox::NotePath;

/// The templates folders named by the settings files' texts (the core plugin's,
/// then Templater's), vault-relative, without duplicates (ignoring case). A file
/// that is not JSON, a missing key, an empty value (the vault root) or an unsafe
/// path names nothing.
pub fn templates_folders(settings: &[Option<String>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for text in settings.iter().flatten() {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else { continue };
        for key in ["folder", "templates_folder"] {
            let Some(raw) = map.get(key).and_then(Value::as_str) else { continue };
            let trimmed = raw.trim().trim_matches('/');
            let folder = trimmed.strip_prefix("./").unwrap_or(trimmed);
            if folder.is_empty() || folder == "." || NotePath::parse(folder).is_err() {
                continue;
            }
            if !out.iter().any(|known| known.to_lowercase() == folder.to_lowercase()) {
                out.push(folder.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::templates_folders;

    #[test]
    fn folders_come_from_either_plugin_and_bad_values_name_nothing() {
        let core = Some(r#"{"folder": "Templates/"}"#.to_owned());
        let templater =
            Some(r#"{"templates_folder": "templates", "trigger_on_file_creation": true}"#.to_owned());
        assert_eq!(templates_folders(&[core.clone(), templater]), ["Templates"]);
        let other = Some(r#"{"templates_folder": "模板/日记"}"#.to_owned());
        assert_eq!(templates_folders(&[core, other]), ["Templates", "模板/日记"]);
        for bad in [r#"{"folder": ""}"#, r#"{"folder": "/"}"#, r#"{"folder": "../x"}"#, "not json", "[]"] {
            assert!(templates_folders(&[Some(bad.to_owned()), None]).is_empty(), "{bad}");
        }
    }
}
