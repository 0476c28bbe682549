// Checks that no link in the docs is broken (Node ≥ 18, no dependencies).
//
// - The built guide, dist/docs/**/*.html, and the page's own HTML (the
//   app, teachers.html, examples/*.html; run `trunk build` first): every
//   relative `href` and `src` must name a file in dist/ (a folder: its
//   index.html), and a `#fragment` an `id` (or `name`) in that file.
// - The Markdown sources, README.md, ARCHITECTURE.md, BENCHMARKS.md and
//   guide/src/*.md: every relative link and image must name a file of the
//   repository, and a `#anchor` into a .md file the GitHub-style slug of
//   one of its headings. A guide page is served from dist/docs/, beside
//   the page's own files, so where its link leaves guide/src/ it is
//   looked up in www/ (dist/ is www/ built: `../teachers.html` from a
//   guide page is www/teachers.html).
//
// External links (http:, https:) are listed, not fetched: the check must
// not depend on the network. Exits 1 listing every broken link.
//
//   node tests/docs/links.mjs [repository root, default: this file's ../..]

import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const DIST = join(ROOT, "dist");
const GUIDE_SRC = join(ROOT, "guide", "src");
const WWW = join(ROOT, "www");

const broken = [];
const external = new Set();
let checked = 0;

function isExternal(target) {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//");
}

function splitFragment(target) {
  const at = target.indexOf("#");
  const path = at < 0 ? target : target.slice(0, at);
  const fragment = at < 0 ? null : decodeURIComponent(target.slice(at + 1));
  return { path: decodeURIComponent(path.split("?")[0]), fragment };
}

function htmlFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...htmlFiles(path));
    else if (entry.name.endsWith(".html")) out.push(path);
  }
  return out;
}

const unescapeHtml = (s) =>
  s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

// The ids a file offers to fragments, read once per file.
const idCache = new Map();
function htmlIds(file) {
  if (!idCache.has(file)) {
    const html = readFileSync(file, "utf8");
    const ids = new Set();
    for (const m of html.matchAll(/\s(?:id|name)="([^"]*)"/g)) ids.add(unescapeHtml(m[1]));
    idCache.set(file, ids);
  }
  return idCache.get(file);
}

// A path that names a folder stands for its index.html, as a web server
// serves it.
function existingFile(path) {
  if (!existsSync(path)) return null;
  if (statSync(path).isDirectory()) {
    const index = join(path, "index.html");
    return existsSync(index) ? index : null;
  }
  return path;
}

function checkHtml() {
  const docs = join(DIST, "docs");
  if (!existsSync(join(docs, "index.html"))) {
    broken.push(`${relative(ROOT, docs)}/index.html: missing (run \`trunk build\` first)`);
    return;
  }
  const pages = ["index.html", "teachers.html"].map((f) => join(DIST, f));
  const examples = join(DIST, "examples");
  if (existsSync(examples)) pages.push(...htmlFiles(examples));
  for (const file of [...htmlFiles(docs), ...pages.filter((f) => existsSync(f))]) {
    const html = readFileSync(file, "utf8");
    const where = relative(ROOT, file);
    // mdBook's 404 page resolves its links against the site's root (an
    // absolute <base>), which depends on where the guide is served.
    const base = html.match(/<base\s+href="([^"]*)"/);
    if (base && base[1].startsWith("/")) {
      console.log(`skipped ${where}: its links are relative to <base href="${base[1]}">`);
      continue;
    }
    // Code blocks show HTML as text (quotes unescaped): not links.
    const markup = html.replace(/<pre\b[\s\S]*?<\/pre>/g, "").replace(/<code\b[\s\S]*?<\/code>/g, "");
    for (const m of markup.matchAll(/\s(href|src)="([^"]*)"/g)) {
      const target = unescapeHtml(m[2]);
      if (target === "" || target.startsWith("javascript:")) continue;
      if (isExternal(target)) {
        if (/^https?:/i.test(target)) external.add(target);
        continue;
      }
      checked++;
      const { path, fragment } = splitFragment(target);
      const resolved = path === "" ? file : existingFile(resolve(dirname(file), path));
      if (!resolved || !resolved.startsWith(DIST + sep)) {
        broken.push(`${where}: ${m[1]}="${target}": no such file in dist/`);
      } else if (fragment !== null && fragment !== "" && resolved.endsWith(".html") && !htmlIds(resolved).has(fragment)) {
        broken.push(`${where}: ${m[1]}="${target}": no id "${fragment}" in ${relative(ROOT, resolved)}`);
      }
    }
  }
}

// GitHub's heading anchors: lower case, punctuation but `-` and `_`
// dropped, spaces to `-`, a repeated slug numbered -1, -2, ….
function headingSlugs(markdown) {
  const slugs = new Set();
  const seen = new Map();
  for (const line of withoutCode(markdown).split("\n")) {
    const m = line.match(/^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!m) continue;
    const text = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .replace(/[`*_~]/g, (c) => (c === "_" ? "_" : ""));
    const slug = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    slugs.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return slugs;
}

// Markdown without fenced code blocks and code spans, whose brackets are
// not links; lines are kept so that line numbers stay right.
function withoutCode(markdown) {
  let fenced = false;
  return markdown
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return "";
      }
      return fenced ? "" : line.replace(/`[^`]*`/g, "``");
    })
    .join("\n");
}

function markdownLinks(markdown) {
  const links = [];
  const text = withoutCode(markdown);
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1], line: i + 1 });
    for (const m of line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) links.push({ target: m[1], line: i + 1 });
    for (const m of line.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]*)"/g)) links.push({ target: m[1], line: i + 1 });
    for (const m of line.matchAll(/<(https?:[^>\s]+)>/g)) links.push({ target: m[1], line: i + 1 });
  });
  return links;
}

function checkMarkdown(file) {
  const where = relative(ROOT, file);
  const inGuide = file.startsWith(GUIDE_SRC + sep);
  for (const { target, line } of markdownLinks(readFileSync(file, "utf8"))) {
    if (isExternal(target)) {
      if (/^https?:/i.test(target)) external.add(target);
      continue;
    }
    checked++;
    const { path, fragment } = splitFragment(target);
    let resolved = path === "" ? file : resolve(dirname(file), path);
    if (inGuide && path !== "" && !resolved.startsWith(GUIDE_SRC + sep)) {
      // Served from dist/docs/: outside the guide is dist/, built from www/.
      resolved = resolve(WWW, relative(GUIDE_SRC, resolved).replace(/^(\.\.[/\\])/, ""));
    }
    if (!existsSync(resolved)) {
      broken.push(`${where}:${line}: (${target}): no such file ${relative(ROOT, resolved)}`);
      continue;
    }
    if (fragment !== null && fragment !== "" && resolved.endsWith(".md")) {
      if (!headingSlugs(readFileSync(resolved, "utf8")).has(fragment)) {
        broken.push(`${where}:${line}: (${target}): no heading "#${fragment}" in ${relative(ROOT, resolved)}`);
      }
    }
  }
}

checkHtml();
const markdown = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"].map((f) => join(ROOT, f));
for (const f of readdirSync(GUIDE_SRC).sort()) if (f.endsWith(".md")) markdown.push(join(GUIDE_SRC, f));
for (const file of markdown) checkMarkdown(file);

for (const url of [...external].sort()) console.log(`external (not fetched): ${url}`);
if (broken.length > 0) {
  console.error(`links: ${broken.length} broken of ${checked} checked:`);
  for (const b of broken) console.error(`  ${b}`);
  process.exit(1);
}
console.log(`links: all ${checked} relative links resolve (dist/docs and the Markdown sources)`);
