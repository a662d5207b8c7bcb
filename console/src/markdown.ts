/**
 * Message content as the console shows it: Markdown rendered safely. Message content is
 * untrusted (agents and LLMs write it), so:
 * - markdown-it runs with raw HTML off: a `<script>` or `<img onerror=…>` in a message is text;
 * - only http(s) and mailto links become links (markdown-it's own check already refuses
 *   `javascript:`, `vbscript:`, `file:` and `data:`; a refused link stays as its text), and
 *   they open in a new tab with no referrer and no opener;
 * - images are not rendered (they would load from anywhere): they stay as text;
 * - DOMPurify then sanitizes the HTML once more, and hands it over as a Trusted Types value of
 *   its own policy, the only one the page's Content-Security-Policy allows to write markup.
 */
import DOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';

const markdown = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false }).disable(['image']);

const allowedLink = /^(?:https?:|mailto:)/i;
const defaultValidate = markdown.validateLink.bind(markdown);
markdown.validateLink = (url: string) => defaultValidate(url) && allowedLink.test(url.trim());

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

const sanitizeOptions: import('dompurify').Config & { RETURN_TRUSTED_TYPE: true } = {
  ALLOWED_TAGS: ['p', 'br', 'strong', 'em', 's', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'a', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td'],
  ALLOWED_ATTR: ['href', 'title', 'target', 'rel', 'start', 'align'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  RETURN_TRUSTED_TYPE: true,
};

/** The sanitized HTML of `content` rendered as Markdown (a TrustedHTML where the browser has Trusted Types). */
export function renderMarkdown(content: string): string {
  // Headings inside a message are shifted down, so a message never outranks the page's own headings.
  const html = markdown.render(content).replace(/<(\/?)h([1-6])>/g, (_m, slash: string, level: string) => `<${slash}h${Math.min(6, Number(level) + 2)}>`);
  return DOMPurify.sanitize(html, sanitizeOptions) as unknown as string;
}
