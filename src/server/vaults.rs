//! The vaults one server serves, by name, and which of them a call may use.
//!
//! A server serves one vault (`--vault DIR`, `KB_VAULT`) or several
//! (`--vault NAME=DIR` repeated, or a vaults file, `--vaults FILE` or
//! `KB_VAULTS`: see [`VaultSpec::parse_file`]). Each vault keeps its own
//! engine, index, `kb.toml`, inbox, proposals, audit log and watcher (a
//! [`Shared`] each); they share nothing but the process's metrics. The first
//! listed is the default. A connection may use every vault over stdio, and over
//! HTTP those its token names (every vault when it names none). A connection
//! that may use more than one names a call's vault with the `vault` argument
//! (published only then, with `list_vaults`); one that may use a single vault
//! sees a server of one vault: no `vault` argument, no `list_vaults`, and no
//! other vault's name in any answer or error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::ServerOptions;
use super::metrics::Metrics;
use super::shared::Shared;
use super::timing::Timings;
use crate::error::{Error, ErrorCode};

/// The longest vault name, in characters.
const NAME_MAX: usize = 64;

/// One vault a server is asked to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultSpec {
    /// Its name: letters (any script), digits, `-`, `_`, `.`; at most 64 characters.
    pub name: String,
    /// The vault folder.
    pub path: PathBuf,
    /// The index folder (`<vault>/.kb` when `None`).
    pub index_dir: Option<PathBuf>,
}

/// A vaults file: `[[vault]]` tables, in order (the first is the default).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VaultsFile {
    #[serde(default)]
    vault: Vec<VaultEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VaultEntry {
    name: String,
    path: PathBuf,
    #[serde(default)]
    index_dir: Option<PathBuf>,
}

