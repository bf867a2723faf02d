// lost-delete-hook and idempotent-cleanup's loop warning: Argo CD's PreDelete/PostDelete hooks, judged with the
// advisories about delete hooks (hooks: delete) at the version that applies them.
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import type { Finding } from '../../../src/core/types.js';
import { checkObject } from '../../../src/offline/check.js';
import { ARGOCD_CONTROLLER, hookJob, hookPod } from '../../support/objects.js';

const LOST: Finding = {
  rule: 'lost-delete-hook',
  action: 'warn',
  message: 'argo-cd#29100: Argo CD may take this delete hook as done before it runs, and delete it; check that it ran',
  advisory: 'argocd-delete-hook-lost',
  note: "until a release with argo-cd#29126 or #29687: after deleting the Application, check the hook's Job ran (kubectl get job -o yaml, status); if not, run its cleanup by hand",
};
const LOOP: Finding = {
  rule: 'idempotent-cleanup',
  action: 'warn',
  message:
    'Argo CD deletes and re-creates a failed delete hook until it succeeds: one that always fails keeps the Application deleting',
  advisory: 'argocd-failed-delete-hook-loop',
};
// With the version unknown either may apply, and no note is given (a note speaks of one version).
const { note: _note, ...LOST_UNKNOWN } = LOST;

const SOURCE = { file: '-', document: 1, line: 1, firstLine: '' };

function warnings(annotations: Record<string, string>, version: string | undefined, username = ARGOCD_CONTROLLER) {
  return (['admission', 'render'] as const).map((stage) => {
    const context = decisionContext(loadConfig(), version, stage);
    const result = checkObject(hookJob(annotations), SOURCE, 0, context, { username });
    return result.findings.filter(
      (finding) =>
        finding.rule === 'lost-delete-hook' || (finding.action === 'warn' && finding.rule === 'idempotent-cleanup'),
    );
  });
}

describe('Argo CD delete hooks: lost (argo-cd#29100) and retried forever (argo-cd#22288)', () => {
  it.each<[string, Record<string, string>, string | undefined, Finding[]]>([
    ['PreDelete at 3.2.0: neither', { 'argocd.argoproj.io/hook': 'PreDelete' }, '3.2.0', []],
    ['PreDelete at 3.3.14: the loop only', { 'argocd.argoproj.io/hook': 'PreDelete' }, '3.3.14', [LOOP]],
    ['PostDelete at 3.4.0-rc4: the loop only', { 'argocd.argoproj.io/hook': 'PostDelete' }, '3.4.0-rc4', [LOOP]],
    ['PostDelete at 3.4.0-rc5: both', { 'argocd.argoproj.io/hook': 'PostDelete' }, '3.4.0-rc5', [LOOP, LOST]],
    ['PreDelete at 3.5.1: both', { 'argocd.argoproj.io/hook': 'PreDelete' }, '3.5.1', [LOOP, LOST]],
    ['Helm pre-delete Argo CD applies at 3.4.7: both', { 'helm.sh/hook': 'pre-delete' }, '3.4.7', [LOOP, LOST]],
    [
      'PreDelete at an unknown version: both may apply',
      { 'argocd.argoproj.io/hook': 'PreDelete' },
      undefined,
      [LOOP, LOST_UNKNOWN],
    ],
    [
      'a PreSync hook at 3.5.1: neither (sync hooks are another matter)',
      { 'argocd.argoproj.io/hook': 'PreSync' },
      '3.5.1',
      [],
    ],
  ])('%s', (_name, annotations, version, expected) => {
    for (const found of warnings(annotations, version)) expect(found).toEqual(expected);
  });

  it('says nothing of a Helm post-delete hook Helm runs', () => {
    for (const found of warnings({ 'helm.sh/hook': 'post-delete' }, '3.5.1', 'kubernetes-admin'))
      expect(found).toEqual([]);
  });

  it('warns on bare delete-hook Pods too, and is silenced per object by hookguard.io/skip', () => {
    const context = decisionContext(loadConfig(), '3.5.1', 'admission');
    const pod = hookPod({ 'argocd.argoproj.io/hook': 'PostDelete' });
    const rules = (object: typeof pod) =>
      checkObject(object, SOURCE, 0, context, { username: ARGOCD_CONTROLLER })
        .findings.filter((finding) => finding.action === 'warn')
        .map((finding) => finding.rule);
    expect(rules(pod)).toEqual(expect.arrayContaining(['idempotent-cleanup', 'lost-delete-hook']));
    const skipped = hookPod({
      'argocd.argoproj.io/hook': 'PostDelete',
      'hookguard.io/skip': 'lost-delete-hook,idempotent-cleanup',
    });
    expect(rules(skipped)).not.toContain('lost-delete-hook');
    expect(rules(skipped)).not.toContain('idempotent-cleanup');
  });
});
