// Server-side apply (PATCH with `Content-Type: application/apply-patch+yaml`) as kube-apiserver answers it, for the
// stand-in API server (test/support/fake-apiserver.ts). Read from:
// - kubernetes/apiserver v0.33.0 (Kubernetes 1.33) pkg/endpoints/handlers/patch.go PatchResource: the content type is
//   checked first (415, negotiation.NewUnsupportedMediaTypeError, types from pkg/endpoints/installer.go); then
//   PatchOptions (422, apimachinery v0.33.0 pkg/apis/meta/v1/validation ValidatePatchOptions: apply requires
//   `fieldManager`; `force` only with apply); an apply of a missing object creates it (forceAllowCreate, 201) once
//   the user may also `create` it (withAuthorization in handlers/update.go), else updates it (200); checkName (400).
// - apimachinery v0.33.0 pkg/util/managedfields/internal: structuredmerge.go Apply (the patch's apiVersion must be
//   the URL's, no managedFields in it: 400), conflict.go NewConflictError/getConflictMessage/printManager (the 409
//   text), managedfields.go sortEncodedManagedFields (Apply entries first, then by time, then by manager),
//   skipnonapplied.go (the fields of an object without managedFields go to `before-first-apply` before an apply).
// - apiserver v0.33.0 pkg/endpoints/handlers/fieldmanager/equality.go IgnoreManagedFieldsTimestampsTransformer: an
//   apply that changes nothing but its own timestamp is not written (same resourceVersion).
//
// The subset modelled. Ownership is tracked per *field*, where a field is one of: each top-level field of the object
// but apiVersion, kind, metadata and status; each direct child of `spec` (`.spec.versions`, `.spec.names`); each key
// of metadata.labels and metadata.annotations. Each such field is atomic: an apply that sets it replaces its whole
// value. Per field and manager, as kube-apiserver does: a field whose applied value differs from the live one while
// another manager (Apply or Update) owns it is a conflict (409 naming each manager and field) unless force=true,
// which moves the field to the applier; an equal value is shared; a field the applier set before and sets no more is
// removed unless another manager owns it. managedFields entries are written in the FieldsV1 shape at that grain.
//
// NOT modelled: ownership below that grain (kube-apiserver tracks every leaf and merges lists by their keys, e.g.
// `.spec.versions[name="v1"].schema...`, so a partial apply merges into a field here it replaces, and conflict paths
// there are deeper than here); Update operations (PUT, JSON patch) do not record ownership in the stand-in (a test
// seeds managedFields of another manager through FakeApiServer.put); admission webhooks on apply; apply to
// subresources; the `fieldValidation` directive and strict decoding; metadata other than name, labels and
// annotations in an applied configuration (ignored); CBOR apply; YAML 1.1 quirks (the body is read as YAML 1.2 here,
// as sigs.k8s.io/yaml does for JSON-shaped documents).
import { parse } from 'yaml';
import { statusBody } from './api-status.js';

type Json = Record<string, unknown>;

export const APPLY_PATCH = 'application/apply-patch+yaml';
/** What kube-apiserver accepts for PATCH of a built-in resource (pkg/endpoints/installer.go, CBOR gate off). */
export const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  APPLY_PATCH,
] as const;

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Json;
}

/** A field at the model's grain: ['spec', 'versions'], ['metadata', 'labels', 'team'], ['data']. */
type FieldPath = readonly string[];

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fields an object sets, at the grain above. */
export function fieldsOf(object: Json): FieldPath[] {
  const paths: FieldPath[] = [];
  for (const [key, value] of Object.entries(object)) {
    if (key === 'apiVersion' || key === 'kind' || key === 'status') continue;
    if (key === 'metadata') {
      for (const map of ['labels', 'annotations'])
        if (isObject((value as Json | undefined)?.[map]))
          for (const name of Object.keys((value as Record<string, Json>)[map]!)) paths.push(['metadata', map, name]);
    } else if (key === 'spec' && isObject(value)) for (const child of Object.keys(value)) paths.push(['spec', child]);
    else paths.push([key]);
  }
  return paths;
}

/** FieldsV1 of some fields: {"f:spec":{"f:group":{}}}. */
export function fieldsV1(paths: readonly FieldPath[]): Json {
  const root: Json = {};
  for (const path of paths) {
    let node = root;
    for (const part of path) node = (node[`f:${part}`] ??= {}) as Json;
  }
  return root;
}

