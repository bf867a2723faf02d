// `npm run bench:instructions`: the CPU instructions hookguard and the batching echo spend per request, counted by
// valgrind's callgrind (every thread of the process, user space), for each mix of `npm run bench`.
//
// Throughput and CPU time move with whatever else the machine runs; an instruction count does not. Each server runs
// under callgrind with counting off while it starts and warms up (so that V8 has compiled the hot path), counts
// exactly `--requests` requests, and stops counting. The ratio hookguard / echo is the part of the bench's CPU ratio
// that is hookguard's own code; the rest (cache misses, the kernel's share) it does not see. It found the audit line
// at a quarter of a hook request's instructions (docs/benchmark.md, "The audit line").
// Needs valgrind (callgrind_control). Slow: each server and mix takes about two and a half minutes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { writeCertificate, type ServerProcess } from '../test/support/server-process.js';
import { builtCertificateGenerator, builtDecision } from './built.js';
import { ARGOCD_VERSION, builtCliIn, startBenchHookguard, startEcho, type UnderWrapper } from './servers.js';
import { autocannonRequests, buildWorkload, scenarioMixes, type BenchRequest } from './workload.js';

const { values: flags } = parseArgs({
  options: {
    mixes: { type: 'string', default: 'argocd-hooks,non-hooks' },
    warmup: { type: 'string', default: '5000' },
    requests: { type: 'string', default: '1500' },
    connections: { type: 'string', default: '8' },
    // Another checkout of hookguard with its dist/ built, counted as a third server: a change against the code before it.
    before: { type: 'string' },
  },
});
const beforeCli = flags.before === undefined ? undefined : builtCliIn(resolve(flags.before));
type Server = 'hookguard' | 'before' | 'echo';
const warmup = Number(flags.warmup);
const requests = Number(flags.requests);
const connections = Number(flags.connections);

const { argocdController, mutatePatch } = await builtDecision(ARGOCD_VERSION);
const workload = buildWorkload(argocdController, mutatePatch);
const mixes: Record<string, readonly BenchRequest[]> = scenarioMixes(workload.requests);
const chosen = flags.mixes.split(',').filter(Boolean);
for (const name of chosen)
  if (!(name in mixes)) throw new Error(`--mixes: no mix ${name} (${Object.keys(mixes).join(', ')})`);

const certificate = writeCertificate(await (await builtCertificateGenerator())());
const dir = mkdtempSync(join(tmpdir(), 'hookguard-bench-instructions-'));

/** Instructions per request of one server over one mix. */
async function count(server: Server, mix: readonly BenchRequest[]): Promise<number> {
  const outDir = mkdtempSync(join(dir, `${server}-`));
  const underWrapper: UnderWrapper = {
    wrapper: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outDir}/callgrind.%p`],
    readyTimeoutMs: 300_000,
  };
  const log = join(outDir, 'server.log');
  const running = await start(server, log, underWrapper);
  try {
    const pid = String(running.child.pid);
    await load(running, mix, warmup);
    execFileSync('callgrind_control', ['--instr=on', pid], { stdio: 'ignore' });
    const result = await load(running, mix, requests);
    execFileSync('callgrind_control', ['--instr=off', pid], { stdio: 'ignore' });
    execFileSync('callgrind_control', ['--dump', pid], { stdio: 'ignore' });
    if (result['2xx'] < requests * 0.99)
      throw new Error(`${server}: ${result['2xx']} of ${requests} requests answered 2xx under valgrind`);
    let total = 0;
    for (const file of readdirSync(outDir).filter((name) => name.startsWith('callgrind.')))
      total += Number(/^totals: (\d+)/m.exec(readFileSync(join(outDir, file), 'utf8'))?.[1] ?? 0);
    return total / result['2xx'];
  } finally {
    await running.stop('SIGKILL', 1000);
  }
}

async function start(server: Server, log: string, underWrapper: UnderWrapper): Promise<ServerProcess> {
  if (server === 'hookguard') return startBenchHookguard(certificate, log, underWrapper);
  if (server === 'echo') return startEcho(certificate, log, true, underWrapper);
  return startBenchHookguard(certificate, log, { cli: beforeCli, ...underWrapper });
}

function load(server: ServerProcess, mix: readonly BenchRequest[], amount: number) {
  return autocannon({
    url: server.url,
    connections,
    pipelining: 1,
    amount,
    timeout: 60,
    requests: autocannonRequests(mix),
  });
}

try {
  console.log(
    `bench:instructions: ${warmup} requests to warm up, then ${requests} counted, ${connections} connections, Node ${process.version}`,
  );
  const rows: string[] = [];
  for (const name of chosen) {
    const mix = mixes[name] as readonly BenchRequest[];
    const hookguard = await count('hookguard', mix);
    const before = beforeCli === undefined ? undefined : await count('before', mix);
    const echo = await count('echo', mix);
    const perRequest = (value: number) => Math.round(value).toLocaleString('en');
    const row =
      `| ${name} | ${perRequest(hookguard)} | ${perRequest(echo)} | ${(hookguard / echo).toFixed(3)} |` +
      (before === undefined ? '' : ` ${perRequest(before)} | ${(hookguard / before).toFixed(3)} |`);
    console.log(row);
    rows.push(row);
  }
  console.log(
    `\n| mix | hookguard instructions/request | the batching echo | hookguard / echo |` +
      (beforeCli === undefined ? '' : ' the build before | hookguard / before |') +
      `\n|---|---:|---:|---:|${beforeCli === undefined ? '' : '---:|---:|'}\n${rows.join('\n')}`,
  );
} finally {
  certificate.remove();
  rmSync(dir, { recursive: true, force: true });
}
