import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../../src/config/decision-context.js';
import { loadConfig } from '../../../../src/config/load.js';
import { decide } from '../../../../src/core/decide.js';
import { applyPatch } from '../../../../src/core/json-patch.js';
import type { AdmissionRequest, KubeObject } from '../../../../src/core/types.js';
import {
  isSelfTestProbe,
  judgeProbe,
  probeJob,
  SELF_TEST_LABEL,
  VALIDATING_MARKER,
  warningTexts,
} from '../../../../src/controllers/selftest/probe.js';

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
  const validated = [VALIDATING_MARKER];
  it.each([
    ['enforce, patched and validated', 'enforce', admitted('enforce').object, validated, 'Called'],
    ['audit, warned and validated', 'audit', unchanged, [...admitted('audit').warnings, ...validated], 'Called'],
    ['audit, but a replica still in enforce patched it', 'audit', admitted('enforce').object, validated, 'Called'],
    [
      'enforce, patched, the validating webhook not called',
      'enforce',
      admitted('enforce').object,
      [],
      'ValidatingNotCalled',
    ],
    [
      'audit, warned, the validating webhook not called',
      'audit',
      unchanged,
      admitted('audit').warnings,
      'ValidatingNotCalled',
    ],
    ['enforce, unchanged but validated', 'enforce', unchanged, validated, 'MutatingNotCalled'],
    ['enforce, unchanged', 'enforce', unchanged, [], 'NotCalled'],
    ['audit, unchanged and no warning', 'audit', unchanged, [], 'NotCalled'],
    ['audit, only another webhook warned', 'audit', unchanged, ['policy x: image not signed'], 'NotCalled'],
    [
      'the marker cut or changed is no evidence',
      'enforce',
      admitted('enforce').object,
      [VALIDATING_MARKER.slice(0, -1)],
      'ValidatingNotCalled',
    ],
    [
      'enforce, an enforce-mode hookguard warning is no evidence of the patch',
      'enforce',
      unchanged,
      ['hookguard [min-runtime]: x', ...validated],
      'MutatingNotCalled',
    ],
    ['an answer without the probe container', 'enforce', { kind: 'Status' }, validated, 'Error'],
  ] as const)('%s: %s', (_name, mode, returned, warnings, reason) => {
    const verdict = judgeProbe(mode, returned, warnings);
    expect(verdict.reason).toBe(reason);
    expect(verdict.outcome).toBe(reason.endsWith('NotCalled') ? 'NotCalled' : reason);
  });

  it('says what it saw, what it expected and where to look when a webhook was not called', () => {
    expect(judgeProbe('enforce', admitted('enforce').object, validated).message).toBe(
      `the API server called both webhooks: the dry-run probe came back with hookguard's patch (--ignore-not-found) and the warning "${VALIDATING_MARKER}"`,
    );
    expect(judgeProbe('enforce', unchanged, []).message).toBe(
      `the dry-run probe came back without hookguard's patch (--ignore-not-found) and without the warning "${VALIDATING_MARKER}": the API server called neither webhook, and failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or firewall in the way); the API server logs failed calling webhook "mutate.hookguard.io" and failed calling webhook "validate.hookguard.io"`,
    );
    expect(judgeProbe('enforce', admitted('enforce').object, []).message).toBe(
      `the API server called the mutating webhook (the dry-run probe came back with hookguard's patch (--ignore-not-found)) but not the validating one: the probe came back without the warning "${VALIDATING_MARKER}", so hookguard denies nothing; failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or firewall in the way); the API server logs failed calling webhook "validate.hookguard.io"`,
    );
    expect(judgeProbe('audit', unchanged, validated).message).toBe(
      `the API server called the validating webhook (the dry-run probe came back with the warning "${VALIDATING_MARKER}") but not the mutating one: the probe came back without hookguard's audit warning "hookguard audit would change [idempotent-cleanup]: …", so hookguard changes nothing; failurePolicy Ignore hides why (a stale caBundle, an expired certificate, no ready endpoint, a NetworkPolicy or firewall in the way); the API server logs failed calling webhook "mutate.hookguard.io"`,
    );
  });

  it('the marker fits in one warning as the API server passes it on (at most 120 characters)', () => {
    expect(VALIDATING_MARKER.length).toBeLessThanOrEqual(120);
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
