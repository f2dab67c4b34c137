//! Tool-name matching. The allowlist and declared names match exactly, but
//! a name that differs from a listed one only by case, surrounding
//! whitespace, separators, invisible characters or Unicode confusables is
//! recognised as that name, so it can never slip past `forbidden` and a
//! model is told which tool it meant.
//!
//! A name may also carry a namespace that is not part of the tool's own
//! name: OpenAI's `functions.`, Gemini's `default_api.`, Claude Code's
//! `mcp__<server>__<tool>` and Amazon Bedrock `AgentCore`'s
//! `<target>___<tool>`. [`ToolKey`] reduces a name to its folded tool and,
//! for the last two, its folded server; [`ToolIndex`] finds, for a call's
//! name, every entry written for the same tool (exact spelling first, so
//! that a listed name costs one hash lookup).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// The key two names share when they differ only in ways a reader (or an
/// executor that normalises names) would not see: trimmed, invisible and
/// separator characters dropped, case folded, and reduced to the skeleton
/// of Unicode TR39 so that `dеlete` (Cyrillic `е`) and `delete` meet.
#[must_use]
pub fn fold(name: &str) -> String {
    squash(&visible_skeleton(name))
}

/// The name trimmed, case folded, reduced to its TR39 skeleton and without
/// invisible characters; separators are kept, so that a namespace can still
/// be told from the name.
fn visible_skeleton(name: &str) -> String {
    let name = name.trim();
    ascii_skeleton(name).unwrap_or_else(|| general_skeleton(name))
}

/// [`visible_skeleton`] of a trimmed name, whatever it is written in.
fn general_skeleton(name: &str) -> String {
    let lower = name.to_lowercase();
    let skeleton: String = unicode_security::skeleton(&lower).collect();
    skeleton
        .to_lowercase()
        .chars()
        .filter(|&c| !is_invisible(c))
        .collect()
}

/// [`visible_skeleton`] of a trimmed name written in ASCII, from each
/// character's own, when each is ASCII too (`None` otherwise). The same
/// text: an ASCII name is its own decomposition and holds nothing
/// ignorable or invisible, its lower case is each character's, and the
/// skeleton maps one character at a time, so that, where what each maps
/// to is ASCII (nothing to decompose, nothing to reorder), the skeleton of
/// the name is its characters' skeletons one after the other.
fn ascii_skeleton(name: &str) -> Option<String> {
    /// Per ASCII character: its visible skeleton, where that is ASCII.
    static TABLE: OnceLock<Vec<Option<Box<str>>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        (0_u8..128)
            .map(|byte| {
                let skeleton = general_skeleton(&char::from(byte).to_string());
                skeleton.is_ascii().then(|| skeleton.into_boxed_str())
            })
            .collect()
    });
    if !name.is_ascii() {
        return None;
    }
    let mut out = String::with_capacity(name.len() + 4);
    for byte in name.bytes() {
        out.push_str(table[usize::from(byte)].as_deref()?);
    }
    Some(out)
}

/// Drop the separators of a visible skeleton.
fn squash(text: &str) -> String {
    text.chars().filter(|&c| !is_separator(c)).collect()
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

/// Namespaces a provider puts before every function name, with no identity
/// of their own: OpenAI's internal `functions.` and the `default_api.` of
/// Gemini's generated code. As visible skeletons (see [`visible_skeleton`]).
fn provider_prefixes() -> &'static [String; 2] {
    static PREFIXES: OnceLock<[String; 2]> = OnceLock::new();
    PREFIXES.get_or_init(|| ["functions.", "default_api."].map(visible_skeleton))
}

/// Claude Code's MCP prefix (`mcp__<server>__<tool>`), as a visible skeleton.
fn mcp_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| visible_skeleton("mcp__"))
}

/// What a tool name identifies, once folded (see [`fold`]): the tool, and
/// the server it is namespaced under, if any. `functions.delete_user`,
/// `default_api.Delete_User` and `delete-user` are the tool `deleteuser`
/// with no server; `mcp__db__delete_user` (Claude Code) and
/// `db___delete_user` (Bedrock `AgentCore`) are `deleteuser` on server `db`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolKey {
    pub server: Option<String>,
    pub tool: String,
}

