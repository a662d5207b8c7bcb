/**
 * A remote A2A agent's files by URL (contract §12, "A2A participants"; service/a2a/remote-files.ts)
 * against real HTTP servers on loopback: fetched under the remote agent's URL rules (refused on
 * loopback unless private addresses are allowed, as `--webhook-allow-private` does), the remote's
 * headers sent to its own origin only, at most 5 MiB (read no further), and a file that cannot be
 * fetched named with where it is and why, never failing what carries it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Part } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultFileLimits, fetchRemoteFile, fileBudget, readRemoteParts, type FileContext } from '../../service/a2a/remote-files.ts';

/** A file server on loopback that records the headers of each request. */
interface FileServer {
  origin: string;
  seen: IncomingHttpHeaders[];
  server: Server;
}

/** Responses held by `/held.bin` (never sent), ended when the tests end. */
const held: import('node:http').ServerResponse[] = [];

/** Serves `/small.txt` (text), `/unsized.bin` (6 MiB, chunked: no Content-Length), `/held.bin` (never answers) and 404 for anything else. */
async function startFileServer(): Promise<FileServer> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/small.txt') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('small file');
    } else if (req.url === '/unsized.bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(1024 * 1024, 1);
      for (let i = 0; i < 6; i++) res.write(chunk);
      res.end();
    } else if (req.url === '/held.bin') {
      held.push(res);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const SECRET = 'Bearer file-secret-4c1d';
let remoteOrigin: FileServer;
let elsewhere: FileServer;
beforeAll(async () => {
  remoteOrigin = await startFileServer();
  elsewhere = await startFileServer();
});
afterAll(async () => {
  for (const res of held) res.destroy();
  for (const s of [remoteOrigin, elsewhere]) await new Promise((resolve) => s?.server.close(resolve));
});

/** The context of a remote agent at `remoteOrigin` with an Authorization header, private addresses allowed unless said. */
const context = (allowPrivate = true): FileContext => ({
  remote: { url: `${remoteOrigin.origin}/a2a`, headers: { Authorization: SECRET } },
  policy: { allowPrivate },
  signal: new AbortController().signal,
});

const urlPart = (url: string, filename = '', mediaType = ''): Part => ({ content: { $case: 'url', value: url }, filename, mediaType, metadata: undefined });

describe('remote files', () => {
  it("fetchRemoteFile: a file on the remote's own origin is fetched with the remote's headers; one elsewhere without them", async () => {
    const own = await fetchRemoteFile(`${remoteOrigin.origin}/small.txt`, context());
    expect(own).toEqual({ ok: true, data: Buffer.from('small file'), contentType: 'text/plain; charset=utf-8' });
    expect(remoteOrigin.seen.at(-1)?.authorization).toBe(SECRET);
    const other = await fetchRemoteFile(`${elsewhere.origin}/small.txt`, context());
    expect(other.ok).toBe(true);
    expect(elsewhere.seen.at(-1)?.authorization).toBeUndefined();
  });

  it('fetchRemoteFile: a loopback URL is refused without a request unless private addresses are allowed', async () => {
    const before = remoteOrigin.seen.length;
    const refused = await fetchRemoteFile(`${remoteOrigin.origin}/small.txt`, context(false));
    expect(refused).toEqual({ ok: false, reason: expect.stringMatching(/https|loopback|public/) });
    expect(remoteOrigin.seen.length).toBe(before);
  });

  it('fetchRemoteFile: a file larger than the limit is not kept, with or without a Content-Length; an error status and a URL of another scheme say why', async () => {
    expect(await fetchRemoteFile(`${remoteOrigin.origin}/unsized.bin`, context())).toEqual({ ok: false, reason: expect.stringContaining('5 MiB') });
    expect(await fetchRemoteFile(`${remoteOrigin.origin}/small.txt`, context(), 4)).toEqual({ ok: false, reason: expect.stringContaining('4 bytes') });
    expect(await fetchRemoteFile(`${remoteOrigin.origin}/missing`, context())).toEqual({ ok: false, reason: 'the remote answered 404' });
    expect(await fetchRemoteFile('file:///etc/passwd', context())).toEqual({ ok: false, reason: 'a file: URL is not fetched' });
  });

  it('readRemoteParts: text, data, bytes and URLs become parts, a file kept under an attachment id named in both; one not kept is named with where it is and why', async () => {
    const read = await readRemoteParts(
      [
        { content: { $case: 'text', value: 'the answer' }, filename: '', mediaType: 'text/plain', metadata: undefined },
        { content: { $case: 'data', value: { n: 1 } }, filename: '', mediaType: 'application/json', metadata: undefined },
        { content: { $case: 'raw', value: Buffer.from('raw bytes') }, filename: 'raw.txt', mediaType: 'not a media type', metadata: undefined },
        urlPart(`${remoteOrigin.origin}/small.txt`),
        urlPart(`${remoteOrigin.origin}/missing`, 'gone.pdf', 'application/pdf'),
      ],
      context(),
    );
    expect(read.parts).toEqual([
      { text: 'the answer' },
      { data: { n: 1 } },
      { file: { name: 'raw.txt', media_type: 'application/octet-stream', attachment_id: read.files[0]!.attachmentId } },
      { file: { name: 'small.txt', media_type: 'text/plain; charset=utf-8', attachment_id: read.files[1]!.attachmentId } },
      { text: `[file: gone.pdf (application/pdf) at ${remoteOrigin.origin}/missing, not kept: the remote answered 404]` },
    ]);
    expect(read.files.map((f) => [f.filename, f.data.toString()])).toEqual([
      ['raw.txt', 'raw bytes'],
      ['small.txt', 'small file'],
    ]);
    expect(read.text.split('\n\n')).toEqual([
      'the answer',
      '```json\n{\n  "n": 1\n}\n```',
      '[file: raw.txt (application/octet-stream)]',
      '[file: small.txt (text/plain; charset=utf-8)]',
      `[file: gone.pdf (application/pdf) at ${remoteOrigin.origin}/missing, not kept: the remote answered 404]`,
    ]);
  });

  it('readRemoteParts: a file that does not answer within its own time is named, not kept, and the next file is still fetched', async () => {
    const budget = fileBudget({ ...defaultFileLimits, fileTimeoutMs: 100, filesTimeoutMs: 60_000 });
    const read = await readRemoteParts([urlPart(`${remoteOrigin.origin}/held.bin`), urlPart(`${remoteOrigin.origin}/small.txt`)], { ...context(), budget });
    expect(read.parts).toEqual([
      { text: `[file: held.bin (application/octet-stream) at ${remoteOrigin.origin}/held.bin, not kept: no answer within 100 ms]` },
      { file: { name: 'small.txt', media_type: 'text/plain; charset=utf-8', attachment_id: read.files[0]!.attachmentId } },
    ]);
  });

  it("readRemoteParts: once the step's time for files is up, a file fetching and every file after it are named, not kept, and the read ends without error", async () => {
    const budget = fileBudget({ ...defaultFileLimits, fileTimeoutMs: 600_000, filesTimeoutMs: 100 });
    const read = await readRemoteParts([urlPart(`${remoteOrigin.origin}/held.bin`), urlPart(`${remoteOrigin.origin}/held.bin`, 'again.bin')], { ...context(), budget });
    expect(read.files).toEqual([]);
    expect(read.parts).toEqual([
      { text: `[file: held.bin (application/octet-stream) at ${remoteOrigin.origin}/held.bin, not kept: the files of this answer took more than 100 ms]` },
      { text: `[file: again.bin (application/octet-stream) at ${remoteOrigin.origin}/held.bin, not kept: the files of this answer took more than 100 ms]` },
    ]);
  });

  it("readRemoteParts: the reads of one step share its byte budget: past it a file, as bytes or by URL, is named, not kept", async () => {
    const budget = fileBudget({ ...defaultFileLimits, stepBytes: 15 });
    const raw = (name: string, text: string): Part => ({ content: { $case: 'raw', value: Buffer.from(text) }, filename: name, mediaType: 'text/plain', metadata: undefined });
    const first = await readRemoteParts([raw('a.txt', 'raw bytes')], { ...context(), budget });
    expect(first.files.map((f) => f.filename)).toEqual(['a.txt']);
    // 6 bytes left: small.txt (10 bytes) is read no further than them; b.txt (6) fits; c.txt does not.
    const second = await readRemoteParts([urlPart(`${remoteOrigin.origin}/small.txt`), raw('b.txt', 'abcdef'), raw('c.txt', 'x')], { ...context(), budget });
    expect(second.files.map((f) => f.filename)).toEqual(['b.txt']);
    expect(second.parts).toEqual([
      { text: `[file: small.txt (application/octet-stream) at ${remoteOrigin.origin}/small.txt, not kept: larger than the 6 bytes still kept of this answer's files]` },
      { file: { name: 'b.txt', media_type: 'text/plain', attachment_id: second.files[0]!.attachmentId } },
      { text: '[file: c.txt (text/plain), not kept: past the 15 bytes of files kept of one answer]' },
    ]);
    expect(budget.bytesLeft).toBe(0);
  });
});
