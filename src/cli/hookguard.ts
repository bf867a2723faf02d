import { EXIT, UserError } from '../errors.js';
import type { CommandIO } from './io.js';
import { packageVersion } from './version.js';

/**
 * The full usage, with each command's own. Built on demand: it imports every command module, and a command loads
 * only its own (the sweep CronJob's memory limit has no room for the webhook server's modules).
 */
async function usage(): Promise<string> {
  const [
    { SERVE_USAGE },
    { CHECK_USAGE },
    { ADVISORIES_USAGE },
    { RULES_USAGE },
    { SWEEP_USAGE },
    { WHY_USAGE },
    { SELF_TEST_USAGE },
    { CHART_HOOK_USAGE },
    { POLICIES_USAGE },
  ] = await Promise.all([
    import('./serve.js'),
    import('./check.js'),
    import('./advisories.js'),
    import('./rules.js'),
    import('./sweep.js'),
    import('./why.js'),
    import('./self-test.js'),
    import('./chart-hook.js'),
    import('./policies.js'),
  ]);
  return `hookguard: keeps Helm and Argo CD hook Jobs from getting stuck.

Commands:
  serve        run the admission webhook (HTTPS)
  check        run the rules offline over manifests (helm template ... | hookguard check -)
  advisories   list the known Argo CD races hookguard guards against
  rules        list the rule catalog
  policies     print the rules CEL can express as admission policies (hookguard without a webhook)
  sweep        remove finalizers nothing else will (Argo CD hooks, Argo Workflows pods; dry run unless --apply)
  why          say why a hook Job or Pod failed or hangs (one hook, an Argo CD Application's, or the cluster's)
  self-test    probe once whether the API server calls both webhooks (the chart's helm test)
  chart-hook   the Helm chart's upgrade and uninstall hooks (CRDs applied, webhook configurations deleted)

Exit status:
  ${EXIT.ok}  done: check allowed everything, sweep's patches went through, serve answered every request
  ${EXIT.denied}  check: something would be denied; sweep: a patch failed or the cluster could not be listed;
     why: a hook failed, is stuck or blocked, or the cluster could not be read;
     serve: connections still open at server.shutdownTimeoutMs were cut;
     chart-hook: the API server refused the step or did not answer
  ${EXIT.badInput}  bad input: arguments, config, certificate files, manifests (stderr names the problem)
  ${EXIT.internal}  internal error: a bug in hookguard (stderr holds the stack trace)

${SERVE_USAGE}

${CHECK_USAGE}

${ADVISORIES_USAGE}

${RULES_USAGE}

${SWEEP_USAGE}

${WHY_USAGE}

${SELF_TEST_USAGE}

${CHART_HOOK_USAGE}

${POLICIES_USAGE}
`;
}

type Command = (argv: readonly string[], io: CommandIO) => Promise<number>;

const commands: Record<string, () => Promise<Command>> = {
  serve: async () => (await import('./serve.js')).runServe,
  check: async () => (await import('./check.js')).runCheck,
  advisories: async () => (await import('./advisories.js')).runAdvisories,
  rules: async () => (await import('./rules.js')).runRules,
  policies: async () => (await import('./policies.js')).runPolicies,
  sweep: async () => (await import('./sweep.js')).runSweep,
  why: async () => (await import('./why.js')).runWhy,
  'self-test': async () => (await import('./self-test.js')).runSelfTestOnce,
  'chart-hook': async () => (await import('./chart-hook.js')).runChartHook,
};

/** Every command's name; each answers -h and --help with its usage (test/cli/help.test.ts walks them). */
export const COMMAND_NAMES: readonly string[] = Object.keys(commands);

/**
 * `hookguard ARGV` against `io`: resolves with the exit status; a UserError is said on stderr and gives its status,
 * anything else rejects (a bug: main.ts prints its stack and exits 3). Tests run commands through it in process.
 */
export async function runHookguard(argv: readonly string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.stdout(await usage());
    return name === undefined ? EXIT.badInput : EXIT.ok;
  }
  if (name === '--version') {
    io.stdout(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  const command = commands[name];
  if (!command) {
    io.stderr(`hookguard: unknown command "${name}"\n\n${await usage()}`);
    return EXIT.badInput;
  }
  try {
    return await (
      await command()
    )(rest, io);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    io.stderr(`hookguard ${name}: ${error.message}\n`);
    return error.exitCode;
  }
}
