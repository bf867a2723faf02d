// The vocabulary src/config/keys.ts declares the settings with: each key once, with its default, the values it
// accepts, its environment variable and its doc line. Loading, checking, the env map, the defaults, the Config
// type and the docs' table are all read off that declaration (the way fastify's build/build-validation.js
// declares its server options once, as a schema with defaults).
import { isRecord } from '../core/objects.js';
import { ConfigError } from '../errors.js';

/** The type a value must have in the config file, checked before anything else ("must be a number, got …"). */
type ValueType = 'number' | 'string' | 'boolean' | 'list of strings' | 'mapping';

/** A bound taken from another key of the same group, e.g. headersTimeoutMs <= requestTimeoutMs. */
interface SiblingBound {
  key: string;
  minus: number;
}

type Bound = number | SiblingBound;

/** Text a string setting must match beyond being a string. */
export interface Format {
  /** For the docs: what it accepts ("not empty", "a Kubernetes quantity"). */
  accepts: string;
  /** The problem with `value`, in ConfigError's words; undefined when it is fine. */
  problem(value: string): string | undefined;
}

/** Values of the keys of one group, for checks that relate them. */
type Siblings = Readonly<Record<string, unknown>>;

/** One configuration key. */
export class Setting<T> {
  constructor(
    readonly spec: {
      readonly default: T;
      /** One line for the docs: what it does (units are in the key's name). */
      readonly doc: string;
      /** The environment variable that overrides it. */
      readonly env?: string;
      readonly type: ValueType;
      /** null is a value too (the default of optional settings). */
      readonly nullable?: boolean;
      /**
       * A YAML boolean stands for its text: for a choice among `true`, `false` and others, where `openshift: true` (a
       * boolean to YAML, to Helm's --set and to the chart's toYaml) means the choice "true".
       */
      readonly booleanAsText?: boolean;
      /** For the docs: the values it accepts ("1..65535", "enforce, audit"). */
      readonly accepts: string;
      /** The problem with a value of the right type, if any (range, format). */
      readonly problem?: (value: T, siblings: Siblings) => string | undefined;
      /** Keys of the same group `problem` reads: they are checked first. */
      readonly reads?: readonly string[];
      /**
       * What of `problem` JSON Schema can say (an enum, a numeric range), for the chart's values.schema.json
       * (`jsonSchemaOf`); what it cannot (formats, bounds read from other keys) hookguard checks when it starts.
       */
      readonly jsonSchema?: JsonSchema;
    },
  ) {}
}

/** A JSON Schema (draft-07) fragment. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** What a check across a group found: a problem of the group, or of one key in it (a path below the group). */
export type GroupProblem = string | { key: string; problem: string };

/** A group of keys with a check across them, e.g. server.tls: certFile and keyFile go together. */
export class Group<K extends Keys> {
  constructor(
    readonly keys: K,
    readonly problem: (values: ValuesOf<K>) => GroupProblem | undefined,
  ) {}
}

