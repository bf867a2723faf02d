// A parsed YAML document turned into the JSON value Kubernetes reads from it. kubectl and Helm read manifests with
// sigs.k8s.io/yaml (v1.6.0 yaml.go YAMLToJSON) over go-yaml v2 (go.yaml.in/yaml/v2 v2.4.2): YAML 1.1 scalars
// (resolve.go: `0777` is octal 511, `0o17`, `0x1F`, `0b101` and `1_000` are integers, y/yes/on and n/no/off are
// booleans, timestamps stay strings, no base-60 numbers), `<<` merge keys with go-yaml v2's precedence (decode.go
// `mapping`: pairs apply in order, so a merge after a key overrides it; `merge` applies a sequence of maps last to
// first), a later duplicate key replaces an earlier one, and map keys become strings (yaml.go
// convertToJSONableObject). The `yaml` package parses (with the failsafe schema, so every scalar keeps its text and
// style); this module resolves. Work is linear in the document, except alias expansion, which is bounded as go-yaml
// v2 bounds it (decode.go `allowedAliasRatio`).
import { isAlias, isMap, isPair, isScalar, isSeq, Scalar, type Document, type Node } from 'yaml';

/** How the `yaml` package parses: YAML 1.1 syntax, every scalar kept as text for this module to resolve. */
export const PARSE_OPTIONS = {
  version: '1.1',
  schema: 'failsafe',
  merge: false,
  uniqueKeys: false,
  strict: false,
} as const;

/** A document Kubernetes would refuse to read, or that hookguard refuses to expand; `offset` is where. */
export class YamlReadError extends Error {
  constructor(
    message: string,
    readonly offset: number | undefined,
  ) {
    super(message);
  }
}

const TAG_PREFIX = 'tag:yaml.org,2002:';

type Resolved =
  | { tag: 'null'; value: null }
  | { tag: 'bool'; value: boolean }
  | { tag: 'int'; value: number; text: string }
  | { tag: 'float'; value: number }
  | { tag: 'str'; value: string };

const BOOLEANS = new Map<string, boolean>([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map((word) => [word, true] as const),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map((word) => [word, false] as const),
]);
const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const SPECIAL_FLOATS = new Map<string, number>([
  ...['.nan', '.NaN', '.NAN'].map((word) => [word, NaN] as const),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map((word) => [word, Infinity] as const),
  ...['-.inf', '-.Inf', '-.INF'].map((word) => [word, -Infinity] as const),
]);
/** resolve.go `yamlStyleFloat`. */
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
/** What Go's strconv.ParseFloat accepts after a leading dot (resolve.go's '.' hint). */
const DOT_FLOAT = /^\.[0-9]+([eE][-+]?[0-9]+)?$/;
/** resolve.go `parseTimestamp`'s quick check: every timestamp starts with four digits and a dash. */
const TIMESTAMP_START = /^[0-9]{4}-/;
/** The timestamp formats go-yaml v2 accepts (`allowedTimestampFormats`), as patterns. */
const TIMESTAMP =
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2}))|(?: [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]+)?))?$/;

const DIGITS: Record<number, RegExp> = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^[0-9]+$/, 16: /^[0-9a-fA-F]+$/ };
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Go's strconv.ParseInt(text, 0, 64), then ParseUint(text, 0, 64) as resolve.go tries them; undefined if neither. */
function parseGoInteger(text: string): bigint | undefined {
  const sign = text[0] === '-' || text[0] === '+' ? text[0] : '';
  const unsigned = text.slice(sign.length);
  let base = 10;
  let digits = unsigned;
  if (unsigned.length > 1 && unsigned[0] === '0') {
    const prefix = (unsigned[1] as string).toLowerCase();
    base = prefix === 'x' ? 16 : prefix === 'o' ? 8 : prefix === 'b' ? 2 : 8;
    digits = prefix === 'x' || prefix === 'o' || prefix === 'b' ? unsigned.slice(2) : unsigned.slice(1);
  }
  if (!(DIGITS[base] as RegExp).test(digits)) return undefined;
  const magnitude = BigInt(base === 10 ? digits : `0${'xob'[[16, 8, 2].indexOf(base)]}${digits}`);
  const value = sign === '-' ? -magnitude : magnitude;
  if (value >= INT64_MIN && value <= INT64_MAX) return value;
  // ParseUint takes no sign.
  return sign === '' && value <= UINT64_MAX ? value : undefined;
}

