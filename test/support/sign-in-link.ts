/**
 * Signing in with a sign-in link as a browser does (contract §10): GET the link's page, then POST
 * its form (the hidden `token` and `csrf` fields) with the CSRF cookie the page set and the page's
 * origin in `Origin`. For tests that need a console session, and for those that check each step.
 */

/** A link's page as a browser received it. */
export interface LinkPage {
  response: Response;
  html: string;
  /** The form's hidden fields (`token`, `csrf`), when the page has the form. */
  fields: Record<string, string>;
  /** Where the form posts (its `action`), when the page has the form. */
  action: string | undefined;
  /** The `name=value` of each cookie the page set. */
  cookies: string[];
}

/** The cookies a response sets, as `name=value`, empty values (cleared cookies) left out. */
export function setCookies(response: Response): string[] {
  return response.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!.trim())
    .filter((pair) => !pair.endsWith('='));
}

/** `url` with its origin replaced by `base` (a link made for a public URL, opened at the server's own address). */
function at(url: string, base: string | undefined): string {
  return base ? url.replace(/^https?:\/\/[^/]+/, base) : url;
}

/** Opens a sign-in link's page (GET, no redirect followed). `base`: the server's address, when the link names a public URL. */
export async function openLinkPage(url: string, options: { base?: string; cookie?: string } = {}): Promise<LinkPage> {
  const response = await fetch(at(url, options.base), { redirect: 'manual', headers: options.cookie ? { cookie: options.cookie } : {} });
  const html = await response.text();
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[name!] = unescape(value!);
  const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
  return { response, html, fields, action, cookies: setCookies(response) };
}

function unescape(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_m, entity: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[entity]!);
}

/**
 * Presses the button of a link's page: POSTs its form to `action` at the link's origin (or
 * `base`), with the page's cookies (and `cookie`, the browser's other cookies) and `Origin` the
 * link's origin unless `origin` says otherwise (null: none). Output: the response (no redirect
 * followed).
 */
export async function submitLinkPage(url: string, page: LinkPage, options: { base?: string; cookie?: string; origin?: string | null; fields?: Record<string, string> } = {}): Promise<Response> {
  const link = new URL(url);
  const target = at(`${link.origin}${page.action ?? '/sign-in/link'}`, options.base);
  const cookie = [...page.cookies, ...(options.cookie ? [options.cookie] : [])].join('; ');
  const origin = options.origin === undefined ? link.origin : options.origin;
  return fetch(target, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...(origin === null ? {} : { origin }) },
    body: new URLSearchParams(options.fields ?? page.fields).toString(),
  });
}

/**
 * Signs in with a sign-in link as a browser would: its page, then its button. Output: the
 * session cookie (`acs_session=…`), or undefined when none was set (a used, expired or unknown
 * link), and the final response.
 */
export async function signInWithLink(url: string, options: { base?: string; cookie?: string } = {}): Promise<{ cookie: string | undefined; response: Response }> {
  const page = await openLinkPage(url, options);
  if (page.action === undefined) return { cookie: undefined, response: page.response };
  const response = await submitLinkPage(url, page, options);
  return { cookie: setCookies(response).find((pair) => pair.startsWith('acs_session=')), response };
}
