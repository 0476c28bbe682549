//! Composition of WGSL modules: Rust constants first, then the shared
//! layouts, then the kernel's own file, so every constant is defined once in
//! Rust and every layout once in `shaders/layout.wgsl`.
//!
//! `reachable` then cuts a composed module down to what some entry points
//! use before it is compiled. Chrome's engine (Dawn) turns the whole module
//! into its IR again for every pipeline, so the layouts every module
//! carries and the other entry points' code are compiled again with each
//! pipeline; without them a page's first frame compiles a tenth to a
//! seventh less (BENCHMARKS.md, "Modules cut to what each entry point
//! reaches": most of a pipeline's cost is its entry point's own code).

use std::collections::HashMap;

use super::layout::{LAYOUT_WGSL, WORKGROUP_SIZE};

/// Full WGSL source of a kernel: `consts` become `const NAME: u32 = V;`.
pub fn compose(consts: &[(&str, u32)], body: &str) -> String {
    let mut src = format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n");
    for (name, value) in consts {
        src.push_str(&format!("const {name}: u32 = {value}u;\n"));
    }
    src.push_str(LAYOUT_WGSL);
    src.push('\n');
    src.push_str(body);
    src
}

/// The declarations of WGSL `source` that the functions `roots` use,
/// directly or through others, in their order, with the directives
/// (`enable`, `requires`, `diagnostic`) and every `const_assert`: a module
/// whose entry points `roots` compile as they do in `source`. Comments
/// between declarations are left out.
///
/// A declaration is kept when its name occurs as a word in a kept one, so
/// a struct member or local variable that shares a global's name keeps
/// that global too: the cut may keep more than it needs, never less.
/// Where a root is not a declaration of `source`, or the source does not
/// split into declarations (unbalanced braces), `source` comes back whole,
/// for the compiler to report on.
pub fn reachable(source: &str, roots: &[&str]) -> String {
    let Some(decls) = declarations(source) else {
        return source.to_string();
    };
    let by_name: HashMap<&str, usize> = decls
        .iter()
        .enumerate()
        .filter_map(|(k, d)| Some((d.name?, k)))
        .collect();
    let mut keep = vec![false; decls.len()];
    let mut todo: Vec<usize> = decls
        .iter()
        .enumerate()
        .filter(|(_, d)| d.name.is_none())
        .map(|(k, _)| k)
        .collect();
    for root in roots {
        match by_name.get(root) {
            Some(&k) => todo.push(k),
            None => return source.to_string(),
        }
    }
    while let Some(k) = todo.pop() {
        if std::mem::replace(&mut keep[k], true) {
            continue;
        }
        todo.extend(words(decls[k].text).filter_map(|w| by_name.get(w).copied()));
    }
    let mut out = String::with_capacity(source.len());
    for (d, _) in decls.iter().zip(&keep).filter(|(_, &kept)| kept) {
        out.push_str(d.text);
        out.push('\n');
    }
    out
}

/// One top-level declaration: its text (attributes included) and the name
/// it declares (None for directives and `const_assert`, always kept).
struct Declaration<'a> {
    text: &'a str,
    name: Option<&'a str>,
}

/// `source` split into its top-level declarations: each ends at a `;` or
/// at the `}` that closes its body. None where braces do not balance.
fn declarations(source: &str) -> Option<Vec<Declaration<'_>>> {
    let bytes = source.as_bytes();
    let mut decls = Vec::new();
    let mut at = skip_blank(bytes, 0);
    while at < bytes.len() {
        let start = at;
        let mut depth = 0usize;
        let end = loop {
            match bytes.get(at)? {
                _ if comment_at(bytes, at) => {
                    at = skip_comment(bytes, at);
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        break at + 1;
                    }
                }
                b';' if depth == 0 => break at + 1,
                _ => {}
            }
            at += 1;
        };
        let text = &source[start..end];
        if text != ";" {
            decls.push(Declaration {
                text,
                name: declared_name(text),
            });
        }
        at = skip_blank(bytes, end);
    }
    Some(decls)
}

/// The name a declaration declares, after its attributes and keyword
/// (`var<…>`'s address space skipped); None for the directives and
/// `const_assert`, and for a keyword this reader does not know, so that
/// such a declaration is kept.
fn declared_name(text: &str) -> Option<&str> {
    let mut rest = text;
    // Attributes: `@name` or `@name(…)`.
    while let Some(after) = rest.trim_start().strip_prefix('@') {
        let after = after.trim_start_matches(is_word_char).trim_start();
        rest = match after.strip_prefix('(') {
            Some(args) => &args[closing_paren(args)? + 1..],
            None => after,
        };
    }
    let (keyword, mut rest) = leading_word(rest.trim_start());
    match keyword {
        "fn" | "struct" | "const" | "override" | "alias" => {}
        "var" => {
            rest = rest.trim_start();
            if let Some(space) = rest.strip_prefix('<') {
                rest = &space[space.find('>')? + 1..];
            }
        }
        _ => return None,
    }
    let (name, _) = leading_word(rest.trim_start());
    (!name.is_empty()).then_some(name)
}

/// `text` split after its leading word (empty where it starts otherwise).
fn leading_word(text: &str) -> (&str, &str) {
    text.split_at(text.find(|c| !is_word_char(c)).unwrap_or(text.len()))
}

