// README's list of what hookguard denies is what the rules deny: every rule that denies anything, at the stages it
// does, and for PreDelete/PostDelete hooks exactly where README says so. The rules are run over a grid of hooks
// (phases, kinds, settings a chart may choose, Argo CD versions, users, stages, updates), and every denial found is
// compared with README's bullets.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { decide } from '../../src/core/decide.js';
import type { Stage } from '../../src/core/rule.js';
import type { AdmissionRequest, JobSpec, KubeObject } from '../../src/core/types.js';
import { checkObject } from '../../src/offline/check.js';
import { repoRoot } from '../support/k8s-tools.js';
import { ARGOCD_CONTROLLER, DEFAULT_GUARD_CONTAINER, HOOK_FINALIZER, hookJob, hookPod } from '../support/objects.js';

interface Denial {
  rule: string;
  stage: Stage;
  deleteHook: boolean;
}
const key = (denial: Denial) => `${denial.rule} at ${denial.stage}${denial.deleteHook ? ', delete hooks too' : ''}`;

/** README's bullets under "It denies only what a hook's author chose": `` - `rule` (stages): text ``. */
function readmeDenials(): Denial[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf("- It denies only what a hook's author chose");
  const end = readme.indexOf('Anything else goes through', start);
  expect(start, "README's list of denials").toBeGreaterThan(0);
  const bullets = readme
    .slice(start, end)
    .split(/\n {2}- /)
    .slice(1);
  expect(bullets.length).toBeGreaterThan(0);
  return bullets.flatMap((bullet) => {
    const match = /^`([a-z-]+)` \(([^)]+)\): ([\s\S]*)$/.exec(bullet);
    if (!match) throw new Error(`README denial bullet not in the form "\`rule\` (stages): text": ${bullet}`);
    const [, rule, stagesText, text] = match as unknown as [string, string, string, string];
    const stages: Stage[] = [];
    if (stagesText.includes('admission')) stages.push('admission');
    if (stagesText.includes('render time')) stages.push('render');
    const flat = text.replace(/\s+/g, ' ');
    const neverDelete = flat.includes('Never a PreDelete or PostDelete hook');
    const deleteToo = flat.includes('a PreDelete or PostDelete hook') && !neverDelete;
    return stages.flatMap((stage) => [
      { rule: rule, stage, deleteHook: false },
      ...(deleteToo || (!neverDelete && rule === 'immutable-update') ? [{ rule: rule, stage, deleteHook: true }] : []),
    ]);
  });
}

const PHASES: [Record<string, string>, boolean][] = [
  [{ 'argocd.argoproj.io/hook': 'PreSync' }, false],
  [{ 'argocd.argoproj.io/hook': 'PostSync' }, false],
  [{ 'argocd.argoproj.io/hook': 'PreDelete' }, true],
  [{ 'argocd.argoproj.io/hook': 'PostDelete' }, true],
  [{ 'helm.sh/hook': 'pre-install,pre-upgrade' }, false],
  [{ 'helm.sh/hook': 'pre-delete' }, true],
  [{ 'helm.sh/hook': 'post-delete' }, true],
];
const SKIPS = [
  'min-runtime',
  'ttl-floor',
  'hook-finalizer',
  'hook-ttl',
  'idempotent-cleanup',
  'hook-pod-restart-policy',
  'min-runtime,ttl-floor,hook-finalizer',
];

