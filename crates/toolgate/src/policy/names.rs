//! Tool-name matching. The allowlist and declared names match exactly, but
//! a name that differs from a listed one only by case, surrounding
//! whitespace, separators, invisible characters or Unicode confusables is
//! recognised as that name, so it can never slip past `forbidden` and a
//! model is told which tool it meant.

use rustc_hash::FxHashMap;

/// The key two names share when they differ only in ways a reader (or an
/// executor that normalises names) would not see: trimmed, invisible and
/// separator characters dropped, case folded, and reduced to the skeleton
/// of Unicode TR39 so that `dеlete` (Cyrillic `е`) and `delete` meet.
#[must_use]
pub fn fold(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let skeleton: String = unicode_security::skeleton(&lower).collect();
    skeleton
        .to_lowercase()
        .chars()
        .filter(|&c| !is_separator(c) && !is_invisible(c))
        .collect()
}

fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '_' | '-' | '.' | '/' | ':' | '·' | '‐' | '‑' | '‒' | '–' | '—' | '―' | '−'
        )
}

/// Default-ignorable code points (Unicode `Default_Ignorable_Code_Point`):
/// rendered as nothing, so they must not make two names differ.
fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5
        | 0x180B..=0x180F | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F
        | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFF8
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0000..=0xE0FFF)
}

/// A set of tool names, matched exactly, with their folded forms for
/// look-alike detection and suggestions.
#[derive(Debug, Clone, Default)]
pub struct NameSet {
    exact: FxHashMap<String, usize>,
    folded: FxHashMap<String, usize>,
    names: Vec<String>,
    /// `fold` of each name, in the order of `names`.
    folds: Vec<String>,
}

impl NameSet {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut set = NameSet::default();
        for name in names {
            set.insert(name);
        }
        set
    }

    pub fn insert(&mut self, name: &str) {
        if self.exact.contains_key(name) {
            return;
        }
        let at = self.names.len();
        let folded = fold(name);
        self.names.push(name.to_owned());
        self.exact.insert(name.to_owned(), at);
        self.folded.entry(folded.clone()).or_insert(at);
        self.folds.push(folded);
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    #[must_use]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.exact.contains_key(name)
    }

    /// The listed name `name` is exactly, or looks like once folded.
    #[must_use]
    pub fn matching(&self, name: &str) -> Option<&str> {
        if let Some(&at) = self.exact.get(name) {
            return Some(&self.names[at]);
        }
        if self.names.is_empty() {
            return None;
        }
        self.by_fold(&fold(name))
    }

    fn by_fold(&self, folded: &str) -> Option<&str> {
        self.folded.get(folded).map(|&at| self.names[at].as_str())
    }

    /// The listed name closest to `name`: its look-alike if there is one,
    /// else the one at the smallest edit distance of the folded forms. The
    /// input is folded once and compared on its first 64 characters, so an
    /// unknown name costs little whatever its length.
    #[must_use]
    pub fn closest(&self, name: &str) -> Option<&str> {
        if let Some(&at) = self.exact.get(name) {
            return Some(&self.names[at]);
        }
        let folded: String = fold(name).chars().take(64).collect();
        if let Some(found) = self.by_fold(&folded) {
            return Some(found);
        }
        self.folds
            .iter()
            .zip(&self.names)
            .map(|(candidate, name)| (strsim::osa_distance(&folded, candidate), name))
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, name)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_fold_together() {
        for other in [
            "Delete_User",
            " delete_user ",
            "delete-user",
            "deleteUser",
            "DELETE.USER",
            "d\u{0435}lete_user",
            "delete\u{200B}_user",
            "de\u{217C}ete_user",
        ] {
            assert_eq!(fold(other), fold("delete_user"), "{other:?}");
        }
        assert_ne!(fold("delete_users"), fold("delete_user"));
    }

    #[test]
    fn exact_names_and_suggestions() {
        let set = NameSet::new(["get_weather", "search"]);
        assert!(set.contains("search"));
        assert!(!set.contains("Search"));
        assert_eq!(set.matching("Search"), Some("search"));
        assert_eq!(set.closest("get_wether"), Some("get_weather"));
        assert_eq!(NameSet::default().closest("x"), None);
    }
}
