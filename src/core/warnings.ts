import type { Finding, Mode } from './types.js';

// Kubernetes advises at most 120 characters a warning and 4096 in all; longer ones may be cut by clients.
export const MAX_WARNING_CHARS = 120;
const MAX_TOTAL_CHARS = 4096;

/** At most `limit` (≥ 1) code points: the first `limit - 1` and an ellipsis when the text is longer. */
export function truncate(text: string, limit: number): string {
  // Never more code points than UTF-16 units: most warnings fit and are not counted (a warning per finding, per request).
  if (text.length <= limit) return text;
  let points = 0;
  let cut = 0;
  for (let index = 0; index < text.length; points++) {
    if (points === limit - 1) cut = index;
    if (points === limit) return `${text.slice(0, cut)}…`;
    index += (text.codePointAt(index) as number) > 0xffff ? 2 : 1;
  }
  return text;
}

const AUDIT_VERBS = { mutate: 'would change', deny: 'would deny', warn: 'note' } as const;

/** How a finding's warning begins: `hookguard audit would change [rule]:` in audit mode, `hookguard [rule]:` else. */
export function findingPrefix(finding: Pick<Finding, 'rule' | 'action'>, mode: Mode): string {
  return `${mode === 'audit' ? `hookguard audit ${AUDIT_VERBS[finding.action]}` : 'hookguard'} [${finding.rule}]:`;
}

/**
 * Audit mode says everything it would have done; enforce mode only says what it could not fix (denials carry their
 * own message, and mutations are in the audit log).
 */
export function renderWarnings(findings: readonly Finding[], mode: Mode): string[] {
  const shown = mode === 'audit' ? findings : findings.filter((finding) => finding.action === 'warn');
  const warnings: string[] = [];
  let total = 0;
  for (const [index, finding] of shown.entries()) {
    const warning = truncate(`${findingPrefix(finding, mode)} ${finding.message}`, MAX_WARNING_CHARS);
    const remaining = shown.length - index - 1;
    if (total + warning.length > MAX_TOTAL_CHARS - MAX_WARNING_CHARS && remaining > 0) {
      warnings.push(`hookguard: ${remaining + 1} more findings in the audit log`);
      break;
    }
    warnings.push(warning);
    total += warning.length;
  }
  return warnings;
}
