import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import { applyPatch } from '../../../src/core/json-patch.js';
import type { AdmissionRequest, KubeObject } from '../../../src/core/types.js';
import { isSelfTestProbe, judgeProbe, probeJob, SELF_TEST_LABEL, warningTexts } from '../../../src/selftest/probe.js';

const HOOKGUARD = 'system:serviceaccount:hookguard:hookguard';

function admitted(mode: 'enforce' | 'audit'): { object: KubeObject; warnings: string[] } {
  const probe = probeJob('hookguard-selftest');
  const request: AdmissionRequest = {
    uid: 'u',
    operation: 'CREATE',
    namespace: 'hookguard-selftest',
    userInfo: { username: HOOKGUARD },
    object: probe,
    dryRun: true,
  };
  const decision = decide(request, 'mutate', decisionContext(loadConfig({ overrides: { mode } })));
  return {
    object: applyPatch(structuredClone(probe), decision.patch, true, false).newDocument,
    warnings: decision.warnings,
  };
}

describe('the probe Job', () => {
  it('is a hook Job that hookguard changes in every mode: enforce patches the kubectl delete, audit warns about it', () => {
    const enforce = admitted('enforce');
    expect(enforce.object.spec).toMatchObject({
      template: {
        spec: {
          containers: [
            { command: ['kubectl', 'delete', 'configmap', 'hookguard-self-test-probe', '--ignore-not-found'] },
          ],
        },
      },
    });
    const audit = admitted('audit');
    expect(audit.object).toEqual(probeJob('hookguard-selftest'));
    expect(
      audit.warnings.filter((warning) => warning.startsWith('hookguard audit would change [idempotent-cleanup]:')),
    ).toHaveLength(1);
  });

  it('asks for a generated name in the given namespace and carries the self-test label', () => {
    expect(probeJob('ns').metadata).toMatchObject({
      generateName: 'hookguard-self-test-',
      namespace: 'ns',
      labels: { [SELF_TEST_LABEL]: 'probe' },
    });
    expect(probeJob('ns').metadata?.name).toBeUndefined();
  });
});

describe('judgeProbe', () => {
  const unchanged = probeJob('hookguard-selftest');
  it.each([
    ['enforce, patched', 'enforce', admitted('enforce').object, [], 'Called'],
    ['audit, warned', 'audit', unchanged, admitted('audit').warnings, 'Called'],
    ['audit, but a replica still in enforce patched it', 'audit', admitted('enforce').object, [], 'Called'],
    ['enforce, unchanged', 'enforce', unchanged, [], 'NotCalled'],
    ['audit, unchanged and no warning', 'audit', unchanged, [], 'NotCalled'],
    ['audit, only another webhook warned', 'audit', unchanged, ['policy x: image not signed'], 'NotCalled'],
    [
      'enforce, an enforce-mode hookguard warning is no evidence of the patch',
      'enforce',
      unchanged,
      ['hookguard [min-runtime]: x'],
      'NotCalled',
    ],
    ['an answer without the probe container', 'enforce', { kind: 'Status' }, [], 'Error'],
  ] as const)('%s: %s', (_name, mode, returned, warnings, outcome) => {
    expect(judgeProbe(mode, returned, warnings).outcome).toBe(outcome);
  });

  it('says what it expected and where to look when the webhook was not called', () => {
    expect(judgeProbe('enforce', unchanged, []).message).toBe(
      'the dry-run probe came back without hookguard\'s patch (--ignore-not-found): the API server did not call the webhook, and failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or firewall in the way); the API server logs "failed calling webhook"',
    );
  });
});

describe('warningTexts (Warning headers as node-fetch joins them)', () => {
  it.each([
    [undefined, []],
    ['', []],
    ['299 - "one"', ['one']],
    ['299 - "one", 299 - "two, with a comma"', ['one', 'two, with a comma']],
    ['299 - "a \\"quoted\\" word and a \\\\ backslash"', ['a "quoted" word and a \\ backslash']],
    ['299 kube-apiserver "agent named" "Tue, 15 Nov 1994 08:12:31 GMT", 299 - "next"', ['agent named', 'next']],
    ['garbage', []],
  ])('%j', (header, texts) => {
    expect(warningTexts(header)).toEqual(texts);
  });
});

describe('isSelfTestProbe', () => {
  const probe = probeJob('hookguard-selftest');
  const other = { ...probe, metadata: { ...probe.metadata, labels: {} } };
  it.each([
    ['the probe from hookguard', probe, HOOKGUARD, true],
    ['the probe label from someone else', probe, 'system:serviceaccount:apps:deployer', false],
    ['a Job from hookguard without the label', other, HOOKGUARD, false],
    ['no object', undefined, HOOKGUARD, false],
  ])('%s: %s', (_name, object, username, expected) => {
    expect(isSelfTestProbe({ uid: 'u', object, userInfo: { username } }, HOOKGUARD)).toBe(expected);
  });
});
