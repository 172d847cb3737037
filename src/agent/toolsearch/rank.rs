//! Ranking for tool search: BM25F over a tool's name, title, description and parameter names
//! (each field weighted), with a small stemmer, stop words and a few verb synonyms; exact names
//! and a `server:` prefix come first (see [`Index::search`]).

use std::collections::HashMap;

/// One searchable tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// The registered name (`mcp__server__tool`).
    pub name: String,
    /// The server that owns it.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// Display name.
    pub title: String,
    /// What it does.
    pub description: String,
    /// The names of its input schema's properties (and their descriptions' words).
    pub params: Vec<String>,
}

/// How much a term in each field counts.
const W_NAME: f64 = 3.0;
const W_TITLE: f64 = 2.0;
const W_DESC: f64 = 1.0;
const W_PARAM: f64 = 0.5;
const W_SERVER: f64 = 1.5;
/// BM25's term-frequency saturation and length normalization.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// The weight of a synonym's match against the word the query said.
const SYNONYM: f64 = 0.4;
/// The most of each field that is indexed (a server's huge text must not cost the index).
const MAX_FIELD: usize = 4096;

/// Words that say nothing about which tool is meant.
const STOP: &[&str] = &[
    "a", "an", "the", "to", "of", "for", "in", "on", "and", "or", "with", "is", "it", "its",
    "from", "by", "this", "that", "these", "those", "be", "as", "at", "i", "my", "me", "we", "our",
    "you", "your", "want", "need", "please", "how", "what", "which", "are", "there", "do", "does",
    "did", "can", "some", "any", "all", "into", "onto", "up", "out", "so", "if", "then", "than",
    "them", "they", "has", "have", "about", "give", "tell", "let", "via", "using", "use", "tool",
    "should", "will", "would", "just", "one", "each", "every",
];

/// Words a request says for what a tool's text says otherwise (stemmed when used).
const SYNONYMS: &[(&str, &[&str])] = &[
    ("remove", &["delete", "uninstall"]),
    ("delete", &["remove"]),
    ("erase", &["delete"]),
    ("forget", &["delete"]),
    ("make", &["create"]),
    ("new", &["create"]),
    ("add", &["create", "append"]),
    ("open", &["create", "navigate"]),
    ("start", &["create", "run"]),
    ("show", &["get", "list"]),
    ("see", &["show", "get"]),
    ("display", &["get", "list"]),
    ("view", &["get", "show"]),
    ("find", &["search"]),
    ("look", &["search", "find"]),
    ("lookup", &["search", "get"]),
    ("fetch", &["get"]),
    ("load", &["read"]),
    ("dump", &["read", "entire"]),
    ("send", &["post"]),
    ("write", &["post", "create"]),
    ("answer", &["reply"]),
    ("react", &["reaction"]),
    ("change", &["update", "edit"]),
    ("modify", &["update", "edit"]),
    ("replace", &["edit"]),
    ("rename", &["move"]),
    ("switch", &["checkout", "change"]),
    ("history", &["log"]),
    ("stage", &["add", "staging"]),
    ("unstage", &["reset"]),
    ("folder", &["directory"]),
    ("directory", &["folder"]),
    ("repo", &["repository"]),
    ("web", &["url", "internet", "browser"]),
    ("page", &["browser"]),
    ("site", &["url"]),
    ("run", &["execute"]),
    ("execute", &["run"]),
    ("picture", &["image", "screenshot"]),
    ("bug", &["issue"]),
    ("ticket", &["issue"]),
    ("pr", &["pull", "request"]),
    ("remember", &["create", "entity", "observation"]),
    ("fact", &["observation"]),
    ("memory", &["graph", "knowledge"]),
    ("clock", &["time"]),
    ("now", &["current"]),
    ("timezone", &["time"]),
    ("address", &["geocode"]),
    ("coordinates", &["geocode"]),
    ("route", &["directions"]),
    ("drive", &["distance", "travel"]),
    ("high", &["elevation"]),
    ("sea", &["elevation"]),
    ("replicas", &["scale"]),
    ("kubectl", &["kubernetes"]),
    ("k8s", &["kubernetes"]),
    ("cluster", &["kubernetes"]),
    ("usage", &["consumption", "top"]),
    ("think", &["thought", "problem"]),
    ("emoji", &["reaction"]),
];