export interface Keys {
  readonly [name: string]: Node;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a group holds settings of every value type
export type Node = Setting<any> | Group<any> | Keys;

/** The value type a declaration describes: the Config type is derived with it. */
export type ValueOf<N> = N extends Setting<infer T> ? T : N extends Group<infer K> ? ValuesOf<K> : ValuesOf<N>;
type ValuesOf<K> = { -readonly [P in keyof K]: ValueOf<K[P]> };

/** Compile-time agreement of two types (used where a part of the config is also typed by a lower layer). */
export type Same<A, B> = (<V>() => V extends A ? 1 : 2) extends <V>() => V extends B ? 1 : 2 ? true : false;

interface Declared {
  doc: string;
  env?: string;
}

function boundText(bound: Bound): string {
  if (typeof bound === 'number') return String(bound);
  return bound.minus === 0 ? bound.key : `(${bound.key} - ${bound.minus})`;
}

function boundValue(bound: Bound, siblings: Siblings): number {
  if (typeof bound === 'number') return bound;
  const value = siblings[bound.key];
  if (typeof value !== 'number') throw new Error(`config declaration: bound ${bound.key} is not an integer sibling`);
  return value - bound.minus;
}

/** The value of another key of the same group, less `minus`, as a bound. */
export function sibling(key: string, minus = 0): SiblingBound {
  return { key, minus };
}

export function integer(options: Declared & { default: number; min: Bound; max: Bound }): Setting<number> {
  const { min, max, ...declared } = options;
  return new Setting({
    ...declared,
    type: 'number',
    accepts: `${boundText(min)}..${boundText(max)}`,
    reads: [min, max].flatMap((bound) => (typeof bound === 'number' ? [] : [bound.key])),
    jsonSchema: {
      type: 'integer',
      ...(typeof min === 'number' ? { minimum: min } : {}),
      ...(typeof max === 'number' ? { maximum: max } : {}),
    },
    problem: (value, siblings) => {
      const [low, high] = [boundValue(min, siblings), boundValue(max, siblings)];
      return Number.isInteger(value) && value >= low && value <= high
        ? undefined
        : `must be an integer ${low}..${high}, got ${value}`;
    },
  });
}

/** An integer that may be left unset (null); its doc says what null means. */
export function optionalInteger(
  options: Declared & { default: number | null; min: number; max: number },
): Setting<number | null> {
  const { min, max, ...declared } = options;
  return new Setting<number | null>({
    ...declared,
    type: 'number',
    nullable: true,
    accepts: `${min}..${max}, or null`,
    jsonSchema: { type: ['integer', 'null'], minimum: min, maximum: max },
    problem: (value) =>
      value === null || (Number.isInteger(value) && value >= min && value <= max)
        ? undefined
        : `must be an integer ${min}..${max} or null, got ${value}`,
  });
}

export function text(options: Declared & { default: string; format?: Format }): Setting<string> {
  const { format, ...declared } = options;
  return new Setting({
    ...declared,
    type: 'string',
    accepts: format?.accepts ?? 'text',
    ...(format ? { problem: (value: string) => format.problem(value) } : {}),
  });
}

/** A string that may be left unset (null); its doc says what null means. */
export function optionalText(options: Declared & { format?: Format }): Setting<string | null> {
  const { format, ...declared } = options;
  return new Setting<string | null>({
    ...declared,
    default: null,
    type: 'string',
    nullable: true,
    accepts: `${format?.accepts ?? 'text'}, or null`,
    ...(format ? { problem: (value: string | null) => (value === null ? undefined : format.problem(value)) } : {}),
  });
}

export function oneOf<const V extends string>(values: readonly V[], options: Declared & { default: V }): Setting<V> {
  const booleanAsText = values.includes('true' as V) && values.includes('false' as V);
  return new Setting<V>({
    ...options,
    type: 'string',
    accepts: values.map((value) => `\`${value}\``).join(', '),
    ...(booleanAsText
      ? { booleanAsText, jsonSchema: { type: ['string', 'boolean'], enum: [...values, true, false] } }
      : { jsonSchema: { enum: values } }),
    problem: (value) => (values.includes(value) ? undefined : `must be one of ${values.join(', ')}, got "${value}"`),
  });
}

export function flag(options: Declared & { default: boolean }): Setting<boolean> {
  return new Setting({ ...options, type: 'boolean', accepts: '`true`, `false`' });
}

export function list(
  options: Declared & { default: readonly string[]; nonEmpty?: boolean },
): Setting<readonly string[]> {
  const { nonEmpty, ...declared } = options;
  return new Setting<readonly string[]>({
    ...declared,
    type: 'list of strings',
    accepts: nonEmpty ? 'a list of strings, not empty' : 'a list of strings',
    ...(nonEmpty ? { jsonSchema: { minItems: 1 } } : {}),
    ...(nonEmpty
      ? { problem: (value: readonly string[]) => (value.length === 0 ? 'must not be empty' : undefined) }
      : {}),
  });
}

/** A list whose every item is one of `values` (and, with `nonEmpty`, at least one). */
export function listOf<const V extends string>(
  values: readonly V[],
  options: Declared & { default: readonly V[]; nonEmpty?: boolean },
): Setting<readonly V[]> {
  const { nonEmpty, ...declared } = options;
  const what = `a list of ${values.map((value) => `\`${value}\``).join(', ')}`;
  return new Setting<readonly V[]>({
    ...declared,
    type: 'list of strings',
    accepts: nonEmpty ? `${what}, not empty` : what,
    jsonSchema: { items: { enum: values }, ...(nonEmpty ? { minItems: 1 } : {}) },
    problem: (value) => {
      if (nonEmpty && value.length === 0) return 'must not be empty';
      const unknown = value.find((item) => !values.includes(item));
      return unknown === undefined ? undefined : `must hold only ${values.join(', ')}, got "${unknown}"`;
    },
  });
}

/**
 * A mapping of names to text, each name and value checked (`{openshift-gitops: 2.14.8}`); with `nullValues`, a name
 * may map to null, which its doc says the meaning of. Set in the config file only: no environment variable.
 */
export function mapping<V extends string | null = string>(
  options: Omit<Declared, 'env'> & {
    default: Readonly<Record<string, V>>;
    names: Format;
    values: Format;
    nullValues?: null extends V ? true : never;
  },
): Setting<Readonly<Record<string, V>>> {
  const { names, values, nullValues, ...declared } = options;
  return new Setting<Readonly<Record<string, V>>>({
    ...declared,
    type: 'mapping',
    accepts: `a mapping of ${names.accepts} to ${values.accepts}${nullValues ? ' or null' : ''}`,
    jsonSchema: { additionalProperties: { type: nullValues ? ['string', 'null'] : 'string' } },
    problem: (value) => {
      for (const [name, item] of Object.entries(value)) {
        const nameProblem = names.problem(name);
        if (nameProblem !== undefined) return `name "${name}" ${nameProblem}`;
        if (item === null && nullValues) continue;
        if (typeof item !== 'string')
          return `"${name}" must map to ${nullValues ? 'a string or null' : 'a string'}, got ${describe(item)}`;
        const valueProblem = values.problem(item);
        if (valueProblem !== undefined) return `"${name}": ${valueProblem}`;
      }
      return undefined;
    },
  });
}

export function group<K extends Keys>(keys: K, problem: (values: ValuesOf<K>) => GroupProblem | undefined): Group<K> {
  return new Group(keys, problem);
}

/** The keys of a group node (a Group or a plain record of keys). */
function keysOf(node: Group<Keys> | Keys): Keys {
  return node instanceof Group ? node.keys : node;
}

/** Every setting with its dotted path, in declaration order. */
export function settingsOf(keys: Keys, prefix = ''): Array<[path: string, setting: Setting<unknown>]> {
  return Object.entries(keys).flatMap(([name, node]) => {
    const path = prefix ? `${prefix}.${name}` : name;
    return node instanceof Setting ? [[path, node as Setting<unknown>]] : settingsOf(keysOf(node), path);
  });
}

/** The setting at a dotted path, if there is one. */
export function settingAt(keys: Keys, path: string): Setting<unknown> | undefined {
  let node: Node | undefined = keys;
  for (const name of path.split('.')) {
    if (node === undefined || node instanceof Setting) return undefined;
    node = keysOf(node)[name];
  }
  return node instanceof Setting ? (node as Setting<unknown>) : undefined;
}

/** A fresh, unfrozen copy of the defaults. */
export function defaultsOf<K extends Keys>(keys: K): ValuesOf<K> {
  return Object.fromEntries(
    Object.entries(keys).map(([name, node]) => [
      name,
      node instanceof Setting ? structuredClone(node.spec.default as unknown) : defaultsOf(keysOf(node)),
    ]),
  ) as ValuesOf<K>;
}

/** A YAML scalar as text (`fixed: 2.14` parses as a number); anything else as JSON, which no check accepts. */
export function scalarText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : JSON.stringify(value);
}

/** An environment variable's or a flag's text as the setting's type; text it cannot convert stays text (and fails). */
export function fromText(setting: Setting<unknown> | undefined, raw: string): unknown {
  switch (setting?.spec.type) {
    case 'number':
      return /^\d+$/.test(raw) ? Number(raw) : raw;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    case 'list of strings':
      return raw
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    default:
      return raw;
  }
}

/** How a wrong value is named in an error: `string "abc"`, `a list`, `null`. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`;
}

