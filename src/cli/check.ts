import { checkObject, type CheckResult } from '../offline/check.js';
import { fixDocumentText } from '../offline/fix.js';
import { readInputs } from '../offline/inputs.js';
import { readDocuments, type InputDocument, type Source, type SourceObject } from '../offline/read.js';
import { decisionContext } from '../config/decision-context.js';
import { isRecord } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import { EXIT, InputError, UsageError } from '../errors.js';
import { loadConfigWithFlags, parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const CHECK_USAGE = `Usage: hookguard check [-|FILE|DIR...] [--argocd-version V] [--mode enforce|audit] [-o|--output text|json] [--fix] [--openshift] [--max-input-bytes N] [--config FILE]
Runs hookguard's rules offline over multi-document YAML or JSON (e.g. helm template ... | hookguard check -), read as
Kubernetes reads it (YAML 1.1: 0777 is octal, << merges, yes/no/on/off are booleans); a List's items are objects; a
directory stands for its *.yaml, *.yml and *.json files, recursively, hidden ones skipped.
  --argocd-version V   the objects will be applied by this Argo CD version (also HOOKGUARD_ARGOCD_VERSION, or
                       argocd.version in the config; without any: applied by plain Helm)
  --fix                print the manifests as hookguard would store them (YAML, documents in order); what
                       would be denied goes to stderr; only the nodes hookguard patches change
  --openshift          the objects go to OpenShift namespaces, whose SCC assigns user ids: the min-runtime guard
                       sets no runAsUser/runAsGroup (rules.minRuntime.openshift)
  --max-input-bytes N  refuse more input than N bytes in all (check.maxInputBytes, default 32 MiB)
Exit status: ${EXIT.ok} all allowed, ${EXIT.denied} something would be denied, ${EXIT.badInput} bad input, ${EXIT.internal} internal error.`;

const HELM_USER = 'hookguard-check:helm-user';

function choice<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T))
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

const OUTPUTS = ['text', 'json'] as const;

function describeResult(result: CheckResult): string {
  return `${result.kind} ${result.namespace ? `${result.namespace}/` : ''}${result.name ?? '<unnamed>'}`;
}

/** Helm 4 names each document's template in this annotation of what it pipes to a post-renderer (helm v4.1.4 pkg/action/action.go). */
const HELM_TEMPLATE_ANNOTATION = 'postrenderer.helm.sh/postrender-filename';

/** The template Helm rendered an object from, when Helm said so. */
function helmTemplate(object: KubeObject): string | undefined {
  const annotations = isRecord(object.metadata) ? object.metadata.annotations : undefined;
  const template = isRecord(annotations) ? annotations[HELM_TEMPLATE_ANNOTATION] : undefined;
  return typeof template === 'string' ? template : undefined;
}

/** `  at chart.yaml:12 (document 2): # Source: chart/templates/job.yaml`: where a result's object was read. */
function describeSource({ file, line, document, item, firstLine }: Source, template?: string): string {
  const within = `document ${document}${item === undefined ? '' : `, item ${item}`}${template ? `, template ${template}` : ''}`;
  return `  at ${file === '-' ? 'stdin' : file}:${line} (${within})${firstLine ? `: ${firstLine}` : ''}`;
}

function renderText(results: readonly CheckResult[]): string {
  const lines: string[] = [];
  for (const result of results) {
    const where = describeResult(result);
    const verdict = result.allowed ? 'allowed' : 'DENIED';
    lines.push(
      `${where}: ${verdict}${result.patch.length ? `, ${result.patch.length} patch op(s)` : ''}${result.findings.length === 0 && result.patch.length === 0 ? ', unchanged' : ''}`,
      describeSource(result.source),
    );
    for (const finding of result.findings) {
      lines.push(
        `  ${finding.action.padEnd(6)} ${finding.rule}${finding.advisory ? ` [${finding.advisory}]` : ''}: ${finding.message}`,
      );
      if (finding.note) lines.push(`         note: ${finding.note}`);
    }
  }
  const denied = results.filter((result) => !result.allowed).length;
  const changed = results.filter((result) => result.patch.length > 0).length;
  lines.push(`${results.length} object(s): ${changed} would be changed, ${denied} would be denied`);
  return `${lines.join('\n')}\n`;
}