/** resolve.go `resolve(tag, in)` for a plain scalar (tag '') or an explicitly tagged one. */
export function resolvePlain(text: string, tag: string): Resolved | undefined {
  const first = text[0];
  const hint =
    text === ''
      ? 'M'
      : first === '+' || first === '-'
        ? 'S'
        : first !== undefined && first >= '0' && first <= '9'
          ? 'D'
          : first !== undefined && 'yYnNtTfFoO~'.includes(first)
            ? 'M'
            : first === '.'
              ? '.'
              : undefined;
  if (hint === undefined) return undefined;
  const boolean = BOOLEANS.get(text);
  if (boolean !== undefined) return { tag: 'bool', value: boolean };
  if (NULLS.has(text)) return { tag: 'null', value: null };
  const special = SPECIAL_FLOATS.get(text);
  if (special !== undefined) return { tag: 'float', value: special };
  if (hint === '.') return DOT_FLOAT.test(text) ? { tag: 'float', value: Number(text) } : undefined;
  if (hint === 'M') return undefined;
  // Digits or a sign: a timestamp (kept as its text), an integer, or a float.
  if ((tag === '' || tag === 'timestamp') && TIMESTAMP_START.test(text) && TIMESTAMP.test(text)) return undefined;
  const plain = text.replaceAll('_', '');
  const integer = parseGoInteger(plain);
  if (integer !== undefined) return { tag: 'int', value: Number(integer), text: integer.toString() };
  if (YAML_STYLE_FLOAT.test(plain)) {
    const value = Number(plain);
    // Go's ParseFloat fails on overflow; resolve.go then keeps the text.
    if (Number.isFinite(value)) return { tag: 'float', value };
  }
  return undefined;
}

/** What go-yaml v2 makes of a scalar (decode.go `scalar`): quoted and block scalars are strings unless tagged. */
export function resolveScalar(node: Scalar): Resolved {
  const text = String(node.value);
  const tag = node.tag?.startsWith(TAG_PREFIX) ? node.tag.slice(TAG_PREFIX.length) : (node.tag ?? '');
  const implicit = node.type === undefined || node.type === Scalar.PLAIN;
  if (tag === '' && !implicit) return { tag: 'str', value: text };
  if (tag === 'str') return { tag: 'str', value: text };
  if (tag === 'binary') return { tag: 'str', value: Buffer.from(text.replace(/\s+/g, ''), 'base64').toString('utf8') };
  // Other tags go-yaml cannot resolve (`!foo`, `!!set`) leave the text as it is.
  if (!['', 'bool', 'int', 'float', 'null', 'timestamp'].includes(tag)) return { tag: 'str', value: text };
  const resolved = resolvePlain(text, tag) ?? { tag: 'str', value: text };
  if (tag === '' || tag === 'timestamp' || resolved.tag === tag) return resolved;
  if (tag === 'float' && resolved.tag === 'int') return { tag: 'float', value: resolved.value };
  throw new YamlReadError(`cannot decode !!${resolved.tag} \`${text}\` as a !!${tag}`, node.range?.[0] ?? undefined);
}

