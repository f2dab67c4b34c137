//! Tool-definition pins (`mcp.pin_tools`): the SHA-256 of each tool's
//! definition, trusted the first time it is seen and kept in a JSON file.
//! A definition that differs from its pin is withheld, and its calls
//! refused (`tool_definition_changed`), until `toolgate pins accept NAME`
//! takes the new one.
//!
//! The store fails closed: a pin file that cannot be read, or does not
//! hold pins, refuses every pinned tool; it is never taken as empty,
//! which would trust every definition again. Writers (the gateway, and
//! the `pins` commands beside it) take an exclusive lock on
//! `<file>.lock` around each read-modify-write and replace the file by a
//! rename, so a reader sees the old pins or the new ones, never half.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The file's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinFile {
    pub version: u32,
    /// By `<server>/<tool>`.
    pub tools: BTreeMap<String, Pin>,
}

/// One tool's pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The SHA-256 of the definition trusted.
    pub sha256: String,
    /// The SHA-256 of the changed definition last seen, waiting for
    /// `toolgate pins accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

/// What a definition is, against its pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Its pin, or seen for the first time (now pinned).
    Trusted,
    /// It differs from its pin.
    Changed,
    /// The pin store cannot be read or written: why.
    Unknown(String),
}

/// The pins of one gateway, read again whenever the file changes.
#[derive(Debug)]
pub(crate) struct PinStore {
    path: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// The file's pins, or why they cannot be read.
    pins: Result<PinFile, String>,
    /// The file's modification time and length when read.
    stamp: Option<(SystemTime, u64)>,
}

impl PinStore {
    /// The store at `path`; an unreadable or corrupt file is an error
    /// (a missing one is no pins yet).
    pub(crate) fn open(path: &Path) -> Result<PinStore, String> {
        let pins = read(path)?;
        Ok(PinStore {
            path: path.to_path_buf(),
            state: Mutex::new(Loaded {
                pins: Ok(pins),
                stamp: stamp(path),
            }),
        })
    }

    /// Whether the definition of `key` (`<server>/<tool>`) hashing to
    /// `sha256` is trusted: pinned now when first seen; a change is
    /// remembered for `pins accept`.
    pub(crate) fn standing(&self, key: &str, sha256: &str) -> Standing {
        let Ok(mut state) = self.state.lock() else {
            return Standing::Unknown("the pin store is poisoned".to_owned());
        };
        let now = stamp(&self.path);
        if now != state.stamp {
            state.pins = read(&self.path);
            state.stamp = now;
        }
        match &state.pins {
            Err(why) => return Standing::Unknown(why.clone()),
            Ok(pins) => match pins.tools.get(key) {
                Some(pin) if pin.sha256 == sha256 => return Standing::Trusted,
                Some(pin) if pin.changed.as_deref() == Some(sha256) => return Standing::Changed,
                _ => {}
            },
        }
        // First sight, or a change not yet remembered: write it down.
        let outcome = update(&self.path, |pins| match pins.tools.get_mut(key) {
            None => {
                pins.tools.insert(
                    key.to_owned(),
                    Pin {
                        sha256: sha256.to_owned(),
                        changed: None,
                    },
                );
                Standing::Trusted
            }
            Some(pin) if pin.sha256 == sha256 => Standing::Trusted,
            Some(pin) => {
                pin.changed = Some(sha256.to_owned());
                Standing::Changed
            }
        });
        match outcome {
            Ok((standing, pins)) => {
                state.pins = Ok(pins);
                state.stamp = stamp(&self.path);
                standing
            }
            Err(why) => {
                state.pins = Err(why.clone());
                Standing::Unknown(why)
            }
        }
    }
}

/// The pins in `path`; none when it does not exist.
pub fn read(path: &Path) -> Result<PinFile, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(PinFile {
                version: 1,
                tools: BTreeMap::new(),
            })
        }
        Err(err) => {
            return Err(format!(
                "cannot read the pin file {}: {err}",
                path.display()
            ))
        }
    };
    let pins: PinFile = serde_json::from_str(&text).map_err(|err| {
        format!(
            "the pin file {} is corrupt ({err}); no tool definition is trusted until it is repaired or `toolgate pins reset`",
            path.display()
        )
    })?;
    if pins.version != 1 {
        return Err(format!(
            "the pin file {} has version {}, not 1",
            path.display(),
            pins.version
        ));
    }
    if let Some((key, _)) = pins.tools.iter().find(|(_, pin)| {
        !is_sha256(&pin.sha256) || pin.changed.as_deref().is_some_and(|c| !is_sha256(c))
    }) {
        return Err(format!(
            "the pin file {} is corrupt: the pin of `{key}` is not a SHA-256",
            path.display()
        ));
    }
    Ok(pins)
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Read the pins under the file's lock, change them with `change`, and
/// write them back atomically (a corrupt file is never written over).
pub fn update<T>(
    path: &Path,
    change: impl FnOnce(&mut PinFile) -> T,
) -> Result<(T, PinFile), String> {
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|err| format!("cannot open {}: {err}", lock_path.display()))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|err| format!("cannot lock {}: {err}", lock_path.display()))?;
    let mut pins = read(path)?;
    let out = change(&mut pins);
    write(path, &pins)?;
    Ok((out, pins))
}

fn write(path: &Path, pins: &PinFile) -> Result<(), String> {
    let text = serde_json::to_string_pretty(pins).map_err(|err| err.to_string())?;
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    let failed =
        |err: std::io::Error| format!("cannot write the pin file {}: {err}", path.display());
    let mut file = File::create(&tmp).map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.write_all(b"\n").map_err(failed)?;
    file.sync_all().map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(c: char) -> String {
        c.to_string().repeat(64)
    }

    #[test]
    fn trust_on_first_sight_then_a_change_waits_for_acceptance() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        let store = PinStore::open(&path).unwrap();
        assert_eq!(store.standing("s/a", &hash('a')), Standing::Trusted);
        assert_eq!(store.standing("s/a", &hash('a')), Standing::Trusted);
        assert_eq!(store.standing("s/a", &hash('b')), Standing::Changed);
        assert_eq!(store.standing("s/a", &hash('b')), Standing::Changed);
        let pins = read(&path).unwrap();
        assert_eq!(
            pins.tools["s/a"].changed.as_deref(),
            Some(hash('b').as_str())
        );
        // Accepted beside the running store: it reads the file again.
        update(&path, |pins| {
            let pin = pins.tools.get_mut("s/a").unwrap();
            pin.sha256 = pin.changed.take().unwrap();
        })
        .unwrap();
        assert_eq!(store.standing("s/a", &hash('b')), Standing::Trusted);
        assert_eq!(store.standing("s/a", &hash('a')), Standing::Changed);
    }

    #[test]
    fn a_corrupt_pin_file_trusts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        std::fs::write(&path, "{not json").unwrap();
        assert!(PinStore::open(&path).unwrap_err().contains("corrupt"));
        std::fs::write(&path, r#"{"version":1,"tools":{}}"#).unwrap();
        let store = PinStore::open(&path).unwrap();
        assert_eq!(store.standing("s/a", &hash('a')), Standing::Trusted);
        std::fs::write(&path, r#"{"version":1,"tools":{"s/a":{"sha256":"zz"}}}   "#).unwrap();
        assert!(matches!(
            store.standing("s/a", &hash('a')),
            Standing::Unknown(_)
        ));
        assert!(matches!(
            store.standing("s/new", &hash('c')),
            Standing::Unknown(_)
        ));
        // The corrupt file is left for a person to see.
        assert!(std::fs::read_to_string(&path).unwrap().contains("zz"));
    }
}
