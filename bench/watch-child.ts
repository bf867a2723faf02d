// The process bench/watch-measure.ts measures: serve's hook watcher from the built package (dist/), with the settings
// serve gives it (hookWatchSettings() of the default configuration), on the kubeconfig in KUBECONFIG, for --seconds;
// or, with --off, the same process and modules without it (the baseline). Logs are pino JSON lines on stdout, as
// serve writes them; the last line is `bench result`, with the process's own resource usage (getrusage(RUSAGE_SELF):
// its peak RSS and CPU time).
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { fromDist } from './built.js';

type LoadModule = typeof import('../src/config/load.js');
type StartModule = typeof import('../src/controllers/start.js');
type WatcherModule = typeof import('../src/controllers/hooks/watcher.js');
type ClientModule = typeof import('../src/controllers/hooks/client.js');
type KubeconfigModule = typeof import('../src/kube/kubeconfig.js');
type BudgetModule = typeof import('../src/kube/call-budget.js');

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, off: { type: 'boolean', default: false } } });
  const [
    { loadConfig },
    { hookWatchSettings, hookWatchCallLimits },
    { HookWatcher },
    { kubeHookWatchClient },
    { kubeConnection },
    { CallBudget },
  ] = await Promise.all([
    fromDist<LoadModule>('config/load.js'),
    fromDist<StartModule>('controllers/start.js'),
    fromDist<WatcherModule>('controllers/hooks/watcher.js'),
    fromDist<ClientModule>('controllers/hooks/client.js'),
    fromDist<KubeconfigModule>('kube/kubeconfig.js'),
    fromDist<BudgetModule>('kube/call-budget.js'),
  ]);
  const logger = pino({ level: 'info' });
  const connection = kubeConnection(process.env);
  if (!connection) throw new Error('no kubeconfig in KUBECONFIG');
  // The time to first sync counts from here: the modules are loaded, the watcher is about to start.
  const startedAtMs = Date.now();
  const stop = AbortSignal.timeout(Number(values.seconds) * 1000);
  const failures: string[] = [];
  if (values.off) await sleep(Number(values.seconds) * 1000);
  else {
    const config = loadConfig();
    const watcher = new HookWatcher(
      connection.kubeConfig,
      kubeHookWatchClient(connection.kubeConfig, new CallBudget(hookWatchCallLimits(config))),
      hookWatchSettings(config),
      logger.child({ component: 'hook-watcher' }),
      { failure: (reason) => failures.push(reason), failing: () => undefined },
    );
    await watcher.run(stop);
  }
  logger.info({ startedAtMs, failures, usage: process.resourceUsage() }, 'bench result');
}

await main();
