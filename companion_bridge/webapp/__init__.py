"""The companion web app (a PWA) the bridge serves under /app/: static files only, no templating.

Every asset comes from the bridge itself, under a Content-Security-Policy that allows scripts,
styles, images, the manifest and the service worker from this origin alone and network calls only
back to it (`connect-src 'self'`): the page makes no third-party request of any kind. The
JavaScript is bundled from `src/` by `npm run build:companion` (esbuild, packages pinned by
package-lock.json) into `static/app.js`, which is committed (unminified, so it is reviewed as a
diff, and the bridge needs no Node.js); a test rebuilds it and fails if it differs from `src/`.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
BUNDLE = HERE / "static" / "app.js"

# connect-src reaches beyond 'self' for one act: the Tier 3 revoke goes from the page straight to the
# owner's chain node (https, or a local dev node), with the bridge and signer gone. Scripts stay 'self'.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self' https: http://localhost:* http://127.0.0.1:*; manifest-src 'self'; worker-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

# name under /app/ -> (file, media type). A fixed table: nothing else under the package is served.
FILES: dict[str, tuple[Path, str]] = {
    "": (HERE / "static" / "index.html", "text/html; charset=utf-8"),
    "app.js": (BUNDLE, "text/javascript; charset=utf-8"),
    "app.css": (HERE / "static" / "app.css", "text/css; charset=utf-8"),
    "sw.js": (HERE / "static" / "sw.js", "text/javascript; charset=utf-8"),
    "manifest.webmanifest": (HERE / "static" / "manifest.webmanifest", "application/manifest+json"),
    "icon-192.png": (HERE / "static" / "icon-192.png", "image/png"),
    "icon-512.png": (HERE / "static" / "icon-512.png", "image/png"),
}

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    "Cache-Control": "no-cache",
}


class WebAppMissing(RuntimeError):
    pass


def check_built() -> None:
    """The bundle is built at setup; without it the app would be a blank page, so say what to run."""
    if not BUNDLE.is_file():
        raise WebAppMissing(
            f"the companion web app is missing ({BUNDLE}): reinstall owliabot, or in a checkout "
            "run `npm ci && npm run build:companion`"
        )


def load(name: str) -> tuple[bytes, str] | None:
    entry = FILES.get(name)
    if entry is None:
        return None
    path, media_type = entry
    return path.read_bytes(), media_type
