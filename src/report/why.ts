// `hookguard why`'s output: text for people, JSON for scripts, both from the explanations of src/core/explain/.
import type { HookExplanation, HookState, ReleaseExplanation } from '../core/explain/index.js';
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
  /** Helm releases: the one of `--release` or `--helmrelease`, those `-A` found failed or stuck; their hooks' objects are `hooks`. */
  releases?: ReleaseExplanation[];
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

function since(at: string | undefined, seconds: number | undefined): string {
  return at !== undefined ? ` since ${at}${seconds !== undefined ? ` (${duration(seconds)})` : ''}` : '';
}

/** The HelmRelease asked about, its target and its conditions quoted; then the release and each hook it declares. */
function releaseText(release: ReleaseExplanation): string {
  const lines: string[] = [];
  const owner = release.helmRelease;
  if (owner !== undefined) {
    lines.push(`HelmRelease ${owner.namespace}/${owner.name}: release ${release.namespace}/${release.name}`);
    if (owner.conditions.length === 0) lines.push('  no Ready or Released condition yet');
    for (const condition of owner.conditions)
      lines.push(
        `  ${condition.type} ${condition.status}${condition.reason ? ` (${condition.reason})` : ''}${condition.message ? `: ${printable(oneLine(condition.message))}` : ''}`,
      );
    lines.push('');
  }
  lines.push(
    `Release ${release.namespace}/${release.name} revision ${release.revision}: ${release.state} (${release.status})${since(release.since, release.forSeconds)}`,
    `  ${printable(oneLine(release.message))}`,
    `  chart ${printable(release.chart)}, read from ${printable(release.storedIn)}`,
    `  next step: ${printable(release.nextStep)}`,
  );
  if (release.hooks.length === 0) lines.push('  hooks: none declared');
  else lines.push('  hooks, as Helm recorded them:');
  for (const hook of release.hooks)
    lines.push(
      `    ${hook.kind} ${printable(hook.name)} [${hook.events.join(',')}; weight ${hook.weight}; delete policy ${hook.deletePolicies.join(',') || 'none (Helm: before-hook-creation)'}; last run ${hook.lastRunPhase || 'none'}]: ${printable(hook.summary)}`,
    );
  return lines.join('\n');
}

export function renderWhyText(report: WhyReport): string {
  const blocks: string[] = [];
  blocks.push(...(report.releases ?? []).map(releaseText));
  if (report.operation) {
    const { phase, message } = report.operation;
    blocks.push(
      `${report.scope}: ${phase ? `operation ${phase}` : 'no operation recorded'}${message ? `: ${printable(oneLine(message))}` : ''}`,
    );
  }
  blocks.push(...report.hooks.map(hookText));
  const summary: string[] = [];
  // A release lists its hooks itself, objects or not.
  if (report.hooks.length === 0 && (report.releases ?? []).length === 0)
    summary.push(
      report.examined === 0
        ? `no hook found (${report.scope})`
        : `no hook failing, stuck, blocked or suspended (${report.scope}): ${plural(report.examined, 'hook')} looked at`,
    );
  else if (report.examined > 1 || report.notShown > 0)
    summary.push(
      `${plural(report.examined, 'hook')} looked at (${report.scope})${report.hooks.length > 0 ? `: ${counts(report.hooks)}` : ''}`,
    );
  if (report.hooks.length > 0 && report.notShown > 0) summary.push(`${report.notShown} Succeeded or Running not shown`);
  if (report.overCap > 0)
    summary.push(
      `${plural(report.overCap, 'more hook')} not looked at (why.maxHooks); narrow with -n or --application`,
    );
  if (summary.length > 0) blocks.push(summary.join('; '));
  return `${blocks.join('\n\n')}\n`;
}

/** The release's fields in one order; each declared hook without its object's explanation, which `hooks` holds. */
function releaseJson(release: ReleaseExplanation): Record<string, unknown> {
  const { namespace, name, revision, chart, status, description, state, message, nextStep } = release;
  return {
    ...(release.helmRelease ? { helmRelease: release.helmRelease } : {}),
    namespace,
    name,
    revision,
    chart,
    status,
    ...(description !== undefined ? { description } : {}),
    state,
    message,
    nextStep,
    ...(release.since !== undefined ? { since: release.since, forSeconds: release.forSeconds } : {}),
    storedIn: release.storedIn,
    hooks: release.hooks.map(({ live: _live, ...hook }) => hook),
  };
}

/** One JSON document: every hook shown as its whole explanation, and what was looked at. */
export function renderWhyJson(report: WhyReport): string {
  return `${JSON.stringify({
    scope: report.scope,
    ...(report.operation ? { operation: report.operation } : {}),
    // Each declared hook's object is in `hooks`, once.
    ...(report.releases ? { releases: report.releases.map(releaseJson) } : {}),
    hooks: report.hooks.map(ordered),
    examined: report.examined,
    notShown: report.notShown,
    overCap: report.overCap,
  })}\n`;
}
