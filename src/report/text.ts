// `hookguard check` (text, the default): each object with its verdict, where it was read, and its findings; then the
// summary. Every line is shown printable(): names, paths and messages from the manifests cannot start lines of
// their own or drive the terminal.
import type { CheckResult } from '../offline/check.js';
import type { Source } from '../offline/read.js';
import { printable, summaryLine, wouldDenyInEnforce, type CheckReport } from './report.js';

/** `  at chart.yaml:12 (document 2): # Source: chart/templates/job.yaml`: where an object was read. */
export function describeSource({ file, line, document, item, firstLine, template }: Source): string {
  const within = `document ${document}${item === undefined ? '' : `, item ${item}`}${template ? `, template ${template}` : ''}`;
  return printable(`  at ${file === '-' ? 'stdin' : file}:${line} (${within})${firstLine ? `: ${firstLine}` : ''}`);
}

function verdict(result: CheckResult): string {
  const audit = result.mode === 'audit';
  const allowed = !result.allowed
    ? 'DENIED'
    : wouldDenyInEnforce(result)
      ? 'allowed in audit mode, DENIED in enforce mode'
      : audit
        ? 'allowed (audit mode)'
        : 'allowed';
  const ops = result.patch.length > 0 ? `, ${result.patch.length} patch op(s)${audit ? ' withheld' : ''}` : '';
  const unchanged = result.findings.length === 0 && result.patch.length === 0 ? ', unchanged' : '';
  return `${allowed}${ops}${unchanged}`;
}

/** An object's findings, one line each (and a line for each advisory's note), as the text report shows them. */
function findingLines(findings: CheckResult['findings']): string[] {
  return findings.flatMap((finding) => [
    printable(
      `  ${finding.action.padEnd(6)} ${finding.rule}${finding.advisory ? ` [${finding.advisory}]` : ''}: ${finding.message}`,
    ),
    ...(finding.note ? [printable(`         note: ${finding.note}`)] : []),
  ]);
}

export function renderText({ results, notes }: CheckReport): string {
  const lines: string[] = [];
  for (const result of results)
    lines.push(
      printable(`${result.label}: ${verdict(result)}`),
      describeSource(result.source),
      ...findingLines(result.findings),
    );
  lines.push(summaryLine(results), ...notes.map(printable));
  return `${lines.join('\n')}\n`;
}

/**
 * What `--fix` says on stderr of an object in audit mode, which it prints as written: the changes and denials
 * enforce mode would make, as the text report's findings; nothing when there are none.
 */
export function describeWithheld(result: CheckResult): string {
  const withheld = result.findings.filter((finding) => finding.action !== 'warn');
  if (withheld.length === 0) return '';
  const lines = [
    printable(`hookguard check: ${result.label}: audit mode, printed as written; what enforce mode would do:`),
    describeSource(result.source),
    ...findingLines(withheld),
  ];
  return `${lines.join('\n')}\n`;
}

/** What `--fix` says on stderr of one denial (its stdout is the manifests). */
export function describeDenial(result: CheckResult, rule: string, message: string): string {
  return `${printable(`hookguard check: ${result.label} denied by ${rule}: ${message}`)}\n${describeSource(result.source)}\n`;
}
