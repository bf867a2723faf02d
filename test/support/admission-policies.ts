// Admission policies (admissionregistration.k8s.io/v1) evaluated the way kube-apiserver evaluates them, for tests that
// hold `hookguard policies` equal to decide() without an API server. The CEL runs in @bufbuild/cel, with what
// Kubernetes adds to it done here as Kubernetes does it (kubernetes/apiserver v0.36.3):
// - JSON integers are CEL ints (the API server's objects are typed: int64), objects are maps;
// - `Object…{}` and `JSONPatch{}` initialisers (pkg/cel/mutation/dynamic/objects.go) become maps, and the check the
//   API server makes of them, that a nested initialiser's type name is its parent's plus the field's
//   (ObjectVal.CheckTypeNamesMatchFieldPathNames, called by patch/smd.go and patch/json_patch.go), is made here too;
// - match conditions first: a false one skips the policy, an error skips it under failurePolicy Ignore (the only one
//   hookguard generates) (pkg/admission/plugin/policy/matching, generic/policy_dispatcher.go);
// - a JSONPatch mutation is applied as RFC 6902 (patch/json_patch.go, evanphx/json-patch); an ApplyConfiguration is
//   merged as structured-merge-diff merges an apply (patch/smd.go ApplyStructuredMergeDiff): maps and structs field by
//   field, the map lists hookguard's policies touch (containers, initContainers: keyed by name) item by key, a new
//   key appended. Any other list in an apply configuration fails the test: the merge here knows no more.
import { create } from '@bufbuild/protobuf';
import { isCelError, isCelList, isCelMap, parse, plan, celEnv, type CelValue } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import {
  ConstantSchema,
  Expr_CreateStruct_EntrySchema,
  ExprSchema,
  type Expr,
} from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import { applyPatch, type Operation } from '../../src/core/json-patch.js';
import { isRecord } from '../../src/core/objects.js';
import type { KubeObject } from '../../src/core/types.js';

const TYPE = '@type';

/** JSON as the API server's CEL sees it: integers are ints, objects maps. */
export function celInput(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(celInput);
  if (isRecord(value)) return new Map(Object.entries(value).map(([key, item]) => [key, celInput(item)]));
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  return value;
}

/** A CEL result as JSON, with the check of initialiser type names made and their marks dropped. */
function jsonOf(value: CelValue, typeName?: string, field?: string): unknown {
  if (isCelList(value)) return [...value].map((item) => jsonOf(item, typeName, field));
  if (isCelMap(value)) {
    const own = value.get(TYPE);
    if (typeof own === 'string' && typeName !== undefined && field !== undefined && own !== `${typeName}.${field}`)
      throw new Error(`type mismatch: ${own} initialises field ${field} of ${typeName}`);
    const name = typeof own === 'string' ? own : undefined;
    // Kubernetes CEL maps of objects have string keys only (JSON).
    const entries = [...value].filter(([key]) => key !== TYPE) as Array<[string, CelValue]>;
    return Object.fromEntries(entries.map(([key, item]) => [key, jsonOf(item, name, key)]));
  }
  if (typeof value === 'bigint') return Number(value);
  return value;
}