function fail(key: string, problem: string): never {
  throw new ConfigError(key, problem);
}

function typeProblem(setting: Setting<unknown>, value: unknown): string | undefined {
  const { type, nullable } = setting.spec;
  if (value === null && nullable) return undefined;
  if (type === 'mapping') return isRecord(value) ? undefined : `must be a mapping, got ${describe(value)}`;
  if (type === 'list of strings') {
    return Array.isArray(value) && value.every((item) => typeof item === 'string')
      ? undefined
      : `must be a list of strings, got ${describe(value)}`;
  }
  return typeof value === type ? undefined : `must be a ${type}, got ${describe(value)}`;
}

/** A key written as the id people see (`min-runtime`) for one declared in camelCase (`minRuntime`). */
export function camelCaseKey(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_match, next: string) => next.toUpperCase());
}

/** "unknown key", naming the declared key when `name` is its kebab-case spelling (a rule id). */
function unknownKeyProblem(keys: Keys, name: string, parent: string): string {
  const declared = camelCaseKey(name);
  if (declared === name || !(declared in keys)) return 'unknown key';
  return `unknown key; keys are camelCase: ${parent ? `${parent}.${declared}` : declared}`;
}

const JSON_TYPES: Record<ValueType, string> = {
  number: 'number',
  string: 'string',
  boolean: 'boolean',
  'list of strings': 'array',
  mapping: 'object',
};

