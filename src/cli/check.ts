import { isAbsolute, posix, relative, resolve, sep } from 'node:path';
import { checkObject, type CheckResult } from '../offline/check.js';
import { fixDocument } from '../offline/fix.js';
import { readInputs } from '../offline/inputs.js';
import { readDocuments, type InputDocument, type SourceObject } from '../offline/read.js';
import { decisionContext } from '../config/decision-context.js';
import type { DecisionContext } from '../core/context.js';
import type { Finding, Operation } from '../core/types.js';
import { EXIT, InputError, UsageError } from '../errors.js';
import { renderGithub } from '../report/github.js';
import { renderJson } from '../report/json.js';
import { renderJunit } from '../report/junit.js';
import { printable, REPORT_FORMATS, type CheckReport, type ReportFormat } from '../report/report.js';
import { renderSarif, type SarifRuleSource } from '../report/sarif.js';
import { describeDenial, describeWithheld, renderText } from '../report/text.js';
import { builtInRules, catalogOf, describeStages } from '../rules/index.js';
import { packageVersion } from './version.js';
import { loadConfigWithFlags, parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const CHECK_USAGE = `Usage: hookguard check [-|FILE|DIR...] [--argocd-version V] [--helm-version V] [--flux-version V] [--mode enforce|audit] [-o|--output text|json|sarif|junit|github] [--chart-root DIR] [--fix] [--openshift] [--max-input-bytes N] [--config FILE]
Runs hookguard's rules offline over multi-document YAML or JSON (e.g. helm template ... | hookguard check -), read as
Kubernetes reads it (YAML 1.1: 0777 is octal, << merges, yes/no/on/off are booleans); a List's items are objects; a
directory stands for its *.yaml, *.yml and *.json files, recursively, hidden ones and symbolic links out of it
skipped; a directory holding Chart.yaml is rendered with the helm on PATH (helm template DIR).
  --argocd-version V   the objects will be applied by this Argo CD version (also HOOKGUARD_ARGOCD_VERSION, or
                       argocd.version in the config; without any: applied by plain Helm)
  --helm-version V     the Helm that will run the hooks (also HOOKGUARD_HELM_VERSION, or helm.version; without
                       any: every Helm advisory may apply, and the summary says what that changed)
  --flux-version V     the Flux helm-controller that will deploy the chart (also HOOKGUARD_FLUX_VERSION, or
                       flux.helmControllerVersion): nothing it crashes on is added, and what is there is warned of
  --mode M             enforce (default) or audit: in audit mode nothing is denied or changed, and the report says
                       what enforce mode would change and deny (neither the config's mode nor HOOKGUARD_MODE is read)
  -o, --output F       text (default), json, sarif (SARIF 2.1.0 for code scanning), junit (JUnit XML) or github
                       (GitHub Actions workflow commands: one annotation per finding)
  --chart-root DIR     the chart's directory in the repository: sarif, junit and github point at the template a
                       document's "# Source: chart/templates/x.yaml" names, DIR/templates/x.yaml
  --fix                print the manifests as hookguard would store them (YAML, documents in order); only the
                       nodes hookguard patches change. When anything is denied, nothing is printed on stdout and
                       each denial goes to stderr: the object, the rule, why, and where it was read. In audit mode
                       every object is printed as written, and what enforce mode would change or deny goes to
                       stderr. Not with -o
  --openshift          the objects go to an OpenShift cluster, whose SCC assigns user ids: the min-runtime guard
                       sets no runAsUser/runAsGroup (rules.minRuntime.openshift: true)
  --max-input-bytes N  refuse more input than N bytes in all (check.maxInputBytes, default 32 MiB)
  --config FILE        the config file serve reads (also HOOKGUARD_CONFIG; docs/configuration.md): rules switched off
                       or tuned, advisories corrected, argocd.version, helm.version; a flag given wins over it
Exit status: ${EXIT.ok} all allowed, ${EXIT.denied} something would be denied, ${EXIT.badInput} bad input, ${EXIT.internal} internal error.`;

/** check's flags, as node:util parseArgs takes them (README's flag table is held equal to them by a test). */
export const CHECK_OPTIONS = {
  'argocd-version': { type: 'string' },
  'helm-version': { type: 'string' },
  'flux-version': { type: 'string' },
  mode: { type: 'string' },
  output: { type: 'string', short: 'o' },
  'chart-root': { type: 'string' },
  fix: { type: 'boolean', default: false },
  openshift: { type: 'boolean', default: false },
  config: { type: 'string' },
  'max-input-bytes': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

const HELM_USER = 'hookguard-check:helm-user';

function choice<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T))
    throw new UsageError(`--${flag}: must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

/** The catalog as SARIF rules: one per id, with each side of it (a rule may mutate and deny) in its own words. */
function sarifRules(): SarifRuleSource[] {
  const rules = new Map<string, SarifRuleSource['sides'][number][]>();
  for (const entry of catalogOf(builtInRules)) {
    const sides = rules.get(entry.id) ?? [];
    sides.push({ side: `${entry.webhook}, ${entry.operation}, at ${describeStages(entry.stages)}`, doc: entry.doc });
    rules.set(entry.id, sides);
  }
  return [...rules].map(([id, sides]) => ({ id, sides }));
}

function render(format: ReportFormat, report: CheckReport): string {
  switch (format) {
    case 'json':
      return renderJson(report);
    case 'sarif':
      return renderSarif(report, sarifRules(), packageVersion());
    case 'junit':
      return renderJunit(report);
    case 'github':
      return renderGithub(report);
    case 'text':
      return renderText(report);
  }
}

/**
 * The chart root as reports name it: relative to the working directory (the repository's checkout, in CI) when it
 * lies within it, with forward slashes.
 */
function repositoryPath(directory: string): string {
  const rest = relative(process.cwd(), resolve(directory));
  const inside = rest === '' || (!rest.startsWith('..') && !isAbsolute(rest));
  return inside ? posix.normalize(rest.split(sep).join('/') || '.') : resolve(directory);
}

/**
 * Every input's documents in order, each as hookguard would store them: only the nodes a patch touches change (a
 * List's items together); a document hookguard leaves alone keeps its exact text. A document that had to be written
 * anew (losing its comments and layout) is named on stderr.
 */
function renderFixed(
  inputs: readonly InputDocument[][],
  patches: ReadonlyMap<SourceObject, readonly Operation[]>,
  io: CommandIO,
): string {
  return inputs
    .map((documents) =>
      documents
        .map((document) => {
          const operations = document.objects.flatMap((object) =>
            (patches.get(object) ?? []).map((operation) => ({
              ...operation,
              path: `${object.pointer}${operation.path}`,
            })),
          );
          if (operations.length === 0) return document.text;
          const fixed = fixDocument(document, operations, document.value);
          const label = document.objects[0]?.label.replace(/ item \d+$/, '');
          if (fixed.rewritten !== undefined)
            io.stderr(
              `${printable(`hookguard check: ${label} written anew from the patched object, its comments and layout lost: ${fixed.rewritten}`)}\n`,
            );
          return fixed.text;
        })
        .join(''),
    )
    .filter((text) => text !== '')
    .map((text) => (text.endsWith('\n') ? text : `${text}\n`))
    .join('---\n');
}

/**
 * When no Helm version was given, every Helm advisory may apply: what that changed, against a Helm none affects (the
 * same objects judged without them), said in a sentence; nothing when the version is known or it changed nothing.
 * What hookguard does is the patch and what the findings say: an advisory a finding merely names (ttl-floor's
 * helm-hook-ttl-wait, whose floor every Helm hook gets) changes neither. The sentence names the Helm advisories the
 * differing findings name.
 */
function helmAssumption(
  objects: readonly SourceObject[],
  results: readonly CheckResult[],
  context: DecisionContext,
  username: string,
): string[] {
  if (context.helmVersion !== undefined || context.helmAdvisories.length === 0) return [];
  const unaffected: DecisionContext = { ...context, helmAdvisories: [] };
  const said = ({ advisory: _advisory, ...finding }: Finding) => JSON.stringify(finding);
  // The findings that differ from those for a Helm no advisory affects, per object that changed.
  const differing = results.flatMap((result, index) => {
    const object = objects[index]!;
    const other = checkObject(object.object, object.source, index, unaffected, { username });
    const otherSaid = new Set(other.findings.map(said));
    const findings = result.findings.filter((finding) => !otherSaid.has(said(finding)));
    return findings.length > 0 || JSON.stringify(other.patch) !== JSON.stringify(result.patch) ? [findings] : [];
  });
  if (differing.length === 0) return [];
  const named = new Set(differing.flat().map((finding) => finding.advisory));
  const helmIds = context.helmAdvisories.map((advisory) => advisory.id);
  const ids = helmIds.some((id) => named.has(id)) ? helmIds.filter((id) => named.has(id)) : helmIds;
  return [
    `Helm version unknown: assumed a Helm that ${ids.join(', ')} affect(s), since any Helm may run the hooks; that changed what hookguard does to ${differing.length} object(s). Pass --helm-version V (or HOOKGUARD_HELM_VERSION) with the Helm that will run them`,
  ];
}

export async function runCheck(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArguments(argv, { allowPositionals: true, options: CHECK_OPTIONS });
  if (values.help) {
    io.stdout(`${CHECK_USAGE}\n`);
    return EXIT.ok;
  }
  const output = choice('output', values.output, REPORT_FORMATS, 'text');
  // --fix prints manifests, which no report format can carry: asked for both, it says so rather than pick one.
  if (values.fix && values.output !== undefined)
    throw new UsageError(
      `--fix prints the manifests (YAML) and --output ${output} a report: run check once for each, or leave one out`,
    );
  if (positionals.length === 0) throw new UsageError('name the manifests to check: files, or - for standard input');

  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'mode', key: 'mode', value: values.mode ?? 'enforce' },
    { flag: 'argocd-version', key: 'argocd.version', value: values['argocd-version'] },
    { flag: 'helm-version', key: 'helm.version', value: values['helm-version'] },
    { flag: 'flux-version', key: 'flux.helmControllerVersion', value: values['flux-version'] },
    { flag: 'openshift', key: 'rules.minRuntime.openshift', value: values.openshift ? 'true' : undefined },
    { flag: 'max-input-bytes', key: 'check.maxInputBytes', value: values['max-input-bytes'] },
  ]);
  // Told an Argo CD version (the flag, or HOOKGUARD_ARGOCD_VERSION as the Helm post-renderer and the Argo CD plugin
  // pass it, or the config): the objects are Argo CD's to apply.
  const appliedByArgo = config.argocd.version !== null;
  const username = appliedByArgo ? (config.argocd.controllerUsernames[0] ?? HELM_USER) : HELM_USER;
  const context = decisionContext(config, undefined, 'render');
  const chartRoot = values['chart-root'] === undefined ? undefined : repositoryPath(values['chart-root']);

  const read = await readInputs(positionals, {
    maxBytes: config.check.maxInputBytes,
    readStdin: io.readStdin,
    env: io.env,
    note: (text) => io.stderr(`${printable(`hookguard check: ${text}`)}\n`),
  });
  const inputs = read.map((input) =>
    readDocuments(
      input.text,
      input.file,
      input.chartRoot === undefined ? chartRoot : repositoryPath(input.chartRoot),
      config.check.maxScalarBytes,
    ),
  );
  const objects = inputs.flat().flatMap((document) => document.objects);
  const results = objects.map((object, index): CheckResult => {
    try {
      return checkObject(object.object, object.source, index, context, { username });
    } catch (error) {
      throw new InputError(`${object.label}: ${(error as Error).message}`);
    }
  });
  if (objects.length === 0) {
    const named = positionals.map((path) => (path === '-' ? 'standard input' : path)).join(', ');
    // Rendering nothing is no error where the manifests pass through (--fix); anywhere else it is a mistake.
    if (!values.fix) throw new InputError(`no Kubernetes object found in ${named}`);
    io.stderr(`hookguard check: no Kubernetes object found in ${named}\n`);
  }

  if (values.fix) {
    // A post-renderer's or plugin's stdout is the manifests: what would be denied, and why, goes to stderr, and a
    // denied render prints no manifests at all, so `check --fix > fixed.yaml` never leaves a denied one on disk.
    const denied = results.some((result) => !result.allowed);
    // Audit mode never patches: its objects are printed as written, and what enforce mode would do goes to stderr.
    const applied = results.map((result) => (result.mode === 'audit' ? [] : result.patch));
    if (!denied) io.stdout(renderFixed(inputs, new Map(objects.map((object, index) => [object, applied[index]!])), io));
    for (const result of results) {
      if (result.mode === 'audit') io.stderr(describeWithheld(result));
      for (const finding of result.findings)
        if (finding.action === 'deny' && !result.allowed)
          io.stderr(describeDenial(result, finding.rule, finding.message));
    }
  } else io.stdout(render(output, { results, notes: helmAssumption(objects, results, context, username) }));
  return results.every((result) => result.allowed) ? EXIT.ok : EXIT.denied;
}