/** Rewrites each `Object…{}` and `JSONPatch{}` initialiser into a map carrying its type name under @type. */
function initialisersAsMaps(expr: Expr | undefined): void {
  if (!expr) return;
  const kind = expr.exprKind;
  const constant = (text: string) =>
    create(ExprSchema, {
      exprKind: {
        case: 'constExpr',
        value: create(ConstantSchema, { constantKind: { case: 'stringValue', value: text } }),
      },
    });
  switch (kind.case) {
    case 'structExpr': {
      const struct = kind.value;
      for (const entry of struct.entries) initialisersAsMaps(entry.value);
      if (struct.messageName !== '') {
        if (!struct.messageName.startsWith('Object') && struct.messageName !== 'JSONPatch')
          throw new Error(`unknown type ${struct.messageName}`);
        for (const entry of struct.entries) {
          if (entry.keyKind.case !== 'fieldKey') throw new Error('an initialiser with a map key');
          entry.keyKind = { case: 'mapKey', value: constant(entry.keyKind.value) };
        }
        struct.entries.unshift(
          create(Expr_CreateStruct_EntrySchema, {
            keyKind: { case: 'mapKey', value: constant(TYPE) },
            value: constant(struct.messageName),
          }),
        );
        struct.messageName = '';
      } else
        for (const entry of struct.entries)
          if (entry.keyKind.case === 'mapKey') initialisersAsMaps(entry.keyKind.value);
      return;
    }
    case 'callExpr':
      initialisersAsMaps(kind.value.target);
      kind.value.args.forEach(initialisersAsMaps);
      return;
    case 'listExpr':
      kind.value.elements.forEach(initialisersAsMaps);
      return;
    case 'selectExpr':
      initialisersAsMaps(kind.value.operand);
      return;
    case 'comprehensionExpr':
      for (const part of [
        kind.value.iterRange,
        kind.value.accuInit,
        kind.value.loopCondition,
        kind.value.loopStep,
        kind.value.result,
      ])
        initialisersAsMaps(part);
      return;
    default:
      return;
  }
}

/** Evaluates one expression of a policy with the admission variables; throws on a CEL error. */
export function evaluatePolicyCel(expression: string, variables: Record<string, unknown>): unknown {
  const parsed = parse(expression);
  initialisersAsMaps(parsed.expr);
  const run = plan(celEnv({ funcs: strings }), parsed);
  const result = run(
    Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, celInput(value)])) as never,
  );
  if (isCelError(result)) throw new Error(`${expression.slice(0, 80)}…: ${result.message}`);
  return jsonOf(result);
}

/** structured-merge-diff's merge of an apply configuration, for the fields hookguard's policies set. */
function mergeApplied(live: unknown, applied: unknown, path: string): unknown {
  if (Array.isArray(applied)) {
    if (!/(^|\/)(containers|initContainers)$/.test(path)) throw new Error(`no merge for the list at ${path}`);
    const items = Array.isArray(live) ? live.map((item) => structuredClone(item) as Record<string, unknown>) : [];
    for (const item of applied as Record<string, unknown>[]) {
      const index = items.findIndex((existing) => existing.name === item.name);
      if (index >= 0) items[index] = mergeApplied(items[index], item, `${path}/${String(item.name)}`) as never;
      else items.push(item);
    }
    return items;
  }
  if (isRecord(applied)) {
    const merged: Record<string, unknown> = isRecord(live) ? structuredClone(live) : {};
    for (const [key, value] of Object.entries(applied))
      merged[key] = mergeApplied(merged[key], value, `${path}/${key}`);
    return merged;
  }
  return applied;
}

export interface PolicyRequest {
  object: KubeObject;
  username: string;
  /** The parameter objects by name (a binding's paramRef.name). */
  params?: ReadonlyMap<string, KubeObject>;
}

type Policy = KubeObject & { spec: Record<string, any> };

/** The object's metadata.namespace ('' when none). */
function namespaceOf(object: KubeObject): string {
  const namespace = object.metadata?.namespace;
  return typeof namespace === 'string' ? namespace : '';
}

function matches(policy: Policy, kind: string, namespace: string): boolean {
  const constraints = policy.spec.matchConstraints as Record<string, any>;
  const rules = constraints.resourceRules as Array<{ resources: string[]; operations: string[] }>;
  const resource = kind === 'Job' ? 'jobs' : 'pods';
  if (!rules.some((rule) => rule.resources.includes(resource) && rule.operations.includes('CREATE'))) return false;
  const excluded = (constraints.namespaceSelector?.matchExpressions ?? []) as Array<{
    operator: string;
    values: string[];
  }>;
  return excluded.every((expression) => expression.operator === 'NotIn' && !expression.values.includes(namespace));
}

