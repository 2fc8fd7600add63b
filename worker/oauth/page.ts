// The pages of the authorization endpoint, rendered by the Worker: the desktop browser shows a short code
// and waits while the human decides on a paired phone. No inline script or style (the CSP below): the page
// polls with a small static script, and without scripts a meta refresh reloads it; every text from a
// client is escaped.
import { formatUserCode } from "../../shared/contract/oauth.js";
import { qrPath } from "../../shared/text/qr.js";

export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Headers of every page and asset here: the rid in the URL must not leak by Referer to the redirect target. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-security-policy": PAGE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);
}

function shell(title: string, body: string, poll = false): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/oauth/static/page.css">
${poll ? '<script src="/oauth/static/wait.js" defer></script>\n<noscript><meta http-equiv="refresh" content="3"></noscript>' : ""}
</head>
<body>
${body}
</body>
</html>
`;
}

export interface WaitView {
  rid: string;
  code: string;
  client_name: string;
  redirect_host: string;
  expires_at: number;
  /** `<relay>/connect#code=…`: opens "Connect an app" on a paired device with the code filled in. */
  connect_url: string;
  claimed: boolean;
}

export function waitPage(v: WaitView, now = Date.now()): string {
  const name = escapeHtml(v.client_name);
  const minutes = Math.max(1, Math.round((v.expires_at - now) / 60_000));
  const qr = qrPath(v.connect_url);
  return shell(
    `Connect ${v.client_name} to LineUp`,
    `<main class="wait" data-rid="${escapeHtml(v.rid)}">
<h1>Connect <b>${name}</b> to LineUp</h1>
<p><b>${name}</b> asks to reach you through this LineUp relay: its questions will appear on your paired devices, and it will get the answers. After you allow it, this page returns to <b>${escapeHtml(v.redirect_host)}</b>.</p>
<h2>On your phone</h2>
<p>Open LineUp, go to <b>Devices → Connect an app</b>, and enter this code:</p>
<p class="code" id="code" aria-label="code ${escapeHtml([...v.code].join(" "))}">${escapeHtml(formatUserCode(v.code))}</p>
<p>Or scan this with the phone's camera (it opens "Connect an app" with the code filled in):</p>
<svg class="qr" viewBox="0 0 ${qr.size} ${qr.size}" role="img" aria-label="QR code of the connect link" shape-rendering="crispEdges"><rect width="${qr.size}" height="${qr.size}" fill="#fff"/><path d="${qr.d}" fill="#000"/></svg>
<p class="alt">Paired LineUp on this computer? <a href="${escapeHtml(v.connect_url)}" target="_blank" rel="noopener noreferrer">Open Connect an app here</a>.</p>
<p class="status" id="status" role="status" aria-live="polite">${v.claimed ? "Approving…" : `Waiting for your answer. The code expires in ${minutes} minute${minutes === 1 ? "" : "s"}.`}</p>
</main>`,
    true,
  );
}

export function messagePage(title: string, message: string): string {
  return shell(title, `<main class="msg">\n<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>\n</main>`);
}

/** Polls the request's status; on a decision, goes where it says (the client's redirect URI). */
export const WAIT_JS = `"use strict";
(function () {
  var main = document.querySelector("main[data-rid]");
  if (!main) return;
  var rid = main.getAttribute("data-rid");
  var status = document.getElementById("status");
  function tick() {
    fetch("/oauth/authorize/status?rid=" + encodeURIComponent(rid), { cache: "no-store" })
      .then(function (r) { return r.status === 404 ? { state: "expired" } : r.json(); })
      .then(function (s) {
        if (s.state === "done" && s.redirect) { location.replace(s.redirect); return; }
        if (s.state === "expired") { if (status) status.textContent = "This request has expired. Start connecting again from your app."; return; }
        if (s.state === "claimed" && status) status.textContent = "Approving…";
        setTimeout(tick, 1500);
      })
      .catch(function () { setTimeout(tick, 3000); });
  }
  setTimeout(tick, 1000);
})();
`;

export const PAGE_CSS = `:root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; display: flex; justify-content: center; background: Canvas; color: CanvasText; }
main { max-width: 34rem; padding: 2rem 1.25rem 3rem; line-height: 1.5; }
h1 { font-size: 1.5rem; line-height: 1.25; }
h2 { font-size: 1.05rem; margin-top: 1.5rem; }
.code { font: 700 2.4rem/1.2 ui-monospace, "SF Mono", Menlo, Consolas, monospace; letter-spacing: .12em; margin: .5rem 0 1rem; }
.qr { width: 11rem; height: 11rem; display: block; }
.status { margin-top: 1.5rem; padding: .75rem 1rem; border-radius: .5rem; background: color-mix(in srgb, CanvasText 8%, Canvas); }
a { color: LinkText; }
`;
