import { stringify } from 'yaml';
import { decisionContext } from '../config/decision-context.js';
import { EXIT, UsageError } from '../errors.js';
import { ruleCoverage, type RuleCoverage } from '../policies/coverage.js';
import { admissionPolicies } from '../policies/generate.js';
import { builtInRules, catalogOf, ruleConfigKey } from '../rules/index.js';
import { loadConfigWithFlags, parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const POLICIES_USAGE = `Usage: hookguard policies [--config FILE] [--mode enforce|audit] [--argocd-version V] [--disable ID,...] [--namespace NS] [-o|--output yaml|json] [--explain]
Prints hookguard without a webhook: a MutatingAdmissionPolicy or ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, Kubernetes 1.36+) for each rule, or part of a rule, that CEL expresses exactly,
from the configuration serve reads, and the ConfigMap hookguard-policy-params the version-dependent ones read
(hookguard policies | kubectl apply -f -). docs/policies.md says what they do and what stays with the webhook.
  --argocd-version V   the Argo CD version the parameters are judged for (argocd.version; without any: unknown)
  --mode M             enforce (default: the config's) or audit: audit mode generates no mutating policy
  --disable ID,...     leave these rules out, as rules.<rule>.enabled: false does
  --namespace NS       the namespace of the parameters ConfigMap (default hookguard)
  -o, --output F       yaml (default: a YAML stream) or json (a v1 List)
  --explain            instead, list every rule as policy, partial, webhook only or render time, and why
                       (-o json for JSON)`;

function outputOf(value: string | undefined): 'yaml' | 'json' {
  if (value === undefined || value === 'yaml' || value === 'json') return value ?? 'yaml';
  throw new UsageError(`--output must be yaml or json, got "${value}"`);
}

/** The ids --disable names, each a rule of the catalog. */
function disabledIds(value: string | undefined): string[] {
  if (value === undefined) return [];
  const known = new Set(catalogOf(builtInRules).map((rule) => rule.id));
  const ids = value
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length > 0)
    throw new UsageError(`--disable: unknown rules ${unknown.join(', ')} (hookguard rules lists them)`);
  return ids;
}

/** The --explain table: one line per rule side, its coverage, and what the policy does or what is left out. */
export function renderCoverage(coverage: readonly RuleCoverage[]): string {
  const idWidth = Math.max(...coverage.map((rule) => `${rule.id} (${rule.webhook})`.length));
  const coverageWidth = Math.max(...coverage.map((rule) => rule.coverage.length));
  return coverage
    .map((rule) => {
      const what = [rule.how, rule.leftOut ? `left out: ${rule.leftOut}` : undefined].filter(Boolean).join('; ');
      return `${`${rule.id} (${rule.webhook})`.padEnd(idWidth)}  ${rule.coverage.padEnd(coverageWidth)}  ${what}\n`;
    })
    .join('');
}

/** `hookguard policies`: the admission policies, or with --explain what they cover. */
export async function runPolicies(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: {
      config: { type: 'string' },
      mode: { type: 'string' },
      'argocd-version': { type: 'string' },
      disable: { type: 'string' },
      namespace: { type: 'string' },
      output: { type: 'string', short: 'o' },
      explain: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${POLICIES_USAGE}\n`);
    return EXIT.ok;
  }
  const output = outputOf(values.output);
  if (values.explain) {
    const coverage = ruleCoverage();
    io.stdout(output === 'json' ? `${JSON.stringify({ rules: coverage }, null, 2)}\n` : renderCoverage(coverage));
    return EXIT.ok;
  }
  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'mode', key: 'mode', value: values.mode },
    { flag: 'argocd-version', key: 'argocd.version', value: values['argocd-version'] },
    ...disabledIds(values.disable).map((id) => ({
      flag: 'disable',
      key: `rules.${ruleConfigKey(id)}.enabled`,
      value: 'false',
    })),
  ]);
  const objects = admissionPolicies(decisionContext(config), { namespace: values.namespace ?? 'hookguard' });
  io.stdout(
    output === 'json'
      ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`
      : objects.map((object) => stringify(object, { lineWidth: 0 })).join('---\n'),
  );
  return EXIT.ok;
}
