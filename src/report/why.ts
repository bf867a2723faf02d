// `hookguard why`'s output: text for people, JSON for scripts, both from the explanations of src/core/explain/.
import type { HookExplanation, HookState } from '../core/explain/index.js';
import { printable } from './report.js';

export interface WhyReport {
  /** What was asked about: `job shop/db-migrate`, `Application argocd/shop`, `all namespaces`. */
  scope: string;
  /** The hooks shown, in the order looked at. */
  hooks: HookExplanation[];
  /** Every hook looked at, shown or not. */
  examined: number;
  /** Looked at and fine (Succeeded or Running), not shown: `-A` lists only the others. */
  notShown: number;
  /** Over the `why.maxHooks` cap: not looked at. */
  overCap: number;
  /** The Argo CD operation, for `--application`. */
  operation?: { phase?: string; message?: string };
}

/** The fields in one order, unset ones left out: what a script reads is the same from one run to the next. */
const FIELD_ORDER: readonly (keyof HookExplanation)[] = [
  'kind',
  'namespace',
  'name',
  'state',
  'reason',
  'message',
  'nextStep',
  'since',
  'forSeconds',
  'pod',
  'container',
  'containerRole',
  'image',
  'containerReason',
  'exitCode',
  'signal',
  'terminationMessage',
  'quoted',
  'quotedFrom',
  'jobCondition',
  'blockedBy',
  'missing',
];

function ordered(explanation: HookExplanation): Partial<HookExplanation> {
  const out: Partial<Record<keyof HookExplanation, unknown>> = {};
  for (const key of FIELD_ORDER) if (explanation[key] !== undefined) out[key] = explanation[key];
  return out as Partial<HookExplanation>;
}

/** Lines of a termination message shown in text (the JSON carries it whole). */
const TERMINATION_LINES = 20;
const STATE_ORDER: readonly HookState[] = ['Failed', 'Stuck', 'Blocked', 'Suspended', 'Running', 'Succeeded'];

/** 45s, 18m58s, 2h03m, 3d04h. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h${String(minutes % 60).padStart(2, '0')}m`;
  return `${Math.floor(hours / 24)}d${String(hours % 24).padStart(2, '0')}h`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function hookText(hook: HookExplanation): string {
  const where = hook.namespace ? `${hook.namespace}/${hook.name}` : hook.name;
  const since =
    hook.since !== undefined
      ? ` since ${hook.since}${hook.forSeconds !== undefined ? ` (${duration(hook.forSeconds)})` : ''}`
      : '';
  const lines = [`${hook.kind} ${where}: ${hook.state} (${hook.reason})${since}`, `  ${printable(hook.message)}`];
  if (hook.quoted !== undefined && !hook.message.includes(oneLine(hook.quoted))) {
    lines.push(`  ${hook.quotedFrom ?? 'said'}: ${printable(oneLine(hook.quoted))}`);
  }
  if (hook.terminationMessage !== undefined) {
    const all = hook.terminationMessage.replace(/\n+$/, '').split('\n');
    const shown = all.slice(-TERMINATION_LINES);
    lines.push(
      `  termination message${all.length > shown.length ? ` (last ${shown.length} of ${all.length} lines)` : ''}:`,
    );
    for (const line of shown) lines.push(`    | ${printable(line)}`);
  }
  lines.push(`  next step: ${printable(hook.nextStep)}`);
  return lines.join('\n');
}

function counts(hooks: readonly HookExplanation[]): string {
  return STATE_ORDER.flatMap((state) => {
    const count = hooks.filter((hook) => hook.state === state).length;
    return count > 0 ? [`${count} ${state}`] : [];
  }).join(', ');
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

export function renderWhyText(report: WhyReport): string {
  const blocks: string[] = [];
  if (report.operation) {
    const { phase, message } = report.operation;
    blocks.push(
      `${report.scope}: ${phase ? `operation ${phase}` : 'no operation recorded'}${message ? `: ${printable(oneLine(message))}` : ''}`,
    );
  }
  blocks.push(...report.hooks.map(hookText));
  const summary: string[] = [];
  if (report.hooks.length === 0)
    summary.push(
      report.examined === 0
        ? `no hook found (${report.scope})`
        : `no hook failing, stuck, blocked or suspended (${report.scope}): ${plural(report.examined, 'hook')} looked at`,
    );
  else if (report.examined > 1 || report.notShown > 0)
    summary.push(`${plural(report.examined, 'hook')} looked at (${report.scope}): ${counts(report.hooks)}`);
  if (report.hooks.length > 0 && report.notShown > 0) summary.push(`${report.notShown} Succeeded or Running not shown`);
  if (report.overCap > 0)
    summary.push(
      `${plural(report.overCap, 'more hook')} not looked at (why.maxHooks); narrow with -n or --application`,
    );
  if (summary.length > 0) blocks.push(summary.join('; '));
  return `${blocks.join('\n\n')}\n`;
}

/** One JSON document: every hook shown as its whole explanation, and what was looked at. */
export function renderWhyJson(report: WhyReport): string {
  return `${JSON.stringify({
    scope: report.scope,
    ...(report.operation ? { operation: report.operation } : {}),
    hooks: report.hooks.map(ordered),
    examined: report.examined,
    notShown: report.notShown,
    overCap: report.overCap,
  })}\n`;
}