/** Go's strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml names a float map key. */
function formatFloat32Key(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (!Number.isFinite(value)) return value > 0 ? '.inf' : '-.inf';
  const single = Math.fround(value);
  if (single === 0) return Object.is(single, -0) ? '-0' : '0';
  let digits = 1;
  while (digits < 9 && Math.fround(Number(single.toPrecision(digits))) !== single) digits++;
  const [mantissa = '', exponentText = '0'] = single.toExponential(digits - 1).split('e');
  const exponent = Number(exponentText);
  const significant = mantissa.replace('-', '').replace('.', '').replace(/0+$/, '') || '0';
  const count = significant.length;
  const limit = 6 > count && count >= exponent + 1 ? count : 6;
  const sign = single < 0 ? '-' : '';
  if (exponent < -4 || exponent >= limit) {
    const body = count > 1 ? `${significant[0]}.${significant.slice(1)}` : significant;
    const magnitude = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${body}e${exponent < 0 ? '-' : '+'}${magnitude}`;
  }
  return `${sign}${Math.abs(single).toFixed(Math.max(count - exponent - 1, 0))}`;
}

/** decode.go `isMerge`: a plain `<<`, or one tagged !!merge. */
export function isMergeKey(node: unknown): boolean {
  if (!isScalar(node) || String(node.value) !== '<<') return false;
  return node.tag === undefined ? node.type === Scalar.PLAIN : node.tag === `${TAG_PREFIX}merge`;
}

/** The JSON key a scalar map key becomes (yaml.go convertToJSONableObject); undefined for a null key. */
export function scalarKey(node: Scalar): string | undefined {
  const resolved = resolveScalar(node);
  switch (resolved.tag) {
    case 'str':
      return resolved.value;
    case 'int':
      return resolved.text;
    case 'float':
      return formatFloat32Key(resolved.value);
    case 'bool':
      return String(resolved.value);
    case 'null':
      return undefined;
  }
}

/** decode.go: 400,000 decodes may be 99% alias expansion, 4,000,000 only 10%, scaled between. */
function allowedAliasRatio(decodes: number): number {
  if (decodes <= 400_000) return 0.99;
  if (decodes >= 4_000_000) return 0.1;
  return 0.99 - (0.89 * (decodes - 400_000)) / 3_600_000;
}

/** Sets a key on a plain object even when it is `__proto__`. */
function setKey(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Converts one document; throws YamlReadError with the offset of the node at fault. */
export function kubeValue(document: Document): unknown {
  const anchors = new Map<string, Node>();
  const expanding = new Set<Node>();
  let decodes = 0;
  let aliasDecodes = 0;
  let aliasDepth = 0;
  let outermostAlias: Node | undefined;

  const offsetOf = (node: unknown): number | undefined =>
    (node as { range?: [number, number, number] } | null)?.range?.[0];

  function count(node: unknown): void {
    decodes++;
    if (aliasDepth > 0) aliasDecodes++;
    // Named at the alias whose expansion went too far, not somewhere inside what it expands.
    if (aliasDecodes > 100 && decodes > 1000 && aliasDecodes / decodes > allowedAliasRatio(decodes))
      throw new YamlReadError('document contains excessive aliasing', offsetOf(outermostAlias ?? node));
  }

  function register(node: Node): void {
    // Anchors are defined once, where the parser meets them; expanding an alias does not define them again.
    if (aliasDepth === 0 && node.anchor) anchors.set(node.anchor, node);
  }

  function target(alias: Node & { source: string }): Node {
    const anchored = anchors.get(alias.source);
    if (!anchored) throw new YamlReadError(`unknown anchor '${alias.source}' referenced`, offsetOf(alias));
    if (expanding.has(anchored))
      throw new YamlReadError(`anchor '${alias.source}' value contains itself`, offsetOf(alias));
    return anchored;
  }

  function viaAlias<T>(alias: Node & { source: string }, visit: (anchored: Node) => T): T {
    const anchored = target(alias);
    expanding.add(anchored);
    if (aliasDepth === 0) outermostAlias = alias;
    aliasDepth++;
    try {
      return visit(anchored);
    } finally {
      aliasDepth--;
      expanding.delete(anchored);
    }
  }

  function keyOf(node: unknown, value: unknown): string {
    if (isAlias(node)) return viaAlias(node, (anchored) => keyOf(anchored, value));
    if (node === null || node === undefined) {
      throw new YamlReadError(`unsupported map key: null`, offsetOf(value));
    }
    if (!isScalar(node)) throw new YamlReadError('invalid map key: a mapping or a list', offsetOf(node));
    const key = scalarKey(node);
    if (key === undefined) throw new YamlReadError(`unsupported map key: null`, offsetOf(node));
    return key;
  }

  function mergeInto(node: unknown, out: Record<string, unknown>): void {
    if (isMap(node)) mapInto(node, out);
    else if (isAlias(node)) {
      viaAlias(node, (anchored) => {
        if (!isMap(anchored))
          throw new YamlReadError('map merge requires map or sequence of maps as the value', offsetOf(node));
        mapInto(anchored, out);
      });
    } else if (isSeq(node)) {
      // decode.go `merge`: "Step backwards as earlier nodes take precedence."
      for (let index = node.items.length - 1; index >= 0; index--) {
        const item = node.items[index];
        if (!isMap(item) && !(isAlias(item) && isMap(anchors.get(item.source))))
          throw new YamlReadError('map merge requires map or sequence of maps as the value', offsetOf(item));
        mergeInto(item, out);
      }
    } else throw new YamlReadError('map merge requires map or sequence of maps as the value', offsetOf(node));
  }

  function mapInto(node: Node & { items: unknown[] }, out: Record<string, unknown>): void {
    count(node);
    register(node);
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      count(pair.key);
      if (isMergeKey(pair.key)) {
        mergeInto(pair.value, out);
        continue;
      }
      const key = keyOf(pair.key, pair.value);
      setKey(out, key, convert(pair.value));
    }
  }

  function convert(node: unknown): unknown {
    if (node === null || node === undefined) return null;
    if (isAlias(node)) return viaAlias(node, convert);
    if (isMap(node)) {
      const out: Record<string, unknown> = {};
      mapInto(node, out);
      return out;
    }
    if (isSeq(node)) {
      count(node);
      register(node);
      return node.items.map((item) => {
        if (isPair(item)) {
          // A single pair in a flow sequence (`[a: b]`) is a one-key mapping.
          const out: Record<string, unknown> = {};
          setKey(out, keyOf(item.key, item.value), convert(item.value));
          return out;
        }
        return convert(item);
      });
    }
    if (isScalar(node)) {
      count(node);
      register(node);
      const resolved = resolveScalar(node);
      if (resolved.tag === 'float' && !Number.isFinite(resolved.value))
        throw new YamlReadError(`${String(node.value)} cannot be represented in JSON`, offsetOf(node));
      return resolved.value;
    }
    throw new YamlReadError('unexpected YAML node', offsetOf(node));
  }

  return convert(document.contents);
}