/** What a chart may choose, on a Job or a bare Pod. */
function variants(annotations: Record<string, string>): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const make of [(a: Record<string, string>) => hookJob(a), hookPod]) {
    const podSpecOf = (object: KubeObject) =>
      object.kind === 'Pod' ? object.spec! : (object.spec as JobSpec).template!.spec!;
    const plain = make({ ...annotations });
    objects.push(plain);
    for (const skip of SKIPS) objects.push(make({ ...annotations, 'hookguard.io/skip': skip }));
    objects.push(make({ ...annotations, 'hookguard.io/min-runtime-seconds': '0' }));
    const finalized = make({ ...annotations, 'hookguard.io/skip': 'hook-finalizer' });
    finalized.metadata!.finalizers = [HOOK_FINALIZER];
    objects.push(finalized);
    const lookAlike = make({ ...annotations });
    podSpecOf(lookAlike).initContainers = [{ ...DEFAULT_GUARD_CONTAINER, command: ['true'] }];
    objects.push(lookAlike);
    const notAList = make({ ...annotations });
    podSpecOf(notAList).initContainers = 'guard';
    objects.push(notAList);
    for (const restartPolicy of ['Always', 'OnFailure', undefined]) {
      const pod = make({ ...annotations });
      if (restartPolicy === undefined) delete podSpecOf(pod).restartPolicy;
      else podSpecOf(pod).restartPolicy = restartPolicy;
      objects.push(pod);
    }
    const deadline = make({ ...annotations });
    if (deadline.kind === 'Job') (deadline.spec as JobSpec).activeDeadlineSeconds = 5;
    else deadline.spec!.activeDeadlineSeconds = 5;
    objects.push(deadline);
    const ttl = make({ ...annotations, 'hookguard.io/skip': 'ttl-floor' });
    if (ttl.kind === 'Job') (ttl.spec as JobSpec).ttlSecondsAfterFinished = 0;
    objects.push(ttl);
    const suspended = make({ ...annotations });
    if (suspended.kind === 'Job') (suspended.spec as JobSpec).suspend = true;
    objects.push(suspended);
  }
  return objects;
}

const VERSIONS = [undefined, '2.14.3', '2.14.8', '3.1.0', '3.3.9', '3.4.0', '3.5.1'];
const USERS = [ARGOCD_CONTROLLER, 'kubernetes-admin'];
const STAGES: Stage[] = ['admission', 'render'];

/** Every denial the rules give over the grid, CREATEs through both webhooks and UPDATEs through the judges. */
function observedDenials(): Map<string, Denial> {
  const found = new Map<string, Denial>();
  const record = (rules: readonly string[], stage: Stage, deleteHook: boolean) => {
    for (const rule of rules) {
      const denial = { rule, stage, deleteHook };
      found.set(key(denial), denial);
    }
  };
  const config = loadConfig();
  for (const version of VERSIONS) {
    for (const stage of STAGES) {
      const context = decisionContext(config, version, stage);
      for (const [annotations, deleteHook] of PHASES) {
        for (const object of variants(annotations)) {
          for (const username of USERS) {
            const source = { file: 'grid', document: 1, line: 1, firstLine: '' };
            const result = checkObject(structuredClone(object), source, 0, context, { username });
            const denied = result.findings.filter((finding) => finding.action === 'deny').map((f) => f.rule);
            record(denied, stage, deleteHook);
            if (object.kind !== 'Job') continue;
            // An UPDATE that changes the template, of a Job stored as hookguard would have stored it.
            const changed = structuredClone(object);
            (changed.spec as JobSpec).template!.spec!.containers![0]!.image = 'alpine:3.21';
            for (const finalizers of [[], [HOOK_FINALIZER]]) {
              const stored = { ...structuredClone(object), metadata: { ...object.metadata, finalizers } };
              const request: AdmissionRequest = {
                uid: 'u',
                operation: 'UPDATE',
                namespace: 'apps',
                userInfo: { username },
                object: changed,
                oldObject: stored,
              };
              for (const endpoint of ['mutate', 'validate'] as const) {
                const decision = decide(request, endpoint, context);
                const denied = decision.findings.filter((finding) => finding.action === 'deny');
                record(
                  denied.map((finding) => finding.rule),
                  stage,
                  deleteHook,
                );
              }
            }
          }
        }
      }
    }
  }
  return found;
}

describe("README's list of denials", () => {
  it('is exactly what the rules deny, stage by stage, delete hooks included', () => {
    const observed = observedDenials();
    const promised = new Map(readmeDenials().map((denial) => [key(denial), denial]));
    expect([...observed.keys()].sort()).toEqual([...promised.keys()].sort());
  });

  it('names every rule whose code can deny', () => {
    const rulesDir = join(repoRoot, 'src/rules');
    const denying = readdirSync(rulesDir)
      .filter((file) => file.endsWith('.ts') && readFileSync(join(rulesDir, file), 'utf8').includes("action: 'deny'"))
      .map((file) => file.replace(/\.ts$/, ''))
      .sort();
    expect([...new Set(readmeDenials().map((denial) => denial.rule))].sort()).toEqual(denying);
  });
});