/**
 * Every input's documents in order, each as hookguard would store it: only the nodes a patch touches change (a
 * List's items together); a document hookguard leaves alone keeps its exact text.
 */
function renderFixed(inputs: readonly InputDocument[][], results: ReadonlyMap<SourceObject, CheckResult>): string {
  return inputs
    .map((documents) =>
      documents
        .map((document) => {
          const operations = document.objects.flatMap((object) =>
            (results.get(object)?.patch ?? []).map((operation) => ({
              ...operation,
              path: `${object.pointer}${operation.path}`,
            })),
          );
          return operations.length > 0 ? fixDocumentText(document.text, operations, document.value) : document.text;
        })
        .join(''),
    )
    .filter((text) => text !== '')
    .map((text) => (text.endsWith('\n') ? text : `${text}\n`))
    .join('---\n');
}

export async function runCheck(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArguments(argv, {
    allowPositionals: true,
    options: {
      'argocd-version': { type: 'string' },
      mode: { type: 'string' },
      output: { type: 'string', short: 'o' },
      fix: { type: 'boolean', default: false },
      openshift: { type: 'boolean', default: false },
      config: { type: 'string' },
      'max-input-bytes': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${CHECK_USAGE}\n`);
    return EXIT.ok;
  }
  const output = choice('output', values.output, OUTPUTS, 'text');
  // --fix prints manifests, which no report format can carry: asked for both, it says so rather than pick one.
  if (values.fix && values.output !== undefined)
    throw new UsageError(
      `--fix prints the manifests (YAML) and --output ${output} a report: run check once for each, or leave one out`,
    );
  if (positionals.length === 0) throw new UsageError('name the manifests to check: files, or - for standard input');

  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'mode', key: 'mode', value: values.mode ?? 'enforce' },
    { flag: 'argocd-version', key: 'argocd.version', value: values['argocd-version'] },
    { flag: 'max-input-bytes', key: 'check.maxInputBytes', value: values['max-input-bytes'] },
    { flag: 'openshift', key: 'rules.minRuntime.openshift', value: values.openshift ? 'true' : undefined },
  ]);
  // Told an Argo CD version (the flag, or HOOKGUARD_ARGOCD_VERSION as the Helm post-renderer and the Argo CD plugin
  // pass it, or the config): the objects are Argo CD's to apply.
  const appliedByArgo = config.argocd.version !== null;
  const username = appliedByArgo ? (config.argocd.controllerUsernames[0] ?? HELM_USER) : HELM_USER;
  const context = decisionContext(config, undefined, 'render');

  const inputs = (await readInputs(positionals, { maxBytes: config.check.maxInputBytes, readStdin: io.readStdin })).map(
    ({ file, text }) => readDocuments(text, file),
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
    io.stdout(renderFixed(inputs, new Map(objects.map((object, index) => [object, results[index]!]))));
    // A post-renderer's or plugin's stdout is the manifests: what would be denied, and why, goes to stderr.
    results.forEach((result, index) => {
      const where = describeSource(result.source, helmTemplate(objects[index]!.object));
      for (const finding of result.findings)
        if (finding.action === 'deny')
          io.stderr(
            `hookguard check: ${describeResult(result)} denied by ${finding.rule}: ${finding.message}\n${where}\n`,
          );
    });
  } else if (output === 'json') io.stdout(`${JSON.stringify({ results }, null, 2)}\n`);
  else io.stdout(renderText(results));
  return results.every((result) => result.allowed) ? EXIT.ok : EXIT.denied;
}
