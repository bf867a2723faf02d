import { loadConfig } from '../config/load.js';
import { builtInRules, catalogOf, describeStages } from '../rules/index.js';
import { EXIT, UsageError } from '../errors.js';
import { parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

function outputFormat(value: string | undefined): 'text' | 'json' {
  if (value === undefined || value === 'text' || value === 'json') return value ?? 'text';
  throw new UsageError(`--output must be text or json, got "${value}"`);
}

/** `hookguard advisories`: the known Argo CD races, built in and from the config. */
export async function runAdvisories(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: { output: { type: 'string' }, config: { type: 'string' } },
  });
  const output = outputFormat(values.output);
  const { advisories } = loadConfig({ file: values.config ?? io.env.HOOKGUARD_CONFIG });
  if (output === 'json') {
    io.stdout(`${JSON.stringify({ advisories }, null, 2)}\n`);
    return EXIT.ok;
  }
  for (const advisory of advisories) {
    io.stdout(
      `${advisory.id}\n  ${advisory.summary}\n  affected: Argo CD ${advisory.affected}${advisory.fixed ? `   fixed: ${advisory.fixed}` : ''}\n` +
        `  mitigated by: ${advisory.mitigatedBy.join(', ')}\n${advisory.references.map((reference) => `  ${reference}\n`).join('')}`,
    );
  }
  return EXIT.ok;
}

/** `hookguard rules`: the rule catalog. */
export async function runRules(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: { output: { type: 'string' } },
  });
  const catalog = catalogOf(builtInRules);
  if (outputFormat(values.output) === 'json') io.stdout(`${JSON.stringify({ rules: catalog }, null, 2)}\n`);
  else
    for (const rule of catalog)
      io.stdout(
        `${rule.id.padEnd(20)} ${rule.webhook} ${rule.operation.padEnd(6)} ${rule.doc} (takes effect at ${describeStages(rule.stages)})\n`,
      );
  return EXIT.ok;
}
