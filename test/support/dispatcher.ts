/**
 * Watching the requests the client sends, whatever sends them: an interceptor on undici's global
 * dispatcher, which `AcsClient` sends through (client/acs-client.ts). For tests that must see a
 * header of every request (which key a command used), as a `fetch` spy did before.
 */
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';

/** The value of header `name` in undici's dispatch options (an object, or a flat array of names and values). */
function headerOf(headers: Dispatcher.DispatchOptions['headers'], name: string): string {
  if (!headers) return '';
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) return String(headers[i + 1]);
    return '';
  }
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) if (key.toLowerCase() === name) return String(value);
  return '';
}

/**
 * Records header `name` (lower case) of every request sent through undici's global dispatcher
 * until `restore()`, which puts the previous dispatcher back. Output: the values, in sending order.
 */
export function recordHeader(name: string): { values: string[]; restore(): void } {
  const values: string[] = [];
  const previous = getGlobalDispatcher();
  const agent = new Agent();
  setGlobalDispatcher(
    agent.compose((dispatch) => (options, handler) => {
      values.push(headerOf(options.headers, name));
      return dispatch(options, handler);
    }),
  );
  return {
    values,
    restore() {
      setGlobalDispatcher(previous);
      void agent.close();
    },
  };
}