/**
 * The JSON Schema (draft-07) of a config file holding `keys`: every key with its doc, its type and what its
 * declaration says as data (an enum, a numeric range); unknown keys refused. Formats and checks across keys are
 * code, which hookguard runs when it starts.
 */
export function jsonSchemaOf(keys: Keys): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(
      Object.entries(keys).map(([name, node]) => {
        if (!(node instanceof Setting)) return [name, jsonSchemaOf(keysOf(node))];
        const { doc, type, nullable, jsonSchema } = (node as Setting<unknown>).spec;
        const base: JsonSchema = {
          description: doc,
          type: nullable ? [JSON_TYPES[type], 'null'] : JSON_TYPES[type],
          ...(type === 'list of strings' ? { items: { type: 'string' } } : {}),
        };
        return [name, { ...base, ...jsonSchema }];
      }),
    ),
  };
}

/** `input` over the defaults, each value of its key's type; unknown keys are errors. Throws at the first problem. */
function overlay(node: Node, input: unknown, key: string): unknown {
  if (node instanceof Setting) {
    if (input === undefined) return structuredClone(node.spec.default as unknown);
    if (typeof input === 'boolean' && node.spec.booleanAsText) return String(input);
    const problem = typeProblem(node, input);
    return problem === undefined ? input : fail(key, problem);
  }
  const keys = keysOf(node);
  if (input === undefined) return defaultsOf(keys);
  if (!isRecord(input)) fail(key, `must be a mapping, got ${describe(input)}`);
  const unknown = Object.keys(input).find((name) => !(name in keys));
  if (unknown !== undefined) fail(key ? `${key}.${unknown}` : unknown, unknownKeyProblem(keys, unknown, key));
  return Object.fromEntries(
    Object.entries(keys).map(([name, child]) => [name, overlay(child, input[name], key ? `${key}.${name}` : name)]),
  );
}

/** Range and format checks in declaration order, but a key whose bound reads others after them; then the group's. */
function check(keys: Keys, values: Siblings, prefix: string): void {
  const entries = Object.entries(keys);
  const readsOthers = ([, node]: [string, Node]) => node instanceof Setting && (node.spec.reads ?? []).length > 0;
  const ordered = [...entries.filter((entry) => !readsOthers(entry)), ...entries.filter(readsOthers)];
  for (const [name, node] of ordered) {
    const key = prefix ? `${prefix}.${name}` : name;
    if (node instanceof Setting) {
      const problem = node.spec.problem?.(values[name], values);
      if (problem !== undefined) fail(key, problem);
    } else {
      check(keysOf(node), values[name] as Siblings, key);
      if (node instanceof Group) {
        const problem = node.problem(values[name] as ValuesOf<Keys>);
        if (typeof problem === 'string') fail(key, problem);
        if (problem !== undefined) fail(`${key}.${problem.key}`, problem.problem);
      }
    }
  }
}

/** `input` (the file's settings, env and flags applied) over the defaults, checked. Throws ConfigError. */
export function validate<K extends Keys>(keys: K, input: unknown): ValuesOf<K> {
  const values = overlay(keys, input, '') as ValuesOf<K>;
  check(keys, values, '');
  return values;
}
