// The offline evaluation behind `hookguard check`: each document as a CREATE, through the mutating decision and
// then the validating one on what the mutation stored, as the API server would call the two webhooks.
import { applyPatch } from '../core/json-patch.js';
import { isMap, isScalar, isSeq, parseAllDocuments, type Document } from 'yaml';
import type { DecisionContext } from '../core/context.js';
import { computedPatch, decide } from '../core/decide.js';
import { isRecord } from '../core/objects.js';
import type { Finding, KubeObject, Operation } from '../core/types.js';
import { InputError } from '../errors.js';

/** Where a checked object was read: what every output format names it by. */
export interface SourceLocation {
  /** The file as named on the command line; '-' for standard input. */
  file: string;
  /** 1-based index of the YAML document in the file. */
  document: number;
  /** 1-based line the document starts on. */
  line: number;
  /** The document's first line (e.g. Helm's `# Source: chart/templates/job.yaml`). */
  firstLine: string;
  /** 1-based index of the object among a List's items. */
  item?: number;
}

export interface SourceDocument {
  /** "stdin document 3", "chart.yaml document 1": how errors name it. */
  label: string;
  source: SourceLocation;
  document: Document;
  /** The document's own text, separator and comments included. */
  text: string;
  object: KubeObject;
}

export interface CheckResult {
  source: SourceLocation;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name?: string;
  allowed: boolean;
  patch: Operation[];
  findings: Finding[];
}

/** The first line of a document's own text with something on it, a `---` separator excepted, and its 1-based number. */
function firstLineOf(text: string, start: number): { line: number; firstLine: string } {
  const before = text.slice(0, start).split('\n').length;
  const lines = text.slice(start).split('\n');
  const index = lines.findIndex((line) => line.trim() !== '' && line.trim() !== '---');
  return index < 0 ? { line: before, firstLine: '' } : { line: before + index, firstLine: lines[index]!.trimEnd() };
}

/**
 * Splits a multi-document YAML or JSON text into Kubernetes objects; empty documents are dropped. `file` is the file
 * as named on the command line, '-' for standard input.
 */
export function readDocuments(text: string, file: string): SourceDocument[] {
  const source = file === '-' ? 'stdin' : file;
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) {
    // yaml returns an EmptyStream for input with no documents at all.
    return [];
  }
  const objects: SourceDocument[] = [];
  documents.forEach((document, index) => {
    const label = `${source} document ${index + 1}`;
    const error = document.errors[0];
    if (error) throw new InputError(`${label}: invalid YAML: ${error.message.split('\n')[0]}`);
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return;
    if (!isRecord(value))
      throw new InputError(
        `${label}: expected a Kubernetes object (a mapping), got ${Array.isArray(value) ? 'a list' : typeof value}`,
      );
    if (typeof value.apiVersion !== 'string' || typeof value.kind !== 'string') {
      throw new InputError(`${label}: not a Kubernetes object: apiVersion and kind must be strings`);
    }
    objects.push({
      label,
      // A document's own text starts where the one before it ends: comments above its first node are its.
      source: { file, document: index + 1, ...firstLineOf(text, index === 0 ? 0 : documents[index - 1]!.range[2]) },
      document,
      text: text.slice(document.range[0], document.range[2]),
      object: value,
    });
  });
  return objects;
}

export interface CheckOptions {
  /** The user the objects are applied as: Argo CD's controller, or a person running Helm. */
  username: string;
}

export function checkObject(
  object: KubeObject,
  index: number,
  context: DecisionContext,
  options: CheckOptions,
): Omit<CheckResult, 'source'> {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const request = {
    uid: `check-${index + 1}`,
    operation: 'CREATE',
    namespace: typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
    userInfo: { username: options.username },
    object,
  };
  const mutation = decide(request, 'mutate', context);
  const patch = computedPatch(mutation);
  const stored = patch.length > 0 ? applyPatch(structuredClone(object), patch, false, false).newDocument : object;
  const validation = decide({ ...request, object: stored }, 'validate', context);
  return {
    apiVersion: object.apiVersion as string,
    kind: object.kind as string,
    ...(typeof metadata.namespace === 'string' ? { namespace: metadata.namespace } : {}),
    ...(typeof metadata.name === 'string'
      ? { name: metadata.name }
      : typeof metadata.generateName === 'string'
        ? { name: metadata.generateName }
        : {}),
    allowed: mutation.allowed && validation.allowed,
    patch,
    findings: [...mutation.findings, ...validation.findings],
  };
}

function decodePointer(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * Applies a JSON Patch to the parsed YAML document itself, so the comments, key order and scalar styles of
 * everything the patch does not touch come out as the chart wrote them.
 */
export function patchDocument(document: Document, patch: readonly Operation[]): void {
  for (const operation of patch) {
    const segments = decodePointer(operation.path);
    const parent = segments.length > 1 ? document.getIn(segments.slice(0, -1), true) : document.contents;
    const last = segments.at(-1) as string;
    const key = isSeq(parent) ? Number(last) : last;
    const path = [...segments.slice(0, -1), key];
    if (operation.op === 'remove') {
      document.deleteIn(path);
    } else if (operation.op === 'add' || operation.op === 'replace') {
      if (!isSeq(parent) && !isMap(parent) && segments.length > 1) throw new Error(`cannot patch ${operation.path}`);
      const existing = operation.op === 'replace' ? document.getIn(path, true) : undefined;
      // Keep the scalar node (and so a script's block style) when only its value changes.
      if (isScalar(existing) && (operation.value === null || typeof operation.value !== 'object'))
        existing.value = operation.value;
      else document.setIn(path, document.createNode(operation.value));
    } else {
      throw new Error(`unexpected patch op ${operation.op}`);
    }
  }
}
