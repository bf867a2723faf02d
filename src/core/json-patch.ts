// fast-json-patch is a CommonJS package whose named exports Node cannot see from an ES module: its default export
// is the module object, typed by the package's own declarations. Everything reaches it through here.
import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

export type { Operation };

export const { applyPatch } = jsonPatch;

/**
 * The JSON Patch from `before` to `after`: the same operations, in the same order, as fast-json-patch's `compare`
 * (duplex.js `_generate`, v3.1.1), whose patches the goldens hold. Unlike it, the values are `after`'s own, not deep
 * copies (a JSON round trip each, a third of the diff's time): `after` must be a copy that nothing writes to once
 * diffed, as decide()'s mutated clone is.
 */
export function compare(before: unknown, after: unknown): Operation[] {
  const diff: Diff = { patch: [], segments: [] };
  if (isContainer(before) && isContainer(after)) diffInto(before, after, diff);
  return diff.patch;
}

type Container = Record<string, unknown> | unknown[];

/**
 * The patch so far, and the keys from the root to the containers being compared: a path is written out only for an
 * operation (most of a hook object is unchanged, and building each container's path cost as much as the walk).
 */
interface Diff {
  patch: Operation[];
  segments: (string | number)[];
}

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

/** RFC 6901: "~" and "/" in a key are written "~0" and "~1". */
function pointerSegment(key: string | number): string {
  if (typeof key === 'number') return String(key);
  return key.includes('/') || key.includes('~') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
}

/** The JSON Pointer of the container being compared, with `key` below it when given. */
function pathOf(diff: Diff, key?: string | number): string {
  let path = '';
  for (const segment of diff.segments) path += `/${pointerSegment(segment)}`;
  return key === undefined ? path : `${path}/${pointerSegment(key)}`;
}

/** A value under `key` changed: recurse into two containers of one type, or replace it. */
function diffValue(oldValue: unknown, newValue: unknown, key: string | number, diff: Diff): void {
  if (isContainer(oldValue) && isContainer(newValue) && Array.isArray(oldValue) === Array.isArray(newValue)) {
    diff.segments.push(key);
    diffInto(oldValue, newValue, diff);
    diff.segments.pop();
  } else if (oldValue !== newValue) {
    // An undefined array item is null in JSON, as fast-json-patch's copy made it.
    diff.patch.push({ op: 'replace', path: pathOf(diff, key), value: newValue ?? null });
  }
}

/**
 * fast-json-patch's `_generate` for two arrays, whose indices it walks as the strings of `_objectKeys`: walked here by
 * number, with no list of keys built.
 */
function diffArrays(before: unknown[], after: unknown[], diff: Diff): void {
  let deleted = false;
  for (let index = before.length - 1; index >= 0; index--) {
    const oldItem = before[index];
    const newItem = after[index];
    if (oldItem === newItem && oldItem !== undefined) continue;
    if (Object.hasOwn(after, index)) diffValue(oldItem, newItem, index, diff);
    else {
      diff.patch.push({ op: 'remove', path: pathOf(diff, index) });
      deleted = true;
    }
  }
  if (!deleted && after.length === before.length) return;
  for (let index = 0; index < after.length; index++) {
    if (!Object.hasOwn(before, index) && after[index] !== undefined)
      diff.patch.push({ op: 'add', path: pathOf(diff, index), value: after[index] });
  }
}

/** fast-json-patch's `_objectKeys`: an array's indices as strings, an object's own keys. */
function keysOf(value: Container): string[] {
  return Array.isArray(value) ? value.map((_item, index) => String(index)) : Object.keys(value);
}

function diffInto(before: Container, after: Container, diff: Diff): void {
  if (before === after) return;
  const afterIsArray = Array.isArray(after);
  if (afterIsArray && Array.isArray(before)) return diffArrays(before, after, diff);
  const oldRecord = before as Record<string, unknown>;
  const newRecord = after as Record<string, unknown>;
  const oldKeys = keysOf(before);
  let deleted = false;
  // Old keys last to first (so removals from an array keep the earlier indices valid), then the new keys in order.
  for (let index = oldKeys.length - 1; index >= 0; index--) {
    const key = oldKeys[index]!;
    const oldValue = oldRecord[key];
    const newValue = newRecord[key];
    // The usual key: the same value, shared with the copy or equal as a primitive (undefined excepted, which may be
    // a key the copy lacks).
    if (oldValue === newValue && oldValue !== undefined) continue;
    if (Object.hasOwn(after, key) && !(newValue === undefined && oldValue !== undefined && !afterIsArray)) {
      diffValue(oldValue, newValue, key, diff);
    } else if (Array.isArray(before) === afterIsArray) {
      diff.patch.push({ op: 'remove', path: pathOf(diff, key) });
      deleted = true;
    } else {
      diff.patch.push({ op: 'replace', path: pathOf(diff), value: after });
    }
  }
  const newKeys = keysOf(after);
  if (!deleted && newKeys.length === oldKeys.length) return;
  for (const key of newKeys) {
    if (!Object.hasOwn(before, key) && newRecord[key] !== undefined) {
      diff.patch.push({ op: 'add', path: pathOf(diff, key), value: newRecord[key] });
    }
  }
}