/// The identifiers of WGSL `text`, comments and numbers (`1u`, `2e-3f`)
/// skipped.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let b = bytes[at];
            if comment_at(bytes, at) {
                at = skip_comment(bytes, at);
            } else if is_word_char(b.into()) {
                let start = at;
                while at < bytes.len() && is_word_char(bytes[at].into()) {
                    at += 1;
                }
                if !b.is_ascii_digit() {
                    return Some(&text[start..at]);
                }
            } else {
                at += 1;
            }
        }
        None
    })
}

/// Where the `)` that closes an already open `(` is in `text`.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    text.find(|c| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        depth == 0
    })
}

/// Whether `c` may be part of a WGSL identifier (or number) here: the
/// crate's sources are ASCII.
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a comment (`//` or `/*`) starts at byte `at`.
fn comment_at(bytes: &[u8], at: usize) -> bool {
    bytes[at] == b'/' && matches!(bytes.get(at + 1), Some(b'/' | b'*'))
}

/// The index after the comment that starts at `at` (`//` to the line's
/// end, or a `/* */` block, which WGSL lets nest).
fn skip_comment(bytes: &[u8], mut at: usize) -> usize {
    if bytes[at + 1] == b'/' {
        // WGSL's line breaks of one byte (the crate's sources use none of
        // the multi-byte ones).
        while at < bytes.len() && !matches!(bytes[at], b'\n' | b'\r' | 0x0b | 0x0c) {
            at += 1;
        }
        return at;
    }
    let mut depth = 0usize;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if bytes[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    at
}

/// The index of the next byte at `at` or after that is neither white
/// space nor in a comment.
fn skip_blank(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(b) if b.is_ascii_whitespace() => at += 1,
            Some(_) if comment_at(bytes, at) => at = skip_comment(bytes, at),
            _ => return at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "enable subgroups;
diagnostic(off, subgroup_uniformity);
// A comment with a brace } and a semicolon ;
const WORKGROUP_SIZE: u32 = 64u;
const UNUSED: u32 = 3u;
const SCALE: f32 = 2e-3f;
struct Body { p: vec4f, }
struct Spare { q: u32 }
alias Bodies = array<Body>;
@group(0) @binding(0) var<storage, read_write> bodies: Bodies;
@group(0) @binding(1) var<storage, read> spare: array<Spare>;
var<workgroup> tile: array<Body, WORKGROUP_SIZE>;
/* a block /* nested */ comment { */
fn helper(x: f32) -> f32 { return x * SCALE; }
fn dead(x: f32) -> f32 { return helper(x) + f32(spare[0].q + UNUSED); }
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(local_invocation_index) k: u32) {
    // dead(1.0) in a comment is no call
    tile[k] = bodies[k];
    bodies[k].p.x = helper(tile[k].p.x) + 1e3;
}
@compute @workgroup_size(max(1, min(2, 3))) fn other() { _ = dead(0.0); }
";

    #[test]
    fn an_entry_point_keeps_what_it_reaches_and_the_directives() {
        let cut = reachable(MODULE, &["main"]);
        for kept in [
            "enable subgroups;",
            "diagnostic(off, subgroup_uniformity);",
            "const WORKGROUP_SIZE",
            "const SCALE",
            "struct Body {",
            "alias Bodies",
            "var<storage, read_write> bodies",
            "var<workgroup> tile",
            "fn helper",
            "fn main",
        ] {
            assert!(cut.contains(kept), "{kept} missing from\n{cut}");
        }
        for dropped in [
            "UNUSED",
            "Spare",
            "spare",
            "fn dead",
            "fn other",
            "nested",
            "A comment",
        ] {
            assert!(!cut.contains(dropped), "{dropped} kept in\n{cut}");
        }
        // The declarations keep their order.
        assert!(cut.find("fn helper") < cut.find("fn main"));
    }

    #[test]
    fn every_root_keeps_its_own_reach() {
        let cut = reachable(MODULE, &["other"]);
        for kept in ["fn other", "fn dead", "fn helper", "const UNUSED", "spare"] {
            assert!(cut.contains(kept), "{kept} missing from\n{cut}");
        }
        assert!(!cut.contains("fn main") && !cut.contains("tile"), "{cut}");
        let both = reachable(MODULE, &["main", "other"]);
        assert!(both.contains("fn main") && both.contains("fn other"));
    }

    #[test]
    fn a_line_comment_ends_at_any_line_break() {
        let source = "// old Mac line ends\rfn f() -> u32 { return g(); }\r// g\x0cfn g() -> u32 { return 1u; }\rfn h() {}";
        let cut = reachable(source, &["f"]);
        assert_eq!(
            cut,
            "fn f() -> u32 { return g(); }\nfn g() -> u32 { return 1u; }\n"
        );
    }

    #[test]
    fn unknown_roots_and_unbalanced_sources_come_back_whole() {
        assert_eq!(reachable(MODULE, &["missing"]), MODULE);
        let broken = "fn f() { return; ";
        assert_eq!(reachable(broken, &["f"]), broken);
        let extra = "fn f() { } }";
        assert_eq!(reachable(extra, &["f"]), extra);
    }
}
