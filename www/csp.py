#!/usr/bin/env python3
"""Trunk post-build hook: puts a strict Content-Security-Policy into the
built page. Trunk's loader is an inline module script whose text (and so
its hash) changes with every build, so the policy is written here, after
the build, with that script's SHA-256: no other inline script, no inline
style, nothing loaded from anywhere but the page's own origin, and WebAssembly
allowed to compile ('wasm-unsafe-eval', which WebGPU pages need)."""
import base64
import hashlib
import os
import re
import sys

page = os.path.join(os.environ.get("TRUNK_STAGING_DIR", "dist"), "index.html")
html = open(page, encoding="utf-8").read()
scripts = re.findall(r"<script type=\"module\">(.*?)</script>", html, re.S)
if len(scripts) != 1:
    sys.exit(f"csp.py: expected Trunk's one inline loader script in {page}, found {len(scripts)}")
digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
policy = "; ".join([
    "default-src 'self'",
    f"script-src 'self' 'wasm-unsafe-eval' 'sha256-{digest}'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    # The series player's recorded WebM, played back from a blob: URL.
    "media-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
])
meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\s*', "", html)
html = html.replace('<meta charset="utf-8">', f'<meta charset="utf-8">\n  {meta}', 1)
if meta not in html:
    sys.exit(f"csp.py: no <meta charset=\"utf-8\"> in {page} to put the policy after")
open(page, "w", encoding="utf-8").write(html)
