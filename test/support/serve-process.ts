// `hookguard serve` as a real child process (the built CLI), its JSON log lines parsed as they arrive.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import { cliPath, PROBE_PORT_ANY } from './cli.js';

export type LogLine = Record<string, unknown>;

/** The first of the ports the kernel hands out for port 0 and to outgoing connections (Linux; else Linux's default). */
function firstEphemeralPort(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (low > 1024) return low;
  } catch {
    // Not Linux: Linux's default is below every other system's.
  }
  return 32768;
}

/**
 * A port nothing listens on, for a server a test starts later (or for a connection to be refused). It is picked
 * below the ephemeral range and checked free: a port the kernel handed out for port 0 and then released could be
 * handed out again, to another listener or to an outgoing connection, before the test uses it; these never are.
 */
export async function freePort(): Promise<number> {
  const high = firstEphemeralPort() - 1;
  const low = Math.max(1025, high - 15_000);
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    const server = net.createServer();
    server.listen(port, '127.0.0.1');
    const free = await new Promise<boolean>((resolve) => {
      server.once('listening', () => resolve(true));
      server.once('error', () => resolve(false));
    });
    if (!free) continue;
    server.close();
    await once(server, 'close');
    return port;
  }
}

export class ServeProcess {
  readonly lines: LogLine[] = [];
  stderr = '';
  /** The exit code, once the process has exited. */
  readonly exit: Promise<number | null>;
  private pending = '';
  /** The plain-HTTP port of /healthz, /readyz and /metrics, as the ready line says. */
  probePort = 0;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly port: number,
  ) {
    child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    // Registered before any waitForLog listener, so lines are parsed before they are looked for.
    child.stdout.on('data', (chunk: Buffer) => {
      this.pending += chunk.toString('utf8');
      const complete = this.pending.split('\n');
      this.pending = complete.pop() ?? '';
      for (const line of complete) if (line.trim() !== '') this.lines.push(JSON.parse(line) as LogLine);
    });
    this.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /**
   * Starts `hookguard serve --host 127.0.0.1 --port <free port> ...args` and waits for its "hookguard ready" line;
   * `cli` is the built main.js to run (the checkout's by default).
   */
  static async start(
    args: readonly string[] = [],
    env: Record<string, string> = {},
    cli = cliPath,
  ): Promise<ServeProcess> {
    const port = await freePort();
    const child = spawn(process.execPath, [cli, 'serve', '--host', '127.0.0.1', '--port', String(port), ...args], {
      cwd: dirname(dirname(dirname(cli))),
      env: { PATH: process.env.PATH ?? '', ...PROBE_PORT_ANY, ...env },
    });
    const serve = new ServeProcess(child, port);
    const ready = await serve.waitForLog((line) => line.msg === 'hookguard ready');
    serve.probePort = ready.probePort as number;
    return serve;
  }

  /** Resolves with the first stdout JSON log line matching `test`; rejects if the process exits first. */
  waitForLog(test: (line: LogLine) => boolean): Promise<LogLine> {
    const { child, lines } = this;
    return new Promise<LogLine>((resolve, reject) => {
      const check = () => {
        const found = lines.find(test);
        if (found) {
          child.stdout.off('data', check);
          child.off('exit', exited);
          resolve(found);
        }
      };
      const exited = (code: number | null) =>
        reject(new Error(`hookguard serve exited (${code}) before logging the expected line; stderr: ${this.stderr}`));
      child.stdout.on('data', check);
      child.once('exit', exited);
      check();
    });
  }

  /** The exit code, or a message if it has not exited within `ms`. */
  exitWithin(ms: number): Promise<number | null | string> {
    return Promise.race([
      this.exit,
      new Promise<string>((resolve) => setTimeout(() => resolve(`still running after ${ms} ms`), ms)),
    ]);
  }

  /** Kills it if it is still running (test cleanup). */
  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
