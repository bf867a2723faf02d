import { EXIT } from '../errors.js';
import { builtInRules, catalogOf, describeStages } from '../rules/index.js';
import { parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';

export const RULES_USAGE = `Usage: hookguard rules [--output text|json]
Lists the rule catalog: one row per side of a rule (a rule may mutate and deny), with its id, the webhook and
operation it acts in, what it does and where it takes effect (docs/rules.md has each rule in full). On a terminal the
text wraps to its width; piped, each row is one line.
  -o, --output F  text (default) or json ({"rules":[{"id","webhook","operation","stages","doc"}]})
Exit status: ${EXIT.ok} listed, ${EXIT.badInput} bad input (an unknown option).`;

/** Below this many columns for the text, wrapping would leave a word or two a line: the rows are left whole. */
const NARROWEST_TEXT = 30;

/** `text` in lines of at most `width` characters, broken at spaces (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** `hookguard rules`: the rule catalog. */
export async function runRules(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: { output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    io.stdout(`${RULES_USAGE}\n`);
    return EXIT.ok;
  }
  const catalog = catalogOf(builtInRules);
  if (textOrJson(values.output) === 'json') {
    io.stdout(`${JSON.stringify({ rules: catalog }, null, 2)}\n`);
    return EXIT.ok;
  }
  const header = { id: 'RULE', webhook: 'WEBHOOK', operation: 'OP', text: 'WHAT IT DOES (WHERE IT TAKES EFFECT)' };
  const rows = [
    header,
    ...catalog.map((rule) => ({ ...rule, text: `${rule.doc} (takes effect at ${describeStages(rule.stages)})` })),
  ];
  const idWidth = Math.max(...rows.map((row) => row.id.length));
  const webhookWidth = Math.max(...rows.map((row) => row.webhook.length));
  const operationWidth = Math.max(...rows.map((row) => row.operation.length));
  const indent = idWidth + webhookWidth + operationWidth + 3;
  const textWidth = io.columns === undefined ? Infinity : io.columns - indent;
  for (const row of rows) {
    const [first, ...rest] = textWidth < NARROWEST_TEXT ? [row.text] : wrap(row.text, textWidth);
    io.stdout(
      `${row.id.padEnd(idWidth)} ${row.webhook.padEnd(webhookWidth)} ${row.operation.padEnd(operationWidth)} ${first}\n` +
        rest.map((line) => `${' '.repeat(indent)}${line}\n`).join(''),
    );
  }
  return EXIT.ok;
}
