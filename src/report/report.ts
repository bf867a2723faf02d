// One `hookguard check` run as the reports see it, and the words every format shares: how many objects would be
// changed or denied, where each was read, and how a name from the manifests is shown. Each renderer takes this data
// and returns text (why.ts, for `hookguard why`, follows the same shape).
import type { CheckResult } from '../offline/check.js';
import type { Source } from '../offline/read.js';

export interface CheckReport {
  results: readonly CheckResult[];
  /** Sentences about the run as a whole (which Helm it assumed, and what that changed). */
  notes: readonly string[];
}

/** The formats `check --output` writes. */
export const REPORT_FORMATS = ['text', 'json', 'sarif', 'junit', 'github'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/**
 * The C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidirectional overrides: in a file
 * name or `metadata.name` they would move the cursor, colour the terminal, start a line of their own or reorder what
 * is shown (a forged `0 would be denied` line). Shown escaped.
 */
// eslint-disable-next-line no-control-regex -- the controls are exactly what is matched.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** The text with every character that could change how a terminal or log shows it written as an escape. */
export function printable(text: string): string {
  return text.replace(
    UNPRINTABLE,
    (character) => SHORT_ESCAPES[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `2 object(s): 1 would be changed, 1 would be denied`, and in audit mode what it held back. */
export function summaryLine(results: readonly CheckResult[]): string {
  const audited = results.filter((result) => result.mode === 'audit');
  const changed = results.filter((result) => result.mode !== 'audit' && result.patch.length > 0).length;
  const denied = results.filter((result) => !result.allowed).length;
  const withheld = audited.filter((result) => result.patch.length > 0).length;
  const unenforced = audited.filter((result) => wouldDenyInEnforce(result)).length;
  const audit =
    withheld + unenforced > 0
      ? `; audit mode withheld ${withheld} change(s) and ${unenforced} denial(s) enforce mode would make`
      : '';
  return `${results.length} object(s): ${changed} would be changed, ${denied} would be denied${audit}`;
}

/** An object audit mode let through that enforce mode would deny. */
export function wouldDenyInEnforce(result: CheckResult): boolean {
  return result.allowed && result.findings.some((finding) => finding.action === 'deny');
}

/** Helm's `# Source: chart/templates/job.yaml`, the comment `helm template` writes above each document. */
const HELM_SOURCE = /^# Source: (\S.*)$/;

/** The template a document was rendered from: Helm 4's post-renderer annotation, else Helm's `# Source:` comment. */
export function templateOf(source: Source): string | undefined {
  return source.template ?? HELM_SOURCE.exec(source.firstLine)?.[1];
}

/** Where a report points: a file (repository-relative when it can be) and a line in it. */
export interface ReportLocation {
  /** The path as given, `stdin`, or with a chart root the template's path in the repository. */
  file: string;
  line: number;
  /** Set when `file` is the template: the place in the rendered manifests it came from (`stdin:12`). */
  rendered?: string;
}

/**
 * Where a report points for an object read at `source`. With a chart root (`--chart-root`, or the chart directory
 * `check` rendered), a document Helm rendered points at its template: `# Source: app/templates/job.yaml` under the
 * chart root `charts/app` is `charts/app/templates/job.yaml` (the first segment is the chart's name; a subchart's
 * `app/charts/db/templates/x.yaml` is `charts/app/charts/db/templates/x.yaml`). Its line is 1: the template's lines
 * are not the rendered ones.
 */
export function reportLocation(source: Source): ReportLocation {
  const file = source.file === '-' ? 'stdin' : source.file;
  const template = source.chartRoot === undefined ? undefined : templateOf(source);
  if (source.chartRoot === undefined || template === undefined || !template.includes('/'))
    return { file, line: source.line };
  const root = source.chartRoot.replaceAll('\\', '/').replace(/\/+$/, '');
  const within = template.slice(template.indexOf('/') + 1);
  return {
    file: root === '' || root === '.' ? within : `${root}/${within}`,
    line: 1,
    rendered: `${file}:${source.line}`,
  };
}