impl ToolKey {
    /// The key of `name`. The checks of one call look its name up in
    /// several indexes; the last key computed on this thread is kept (for a
    /// name of ordinary length), so that the name is folded once.
    #[must_use]
    pub fn of(name: &str) -> ToolKey {
        if name.len() > 256 {
            return ToolKey::compute(name);
        }
        thread_local! {
            static LAST: RefCell<Option<(String, ToolKey)>> = const { RefCell::new(None) };
        }
        LAST.with(|last| {
            if let Some((seen, key)) = &*last.borrow() {
                if seen == name {
                    return key.clone();
                }
            }
            let key = ToolKey::compute(name);
            *last.borrow_mut() = Some((name.to_owned(), key.clone()));
            key
        })
    }

    fn compute(name: &str) -> ToolKey {
        let text = visible_skeleton(name);
        let (server, tool) = split_server(without_provider(&text));
        let server = server.map(squash).filter(|s| !s.is_empty());
        ToolKey {
            server,
            tool: squash(without_provider(tool)),
        }
    }

    /// Whether a call named by one key may reach the tool an entry written
    /// for the other names: the same tool, on the same server or where
    /// either leaves the server open. An entry for `delete_user` applies to
    /// `mcp__db__delete_user`, and an entry for `mcp__db__delete_user` to a
    /// call of `delete_user` (which server runs it cannot be told), but not
    /// to `mcp__crm__delete_user`.
    #[must_use]
    pub fn meets(&self, other: &ToolKey) -> bool {
        self.tool == other.tool
            && (self.server.is_none() || other.server.is_none() || self.server == other.server)
    }
}

/// `text` without its provider namespaces, as often as they are repeated;
/// never the whole name.
fn without_provider(text: &str) -> &str {
    let mut rest = text;
    while let Some(stripped) = provider_prefixes()
        .iter()
        .find_map(|prefix| rest.strip_prefix(prefix.as_str()))
        .filter(|stripped| !squash(stripped).is_empty())
    {
        rest = stripped;
    }
    rest
}

/// `mcp__<server>__<tool>` and `<target>___<tool>` split into server and
/// tool; any other name is a tool alone.
fn split_server(text: &str) -> (Option<&str>, &str) {
    let named = |server: &str, tool: &str| !squash(server).is_empty() && !squash(tool).is_empty();
    if let Some(after) = text.strip_prefix(mcp_prefix()) {
        if let Some((server, tool)) = split_at_underscores(after, 2) {
            if named(server, tool) {
                return (Some(server), tool);
            }
        }
    }
    if let Some((target, tool)) = split_at_underscores(text, 3) {
        if named(target, tool) {
            return (Some(target), tool);
        }
    }
    (None, text)
}

/// `text` split around the first run of `count` underscores, as
/// `split_once` splits it (without setting up a substring search for a
/// short name).
fn split_at_underscores(text: &str, count: usize) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut run = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        run = if byte == b'_' { run + 1 } else { 0 };
        if run == count {
            let start = at + 1 - count;
            return Some((&text[..start], &text[at + 1..]));
        }
    }
    None
}

/// Entries written for tool names, found from a call's name: every entry
/// whose [`ToolKey`] the name's key [meets](ToolKey::meets). A name spelled
/// exactly as an entry costs one hash lookup; any other is folded once.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    keys: Vec<ToolKey>,
    /// The first entry spelled exactly so.
    exact: FxHashMap<String, usize>,
    /// Per entry: every entry its name meets (itself included), in order.
    meets: Vec<Vec<usize>>,
    /// Per folded tool: its entries.
    by_tool: FxHashMap<String, Vec<usize>>,
}