/// The words of `text`: lowercase, split at anything not a letter or digit and at camelCase
/// humps, stop words dropped, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = std::mem::take(word);
            if !STOP.contains(&w.as_str()) {
                out.push(stem(&w));
            }
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                flush(&mut word, &mut out);
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A light suffix stemmer: enough that "branches", "branch" and "branching" meet.
pub fn stem(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || !w.is_ascii() {
        return w.to_owned();
    }
    for (suffix, keep, min) in [
        ("ies", "y", 5),
        ("sses", "ss", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("ches", "ch", 5),
        ("shes", "sh", 5),
        ("xes", "x", 4),
        ("es", "e", 5),
        ("s", "", 4),
        ("e", "", 4),
    ] {
        if n >= min && w.ends_with(suffix) && !(suffix == "s" && w.ends_with("ss")) {
            let base = &w[..w.len() - suffix.len()];
            let mut s = format!("{base}{keep}");
            // "creates" -> "create" -> "creat", as "created" and "creating" become.
            if keep == "e" {
                s.pop();
            }
            return s;
        }
    }
    w.to_owned()
}

/// A BM25F index over tools.
#[derive(Debug, Default)]
pub struct Index {
    docs: Vec<Doc>,
    /// Per doc: weighted term frequencies.
    tf: Vec<HashMap<String, f64>>,
    /// Per doc: weighted length.
    len: Vec<f64>,
    avg_len: f64,
    /// In how many docs each term occurs.
    df: HashMap<String, usize>,
}

/// Cuts `s` to at most `max` bytes at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Index {
    /// Indexes `docs`.
    pub fn new(docs: Vec<Doc>) -> Self {
        let mut tf = Vec::with_capacity(docs.len());
        let mut len = Vec::with_capacity(docs.len());
        let mut df: HashMap<String, usize> = HashMap::new();
        for d in &docs {
            let mut f: HashMap<String, f64> = HashMap::new();
            let mut l = 0.0;
            let params = d.params.join(" ");
            for (text, w) in [
                (d.tool.as_str(), W_NAME),
                (d.title.as_str(), W_TITLE),
                (d.description.as_str(), W_DESC),
                (params.as_str(), W_PARAM),
                (d.server.as_str(), W_SERVER),
            ] {
                // A server's huge text costs the index no more than MAX_FIELD bytes a field.
                for t in terms(cut(text, MAX_FIELD)) {
                    *f.entry(t).or_default() += w;
                    l += w;
                }
            }
            for t in f.keys() {
                *df.entry(t.clone()).or_default() += 1;
            }
            tf.push(f);
            len.push(l);
        }
        let avg_len = if len.is_empty() {
            1.0
        } else {
            (len.iter().sum::<f64>() / len.len() as f64).max(1.0)
        };
        Self {
            docs,
            tf,
            len,
            avg_len,
            df,
        }
    }

    /// The indexed tools, in the order given.
    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    fn idf(&self, term: &str) -> f64 {
        let n = self.docs.len() as f64;
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    fn bm25(&self, i: usize, query: &[(String, f64)]) -> f64 {
        let norm = K1 * (1.0 - B + B * self.len[i] / self.avg_len);
        query
            .iter()
            .map(|(t, qw)| {
                let f = self.tf[i].get(t).copied().unwrap_or(0.0);
                if f == 0.0 {
                    0.0
                } else {
                    qw * self.idf(t) * f * (K1 + 1.0) / (f + norm)
                }
            })
            .sum()
    }

    /// The indices of the best `limit` tools for `query`, best first. A query that is a tool's
    /// exact name (registered or on its server) puts that tool first; `server` (or a query
    /// `server: words`, for a server of the index) keeps to that server's tools, and a query
    /// that is a server's name alone lists its tools in order. A server is named exactly (its
    /// configured name, case included), never one whose name merely looks alike.
    pub fn search(&self, query: &str, server: Option<&str>, limit: usize) -> Vec<usize> {
        let mut query = query.trim();
        let mut server = server.map(str::trim).filter(|s| !s.is_empty());
        if server.is_none() {
            if let Some((s, rest)) = query.split_once(':') {
                let s = s.trim();
                if self.docs.iter().any(|d| d.server == s) {
                    server = Some(s);
                    query = rest.trim();
                }
            }
        }
        // A server is named exactly, case included: `GitHub` is not `github`.
        let in_scope = |d: &Doc| server.is_none_or(|s| d.server == s);
        let mut out: Vec<usize> = Vec::new();
        // Exact names first.
        for (i, d) in self.docs.iter().enumerate() {
            if in_scope(d)
                && !query.is_empty()
                && (d.name.eq_ignore_ascii_case(query) || d.tool.eq_ignore_ascii_case(query))
            {
                out.push(i);
            }
        }
        // A server named alone: its tools in order.
        let bare_server =
            query.is_empty() || (server.is_none() && self.docs.iter().any(|d| d.server == query));
        if bare_server {
            let s = server.unwrap_or(query);
            for (i, d) in self.docs.iter().enumerate() {
                if d.server == s && !out.contains(&i) {
                    out.push(i);
                }
            }
            out.truncate(limit);
            return out;
        }
        let mut q: Vec<(String, f64)> = Vec::new();
        let mut add = |t: String, w: f64| match q.iter_mut().find(|(x, _)| *x == t) {
            Some((_, old)) => *old = old.max(w),
            None => q.push((t, w)),
        };
        for t in terms(query) {
            if let Some((_, syn)) = SYNONYMS.iter().find(|(w, _)| stem(w) == t) {
                for s in *syn {
                    add(stem(s), SYNONYM);
                }
            }
            add(t, 1.0);
        }
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter(|(i, d)| in_scope(d) && !out.contains(i))
            .map(|(i, _)| (i, self.bm25(i, &q)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.extend(scored.into_iter().map(|(i, _)| i));
        out.truncate(limit);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(server: &str, tool: &str, description: &str, params: &[&str]) -> Doc {
        Doc {
            name: format!("mcp__{server}__{tool}"),
            server: server.into(),
            tool: tool.into(),
            title: String::new(),
            description: description.into(),
            params: params.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    fn index() -> Index {
        Index::new(vec![
            doc(
                "git",
                "git_log",
                "Shows the commit logs",
                &["repo_path", "max_count"],
            ),
            doc(
                "git",
                "git_status",
                "Shows the working tree status",
                &["repo_path"],
            ),
            doc(
                "time",
                "convert_time",
                "Convert time between timezones",
                &["source_timezone", "time", "target_timezone"],
            ),
            doc(
                "time",
                "get_current_time",
                "Get current time in a specific timezone",
                &["timezone"],
            ),
            doc(
                "slack",
                "slack_post_message",
                "Post a new message to a Slack channel",
                &["channel_id", "text"],
            ),
            doc(
                "github",
                "create_issue",
                "Create a new issue in a GitHub repository",
                &["owner", "repo", "title", "body"],
            ),
            doc(
                "gitlab",
                "create_issue",
                "Create a new issue in a GitLab project",
                &["project_id", "title"],
            ),
        ])
    }

    fn names(ix: &Index, hits: &[usize]) -> Vec<String> {
        hits.iter().map(|i| ix.docs()[*i].name.clone()).collect()
    }

    #[test]
    fn terms_split_case_and_underscores_drop_stop_words_and_stem() {
        assert_eq!(
            terms("listBranches of the_repo"),
            ["list", "branch", "repo"]
        );
        assert_eq!(
            terms("Creates, created, creating"),
            ["creat", "creat", "creat"]
        );
        assert_eq!(terms("timezones"), ["timezon"]);
        assert_eq!(terms(""), Vec::<String>::new());
    }

    #[test]
    fn a_purpose_finds_its_tool_first() {
        let ix = index();
        let hit = |q: &str| names(&ix, &ix.search(q, None, 3)).first().cloned();
        assert_eq!(
            hit("what time is it now in Tokyo").as_deref(),
            Some("mcp__time__get_current_time")
        );
        assert_eq!(
            hit("convert 3pm between two timezones").as_deref(),
            Some("mcp__time__convert_time")
        );
        assert_eq!(
            hit("send a message to the team channel").as_deref(),
            Some("mcp__slack__slack_post_message")
        );
        assert_eq!(
            hit("history of commits").as_deref(),
            Some("mcp__git__git_log")
        );
        assert!(ix.search("zzzz qqqq", None, 5).is_empty());
    }

    #[test]
    fn exact_names_come_first_and_a_server_prefix_keeps_to_its_server() {
        let ix = index();
        // "git_status" is an exact name: first, though "status" words score elsewhere too.
        assert_eq!(
            names(&ix, &ix.search("git_status", None, 1)),
            ["mcp__git__git_status"]
        );
        assert_eq!(
            names(&ix, &ix.search("MCP__TIME__CONVERT_TIME", None, 1)),
            ["mcp__time__convert_time"]
        );
        // The same words, two servers: the prefix and the argument pick one.
        let all = names(&ix, &ix.search("create an issue", None, 5));
        assert!(
            all.contains(&"mcp__github__create_issue".to_owned())
                && all.contains(&"mcp__gitlab__create_issue".to_owned()),
            "{all:?}"
        );
        assert_eq!(
            names(&ix, &ix.search("gitlab: create an issue", None, 5)),
            ["mcp__gitlab__create_issue"]
        );
        assert_eq!(
            names(&ix, &ix.search("create an issue", Some("github"), 5)),
            ["mcp__github__create_issue"]
        );
        // Exact name under a server prefix.
        assert_eq!(
            names(&ix, &ix.search("gitlab:create_issue", None, 5)),
            ["mcp__gitlab__create_issue"]
        );
        // A server alone lists its tools; an unknown prefix is just words.
        assert_eq!(
            names(&ix, &ix.search("git", None, 5)),
            ["mcp__git__git_log", "mcp__git__git_status"]
        );
        assert_eq!(
            names(&ix, &ix.search("git:", None, 5)),
            ["mcp__git__git_log", "mcp__git__git_status"]
        );
        // A server's name is exact: another case is no server (its words are just words).
        assert!(ix.search("create an issue", Some("GitHub"), 5).is_empty());
        assert!(!names(&ix, &ix.search("GitLab: create an issue", None, 5))
            .iter()
            .all(|n| n.starts_with("mcp__gitlab__")));
        assert!(ix
            .search("nosuch: commit logs", None, 5)
            .first()
            .is_some_and(|i| ix.docs()[*i].name == "mcp__git__git_log"));
    }

    #[test]
    fn limits_and_an_empty_index_hold() {
        let ix = index();
        assert_eq!(ix.search("time", None, 1).len(), 1);
        assert!(ix.search("", None, 5).is_empty());
        let empty = Index::new(Vec::new());
        assert!(empty.search("anything", None, 5).is_empty());
    }
}