/** The fields a FieldsV1 names, at the grain above (its leaves). */
function pathsOf(fields: Json, prefix: string[] = []): FieldPath[] {
  const entries = Object.entries(fields).filter(([key]) => key.startsWith('f:'));
  if (entries.length === 0) return prefix.length > 0 ? [prefix] : [];
  return entries.flatMap(([key, child]) => pathsOf(isObject(child) ? child : {}, [...prefix, key.slice(2)]));
}

const same = (a: FieldPath, b: FieldPath) => a.length === b.length && a.every((part, index) => part === b[index]);

function read(object: Json, path: FieldPath): unknown {
  let node: unknown = object;
  for (const part of path) node = isObject(node) ? node[part] : undefined;
  return node;
}

function write(object: Json, path: FieldPath, value: unknown): void {
  let node = object;
  for (const part of path.slice(0, -1)) node = isObject(node[part]) ? node[part] : (node[part] = {});
  node[path.at(-1)!] = structuredClone(value);
}

function remove(object: Json, path: FieldPath): void {
  const parent = read(object, path.slice(0, -1));
  if (isObject(parent)) delete parent[path.at(-1)!];
}

/** JSON with sorted keys: equality of decoded values, as apiequality.Semantic.DeepEqual compares them. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** printManager (conflict.go): `"name"` for an apply, `"name" using v at time` for an update. */
function printManager(entry: ManagedFieldsEntry): string {
  const name = JSON.stringify(entry.manager);
  if (entry.operation !== 'Update') return name;
  return entry.time === undefined
    ? `${name} using ${entry.apiVersion}`
    : `${name} using ${entry.apiVersion} at ${entry.time}`;
}

/** fieldpath.Path's String(): `.spec.versions`, `.metadata.labels.team`. */
const pathText = (path: FieldPath) => path.map((part) => `.${part}`).join('');

export interface Conflict {
  entry: ManagedFieldsEntry;
  path: FieldPath;
}

/** BuildManagerIdentifier's key of a manager (managedfields.go): what conflicts are grouped and sorted by. */
const managerKey = (entry: ManagedFieldsEntry) =>
  JSON.stringify({
    manager: entry.manager,
    operation: entry.operation,
    ...(entry.operation === 'Update' ? { apiVersion: entry.apiVersion } : {}),
  });

/** fieldpath.Set's order: field by field, by name. */
function comparePaths(a: FieldPath, b: FieldPath): number {
  for (let index = 0; index < Math.min(a.length, b.length); index++)
    if (a[index] !== b[index]) return a[index]! < b[index]! ? -1 : 1;
  return a.length - b.length;
}

/**
 * The 409 Status body of an apply's conflicts (conflict.go NewConflictError, errors.NewApplyConflict), by manager,
 * and each manager's fields in fieldpath.Set's order.
 */
export function conflictStatus(unsorted: readonly Conflict[]): Json {
  const conflicts = [...unsorted].sort((a, b) =>
    managerKey(a.entry) !== managerKey(b.entry)
      ? managerKey(a.entry) < managerKey(b.entry)
        ? -1
        : 1
      : comparePaths(a.path, b.path),
  );
  let message: string;
  if (conflicts.length === 1) {
    const [only] = conflicts as [Conflict];
    message = `Apply failed with 1 conflict: conflict with ${printManager(only.entry)}: ${pathText(only.path)}`;
  } else {
    const byManager = new Map<string, Conflict[]>();
    for (const conflict of conflicts) {
      const key = managerKey(conflict.entry);
      byManager.set(key, [...(byManager.get(key) ?? []), conflict]);
    }
    const lines = [...byManager.values()].flatMap((group) => [
      `conflicts with ${printManager(group[0]!.entry)}:`,
      ...group.map(({ path }) => `- ${pathText(path)}`),
    ]);
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
  }
  return statusBody(409, message, {
    causes: conflicts.map(({ entry, path }) => ({
      reason: 'FieldManagerConflict',
      message: `conflict with ${printManager(entry)}`,
      field: pathText(path),
    })),
  });
}

