//! `phasecheck.toml`: per-project settings for `phasecheck lint` (and `[test]` for
//! `phasecheck test`).
//!
//! ```toml
//! [rules]                 # level per rule (name or code) or per class: allow | warn | deny
//! stale-token = "deny"
//! perf = "allow"
//!
//! [[params]]              # parameter values for the files a glob matches (relative to this file)
//! glob = "corpus/**/big_*.phase"
//! values = { K = 64 }
//!
//! [limits]                # search limits
//! max-states = 1000000
//! max-memory = "4G"     # one file's search, within its share of --max-memory (or bytes)
//! max-loop-trips = 1000
//! max-time = 600         # seconds per file; 0 for no limit
//!
//! [test]                  # `phasecheck test` (which reads nothing else of this file)
//! known-gaps = "known-gaps.txt"   # relative to this file; `--known-gaps` overrides it
//! ```
//!
//! Each `.phase` file uses the nearest `phasecheck.toml` found by walking up from its folder.
//! A class entry applies first, a rule entry overrides it; the command line overrides both.

use checker::{CheckOptions, Class, Rule};
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "phasecheck.toml";

/// What to do with a rule's findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Drop its findings.
    Allow,
    /// Report as warnings.
    Warn,
    /// Report as errors.
    Deny,
}

/// What a level applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Class(Class),
    Rule(&'static Rule),
}

impl Target {
    /// A rule name or code, or a class name (`deadlock`, `ub`, `race`, `perf`).
    pub fn parse(s: &str) -> Option<Target> {
        let class = match s.to_ascii_lowercase().as_str() {
            "deadlock" => Some(Class::Deadlock),
            "ub" => Some(Class::Ub),
            "race" => Some(Class::Race),
            "perf" => Some(Class::Perf),
            _ => None,
        };
        class
            .map(Target::Class)
            .or_else(|| checker::rules::find(s).map(Target::Rule))
    }

    pub fn matches(self, rule: &Rule) -> bool {
        match self {
            Target::Class(c) => rule.class == c,
            Target::Rule(r) => r == rule,
        }
    }

    fn is_class(self) -> bool {
        matches!(self, Target::Class(_))
    }
}

/// An "unknown rule" message with a did-you-mean hint.
pub fn unknown_rule(name: &str) -> String {
    match checker::lints::suppress::did_you_mean(name) {
        Some(r) => format!(
            "`{name}` is not a rule or class (did you mean `{}`?)",
            r.name
        ),
        None => format!(
            "`{name}` is not a rule or class (`phasecheck rules` lists them; classes are \
             deadlock, ub, race, perf)"
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    rules: BTreeMap<String, Level>,
    #[serde(default)]
    params: Vec<RawParams>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    test: RawTest,
}

/// `[test]`: settings of `phasecheck test`.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTest {
    /// The known-gaps list, relative to the configuration file.
    known_gaps: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParams {
    glob: String,
    values: BTreeMap<String, i64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLimits {
    max_states: Option<u64>,
    max_memory: Option<RawSize>,
    max_loop_trips: Option<u32>,
    /// Seconds; 0 for no limit.
    max_time: Option<u64>,
}

/// A size: bytes, or a string with a unit (`"4G"`, `"512M"`).
enum RawSize {
    Bytes(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: a string such as \"4G\" or \"512M\", or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawSize, E> {
                u64::try_from(v)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Search limits a config (or the command line) may set; `None` keeps the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_states: Option<u64>,
    /// The most memory one file's search may take (resident bytes; within its share of the
    /// run's `--max-memory`, `crate::budget`).
    pub max_memory: Option<u64>,
    pub max_loop_trips: Option<u32>,
    /// `Some(None)`: explicitly no time limit.
    pub max_time: Option<Option<std::time::Duration>>,
}

impl Limits {
    /// `self` where set, else `base`.
    pub fn over(self, base: Limits) -> Limits {
        Limits {
            max_states: self.max_states.or(base.max_states),
            max_memory: self.max_memory.or(base.max_memory),
            max_loop_trips: self.max_loop_trips.or(base.max_loop_trips),
            max_time: self.max_time.or(base.max_time),
        }
    }

    pub fn options(self) -> CheckOptions {
        let d = CheckOptions::default();
        CheckOptions {
            max_states: self.max_states.unwrap_or(d.max_states),
            max_memory_bytes: self.max_memory.unwrap_or(d.max_memory_bytes),
            max_loop_trips: self.max_loop_trips.unwrap_or(d.max_loop_trips),
            max_time: self.max_time.unwrap_or(d.max_time),
            ..d
        }
    }
}

/// A loaded, validated `phasecheck.toml`.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    /// Class levels first, then rule levels: later entries win.
    pub levels: Vec<(Target, Level)>,
    /// Globs are matched against paths relative to the config's folder.
    pub params: Vec<(GlobMatcher, Vec<(String, i64)>)>,
    pub limits: Limits,
    /// `[test] known-gaps`, resolved against the configuration file's folder.
    pub known_gaps: Option<PathBuf>,
}

/// A configuration file that cannot be used; exit code 2.
#[derive(Debug)]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration {}: {}",
            self.path.display(),
            self.message.trim_end()
        )
    }
}

