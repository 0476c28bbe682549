//! The crate's layers depend one way (ARCHITECTURE.md): each top-level
//! module may use only the modules listed before it in `LAYERS`, and no two
//! files of one module use each other. Checked from the source text, so
//! `cargo test --test layers` tells anyone whether a change broke it.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first. A module may use those before it, never one after it.
/// Modules on one line of ARCHITECTURE.md's diagram (snapshot, direct,
/// tree, hermite, render; the front ends) must not use each other either:
/// their order here is only the order of the list.
const LAYERS: &[&str] = &[
    "error", "gpu", "state", "snapshot", "direct", "tree", "hermite", "render", "run", "app",
    "cluster", "cli", "web", "g6",
];

/// Modules of the same layer (may not use each other).
const PEERS: &[&[&str]] = &[
    &["snapshot", "direct", "tree", "hermite", "render"],
    &["app", "cluster"],
    &["cli", "web", "g6"],
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments (doc comments name other
/// modules freely).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(k) => &l[..k],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// First path segments after `prefix` (`crate::`, `super::`), including
/// those of a `prefix{a::X, b}` group.
fn segments_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, _) in code.match_indices(prefix) {
        let rest = &code[k + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start => {
                        out.insert(ident_at(&group[i..]).to_string());
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident_at(rest).to_string());
        }
    }
    out
}

#[test]
fn layers_depend_one_way_and_files_do_not_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut problems = Vec::new();
    // file (relative) -> sibling files it uses, per directory.
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
            continue;
        }
        let module = parts[0].clone();
        let Some(me) = rank(&module) else {
            problems.push(format!(
                "{}: module '{module}' is not in LAYERS",
                rel.display()
            ));
            continue;
        };
        let text = code(&std::fs::read_to_string(file).unwrap());
        for used in segments_after(&text, "crate::") {
            if used == module || matches!(used.as_str(), "Error" | "Result") {
                continue;
            }
            match rank(&used) {
                Some(r) if r < me => {
                    if PEERS
                        .iter()
                        .any(|p| p.contains(&module.as_str()) && p.contains(&used.as_str()))
                    {
                        problems.push(format!(
                            "{}: '{module}' uses '{used}', a module of its own layer",
                            rel.display()
                        ));
                    }
                }
                Some(_) => problems.push(format!(
                    "{}: '{module}' uses '{used}', which is above it",
                    rel.display()
                )),
                None => problems.push(format!("{}: uses unknown 'crate::{used}'", rel.display())),
            }
        }
        // Sibling files this file uses (through `super::` or its own
        // module's path); a parent's `mod.rs` is not a sibling.
        let siblings_dir = file.parent().unwrap();
        let is_mod = file.file_name().unwrap() == "mod.rs";
        let mut used = segments_after(&text, "super::");
        if parts.len() >= 2 {
            used.extend(segments_after(&text, &format!("crate::{module}::")));
        }
        for name in used {
            let sibling = siblings_dir.join(format!("{name}.rs"));
            let sibling_dir = siblings_dir.join(&name).join("mod.rs");
            for s in [sibling, sibling_dir] {
                if s.exists() && &s != file && !is_mod {
                    edges.entry(file.clone()).or_default().insert(s);
                }
            }
        }
    }
    for (a, targets) in &edges {
        for b in targets {
            if edges.get(b).is_some_and(|t| t.contains(a)) && a < b {
                problems.push(format!(
                    "{} and {} use each other",
                    a.strip_prefix(&src).unwrap().display(),
                    b.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "layering:\n{}", problems.join("\n"));
}

/// The Python package's binding crate (`python/src`) is a front end beside
/// the CLI, the page and the GRAPE library: it uses the library's layers
/// up to `app`, never another front end.
#[test]
fn python_bindings_use_no_other_front_end() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no binding sources in {}", src.display());
    let mut problems = Vec::new();
    for file in &files {
        let text = code(&std::fs::read_to_string(file).unwrap());
        for used in segments_after(&text, "webgrav::") {
            match LAYERS.iter().position(|l| *l == used) {
                Some(r) if r <= LAYERS.iter().position(|l| *l == "app").unwrap() => {}
                _ if matches!(used.as_str(), "Error" | "Result") => {}
                _ => problems.push(format!(
                    "{}: uses 'webgrav::{used}', not a library layer",
                    file.strip_prefix(&src).unwrap().display()
                )),
            }
        }
    }
    assert!(problems.is_empty(), "layering:\n{}", problems.join("\n"));
}