/// Whether `name` may name a vault: 1 to 64 letters (of any script), digits,
/// `-`, `_` or `.`, not starting with `.` (`*` means every vault to a search).
pub fn is_vault_name(name: &str) -> bool {
    let count = name.chars().count();
    (1..=NAME_MAX).contains(&count)
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl VaultSpec {
    /// A `--vault` value: `NAME=DIR` when what precedes the first `=` is a
    /// vault name, else a folder (named after itself, see [`VaultSpec::named_after`]).
    /// A folder whose name holds `=` is given as `./a=b`.
    pub fn from_arg(text: &str) -> VaultSpec {
        match text.split_once('=') {
            Some((name, path)) if is_vault_name(name) && !path.is_empty() => {
                VaultSpec { name: name.to_owned(), path: PathBuf::from(path), index_dir: None }
            }
            _ => VaultSpec::named_after(PathBuf::from(text)),
        }
    }

    /// A vault given by its folder alone, named after the folder (`vault`
    /// when the folder's name cannot name one).
    pub fn named_after(path: PathBuf) -> VaultSpec {
        let own = path.file_name().and_then(|name| name.to_str()).filter(|name| is_vault_name(name));
        VaultSpec { name: own.unwrap_or("vault").to_owned(), path, index_dir: None }
    }

    /// The vaults of a vaults file's text: TOML, one `[[vault]]` table per
    /// vault with `name`, `path` and optionally `index_dir`, in order. A
    /// relative path is taken from `base` (the file's folder), and `~/` from
    /// `home`. The error says what is wrong and where.
    pub fn parse_file(text: &str, base: &Path, home: Option<&Path>) -> Result<Vec<VaultSpec>, String> {
        let file: VaultsFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let place = |path: PathBuf| -> Result<PathBuf, String> {
            match path.strip_prefix("~") {
                Ok(rest) => match home {
                    Some(home) => Ok(home.join(rest)),
                    None => Err(format!("{} starts with ~ but HOME is not set", path.display())),
                },
                Err(_) if path.is_relative() => Ok(base.join(path)),
                Err(_) => Ok(path),
            }
        };
        let specs = file
            .vault
            .into_iter()
            .map(|entry| {
                Ok(VaultSpec {
                    name: entry.name,
                    path: place(entry.path)?,
                    index_dir: entry.index_dir.map(place).transpose()?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        if specs.is_empty() {
            return Err("it lists no vault: add a [[vault]] table with name and path".to_owned());
        }
        Ok(specs)
    }

    /// The vaults a binary is asked to serve or work on: each `--vault`
    /// value (`NAME=DIR`; a name the vaults file lists; else a folder), or,
    /// when none is given, every vault of the vaults file (`file`: its text
    /// and folder), or else `None` (the binary looks at the current folder).
    pub fn resolve(
        args: &[String],
        file: Option<(&str, &Path)>,
        home: Option<&Path>,
    ) -> Result<Option<Vec<VaultSpec>>, String> {
        let listed = match file {
            Some((text, base)) => {
                Some(VaultSpec::parse_file(text, base, home).map_err(|e| format!("the vaults file: {e}"))?)
            }
            None => None,
        };
        if args.is_empty() {
            return Ok(listed);
        }
        let specs = args
            .iter()
            .map(|arg| {
                let from_file = listed.iter().flatten().find(|spec| spec.name == *arg);
                from_file.cloned().unwrap_or_else(|| VaultSpec::from_arg(arg))
            })
            .collect();
        Ok(Some(specs))
    }

    /// Checks a server's vaults: at least one, each name valid, no name or
    /// folder twice (names compared without case). The error says which and what to do.
    pub fn check_all(specs: &[VaultSpec]) -> Result<(), String> {
        if specs.is_empty() {
            return Err("no vault to serve".to_owned());
        }
        for (number, spec) in specs.iter().enumerate() {
            if !is_vault_name(&spec.name) {
                return Err(format!(
                    "{:?} cannot name a vault: use 1 to {NAME_MAX} letters, digits, -, _ or . (not first)",
                    spec.name
                ));
            }
            for earlier in &specs[..number] {
                if earlier.name.to_lowercase() == spec.name.to_lowercase() {
                    return Err(format!(
                        "two vaults are named {:?} ({} and {}): name each with --vault NAME=DIR",
                        spec.name,
                        earlier.path.display(),
                        spec.path.display()
                    ));
                }
                if earlier.path == spec.path {
                    return Err(format!(
                        "the folder {} is given twice (as {} and {})",
                        spec.path.display(),
                        earlier.name,
                        spec.name
                    ));
                }
                // A vault inside another would have its notes served, changed and indexed by both.
                for (outer, inner) in [(earlier, spec), (spec, earlier)] {
                    if inner.path.starts_with(&outer.path) {
                        return Err(format!(
                            "the vault {} ({}) is inside the vault {} ({}): serve one of them, or give \
                             them folders side by side",
                            inner.name,
                            inner.path.display(),
                            outer.name,
                            outer.path.display()
                        ));
                    }
                }
                if earlier.index_dir.is_some() && earlier.index_dir == spec.index_dir {
                    return Err(format!(
                        "the vaults {} and {} are given one index folder: give each its own index_dir",
                        earlier.name, spec.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One vault being served.
pub(super) struct Served {
    /// Its name.
    pub(super) name: String,
    /// Its engine and the waits for it.
    pub(super) shared: Arc<Shared>,
}

/// Every vault this server serves, the default first.
pub struct Vaults {
    served: Vec<Served>,
    metrics: Arc<Metrics>,
    timings: Arc<Timings>,
}

impl Vaults {
    /// Starts opening every vault (each in the background).
    pub fn start(options: &ServerOptions) -> Arc<Vaults> {
        let metrics = Arc::new(Metrics::new());
        let timings = Timings::new();
        let served = options
            .vaults
            .iter()
            .map(|spec| Served {
                name: spec.name.clone(),
                shared: Shared::start(spec, options, metrics.clone()),
            })
            .collect();
        Arc::new(Vaults { served, metrics, timings })
    }

    /// Every vault, the default first.
    pub(super) fn all(&self) -> &[Served] {
        &self.served
    }

    /// The vaults a connection allowed `allowed` (every one for `None`) may use, in order.
    pub(super) fn visible(&self, allowed: Option<&[String]>) -> Vec<&Served> {
        self.served.iter().filter(|served| allowed.is_none_or(|names| names.contains(&served.name))).collect()
    }

    /// The process's metrics (every vault's calls).
    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The metrics, shared.
    pub(super) fn metrics_handle(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Requests in flight and their timing.
    pub(super) fn timings(&self) -> Arc<Timings> {
        self.timings.clone()
    }

    /// The default vault's state (metrics snapshots read its index's figures).
    pub(super) fn first(&self) -> &Arc<Shared> {
        &self.served[0].shared
    }
}

/// Which vault a call asked for with its `vault` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Wanted {
    /// None: the default, or for a proposal id the vault holding it.
    Default,
    /// This one.
    Named(String),
    /// Every vault (`*`, searches only).
    Every,
}

/// Takes the `vault` argument out of a call's arguments (the rest are the
/// tool's own, checked against its schema). A `null` is the default.
pub(super) fn take_argument(
    arguments: &mut Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<Wanted, Error> {
    use serde_json::Value;
    match arguments.as_mut().and_then(|arguments| arguments.remove("vault")) {
        None | Some(Value::Null) => Ok(Wanted::Default),
        Some(Value::String(name)) if name == crate::tools::EVERY_VAULT => Ok(Wanted::Every),
        Some(Value::String(name)) => Ok(Wanted::Named(name)),
        Some(_) => Err(Error::invalid("`vault` must be a vault's name (a string)")
            .with_hint("list_vaults lists the vaults you may use")),
    }
}

/// The answer to a token that may use none of the vaults this server serves.
pub(super) fn none_granted() -> Error {
    Error::new(ErrorCode::PermissionDenied, "this token may use none of the vaults this server serves")
        .with_hint(
            "ask the person to give the token a vault this server serves (kb-mcp token add --vault NAME)",
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vault_argument_is_a_name_and_a_folder_or_a_folder() {
        assert_eq!(
            VaultSpec::from_arg("work=/home/me/Work"),
            VaultSpec { name: "work".into(), path: "/home/me/Work".into(), index_dir: None }
        );
        assert_eq!(VaultSpec::from_arg("工作=~/W").name, "工作");
        // Before the `=` is no name: a folder whose path holds one.
        assert_eq!(VaultSpec::from_arg("/srv/a=b").path, PathBuf::from("/srv/a=b"));
        assert_eq!(VaultSpec::from_arg("/srv/a=b").name, "vault");
        assert_eq!(VaultSpec::from_arg("/home/me/Notes").name, "Notes");
        assert_eq!(VaultSpec::from_arg("/").name, "vault");
        assert_eq!(VaultSpec::from_arg("name=").path, PathBuf::from("name="));
    }

    #[test]
    fn names_are_checked_and_unique() {
        let spec =
            |name: &str, path: &str| VaultSpec { name: name.into(), path: path.into(), index_dir: None };
        assert!(VaultSpec::check_all(&[spec("work", "/a"), spec("home", "/b")]).is_ok());
        let twice = VaultSpec::check_all(&[spec("work", "/a"), spec("Work", "/b")]).unwrap_err();
        assert!(twice.contains("two vaults are named") && twice.contains("NAME=DIR"), "{twice}");
        assert!(VaultSpec::check_all(&[spec("a", "/x"), spec("b", "/x")]).unwrap_err().contains("twice"));
        let nested = VaultSpec::check_all(&[spec("a", "/x/y"), spec("b", "/x")]).unwrap_err();
        assert!(nested.contains("the vault a (/x/y) is inside the vault b"), "{nested}");
        assert!(
            VaultSpec::check_all(&[spec("a", "/x"), spec("b", "/xy")]).is_ok(),
            "a prefix of the name only"
        );
        let mut shared = [spec("a", "/a"), spec("b", "/b")];
        for one in &mut shared {
            one.index_dir = Some("/idx".into());
        }
        assert!(VaultSpec::check_all(&shared).unwrap_err().contains("one index folder"));
        for bad in ["", "*", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(VaultSpec::check_all(&[spec(bad, "/a")]).is_err(), "{bad:?}");
        }
        assert!(VaultSpec::check_all(&[]).is_err());
    }

    #[test]
    fn a_vaults_file_lists_vaults_in_order() {
        let text = "[[vault]]\nname = \"work\"\npath = \"Work\"\nindex_dir = \"/idx/work\"\n\n\
                    [[vault]]\nname = \"home\"\npath = \"~/Notes\"\n";
        let specs = VaultSpec::parse_file(text, Path::new("/etc/kb"), Some(Path::new("/home/me"))).unwrap();
        assert_eq!(specs[0].name, "work");
        assert_eq!(specs[0].path, PathBuf::from("/etc/kb/Work"));
        assert_eq!(specs[0].index_dir, Some(PathBuf::from("/idx/work")));
        assert_eq!(specs[1].path, PathBuf::from("/home/me/Notes"));
        assert!(VaultSpec::parse_file("", Path::new("/"), None).unwrap_err().contains("no vault"));
        let unknown =
            VaultSpec::parse_file("[[vault]]\nname='a'\npath='/a'\nfolder='x'\n", Path::new("/"), None);
        assert!(unknown.unwrap_err().contains("folder"));
        let no_home = VaultSpec::parse_file("[[vault]]\nname='a'\npath='~/a'\n", Path::new("/"), None);
        assert!(no_home.unwrap_err().contains("HOME"));
    }
}