impl Config {
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let mut levels = Vec::new();
        for (name, level) in &raw.rules {
            let target = Target::parse(name)
                .ok_or_else(|| err(format!("key `rules.{name}`: {}", unknown_rule(name))))?;
            levels.push((target, *level));
        }
        // Classes first so that a rule entry overrides its class.
        levels.sort_by_key(|(t, _)| !t.is_class());
        let mut params = Vec::new();
        for (i, p) in raw.params.iter().enumerate() {
            let glob = GlobBuilder::new(&p.glob)
                .literal_separator(true)
                .build()
                .map_err(|e| err(format!("key `params[{i}].glob`: {e}")))?;
            params.push((
                glob.compile_matcher(),
                p.values.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            ));
        }
        let max_memory = match raw.limits.max_memory {
            None => None,
            Some(RawSize::Bytes(0)) => {
                return Err(err("key `limits.max-memory`: must be more than 0".into()));
            }
            Some(RawSize::Bytes(n)) => Some(n),
            Some(RawSize::Text(t)) => Some(
                crate::args::parse_size(&t)
                    .map_err(|e| err(format!("key `limits.max-memory`: {e}")))?,
            ),
        };
        let limits = Limits {
            max_states: raw.limits.max_states,
            max_memory,
            max_loop_trips: raw.limits.max_loop_trips,
            max_time: raw
                .limits
                .max_time
                .map(|s| (s > 0).then(|| std::time::Duration::from_secs(s))),
        };
        if limits.max_states == Some(0) {
            return Err(err("key `limits.max-states`: must be at least 1".into()));
        }
        let known_gaps = match raw.test.known_gaps {
            Some(p) if p.as_os_str().is_empty() => {
                return Err(err("key `test.known-gaps`: an empty path".into()));
            }
            Some(p) => Some(path.parent().unwrap_or(Path::new("")).join(p)),
            None => None,
        };
        Ok(Config {
            path: path.to_path_buf(),
            levels,
            params,
            limits,
            known_gaps,
        })
    }

    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            message: format!("cannot read it: {e}"),
        })?;
        Config::parse(path, &text)
    }

    /// Parameter values for `file` (later `[[params]]` entries win).
    pub fn params_for(&self, file: &Path) -> Vec<(String, i64)> {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        let rel = relative_to(file, dir);
        let mut out: Vec<(String, i64)> = Vec::new();
        for (glob, values) in &self.params {
            if glob.is_match(&rel) {
                for (k, v) in values {
                    out.retain(|(n, _)| n != k);
                    out.push((k.clone(), *v));
                }
            }
        }
        out
    }
}

/// `file` relative to `dir`, comparing absolute forms; `file` itself when it is not below.
fn relative_to(file: &Path, dir: &Path) -> PathBuf {
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|c| c.join(p))
                .unwrap_or_else(|_| p.to_path_buf())
        }
    };
    let (f, d) = (normalize(&abs(file)), normalize(&abs(dir)));
    f.strip_prefix(&d).map(Path::to_path_buf).unwrap_or(f)
}

/// Remove `.` and `..` components without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Finds the nearest `phasecheck.toml` above each file, loading each one once.
#[derive(Default)]
pub struct Finder {
    /// Folder -> the config that governs it (`None`: none up to the root).
    by_dir: BTreeMap<PathBuf, Option<std::sync::Arc<Config>>>,
}