impl ToolIndex {
    /// Add an entry for `name`; its number is the count of entries before.
    pub fn insert(&mut self, name: &str) -> usize {
        let key = ToolKey::of(name);
        let at = self.keys.len();
        let mut mine = Vec::new();
        if let Some(same_tool) = self.by_tool.get(&key.tool) {
            for &other in same_tool {
                if self.keys[other].meets(&key) {
                    self.meets[other].push(at);
                    mine.push(other);
                }
            }
        }
        mine.push(at);
        self.meets.push(mine);
        self.by_tool.entry(key.tool.clone()).or_default().push(at);
        self.keys.push(key);
        self.exact.entry(name.to_owned()).or_insert(at);
        at
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The first entry spelled exactly `name`.
    #[must_use]
    pub fn position(&self, name: &str) -> Option<usize> {
        self.exact.get(name).copied()
    }

    /// An entry whose name is the same tool as `name` once folded (same
    /// tool, same server or both none): `send_email` for `SendEmail`,
    /// `search` for `functions.search`, but not `search` for
    /// `mcp__db__search`.
    #[must_use]
    pub fn same_tool(&self, name: &str) -> Option<usize> {
        if let Some(at) = self.position(name) {
            return Some(at);
        }
        let key = ToolKey::of(name);
        self.by_tool
            .get(&key.tool)?
            .iter()
            .copied()
            .find(|&at| self.keys[at] == key)
    }

    /// Every entry a call named `name` meets, in order of insertion.
    #[must_use]
    pub fn find(&self, name: &str) -> Cow<'_, [usize]> {
        if let Some(&at) = self.exact.get(name) {
            return Cow::Borrowed(&self.meets[at]);
        }
        if self.keys.is_empty() {
            return Cow::Borrowed(&[]);
        }
        let key = ToolKey::of(name);
        match self.by_tool.get(&key.tool) {
            None => Cow::Borrowed(&[]),
            Some(same_tool) => Cow::Owned(
                same_tool
                    .iter()
                    .copied()
                    .filter(|&at| self.keys[at].meets(&key))
                    .collect(),
            ),
        }
    }
}

/// Values written per tool name (`schema`, `required_params`): a call finds
/// every entry written for its tool, whatever the spelling. Two entries for
/// the same tool (`send_email` and `SendEmail`) cannot be told apart, so
/// [`Keyed::insert`] refuses the second.
#[derive(Debug)]
pub(crate) struct Keyed<T> {
    entries: Vec<(String, T)>,
    index: ToolIndex,
}

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Keyed {
            entries: Vec::new(),
            index: ToolIndex::default(),
        }
    }
}

impl<T> Keyed<T> {
    /// Add `value` for `name`; `Err` with the name already written for the
    /// same tool.
    pub(crate) fn insert(&mut self, name: &str, value: T) -> Result<(), &str> {
        if let Some(at) = self.index.same_tool(name) {
            return Err(&self.entries[at].0);
        }
        self.index.insert(name);
        self.entries.push((name.to_owned(), value));
        Ok(())
    }

    /// Every value written for the tool `name` calls.
    pub(crate) fn find(&self, name: &str) -> impl Iterator<Item = &T> + '_ {
        let found = self.index.find(name);
        (0..found.len()).map(move |i| &self.entries[found[i]].1)
    }

    /// [`find`](Self::find), as places among the entries.
    pub(crate) fn find_at(&self, name: &str) -> Cow<'_, [usize]> {
        self.index.find(name)
    }

    /// The value at place `at` (from [`find_at`](Self::find_at)).
    pub(crate) fn value(&self, at: usize) -> &T {
        &self.entries[at].1
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &T)> + '_ {
        self.entries
            .iter()
            .map(|(name, value)| (name.as_str(), value))
    }
}

/// A set of tool names, matched exactly, with their folded forms for
/// look-alike detection and suggestions.
#[derive(Debug, Clone, Default)]
pub struct NameSet {
    names: Vec<String>,
    index: ToolIndex,
    /// `fold` of each name and its length in characters, in the order of
    /// `names`, for suggestions.
    folds: Vec<(String, usize)>,
}

