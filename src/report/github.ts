// `hookguard check --output github`: one GitHub Actions workflow command per finding, which the runner turns into an
// annotation on the file and line (`::error file=…,line=…,title=…::…`), then the summary as a plain log line.
// Escaped exactly as GitHub's own toolkit escapes them (actions/toolkit packages/core/src/command.ts, @actions/core
// 3.0.1 at 4b9afa4c: Command.toString, escapeData, escapeProperty), after printable(): a name from the manifests can
// neither end the command early nor start a command of its own.
import type { FindingAction } from '../core/types.js';
import type { CheckResult } from '../offline/check.js';
import { printable, reportLocation, summaryLine, type CheckReport } from './report.js';

/** The message of a command: `%`, CR and LF (escapeData). */
export function escapeData(text: string): string {
  return text.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A');
}

/** A property's value: as escapeData, and `:` and `,`, which end a value (escapeProperty). */
export function escapeProperty(text: string): string {
  return escapeData(text).replaceAll(':', '%3A').replaceAll(',', '%2C');
}

type Command = 'error' | 'warning' | 'notice';

/** error: would be denied; warning: warned about, or a denial audit mode does not make; notice: would be changed. */
function commandOf(action: FindingAction, result: CheckResult): Command {
  if (action === 'deny') return result.allowed ? 'warning' : 'error';
  return action === 'warn' ? 'warning' : 'notice';
}

export function renderGithub({ results, notes }: CheckReport): string {
  const lines: string[] = [];
  for (const result of results) {
    const { file, line, rendered } = reportLocation(result.source);
    for (const finding of result.findings) {
      const audit = finding.action === 'deny' && result.allowed ? ' (audit mode: denied in enforce mode only)' : '';
      // Named once: most messages name no object, a few (version-race's) start with it.
      const named = finding.message.startsWith(`${result.label} `) ? '' : `${result.label}: `;
      const message = [
        printable(`${named}${finding.message}${audit}`),
        ...(finding.note ? [printable(finding.note)] : []),
        ...(rendered ? [printable(`rendered at ${rendered}`)] : []),
      ].join('\n');
      const title = `hookguard ${finding.rule}${finding.advisory ? ` (${finding.advisory})` : ''}`;
      const properties = [`file=${escapeProperty(printable(file))}`, `line=${line}`, `title=${escapeProperty(title)}`];
      lines.push(`::${commandOf(finding.action, result)} ${properties.join(',')}::${escapeData(message)}`);
    }
  }
  // A plain line: the runner reads commands only where a line starts with `::`.
  lines.push(...[summaryLine(results), ...notes].map((line) => `hookguard check: ${printable(line)}`));
  return `${lines.join('\n')}\n`;
}
