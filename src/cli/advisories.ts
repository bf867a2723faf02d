import { loadConfig } from '../config/load.js';
import type { Advisory, AdvisoryTool } from '../core/types.js';
import { EXIT } from '../errors.js';
import { parseArguments, textOrJson } from './arguments.js';
import type { CommandIO } from './io.js';

const TOOL_NAMES: Readonly<Record<AdvisoryTool, string>> = {
  argocd: 'Argo CD',
  helm: 'Helm',
  'helm-controller': 'Flux helm-controller',
};

/** What removes an advisory's race, or that nothing hookguard does at admission can. */
function remedies(advisory: Advisory): string[] {
  const sweep = 'hookguard sweep --apply (it frees what stays stuck)';
  const mitigation =
    advisory.mitigatedBy.length > 0
      ? [`mitigated by: ${advisory.mitigatedBy.join(', ')}`, ...(advisory.mitigatedBySweep ? [`also: ${sweep}`] : [])]
      : [
          `mitigated by: ${advisory.mitigatedBySweep ? `${sweep}, not by an admission rule` : 'nothing hookguard can change'}`,
        ];
  return [...mitigation, ...(advisory.warnedBy.length > 0 ? [`warned about by: ${advisory.warnedBy.join(', ')}`] : [])];
}

function describeAdvisory(advisory: Advisory): string {
  const lines = [
    advisory.id,
    advisory.summary,
    `affected: ${TOOL_NAMES[advisory.tool ?? 'argocd']} ${advisory.affected}   fixed: ${advisory.fixed ?? 'not yet'}${advisory.checked ? `   checked: ${advisory.checked}` : ''}`,
    ...(advisory.hooks === 'delete' ? ["concerns: Argo CD's PreDelete and PostDelete hooks"] : []),
    ...remedies(advisory),
    ...advisory.notes.map(
      (note) =>
        `note for ${note.affected}${note.hookName ? ` (${note.hookName === 'fixed' ? 'hooks with a fixed name' : 'generateName hooks'})` : ''}: ${note.text}`,
    ),
    ...advisory.references,
  ];
  return `${lines[0]}\n${lines
    .slice(1)
    .map((line) => `  ${line}\n`)
    .join('')}`;
}

export const ADVISORIES_USAGE = `Usage: hookguard advisories [--output text|json] [--config FILE]
Lists the known races of Argo CD, Helm and Flux helm-controller versions that hookguard guards against: the
built-in advisories (data/advisories.yaml) and those of the config, each with the versions it affects, the rules that
mitigate or warn of it, its notes and its references.
  -o, --output F  text (default) or json ({"advisories":[...]})
  --config FILE   the config file whose advisories are added (also HOOKGUARD_CONFIG)
Exit status: ${EXIT.ok} listed, ${EXIT.badInput} bad input (an unknown option, a config that does not load).`;

/** `hookguard advisories`: the known Argo CD (and Helm, and Flux helm-controller) races, built in and from the config. */
export async function runAdvisories(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: {
      output: { type: 'string', short: 'o' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${ADVISORIES_USAGE}\n`);
    return EXIT.ok;
  }
  const output = textOrJson(values.output);
  const { advisories } = loadConfig({ file: values.config ?? io.env.HOOKGUARD_CONFIG });
  if (output === 'json') {
    io.stdout(`${JSON.stringify({ advisories }, null, 2)}\n`);
    return EXIT.ok;
  }
  for (const advisory of advisories) io.stdout(describeAdvisory(advisory));
  return EXIT.ok;
}