/// A text of at most 64 characters, set to have its optimal string
/// alignment distance to others measured (the distance `strsim`'s
/// `osa_distance` measures, a bit of a machine word a character of the
/// text: Hyyrö's bit-vector algorithm, 2003), a few instructions a
/// character of the other text.
struct Pattern {
    /// Per ASCII character: where the text holds it, a bit a position.
    ascii: [u64; 128],
    /// The same for its other characters.
    other: SmallVec<[(char, u64); 4]>,
    len: usize,
}

impl Pattern {
    /// `text`'s pattern; only its first 64 characters count.
    fn of(text: &str) -> Pattern {
        let mut pattern = Pattern {
            ascii: [0; 128],
            other: SmallVec::new(),
            len: 0,
        };
        for (at, c) in text.chars().take(64).enumerate() {
            let bit = 1_u64 << at;
            match usize::try_from(u32::from(c)).ok().filter(|&c| c < 128) {
                Some(ascii) => pattern.ascii[ascii] |= bit,
                None => match pattern.other.iter_mut().find(|(other, _)| *other == c) {
                    Some((_, bits)) => *bits |= bit,
                    None => pattern.other.push((c, bit)),
                },
            }
            pattern.len = at + 1;
        }
        pattern
    }

    fn positions(&self, c: char) -> u64 {
        match usize::try_from(u32::from(c)).ok().filter(|&c| c < 128) {
            Some(ascii) => self.ascii[ascii],
            None => self
                .other
                .iter()
                .find(|(other, _)| *other == c)
                .map_or(0, |&(_, bits)| bits),
        }
    }

