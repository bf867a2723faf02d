// The two servers the benches load, each a child process over real TLS with the same certificate and a log file of
// its own (a real sink, with the cost of a real write per line): hookguard as `npm start` runs it, Argo CD pinned at a
// version that puts every rule in play, and the auditing echo of bench/baseline-server.ts.
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  startHookguard,
  startServerProcess,
  type CertificateFiles,
  type ServerProcess,
  type StartOptions,
} from '../test/support/server-process.js';

/** A server run under a command (valgrind, for `npm run bench:instructions`), given that much longer to start. */
export type UnderWrapper = Pick<StartOptions, 'wrapper' | 'readyTimeoutMs'>;

// 2.14.3 has the hook finalizer, so every advisory with an admission rule but the TTL race affects it (whose ttl-floor
// the fast-hook race runs too), and Argo CD hooks get the full set of mutations.
export const ARGOCD_VERSION = '2.14.3';

/**
 * hookguard serving `certificate`, Argo CD pinned at ARGOCD_VERSION, its stdout (the audit lines) to `logFile`;
 * `workers` above 1: as that many processes sharing its ports (bench/workers.ts); `mode`: serve's --mode, when given;
 * `cli`: another build's dist/cli/main.js (`--before DIR`).
 */
export async function startBenchHookguard(
  certificate: CertificateFiles,
  logFile: string,
  {
    workers = 1,
    mode,
    cli,
    ...underWrapper
  }: { workers?: number; mode?: 'enforce' | 'audit'; cli?: string } & UnderWrapper = {},
): Promise<ServerProcess> {
  const extraArgs = ['--argocd-version', ARGOCD_VERSION, ...(mode === undefined ? [] : ['--mode', mode])];
  const launcher = workers === 1 ? [] : [fileURLToPath(new URL('./workers.js', import.meta.url)), String(workers)];
  const log = openSync(logFile, 'w');
  try {
    return await startHookguard(certificate, { extraArgs, launcher, stdout: log, cli, ...underWrapper });
  } finally {
    closeSync(log);
  }
}

/** The built CLI of another checkout of hookguard (`--before DIR`); throws when DIR has not been built. */
export function builtCliIn(dir: string): string {
  const cli = join(dir, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`--before ${dir}: no ${cli}; run npm ci && npm run build there first`);
  return cli;
}

/** The auditing echo serving `certificate`, its one line per request to `logFile`; `batched`: its --batched mode. */
export async function startEcho(
  certificate: CertificateFiles,
  logFile: string,
  batched: boolean,
  underWrapper: UnderWrapper = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const log = openSync(logFile, 'w');
  try {
    return await startServerProcess({
      args: [
        fileURLToPath(new URL('./baseline-server.js', import.meta.url)),
        String(port),
        certificate.certFile,
        certificate.keyFile,
        ...(batched ? ['--batched'] : []),
      ],
      port,
      ca: certificate.cert,
      stdout: log,
      ...underWrapper,
    });
  } finally {
    closeSync(log);
  }
}