function bindingOf(objects: readonly KubeObject[], kind: string, policy: string): Policy {
  const binding = objects.find((object) => object.kind === kind && (object as Policy).spec.policyName === policy);
  if (!binding) throw new Error(`no ${kind} for ${policy}`);
  return binding as Policy;
}

function variablesFor(
  objects: readonly KubeObject[],
  policy: Policy,
  binding: Policy,
  request: PolicyRequest,
  object: KubeObject,
) {
  const ref = binding.spec.paramRef as { name: string } | undefined;
  const params = policy.spec.paramKind && ref ? request.params?.get(ref.name) : undefined;
  if (policy.spec.paramKind && ref && params === undefined) return undefined; // parameterNotFoundAction: Allow
  const metadata = object.metadata as Record<string, unknown>;
  return {
    object,
    oldObject: null,
    params: params ?? null,
    request: {
      operation: 'CREATE',
      namespace: metadata.namespace ?? '',
      userInfo: { username: request.username },
      kind: { group: object.kind === 'Job' ? 'batch' : '', version: 'v1', kind: object.kind },
    },
  };
}

/** Whether every match condition holds (an error: the policy is skipped, failurePolicy Ignore). */
function conditionsHold(policy: Policy, variables: Record<string, unknown>): boolean {
  if (policy.spec.failurePolicy !== 'Ignore') throw new Error('hookguard generates failurePolicy Ignore only');
  try {
    return (policy.spec.matchConditions as Array<{ expression: string }>).every(
      (condition) => evaluatePolicyCel(condition.expression, variables) === true,
    );
  } catch {
    return false;
  }
}

/** The object as the mutating policies among `objects` leave it, each in the order given. */
export function mutatedByPolicies(objects: readonly KubeObject[], request: PolicyRequest): KubeObject {
  let object = structuredClone(request.object);
  for (const policy of objects.filter((candidate) => candidate.kind === 'MutatingAdmissionPolicy') as Policy[]) {
    const namespace = namespaceOf(object);
    if (!matches(policy, String(object.kind), namespace)) continue;
    const binding = bindingOf(objects, 'MutatingAdmissionPolicyBinding', String(policy.metadata!.name));
    const variables = variablesFor(objects, policy, binding, request, object);
    if (!variables || !conditionsHold(policy, variables)) continue;
    for (const mutation of policy.spec.mutations as Array<Record<string, any>>) {
      const current = { ...variables, object };
      if (mutation.patchType === 'JSONPatch') {
        const operations = evaluatePolicyCel(mutation.jsonPatch.expression, current) as Array<Record<string, unknown>>;
        const patch = operations.map(({ [TYPE]: _type, ...operation }) => operation) as unknown as Operation[];
        object = applyPatch(structuredClone(object), patch, true, false).newDocument;
      } else {
        const applied = evaluatePolicyCel(mutation.applyConfiguration.expression, current);
        object = mergeApplied(object, applied, '') as KubeObject;
      }
    }
  }
  return object;
}

/** The messages of the validations that fail for the object, from the ValidatingAdmissionPolicies among `objects`. */
export function policyWarnings(objects: readonly KubeObject[], request: PolicyRequest): string[] {
  const warnings: string[] = [];
  for (const policy of objects.filter((candidate) => candidate.kind === 'ValidatingAdmissionPolicy') as Policy[]) {
    const namespace = namespaceOf(request.object);
    if (!matches(policy, String(request.object.kind), namespace)) continue;
    const binding = bindingOf(objects, 'ValidatingAdmissionPolicyBinding', String(policy.metadata!.name));
    const variables = variablesFor(objects, policy, binding, request, request.object);
    if (!variables || !conditionsHold(policy, variables)) continue;
    for (const validation of policy.spec.validations as Array<{ expression: string; message: string }>)
      if (evaluatePolicyCel(validation.expression, variables) !== true) warnings.push(validation.message);
  }
  return warnings;
}
