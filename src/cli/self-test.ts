import { EXIT, UsageError } from '../errors.js';
import { kubeConnection, noClusterProblem } from '../kube/kubeconfig.js';
import { kubeSelfTestClient } from '../controllers/selftest/client.js';
import { probeOnce } from '../controllers/selftest/self-test.js';
import { loadConfigWithFlags, parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const SELF_TEST_USAGE = `Usage: hookguard self-test [--config FILE]
Runs the self-test's probe once (docs/self-test.md): a server-side dry-run create of a hook Job in selfTest.namespace,
and what the answer shows: hookguard's patch (or audit warning) from the mutating webhook, and the validating
webhook's marker. Run it as hookguard's own service account (the webhooks mark only its probes): the chart's
\`helm test\` does. Talks to the cluster of KUBECONFIG, the in-cluster service account, or ~/.kube/config.
Exit status: ${EXIT.ok} both webhooks were called, ${EXIT.failed} one or both were not, or the dry run failed, ${EXIT.badInput} bad input.`;

/** `hookguard self-test`: one probe, its verdict on stdout; non-zero unless the API server called both webhooks. */
export async function runSelfTestOnce(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    io.stdout(`${SELF_TEST_USAGE}\n`);
    return EXIT.ok;
  }
  const config = loadConfigWithFlags(io, values.config, []);
  const connection = kubeConnection(io.env);
  if (!connection) throw new UsageError(noClusterProblem(io.env));
  const { namespace, requestTimeoutMs } = config.selfTest;
  const verdict = await probeOnce(
    kubeSelfTestClient(connection.kubeConfig),
    { namespace, mode: config.mode, requestTimeoutMs },
    new AbortController().signal,
  );
  io.stdout(`hookguard self-test in namespace ${namespace}: ${verdict.reason}: ${verdict.message}\n`);
  return verdict.outcome === 'Called' ? EXIT.ok : EXIT.failed;
}