    /// The optimal string alignment distance from the text to `other`.
    fn distance(&self, other: &str) -> usize {
        if self.len == 0 {
            return other.chars().count();
        }
        let last = 1_u64 << (self.len - 1);
        let (mut vp, mut vn, mut d0, mut before) = (!0_u64, 0_u64, 0_u64, 0_u64);
        let mut distance = self.len;
        for c in other.chars() {
            let here = self.positions(c);
            // Where a transposition of this character and the one before
            // it ends a match.
            let swapped = ((!d0 & here) << 1) & before;
            d0 = ((((here & vp).wrapping_add(vp)) ^ vp) | here | vn) | swapped;
            let hp = vn | !(d0 | vp);
            let hn = d0 & vp;
            if hp & last != 0 {
                distance += 1;
            }
            if hn & last != 0 {
                distance -= 1;
            }
            let hp = (hp << 1) | 1;
            let hn = hn << 1;
            vp = hn | !(d0 | hp);
            vn = hp & d0;
            before = here;
        }
        distance
    }
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
        if self.index.position(name).is_some() {
            return;
        }
        self.index.insert(name);
        self.names.push(name.to_owned());
        let folded = fold(name);
        let chars = folded.chars().count();
        self.folds.push((folded, chars));
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
        self.index.position(name).is_some()
    }

    /// The listed name `name` is exactly, or the first listed name of the
    /// same tool once folded, namespaces aside (see [`ToolKey::meets`]).
    #[must_use]
    pub fn matching(&self, name: &str) -> Option<&str> {
        if let Some(at) = self.index.position(name) {
            return Some(&self.names[at]);
        }
        self.index
            .find(name)
            .first()
            .map(|&at| self.names[at].as_str())
    }

    /// The listed name closest to `name`: its look-alike (or its bare name,
    /// for a namespaced one) if there is one, else the one at the smallest
    /// edit distance of the folded forms, compared on their first 64
    /// characters so that an unknown name costs little whatever its length.
    #[must_use]
    pub fn closest(&self, name: &str) -> Option<&str> {
        if let Some(found) = self.matching(name) {
            return Some(found);
        }
        // (Its first 64 characters.)
        let pattern = Pattern::of(&fold(name));
        let chars = pattern.len;
        // The first name at the smallest distance. A name whose length
        // alone puts it as far as the best so far is not measured: the
        // distance is at least the difference in length.
        let mut best: Option<(usize, usize)> = None;
        for (at, (candidate, length)) in self.folds.iter().enumerate() {
            if best.is_some_and(|(shortest, _)| chars.abs_diff(*length) >= shortest) {
                continue;
            }
            let distance = pattern.distance(candidate);
            if best.is_none_or(|(shortest, _)| distance < shortest) {
                best = Some((distance, at));
            }
        }
        best.map(|(_, at)| self.names[at].as_str())
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

    fn key(server: Option<&str>, tool: &str) -> ToolKey {
        ToolKey {
            server: server.map(str::to_owned),
            tool: tool.to_owned(),
        }
    }

    #[test]
    fn namespaces_fold_to_the_tool() {
        for name in [
            "delete_user",
            "functions.delete_user",
            "default_api.delete_user",
            "Functions.Delete_User",
            "functions.default_api.delete-user",
            " functions.delete_user ",
            "functi\u{043E}ns.delete_user",
            "functions\u{FF0E}delete_user",
        ] {
            assert_eq!(ToolKey::of(name), key(None, "deleteuser"), "{name:?}");
        }
        for name in [
            "mcp__db__delete_user",
            "MCP__DB__DeleteUser",
            "db___delete_user",
            "mcp__db__functions.delete_user",
        ] {
            let found = ToolKey::of(name);
            assert_eq!(found.tool, "deleteuser", "{name:?}");
            assert_eq!(found.server.as_deref(), Some("db"), "{name:?}");
        }
        assert_eq!(
            ToolKey::of("mcp__plugin_x_github__create_issue"),
            key(Some("pluginxgithub"), "createissue")
        );
        // Not a namespace: the name is the tool.
        for (name, tool) in [
            ("functions_delete_user", "functionsdeleteuser"),
            ("functions.", "functions"),
            ("mcp__only", "rncponly"),
            ("___x", "x"),
        ] {
            assert_eq!(ToolKey::of(name), key(None, tool), "{name:?}");
        }
    }

    #[test]
    fn keys_meet_on_the_same_tool_and_an_open_or_equal_server() {
        let bare = ToolKey::of("delete_user");
        let db = ToolKey::of("mcp__db__delete_user");
        let crm = ToolKey::of("mcp__crm__delete_user");
        assert!(bare.meets(&db) && db.meets(&bare));
        assert!(db.meets(&ToolKey::of("db___Delete-User")));
        assert!(!db.meets(&crm));
        assert!(!bare.meets(&ToolKey::of("delete_users")));
    }

    #[test]
    fn an_index_finds_every_entry_of_the_tool() {
        let mut index = ToolIndex::default();
        for name in [
            "send_email",
            "search",
            "mcp__a__search",
            "mcp__b__search",
            "send_email",
        ] {
            index.insert(name);
        }
        assert_eq!(&*index.find("send_email"), [0, 4]);
        assert_eq!(&*index.find("Send-Email"), [0, 4]);
        assert_eq!(&*index.find("functions.sendEmail"), [0, 4]);
        assert_eq!(&*index.find("search"), [1, 2, 3]);
        assert_eq!(&*index.find("mcp__a__search"), [1, 2]);
        assert_eq!(&*index.find("mcp__c__search"), [1]);
        assert!(index.find("other").is_empty());
        assert_eq!(index.position("mcp__b__search"), Some(3));
        assert_eq!(index.same_tool("SendEmail"), Some(0));
        assert_eq!(index.same_tool("functions.search"), Some(1));
        assert_eq!(index.same_tool("mcp__c__search"), None);
        assert!(ToolIndex::default().find("x").is_empty());
    }

    #[test]
    fn keyed_refuses_two_spellings_of_one_tool() {
        let mut map = Keyed::default();
        assert!(map.insert("send_email", 1).is_ok());
        assert_eq!(map.insert("SendEmail", 2), Err("send_email"));
        assert_eq!(map.insert("functions.send_email", 3), Err("send_email"));
        assert!(map.insert("mcp__mail__send_email", 4).is_ok());
        assert_eq!(map.find("SEND_EMAIL").copied().collect::<Vec<_>>(), [1, 4]);
        assert_eq!(
            map.find("mcp__other__send_email")
                .copied()
                .collect::<Vec<_>>(),
            [1]
        );
    }

    #[test]
    fn forbidden_names_catch_namespaced_spellings() {
        let set = NameSet::new(["delete_user", "mcp__db__drop_table"]);
        for name in [
            "functions.delete_user",
            "default_api.delete_user",
            "mcp__db__delete_user",
            "crm___DeleteUser",
        ] {
            assert_eq!(set.matching(name), Some("delete_user"), "{name:?}");
        }
        assert_eq!(set.matching("drop_table"), Some("mcp__db__drop_table"));
        assert_eq!(set.matching("mcp__other__drop_table"), None);
        assert!(!set.contains("functions.delete_user"));
        assert_eq!(set.closest("functions.delete_usr"), Some("delete_user"));
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

    #[test]
    fn ascii_names_skeleton_as_any_name() {
        let every: String = (0_u8..128).map(char::from).collect();
        assert_eq!(visible_skeleton(&every), general_skeleton(every.trim()));
        for name in [
            "rn",
            "m",
            "l1I|",
            "0O",
            "mcp__db__x",
            "`a`",
            "Delete_User",
            " a b ",
        ] {
            assert_eq!(
                visible_skeleton(name),
                general_skeleton(name.trim()),
                "{name:?}"
            );
        }
        // What each character maps to is ASCII for every letter, digit and
        // separator a tool name is written with.
        assert!(ascii_skeleton("azAZ09_-./:").is_some());
    }

    proptest::proptest! {
        /// A name splits where `split_once` splits it.
        #[test]
        fn underscores_split_as_split_once(text in "[a_\u{e9}]{0,12}", count in 2_usize..4) {
            let needle = "_".repeat(count);
            proptest::prop_assert_eq!(split_at_underscores(&text, count), text.split_once(needle.as_str()));
        }

        /// The bit-vector distance is the one measured cell by cell.
        #[test]
        fn patterns_measure_the_osa_distance(
            text in proptest::prop_oneof!["[a-d]{0,12}", "[a-z_\u{430}\u{e9}]{0,70}", "[ab\u{430}]{60,64}"],
            other in proptest::prop_oneof!["[a-d]{0,12}", "[a-z_\u{430}\u{e9}]{0,80}"],
        ) {
            let counted: String = text.chars().take(64).collect();
            proptest::prop_assert_eq!(Pattern::of(&text).distance(&other), strsim::osa_distance(&counted, &other));
        }

        /// Every ASCII name, and any other, folds as the general reduction
        /// folds it.
        #[test]
        fn skeletons_are_the_general_ones(name in proptest::prop_oneof!["[ -~]{0,24}", "[\\x00-\\x7f]{0,12}", "[a-z_\u{430}\u{0300}m`]{0,12}"]) {
            proptest::prop_assert_eq!(visible_skeleton(&name), general_skeleton(name.trim()));
        }

        /// The suggestion is the first name at the smallest distance, as
        /// measuring every name finds it.
        #[test]
        fn suggestions_are_the_first_nearest(
            names in proptest::collection::vec(proptest::prop_oneof!["[a-d_]{1,9}", "[a-z0-9_!é\u{430}]{1,14}"], 1..12),
            name in proptest::prop_oneof!["[a-dA-D_]{0,12}", "[a-zA-Z0-9_!é\u{430}]{0,16}"],
        ) {
            let set = NameSet::new(names.iter().map(String::as_str));
            let folded: String = fold(&name).chars().take(64).collect();
            let expected = set.matching(&name).or_else(|| {
                set.folds
                    .iter()
                    .zip(&set.names)
                    .map(|((candidate, _), listed)| (strsim::osa_distance(&folded, candidate), listed))
                    .min_by_key(|(distance, _)| *distance)
                    .map(|(_, listed)| listed.as_str())
            });
            proptest::prop_assert_eq!(set.closest(&name), expected);
        }
    }
}
