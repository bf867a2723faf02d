// What `hookguard policies` prints: objects the API accepts, from the config serve reads, and --explain for every rule.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runHookguard } from '../../../src/cli/hookguard.js';
import { EXIT } from '../../../src/errors.js';
import { ruleCoverage } from '../../../src/policies/coverage.js';
import { builtInRules, catalogOf } from '../../../src/rules/index.js';
import { assertValidKubeObject } from '../../support/k8s-schema.js';

async function hookguard(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const status = await runHookguard(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: async () => '',
    env: {},
  });
  return { status, stdout, stderr };
}

type Manifest = Record<string, any>;

async function policies(argv: string[] = []): Promise<Manifest[]> {
  const run = await hookguard(['policies', ...argv]);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(EXIT.ok);
  return parseAllDocuments(run.stdout).map((document) => document.toJS() as Manifest);
}

const names = (objects: Manifest[]) => objects.map((object) => `${object.kind}/${object.metadata.name}`);

/**
 * The fields of MutatingAdmissionPolicy and its binding, by their JSON names in k8s.io/api v0.36.3
 * admissionregistration/v1 types.go (MutatingAdmissionPolicySpec, Mutation, JSONPatch, ApplyConfiguration,
 * MutatingAdmissionPolicyBindingSpec, ParamRef, MatchResources, NamedRuleWithOperations, MatchCondition): kubernetes-
 * models 4.5.1 has no schema for them, so every key the generator writes is held to these.
 */
const FIELDS: Record<string, readonly string[]> = {
  'MutatingAdmissionPolicy.spec': [
    'paramKind',
    'matchConstraints',
    'variables',
    'mutations',
    'failurePolicy',
    'matchConditions',
    'reinvocationPolicy',
  ],
  'MutatingAdmissionPolicyBinding.spec': ['policyName', 'paramRef', 'matchResources'],
  paramKind: ['apiVersion', 'kind'],
  paramRef: ['name', 'namespace', 'selector', 'parameterNotFoundAction'],
  matchConstraints: ['namespaceSelector', 'objectSelector', 'resourceRules', 'excludeResourceRules', 'matchPolicy'],
  resourceRule: ['resourceNames', 'operations', 'apiGroups', 'apiVersions', 'resources', 'scope'],
  matchCondition: ['name', 'expression'],
  mutation: ['patchType', 'applyConfiguration', 'jsonPatch'],
};

function onlyFields(object: Manifest, fields: string): void {
  expect(
    Object.keys(object).filter((key) => !FIELDS[fields]!.includes(key)),
    fields,
  ).toEqual([]);
}

