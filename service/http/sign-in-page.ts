/**
 * The page a sign-in link opens (contract §10): rendered by the server, with no script, naming
 * the human, their team and organization, and one `<form method="post">` whose button signs the
 * opener in. Opening the page spends nothing: a mail scanner that fetches the link, or a browser
 * sent to it by someone else, signs no one in; only the button's POST does
 * (http/routes/sign-in.ts). The page carries its own Content-Security-Policy: nothing may load
 * or run but its one inline stylesheet (allowed by its hash), and the form may post only to this
 * origin.
 */
import { createHash } from 'node:crypto';

/** What the page names and what its form sends back. */
export interface SignInPageInput {
  humanName: string;
  teamName: string;
  orgName: string;
  /** When the link stops working (ISO 8601). */
  expiresAt: string;
  /** The link's secret, sent back by the form (in the body, never in a URL). */
  token: string;
  /** The CSRF token of the form (http/sign-in-csrf.ts). */
  csrf: string;
  /** Where the form posts (the link's path). */
  action: string;
}

// The console's colours and type (console/src/styles.css), inline: the page loads nothing.
const style = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; font-size: 16px; line-height: 1.5; color: #1b1f24; background: #f6f7f9; }
body { margin: 0; }
main { display: flex; justify-content: center; padding: 1.5rem; }
section { background: #fff; border: 1px solid #c9ced6; border-radius: 8px; padding: 1.25rem; margin: 1rem 0; max-width: 32rem; width: 100%; }
h1 { font-size: 1.6rem; margin: 0 0 .75rem; }
.muted { color: #4d5661; }
button { font: inherit; font-weight: 600; border: 1px solid #0b5cad; border-radius: 6px; padding: .5rem 1rem; background: #0b5cad; color: #fff; cursor: pointer; }
button:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
`.trim();

/**
 * The page's Content-Security-Policy: no script at all, its inline stylesheet by hash, no
 * framing, and the form posting only to this origin (also after the redirect that follows).
 */
export const signInPageCsp = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(style, 'utf8').digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** `text` safe in HTML text and in a double-quoted attribute. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The page's HTML (UTF-8) for `input`; every name is escaped (teams name their people). Raises nothing. */
export function signInPage(input: SignInPageInput): string {
  const human = escapeHtml(input.humanName);
  const expires = new Date(input.expiresAt);
  const until = `${expires.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Sign in as ${human} — ACS console</title>
<style>${style}</style>
</head>
<body>
<main>
<section aria-labelledby="title">
<h1 id="title">Sign in as ${human}?</h1>
<p>This link signs you in to the ACS console as <strong>${human}</strong> of team <strong>${escapeHtml(input.teamName)}</strong>, in the organization <strong>${escapeHtml(input.orgName)}</strong>.</p>
<form method="post" action="${escapeHtml(input.action)}">
<input type="hidden" name="token" value="${escapeHtml(input.token)}">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<button type="submit">Sign in as ${human}</button>
</form>
<p class="muted">Nothing happens until you press the button. The link works once, until ${until}. Signing in ends the console session this browser has now, if any. If you did not expect this link, close this page.</p>
</section>
</main>
</body>
</html>
`;
}