impl Finder {
    pub fn for_file(&mut self, file: &Path) -> Result<Option<std::sync::Arc<Config>>, ConfigError> {
        let start = file
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            })
            .unwrap_or_else(|| PathBuf::from("."));
        let start = std::fs::canonicalize(&start).unwrap_or(start);
        let mut visited = Vec::new();
        let mut dir = Some(start.as_path());
        let mut found = None;
        while let Some(d) = dir {
            if let Some(hit) = self.by_dir.get(d) {
                found = hit.clone();
                break;
            }
            visited.push(d.to_path_buf());
            let candidate = d.join(FILE_NAME);
            if candidate.is_file() {
                found = Some(std::sync::Arc::new(Config::load(&candidate)?));
                break;
            }
            dir = d.parent();
        }
        for d in visited {
            self.by_dir.insert(d, found.clone());
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels_params_and_limits() {
        let c = Config::parse(
            Path::new("/p/phasecheck.toml"),
            r#"
            [rules]
            stale-token = "deny"
            perf = "allow"
            PC400 = "warn"
            [[params]]
            glob = "corpus/**/big_*.phase"
            values = { K = 64, STAGES = 4 }
            [limits]
            max-states = 1000
            max-time = 30
            "#,
        )
        .unwrap();
        assert_eq!(c.levels.len(), 3);
        assert!(matches!(
            c.levels[0],
            (Target::Class(Class::Perf), Level::Allow)
        ));
        assert_eq!(c.limits.max_states, Some(1000));
        assert_eq!(
            c.limits.options().max_time,
            Some(std::time::Duration::from_secs(30))
        );
        let sized = |v: &str| {
            Config::parse(
                Path::new("/p/phasecheck.toml"),
                &format!("[limits]\nmax-memory = {v}\n"),
            )
            .map(|c| c.limits.max_memory)
        };
        assert_eq!(sized("\"4G\"").unwrap(), Some(4 << 30));
        assert_eq!(sized("1048576").unwrap(), Some(1 << 20));
        let e = sized("\"4 gigs\"").unwrap_err().to_string();
        assert!(
            e.contains("limits.max-memory") && e.contains("not a size"),
            "{e}"
        );
        assert!(sized("0").is_err());
        for bad in ["-1", "1.5", "true"] {
            let e = sized(bad).unwrap_err().to_string();
            assert!(e.contains("a size"), "{bad}: {e}");
        }
        let unlimited =
            Config::parse(Path::new("/p/phasecheck.toml"), "[limits]\nmax-time = 0\n").unwrap();
        assert_eq!(unlimited.limits.options().max_time, None);
        assert_eq!(
            Limits::default().options().max_time,
            CheckOptions::default().max_time
        );
        assert_eq!(
            c.params_for(Path::new("/p/corpus/x/big_one.phase")),
            vec![("K".to_string(), 64), ("STAGES".to_string(), 4)]
        );
        assert!(c.params_for(Path::new("/p/corpus/small.phase")).is_empty());
        // `*` does not cross folders.
        assert!(
            c.params_for(Path::new("/p/corpus/big_x/a.phase"))
                .is_empty()
        );
    }

    #[test]
    fn known_gaps_are_relative_to_the_file() {
        let c = Config::parse(
            Path::new("/p/corpus/phasecheck.toml"),
            "[test]\nknown-gaps = \"known-gaps.txt\"\n",
        )
        .unwrap();
        assert_eq!(
            c.known_gaps.as_deref(),
            Some(Path::new("/p/corpus/known-gaps.txt"))
        );
        let e = Config::parse(Path::new("phasecheck.toml"), "[test]\nknown-gap = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("known-gap"), "{e}");
        assert!(
            Config::parse(Path::new("phasecheck.toml"), "[test]\nknown-gaps = \"\"\n").is_err()
        );
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let e = Config::parse(
            Path::new("cfg/phasecheck.toml"),
            "[rules]\nstale-tokn = \"deny\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cfg/phasecheck.toml"), "{e}");
        assert!(e.contains("rules.stale-tokn"), "{e}");
        assert!(e.contains("did you mean `stale-token`"), "{e}");
        let e = Config::parse(
            Path::new("phasecheck.toml"),
            "[rules]\nstale-token = \"deni\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("deni") && e.contains("line 2"), "{e}");
        let e = Config::parse(Path::new("phasecheck.toml"), "[limits]\nmax-stats = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max-stats"), "{e}");
    }
}