describe('hookguard policies', () => {
  it('prints a policy and a binding per covered rule, and the parameters, each valid', async () => {
    const objects = await policies();
    expect(names(objects)).toEqual([
      'MutatingAdmissionPolicy/hookguard-hook-ttl',
      'MutatingAdmissionPolicyBinding/hookguard-hook-ttl',
      'MutatingAdmissionPolicy/hookguard-ttl-floor',
      'MutatingAdmissionPolicyBinding/hookguard-ttl-floor',
      'MutatingAdmissionPolicy/hookguard-idempotent-cleanup',
      'MutatingAdmissionPolicyBinding/hookguard-idempotent-cleanup',
      'MutatingAdmissionPolicy/hookguard-hook-label',
      'MutatingAdmissionPolicyBinding/hookguard-hook-label',
      'MutatingAdmissionPolicy/hookguard-termination-message-policy',
      'MutatingAdmissionPolicyBinding/hookguard-termination-message-policy',
      'MutatingAdmissionPolicy/hookguard-hook-pod-restart-policy',
      'MutatingAdmissionPolicyBinding/hookguard-hook-pod-restart-policy',
      'ValidatingAdmissionPolicy/hookguard-hook-deadline',
      'ValidatingAdmissionPolicyBinding/hookguard-hook-deadline',
      'ConfigMap/hookguard-policy-params',
    ]);
    for (const object of objects) {
      expect(object.metadata.labels).toEqual({
        'app.kubernetes.io/name': 'hookguard',
        'hookguard.io/policies': 'generated',
      });
      if (object.kind === 'MutatingAdmissionPolicy') {
        expect(object.apiVersion).toBe('admissionregistration.k8s.io/v1');
        onlyFields(object.spec, 'MutatingAdmissionPolicy.spec');
        if (object.spec.paramKind) onlyFields(object.spec.paramKind, 'paramKind');
        onlyFields(object.spec.matchConstraints, 'matchConstraints');
        for (const rule of object.spec.matchConstraints.resourceRules) onlyFields(rule, 'resourceRule');
        for (const condition of object.spec.matchConditions) onlyFields(condition, 'matchCondition');
        for (const mutation of object.spec.mutations) onlyFields(mutation, 'mutation');
        expect(object.spec.reinvocationPolicy).toBe('Never');
        expect(object.spec.failurePolicy).toBe('Ignore');
        // Match condition names are a map list's keys: unique (types.go +listMapKey=name).
        const conditionNames = object.spec.matchConditions.map((condition: Manifest) => condition.name);
        expect(new Set(conditionNames).size).toBe(conditionNames.length);
      } else if (object.kind === 'MutatingAdmissionPolicyBinding') {
        onlyFields(object.spec, 'MutatingAdmissionPolicyBinding.spec');
        if (object.spec.paramRef) onlyFields(object.spec.paramRef, 'paramRef');
      } else assertValidKubeObject(object);
    }
  });

  it('judges the parameters by the Argo CD version: ttl-floor on sync hooks at 3.3.0, not at 3.5.1, and unknown', async () => {
    const params = async (argv: string[]) => (await policies(argv)).find((object) => object.kind === 'ConfigMap')?.data;
    expect(await params(['--argocd-version', '3.3.0'])).toEqual({
      argocdVersion: '3.3.0',
      ttlFloorOnArgoSyncHooks: 'true',
    });
    expect(await params(['--argocd-version', 'v3.5.1'])).toEqual({
      argocdVersion: '3.5.1',
      ttlFloorOnArgoSyncHooks: 'false',
    });
    expect(await params([])).toEqual({ argocdVersion: '', ttlFloorOnArgoSyncHooks: 'true' });
  });

  it('in audit mode generates no mutating policy, and the deadline warning stays, written to the audit log too', async () => {
    const audit = await policies(['--mode', 'audit']);
    expect(names(audit)).toEqual([
      'ValidatingAdmissionPolicy/hookguard-hook-deadline',
      'ValidatingAdmissionPolicyBinding/hookguard-hook-deadline',
    ]);
    const actions = (objects: Manifest[]) =>
      objects.find((object) => object.kind === 'ValidatingAdmissionPolicyBinding')?.spec.validationActions;
    expect(actions(audit)).toEqual(['Audit', 'Warn']);
    expect(actions(await policies([]))).toEqual(['Warn']);
  });

  it('leaves out the rules switched off, by --disable as by the config', async () => {
    const disabled = names(await policies(['--disable', 'hook-label,ttl-floor']));
    expect(disabled).not.toContain('MutatingAdmissionPolicy/hookguard-hook-label');
    expect(disabled).not.toContain('MutatingAdmissionPolicy/hookguard-ttl-floor');
    expect(disabled).not.toContain('ConfigMap/hookguard-policy-params');
    const dir = await mkdtemp(join(tmpdir(), 'hookguard-policies-'));
    try {
      const config = join(dir, 'config.yaml');
      await writeFile(config, 'rules:\n  hookLabel:\n    enabled: false\n');
      const run = await hookguard(['policies', '--config', config]);
      expect(run.status).toBe(EXIT.ok);
      expect(run.stdout).not.toContain('name: hookguard-hook-label');
      expect(run.stdout).toContain('name: hookguard-hook-ttl');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses an unknown rule and an unknown output', async () => {
    expect(await hookguard(['policies', '--disable', 'hook-lable'])).toEqual({
      status: EXIT.badInput,
      stdout: '',
      stderr: 'hookguard policies: --disable: unknown rules hook-lable (hookguard rules lists them)\n',
    });
    expect((await hookguard(['policies', '-o', 'xml'])).stderr).toBe(
      'hookguard policies: --output must be yaml or json, got "xml"\n',
    );
  });

  it('prints a v1 List with -o json', async () => {
    const run = await hookguard(['policies', '-o', 'json']);
    const list = JSON.parse(run.stdout) as Manifest;
    expect(list.kind).toBe('List');
    expect(names(list.items as Manifest[])).toEqual(names(await policies()));
  });

  it('--explain judges every side of every rule of the catalog', async () => {
    const run = await hookguard(['policies', '--explain', '-o', 'json']);
    const rules = (JSON.parse(run.stdout) as { rules: Manifest[] }).rules;
    expect(rules.map((rule) => `${rule.id}/${rule.webhook}`)).toEqual(
      catalogOf(builtInRules).map((rule) => `${rule.id}/${rule.webhook}`),
    );
    for (const rule of rules) {
      if (rule.coverage === 'policy') expect(rule.how, rule.id).toBeDefined();
      else expect(rule.leftOut, rule.id).toBeDefined();
    }
    const text = (await hookguard(['policies', '--explain'])).stdout;
    expect(text.split('\n')[1]).toMatch(/^hook-ttl \(mutating\) +policy +MutatingAdmissionPolicy hookguard-hook-ttl/);
    expect(ruleCoverage().filter((rule) => rule.coverage !== 'render time')).not.toHaveLength(0);
  });
});