/** The applied configuration, from YAML or JSON (apply-patch+yaml takes either); a 400 message when unreadable. */
export function readAppliedConfiguration(text: string): Json | string {
  let decoded: unknown;
  try {
    decoded = parse(text);
  } catch (error) {
    return `error decoding YAML: ${(error as Error).message}`;
  }
  if (!isObject(decoded)) return 'error decoding YAML: the applied configuration is not an object';
  return decoded;
}

function sortEntries(entries: ManagedFieldsEntry[]): ManagedFieldsEntry[] {
  const seconds = (entry: ManagedFieldsEntry) => (entry.time === undefined ? 0 : Date.parse(entry.time) / 1000);
  return entries.sort((p, q) => {
    if (p.operation !== q.operation) return p.operation < q.operation ? -1 : 1;
    if (seconds(p) !== seconds(q)) return seconds(p) - seconds(q);
    return p.manager < q.manager ? -1 : p.manager > q.manager ? 1 : 0;
  });
}

/**
 * Applies `applied` as `manager` to `live` (undefined: the object does not exist): the merged object with its new
 * managedFields, or the conflicts when another manager owns a field being changed and `force` is not set.
 */
export function serverSideApply(
  live: Json | undefined,
  applied: Json,
  options: { manager: string; force: boolean; apiVersion: string; now: string },
): { object: Json } | { conflicts: Conflict[] } {
  const liveMetadata = (live?.metadata ?? {}) as Json;
  let entries = (liveMetadata.managedFields ?? []) as ManagedFieldsEntry[];
  // An object nobody applied yet: its fields are first given to `before-first-apply` (skipnonapplied.go).
  if (live !== undefined && entries.length === 0)
    entries = [
      {
        manager: 'before-first-apply',
        operation: 'Update',
        apiVersion: options.apiVersion,
        time: options.now,
        fieldsType: 'FieldsV1',
        fieldsV1: fieldsV1(fieldsOf(live)),
      },
    ];
  const isMine = (entry: ManagedFieldsEntry) => entry.manager === options.manager && entry.operation === 'Apply';
  const others = entries.filter((entry) => !isMine(entry));
  const mine = entries.find(isMine);
  const owns = (entry: ManagedFieldsEntry, path: FieldPath) =>
    pathsOf(entry.fieldsV1).some((owned) => same(owned, path));
  const appliedPaths = fieldsOf(applied);
  const changed = appliedPaths.filter(
    (path) => live !== undefined && canonical(read(live, path)) !== canonical(read(applied, path)),
  );
  const conflicts = changed.flatMap((path) =>
    others.filter((entry) => owns(entry, path)).map((entry) => ({ entry, path })),
  );
  if (conflicts.length > 0 && !options.force) return { conflicts };

  const object = structuredClone(live ?? { apiVersion: applied.apiVersion, kind: applied.kind, metadata: {} });
  for (const path of mine ? pathsOf(mine.fieldsV1) : [])
    if (!appliedPaths.some((appliedPath) => same(appliedPath, path)) && !others.some((entry) => owns(entry, path)))
      remove(object, path);
  for (const path of appliedPaths) write(object, path, read(applied, path));
  const metadata = object.metadata as Json;
  for (const map of ['labels', 'annotations'])
    if (isObject(metadata[map]) && Object.keys(metadata[map]).length === 0) delete metadata[map];
  const kept = others.flatMap((entry) => {
    const taken = conflicts.filter((conflict) => conflict.entry === entry).map((conflict) => conflict.path);
    if (taken.length === 0) return [entry];
    const left = pathsOf(entry.fieldsV1).filter((path) => !taken.some((away) => same(away, path)));
    return left.length === 0 ? [] : [{ ...entry, fieldsV1: fieldsV1(left) }];
  });
  const entry: ManagedFieldsEntry = {
    manager: options.manager,
    operation: 'Apply',
    apiVersion: options.apiVersion,
    time: options.now,
    fieldsType: 'FieldsV1',
    fieldsV1: fieldsV1(appliedPaths),
  };
  // Only the applier's timestamp changed: keep the old one, so that nothing is written (equality.go).
  if (mine && canonical({ ...mine, time: options.now }) === canonical(entry)) entry.time = mine.time;
  metadata.managedFields = sortEntries([...kept, entry]);
  return { object };
}
