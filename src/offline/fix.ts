// `hookguard check --fix`: a document's text with hookguard's patch applied, changing only the nodes the patch
// touches. Every other byte stays as the chart wrote it, so `defaultMode: 0777` (octal 511 to Kubernetes) stays
// `0777` and a merge key stays a merge key. Each operation edits the text where its node is; what it writes is
// rendered so that go-yaml v2 reads exactly the patched value (strings it would read as something else are
// quoted). The result is read back as Kubernetes reads it and must equal the patched object; when an edit cannot be
// made in place (a node reached through an alias or a merge key is written out in full at the first place the
// document owns), or the result would differ, the document is written anew from the patched object.
import { isDeepStrictEqual } from 'node:util';
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  parseDocument,
  Scalar,
  type Document,
  type Node,
  type Pair,
} from 'yaml';
import { applyPatch } from '../core/json-patch.js';
import type { Operation } from '../core/types.js';
import { isMergeKey, kubeValue, PARSE_OPTIONS, resolvePlain, scalarKey } from './yaml11.js';

/** An edit this module does not make in place; the document is then written anew. */
class NotInPlace extends Error {}

type Collection = Node & { items: unknown[]; flow?: boolean };
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function decodePointer(path: string): string[] {
  return path
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A plain scalar that reads back as this very string (go-yaml v2 and the `yaml` package alike), in block context. */
const PLAIN_SAFE = /^[A-Za-z0-9_/][A-Za-z0-9_./@=+,()'"!$%&*?<>^|~:-]*(?: [A-Za-z0-9_./@=+,()'"!$%&*?<>^|~:-]+)*$/;

function plainSafe(text: string): boolean {
  return PLAIN_SAFE.test(text) && !text.includes(': ') && !text.endsWith(':') && resolvePlain(text, '') === undefined;
}

/** A multi-line string a literal block scalar holds exactly. */
function literalSafe(text: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /^[^\s]/.test(text) && !/[\u0000-\u0008\u000b-\u001f\u007f\u0085\u2028\u2029\ufeff]/.test(text);
}

/** `|`, `|-` or `|+` and the lines, the content indented by `indent`, ending with a line break. */
function literal(text: string, indent: number): string {
  const chomp = !text.endsWith('\n') ? '-' : text.endsWith('\n\n') ? '+' : '';
  const content = chomp === '-' ? text : text.slice(0, -1);
  const pad = ' '.repeat(indent);
  return `|${chomp}\n${content
    .split('\n')
    .map((line) => (line === '' ? '' : pad + line))
    .join('\n')}\n`;
}

/**
 * A double-quoted scalar: JSON's escapes are YAML's, but JSON leaves DEL, the C1 controls, U+2028/U+2029 and the
 * byte order mark as they are, which YAML 1.1 refuses or reads as a line break: those are escaped too.
 */
function quote(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\u009f\u2028\u2029\ufeff]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function flow(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(flow).join(', ')}]`;
  if (isObject(value))
    return `{${Object.entries(value)
      .map(([key, item]) => `${quote(key)}: ${flow(item)}`)
      .join(', ')}}`;
  return typeof value === 'string' ? quote(value) : JSON.stringify(value);
}

function renderKey(key: string): string {
  return plainSafe(key) ? key : quote(key);
}

function isEmptyCollection(value: Json): boolean {
  return Array.isArray(value) ? value.length === 0 : isObject(value) && Object.keys(value).length === 0;
}

function isNested(value: Json): boolean {
  return (Array.isArray(value) || isObject(value)) && !isEmptyCollection(value);
}

/**
 * A scalar or empty collection after `key: ` or `- `; a multi-line string as a literal block whose lines are
 * indented by `indent` (its text then ends with a line break).
 */
function inline(value: Json, indent: number): string {
  if (typeof value === 'string') {
    if (plainSafe(value)) return value;
    if (value.includes('\n') && literalSafe(value)) return literal(value, indent);
    return quote(value);
  }
  return flow(value);
}

/** A nested value in block style, every line indented by `indent`, ending with a line break. */
function block(value: Json, indent: number): string {
  const pad = ' '.repeat(indent);
  const line = (head: string, item: Json): string => {
    if (isNested(item)) return `${head}\n${block(item, indent + 2)}`;
    const text = inline(item, indent + 2);
    return text.endsWith('\n') ? `${head} ${text}` : `${head} ${text}\n`;
  };
  if (Array.isArray(value))
    return value
      .map((item) => (isNested(item) ? `${pad}- ${block(item, indent + 2).slice(indent + 2)}` : line(`${pad}-`, item)))
      .join('');
  if (isObject(value))
    return Object.entries(value)
      .map(([key, item]) => line(`${pad}${renderKey(key)}:`, item))
      .join('');
  return `${pad}${inline(value, indent)}\n`;
}

/** The whole document anew, in block style. */
export function renderDocument(value: unknown): string {
  return isNested(value as Json) ? block(value as Json, 0) : `${inline(value as Json, 2)}\n`;
}

/** One replacement of the original text's `[start, end)`; `order` keeps edits at one place in the patch's order. */
interface Edit {
  start: number;
  end: number;
  text: string;
  order: number;
}

/**
 * Text edits on one document, each placed by offsets in the text as written (parsed once), then made together in one
 * pass: the work is linear in the document however many operations the patch holds (a List's items each have
 * theirs). Edits that overlap cannot be made this way: the document is then written anew.
 */
class DocumentText {
  private readonly edits: Edit[] = [];

  /** `text` is the whole input as parsed; the document is its `[from, to)`, and every offset is the input's. */
  constructor(
    public readonly text: string,
    private readonly from: number,
    public readonly to: number,
  ) {}

  column(offset: number): number {
    return offset - (this.text.lastIndexOf('\n', offset - 1) + 1);
  }

  /** The offset of the line break ending the line `offset` is on (or the end of the text). */
  lineEnd(offset: number): number {
    const end = this.text.indexOf('\n', offset);
    return end === -1 ? this.text.length : end;
  }

  lineStart(offset: number): number {
    return this.text.lastIndexOf('\n', offset - 1) + 1;
  }

  splice(start: number, end: number, replacement: string): void {
    this.edits.push({ start, end, text: replacement, order: this.edits.length });
  }

  /** Inserts whole lines (ending with a line break) after the node that ends at `end`. */
  insertLinesAfter(end: number, lines: string): void {
    if (this.text[end - 1] === '\n') this.splice(end, end, lines);
    else {
      const at = this.lineEnd(end);
      this.splice(at, at, `\n${lines.slice(0, -1)}`);
    }
  }

  /** The document's text with every edit made. */
  edited(): string {
    const edits = [...this.edits].sort((a, b) => a.start - b.start || a.order - b.order);
    const pieces: string[] = [];
    let at = this.from;
    for (const edit of edits) {
      if (edit.start < at) throw new NotInPlace('two edits of the same text');
      pieces.push(this.text.slice(at, edit.start), edit.text);
      at = edit.end;
    }
    pieces.push(this.text.slice(at, this.to));
    return pieces.join('');
  }
}

function rangeOf(node: unknown): [number, number] {
  const range = (node as { range?: [number, number, number] } | null)?.range;
  if (!range) throw new NotInPlace('a node without a place in the text');
  return [range[0], range[1]];
}

function isBlockScalar(node: unknown): node is Scalar {
  return isScalar(node) && (node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED);
}

/** The pair that gives `key` its value in a mapping, when the mapping itself says it (not a merge key after it). */
function ownPair(map: Collection, key: string): Pair | undefined {
  let found: Pair | undefined;
  for (const item of map.items) {
    if (!isPair(item)) continue;
    if (isMergeKey(item.key)) found = undefined;
    else if (isScalar(item.key) && scalarKey(item.key) === key) found = item;
  }
  return found;
}

function ownCollection(node: unknown): Collection | undefined {
  return isMap(node) || isSeq(node) ? node : undefined;
}

function replaceValue(doc: DocumentText, node: unknown, value: Json, parent: Collection, key: unknown): void {
  if (!node || (node as Node).anchor) throw new NotInPlace('an anchored node (its aliases would change)');
  const [start, end] = rangeOf(node);
  if (parent.flow) {
    doc.splice(start, end, flow(value));
    return;
  }
  const endsLine = doc.text[end - 1] === '\n';
  const collection = ownCollection(node);
  if (isBlockScalar(node) && typeof value === 'string' && value.includes('\n') && literalSafe(value)) {
    // A script stays a literal block, its lines indented as they were.
    const firstLine = doc.text.slice(start, end).split('\n')[1] ?? '';
    const indent = firstLine.length - firstLine.trimStart().length || doc.column(start) + 2;
    doc.splice(start, end, endsLine ? literal(value, indent) : literal(value, indent).slice(0, -1));
    return;
  }
  const onOwnLine = collection !== undefined && !collection.flow;
  if (!isNested(value)) {
    const text = inline(value, (onOwnLine ? doc.column(start) : doc.column(rangeOf(key ?? node)[0]) + 2) || 2);
    const lead = /[:-]/.test(doc.text[start - 1] ?? '') ? ' ' : '';
    doc.splice(start, end, `${lead}${text.endsWith('\n') ? text.slice(0, -1) : text}${endsLine ? '\n' : ''}`);
    return;
  }
  if (onOwnLine) {
    const indent = doc.column(start);
    const text = block(value, indent).slice(indent);
    doc.splice(start, end, endsLine ? text : text.slice(0, -1));
    return;
  }
  if (key === undefined) {
    // A sequence item on the dash's line: the value's first line follows the dash (`- name: x`).
    const indent = doc.column(start);
    doc.splice(start, end, block(value, indent).slice(indent, -1));
    return;
  }
  // A value on its key's line becomes a block on the lines below, indented under the key.
  let from = start;
  while (doc.text[from - 1] === ' ') from--;
  doc.splice(from, end, `\n${block(value, doc.column(rangeOf(key)[0]) + 2).slice(0, -1)}`);
}

function insertPair(doc: DocumentText, map: Collection, key: string, value: Json): void {
  if (map.flow) {
    const [, end] = rangeOf(map);
    if (doc.text[end - 1] !== '}') throw new NotInPlace('a flow mapping without its closing brace');
    const entry = `${quote(key)}: ${flow(value)}`;
    doc.splice(end - 1, end - 1, map.items.length > 0 ? `, ${entry}` : entry);
    return;
  }
  const first = map.items[0];
  const last = map.items.at(-1);
  if (!isPair(first) || !isPair(last)) throw new NotInPlace('an empty block mapping');
  const indent = doc.column(rangeOf(first.key)[0]);
  doc.insertLinesAfter(rangeOf(last.value ?? last.key)[1], block({ [key]: value }, indent));
}

function insertItem(doc: DocumentText, seq: Collection, index: number, value: Json): void {
  const item = seq.items[index];
  if (seq.flow) {
    const entry = flow(value);
    if (item !== undefined) doc.splice(rangeOf(item)[0], rangeOf(item)[0], `${entry}, `);
    else {
      const [, end] = rangeOf(seq);
      if (doc.text[end - 1] !== ']') throw new NotInPlace('a flow sequence without its closing bracket');
      doc.splice(end - 1, end - 1, seq.items.length > 0 ? `, ${entry}` : entry);
    }
    return;
  }
  const [seqStart] = rangeOf(seq);
  const indent = doc.column(seqStart);
  const lines = block([value], indent);
  if (item !== undefined) {
    const dash = doc.text.lastIndexOf('-', rangeOf(item)[0]);
    if (dash < seqStart || doc.column(dash) !== indent) throw new NotInPlace('a sequence item not on its own line');
    doc.splice(doc.lineStart(dash), doc.lineStart(dash), lines);
  } else doc.insertLinesAfter(rangeOf(seq.items.at(-1))[1], lines);
}

/** Removes the lines from `start`'s line to the end of the node ending at `end`. */
function removeLines(doc: DocumentText, start: number, end: number): void {
  const from = doc.lineStart(start);
  if (doc.text.slice(from, start).trim() !== '') throw new NotInPlace('a node that does not start its line');
  const to = doc.text[end - 1] === '\n' ? end : Math.min(doc.lineEnd(end) + 1, doc.to);
  doc.splice(from, to, '');
}

/**
 * Places one JSON Patch operation's edit in the text as written (`contents`, its parse); `after` is the document's
 * value once the whole patch is applied. The patch is hookguard's diff (src/core/json-patch.ts compare()): no
 * operation reaches below a node another one adds, replaces or removes, and items are added to the end of a sequence
 * and removed from its end, so every path names a node of the text as written.
 */
function placeEdit(doc: DocumentText, contents: unknown, operation: Operation, after: Json): void {
  const segments = decodePointer(operation.path);
  if (segments.length === 0) throw new NotInPlace('the whole document');
  let container = ownCollection(contents);
  let valueAt: Json = after;
  for (const [depth, segment] of segments.entries()) {
    if (!container) throw new NotInPlace('a path through a scalar');
    const lastSegment = depth === segments.length - 1;
    const index = isSeq(container) ? (segment === '-' ? container.items.length : Number(segment)) : -1;
    // The operation's own value where it has one: an item inserted before others moves them in `after`.
    const next: Json | undefined =
      lastSegment && 'value' in operation
        ? (operation.value as Json)
        : Array.isArray(valueAt)
          ? valueAt[index]
          : isObject(valueAt)
            ? valueAt[segment]
            : undefined;
    if (isMap(container)) {
      const pair = ownPair(container, segment);
      const child = ownCollection(pair?.value);
      if (lastSegment || !child || isAlias(pair?.value)) {
        // The node to change, or the first one the document does not own (an alias, a merged key): set it whole.
        if (lastSegment && operation.op === 'remove') {
          if (!pair) throw new NotInPlace('removing a key the mapping does not own');
          if (container.flow) throw new NotInPlace('removing from a flow mapping');
          removeLines(doc, rangeOf(pair.key)[0], rangeOf(pair.value ?? pair.key)[1]);
        } else if (next === undefined) throw new NotInPlace('a value the patch removed below this node');
        else if (pair) replaceValue(doc, pair.value, next, container, pair.key);
        else insertPair(doc, container, segment, next);
        return;
      }
      container = child;
    } else {
      const item = container.items[index];
      const child = ownCollection(item);
      if (lastSegment || !child) {
        if (lastSegment && operation.op === 'add') insertItem(doc, container, index, next as Json);
        else if (lastSegment && operation.op === 'remove') {
          if (container.flow || item === undefined) throw new NotInPlace('removing from a flow sequence');
          removeLines(doc, doc.text.lastIndexOf('-', rangeOf(item)[0]), rangeOf(item)[1]);
        } else if (next === undefined) throw new NotInPlace('a value the patch removed below this node');
        else replaceValue(doc, item, next, container, undefined);
        return;
      }
      container = child;
    }
    valueAt = next as Json;
  }
}

/** The fixed text of a document; `rewritten` says why it was written anew from the patched object, when it was. */
export interface FixedDocument {
  text: string;
  rewritten?: string;
}

/** A document as read: the whole input's text, the document's `[start, end)` in it, and its parse (from that text). */
export interface ParsedDocument {
  input: string;
  start: number;
  end: number;
  parsed: Document.Parsed;
}

/**
 * The text of one document (as readDocuments() kept it, separator and comments included) with `operations` applied
 * (paths from the document's root: a List's items under `/items/N`); `before` is its value as Kubernetes reads it.
 */
export function fixDocumentText(text: string, operations: readonly Operation[], before: unknown): FixedDocument {
  const document = { input: text, start: 0, end: text.length, parsed: parseDocument(text, PARSE_OPTIONS) };
  return fixDocument(document, operations, before);
}

/**
 * fixDocumentText() on a document read already: its parse is the one the edits are placed by, and the result is
 * read back once, whatever the number of operations (two parses of the document in all, with the read's).
 */
export function fixDocument(
  document: ParsedDocument,
  operations: readonly Operation[],
  before: unknown,
): FixedDocument {
  const { input, start, end, parsed } = document;
  // Applied in place to one copy (fast-json-patch validates nothing here, and copies nothing per operation).
  const expected = applyPatch(structuredClone(before), structuredClone(operations), false, true).newDocument;
  let why: string;
  try {
    if (parsed.errors.length > 0) throw new NotInPlace('the text does not parse');
    const doc = new DocumentText(input, start, end);
    for (const operation of operations) placeEdit(doc, parsed.contents, operation, expected as Json);
    const edited = doc.edited();
    if (readBack(edited, expected)) return { text: edited };
    why = 'the text edited in place would not read back as the patched object';
  } catch (error) {
    if (!(error instanceof NotInPlace)) throw error;
    why = `it could not be edited in place (${error.message})`;
  }
  // Written anew, after the separator and comments that open the document.
  const opening = parsed.contents ? input.slice(start, rangeOf(parsed.contents)[0]) : '';
  const rewritten = `${opening}${opening === '' || opening.endsWith('\n') ? '' : '\n'}${renderDocument(expected)}`;
  if (!readBack(rewritten, expected)) throw new Error('the fixed document does not read back as the patched object');
  return { text: rewritten, rewritten: why };
}

function readBack(text: string, expected: unknown): boolean {
  const parsed = parseDocument(text, PARSE_OPTIONS);
  return parsed.errors.length === 0 && isDeepStrictEqual(kubeValue(parsed), expected);
}
