import { EXIT } from '../errors.js';
import { builtInRules, catalogOf, describeStages } from '../rules/index.js';
import { parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';

/** `hookguard rules`: the rule catalog. */
export async function runRules(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: { output: { type: 'string' } },
  });
  const catalog = catalogOf(builtInRules);
  if (textOrJson(values.output) === 'json') io.stdout(`${JSON.stringify({ rules: catalog }, null, 2)}\n`);
  else {
    const idWidth = Math.max(...catalog.map((rule) => rule.id.length));
    const webhookWidth = Math.max(...catalog.map((rule) => rule.webhook.length));
    for (const rule of catalog)
      io.stdout(
        `${rule.id.padEnd(idWidth)} ${rule.webhook.padEnd(webhookWidth)} ${rule.operation.padEnd(6)} ${rule.doc} (takes effect at ${describeStages(rule.stages)})\n`,
      );
  }
  return EXIT.ok;
}
