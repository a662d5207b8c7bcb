/**
 * Runs a command in a pseudo-terminal of a chosen size, as a person's terminal would run it:
 * Python's `pty` module (Python 3 is on every machine that runs these tests: the Temporal CLI is
 * installed with it) forks the command on a new pty, sets its window size before the command
 * starts, relays what the command writes, and types what the test writes ({@link PtyRun.write})
 * into the terminal, as keystrokes. `stty cols 0` in a test is this with `columns: 0`.
 */
import { spawn } from 'node:child_process';

const RELAY = `
import fcntl, os, pty, select, struct, sys, termios
rows, cols = int(sys.argv[1]), int(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
    os.execvp(sys.argv[3], sys.argv[3:])
sys.stderr.write('pid %d\\n' % pid)
sys.stderr.flush()
inputs = [fd, 0]
while True:
    ready = select.select(inputs, [], [])[0]
    if 0 in ready:
        typed = os.read(0, 65536)
        if typed:
            os.write(fd, typed)
        else:
            inputs.remove(0)
    if fd in ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
status = os.waitpid(pid, 0)[1]
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
`;

/** A command running on a pty. */
export interface PtyRun {
  /** The command's own pid (signals go there directly). */
  pid: Promise<number>;
  /** Everything the command wrote to its terminal so far. */
  output(): string;
  /** Resolves when `text` has appeared in the output. */
  waitFor(text: string | RegExp): Promise<void>;
  /** Types `text` into the terminal (`"yes\\r"` answers a prompt as Enter does). */
  write(text: string): void;
  /** The exit status (128 + signal number when a signal ended it). */
  exited: Promise<number>;
}

/** Starts `argv` on a `rows`×`columns` pty with `env`. */
export function runOnPty(argv: string[], options: { rows: number; columns: number; env: NodeJS.ProcessEnv; cwd?: string }): PtyRun {
  const child = spawn('python3', ['-c', RELAY, String(options.rows), String(options.columns), ...argv], { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  const listeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const listener of listeners) listener();
  });
  const pid = new Promise<number>((resolve, reject) => {
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
      const match = /pid (\d+)/.exec(err);
      if (match) resolve(Number(match[1]));
    });
    child.on('error', reject);
  });
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  return {
    pid,
    output: () => out,
    exited,
    write: (text) => child.stdin.write(text),
    waitFor(text) {
      const seen = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      if (seen()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!seen()) return;
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
        void exited.then(() => {
          if (!seen()) reject(new Error(`exited before writing ${String(text)}; output: ${out}`));
        });
      });
    },
  };
}
