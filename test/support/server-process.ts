// A server in a child process of its own, over real TLS on 127.0.0.1: the built hookguard (or the bench's
// baseline), started, probed until it answers, measured and stopped. Used by the bench and the reliability tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { requestOnce } from './request-once.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KeyPair } from '../../src/tls/certificates.js';
import { cliPath, PROBE_PORT_ANY } from './cli.js';
import { repoRoot } from './k8s-tools.js';
import { freePort } from './serve-process.js';

export { freePort };

export interface CertificateFiles {
  dir: string;
  certFile: string;
  keyFile: string;
  cert: string;
  remove(): void;
}

/** Writes a PEM certificate and key to a fresh temporary folder. */
export function writeCertificate(material: KeyPair): CertificateFiles {
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-cert-'));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  writeFileSync(certFile, material.cert);
  writeFileSync(keyFile, material.key, { mode: 0o600 });
  return { dir, certFile, keyFile, cert: material.cert, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** https://127.0.0.1:PORT */
  url: string;
  /**
   * Resident set size now (VmRSS), and its peak so far (VmHWM), in bytes, of the process and the processes it started
   * (bench/workers.ts's); the peak is the sum of each one's own, which may not have come at once. Linux /proc.
   */
  memory(): { rssBytes: number; peakRssBytes: number };
  /** CPU time the process and the processes it started used so far (user + system), in milliseconds; Linux /proc. */
  cpuMs(): number;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  /** The heap in use after a full collection; needs nodeOptions from gcProbeOptions. */
  heapAfterGc(): Promise<number>;
  /** Sends the signal and resolves with the exit code (null if killed), SIGKILL after timeoutMs. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export interface StartOptions {
  /** Script and arguments after `node`. */
  args: readonly string[];
  port: number;
  /** CA to trust when probing: the server's own self-signed certificate. */
  ca: string;
  env?: Record<string, string>;
  nodeOptions?: readonly string[];
  /** A command that runs node, its arguments first: `valgrind --tool=callgrind` for `npm run bench:instructions`. */
  wrapper?: readonly string[];
  /** Where stdout goes: a file descriptor (a log file), 'ignore', or 'pipe' to read it from child.stdout. */
  stdout?: number | 'ignore' | 'pipe';
  /** Path to probe until it answers 200 (default /healthz). */
  readyPath?: string;
  /**
   * How long the process may take to answer readyPath (default 60 s): a bound on its start, not a timing. 15 s was
   * once exceeded on a 2-core machine running the cluster suite's Helm installs beside the slow tests.
   */
  readyTimeoutMs?: number;
}

const READY_TIMEOUT_MS = 60_000;

/** Starts `node [nodeOptions] args…` and resolves once GET readyPath answers 200 over TLS. */
export async function startServerProcess(options: StartOptions): Promise<ServerProcess> {
  const [wrapperCommand, ...wrapperArgs] = options.wrapper ?? [];
  const nodeArgs = [...(options.nodeOptions ?? []), ...options.args];
  const command = wrapperCommand ?? process.execPath;
  const child = spawn(
    command,
    wrapperCommand === undefined ? nodeArgs : [...wrapperArgs, process.execPath, ...nodeArgs],
    {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', ...PROBE_PORT_ANY, ...options.env },
      stdio: ['ignore', options.stdout ?? 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `https://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? READY_TIMEOUT_MS);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before it was ready: ${stderr}`);
    const status = await probe(options.port, options.readyPath ?? '/healthz', options.ca).catch(() => 0);
    if (status === 200) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `server on port ${options.port} not ready within ${options.readyTimeoutMs ?? READY_TIMEOUT_MS} ms: ${stderr}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    port: options.port,
    url,
    memory: () =>
      processTree(child.pid as number)
        .map(processMemory)
        .reduce((sum, each) => ({
          rssBytes: sum.rssBytes + each.rssBytes,
          peakRssBytes: sum.peakRssBytes + each.peakRssBytes,
        })),
    cpuMs: () =>
      processTree(child.pid as number)
        .map(processCpuMs)
        .reduce((sum, each) => sum + each),
    stderr: () => stderr,
    async heapAfterGc() {
      const seen = stderr.length;
      child.kill('SIGUSR2');
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = /gc-probe heapUsed=(\d+)\n/.exec(stderr.slice(seen));
        if (found) return Number(found[1]);
        if (Date.now() > deadline)
          throw new Error(`no gc-probe answer within 10 s (was the server started with gcProbeOptions?): ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async stop(signal = 'SIGTERM', timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Node options that let heapAfterGc() ask the server for its live heap. */
export const gcProbeOptions = ['--expose-gc', '--require', join(repoRoot, 'test', 'support', 'gc-probe.cjs')];

/** hookguard's own command line: `node dist/cli/main.js serve …` on 127.0.0.1, with the given certificate files. */
export function hookguardArgs(port: number, extra: readonly string[] = [], cli = cliPath): string[] {
  return [cli, 'serve', '--host', '127.0.0.1', '--port', String(port), ...extra];
}

export function tlsEnv(files: Pick<CertificateFiles, 'certFile' | 'keyFile'>): Record<string, string> {
  return { HOOKGUARD_TLS_CERT_FILE: files.certFile, HOOKGUARD_TLS_KEY_FILE: files.keyFile };
}

/**
 * The built hookguard serving `certificate` on a free port of 127.0.0.1 (`hookguardArgs` with `extraArgs`), its
 * environment the certificate's files plus `env`; with `launcher`, that script and its arguments run first and are
 * handed hookguard's command line to start (bench/workers.ts).
 */
export async function startHookguard(
  certificate: CertificateFiles,
  options: Omit<StartOptions, 'args' | 'port' | 'ca'> & {
    extraArgs?: readonly string[];
    launcher?: readonly string[];
    /** Another build's dist/cli/main.js instead of this checkout's (`npm run bench -- --before DIR`). */
    cli?: string;
  } = {},
): Promise<ServerProcess> {
  const { extraArgs, launcher = [], env, cli, ...rest } = options;
  const port = await freePort();
  return startServerProcess({
    ...rest,
    args: [...launcher, ...hookguardArgs(port, extraArgs, cli)],
    port,
    ca: certificate.cert,
    env: { ...tlsEnv(certificate), ...env },
  });
}

function probe(port: number, path: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = https.get(
      { host: '127.0.0.1', port, path, ca, servername: 'localhost', agent: false, timeout: 2000 },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('timeout', () => request.destroy(new Error('probe timed out')));
    request.on('error', reject);
  });
}

/** `pid` and every process under it, by the kernel's list of each thread's children. */
function processTree(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((thread) => {
    try {
      return readFileSync(`/proc/${pid}/task/${thread}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return []; // a thread that ended after the directory was read
    }
  });
  return [pid, ...children.flatMap(processTree)];
}

function processMemory(pid: number): { rssBytes: number; peakRssBytes: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rssBytes: kib('VmRSS'), peakRssBytes: kib('VmHWM') };
}

// /proc/PID/stat counts in clock ticks: USER_HZ, 100 on every Linux architecture Node runs on.
const TICKS_PER_SECOND = 100;

export function processCpuMs(pid: number): number {
  // Fields after the parenthesised command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** POSTs an AdmissionReview to /mutate of a server started here, over `agent` (false: a connection of its own): the status and the uid its answer echoes. */
export async function postReview(
  server: Pick<ServerProcess, 'port'>,
  ca: string,
  review: string,
  agent: https.Agent | false,
): Promise<{ status: number; uid: string | undefined }> {
  const { status, body } = await requestOnce(
    {
      host: '127.0.0.1',
      port: server.port,
      path: '/mutate',
      method: 'POST',
      agent,
      ca,
      servername: 'localhost',
      headers: { 'content-type': 'application/json' },
    },
    review,
  );
  return { status, uid: (JSON.parse(body) as { response?: { uid?: string } }).response?.uid };
}
