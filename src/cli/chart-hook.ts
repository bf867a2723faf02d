import { readFileSync } from 'node:fs';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { isRecord } from '../core/objects.js';
import { apiFailureText, EXIT, InputError, isBug, UsageError } from '../errors.js';
import { apiFailure } from '../kube/api-failure.js';
import { kubeChartLifecycleClient } from '../kube/chart-lifecycle.js';
import { kubeConnection, noClusterProblem } from '../kube/kubeconfig.js';
import { parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const CHART_HOOK_USAGE = `Usage: hookguard chart-hook upgrade-crds FILE... | delete-webhooks NAME
What the Helm chart's hooks run (charts/hookguard/templates/lifecycle.yaml):
  upgrade-crds     pre-upgrade: server-side applies each CRD file (Helm upgrades nothing in crds/)
  delete-webhooks  pre-delete: deletes the Validating- and MutatingWebhookConfiguration NAME, so that no webhook
                   is left calling the Service Helm 3 deletes before them
Exit status: ${EXIT.ok} done, ${EXIT.stepFailed} the API server refused the step or did not answer (stderr says which and
why), ${EXIT.badInput} bad input.`;

function readCrd(file: string): V1CustomResourceDefinition {
  let crd: unknown;
  try {
    crd = parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}`);
  }
  if (!isRecord(crd) || crd.kind !== 'CustomResourceDefinition')
    throw new InputError(`${file}: not a CustomResourceDefinition`);
  return crd as unknown as V1CustomResourceDefinition;
}

/** `hookguard chart-hook`: one lifecycle step of the Helm chart. */
export async function runChartHook(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArguments(argv, {
    options: { help: { type: 'boolean', short: 'h', default: false } },
    allowPositionals: true,
  });
  if (values.help) {
    io.stdout(`${CHART_HOOK_USAGE}\n`);
    return EXIT.ok;
  }
  const [step, ...operands] = positionals;
  if (step !== 'upgrade-crds' && step !== 'delete-webhooks')
    throw new UsageError(
      `chart-hook takes upgrade-crds or delete-webhooks, got ${step === undefined ? 'nothing' : `"${step}"`}`,
    );
  if (operands.length === 0)
    throw new UsageError(step === 'upgrade-crds' ? 'upgrade-crds takes the CRD files' : 'delete-webhooks takes a name');
  const crds = step === 'upgrade-crds' ? operands.map(readCrd) : [];
  const connection = kubeConnection(io.env);
  if (!connection) throw new UsageError(noClusterProblem(io.env));
  const client = kubeChartLifecycleClient(connection.kubeConfig);
  // What the API server said is the Job's log line: one line naming the object and the API server's own words.
  const attempt = async (what: string, call: () => Promise<void>): Promise<boolean> => {
    try {
      await call();
      return true;
    } catch (error) {
      if (isBug(error)) throw error;
      io.stderr(`hookguard chart-hook: cannot ${what} (${connection.source}): ${apiFailureText(apiFailure(error))}\n`);
      return false;
    }
  };
  if (step === 'upgrade-crds') {
    for (const crd of crds) {
      const name = crd.metadata?.name ?? '';
      if (!(await attempt(`apply CustomResourceDefinition ${name}`, () => client.applyCrd(crd))))
        return EXIT.stepFailed;
      io.stdout(`applied CustomResourceDefinition ${name}\n`);
    }
  } else {
    for (const name of operands) {
      const what = `delete ValidatingWebhookConfiguration and MutatingWebhookConfiguration ${name}`;
      if (!(await attempt(what, () => client.deleteWebhookConfigurations(name)))) return EXIT.stepFailed;
      io.stdout(`deleted ValidatingWebhookConfiguration and MutatingWebhookConfiguration ${name}\n`);
    }
  }
  return EXIT.ok;
}
