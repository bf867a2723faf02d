// explainRelease(): what `hookguard why --release` says of a Helm release, from its record and the hook objects that
// still exist: the exact text a person reads, one case per judgement.
import { describe, expect, it } from 'vitest';
import type { HookExplanation } from '../../../src/core/explain/index.js';
import { explainRelease, type ReleaseHookEvidence } from '../../../src/core/explain/index.js';
import { summarizeReleaseHook } from '../../../src/core/explain/release.js';
import { releasesToExplain, type HelmRelease, type ReleaseHook } from '../../../src/core/release.js';
import { renderWhyJson, renderWhyText } from '../../../src/report/why.js';

const NOW = Date.parse('2026-11-27T11:00:00Z');
const options = { now: NOW, stuckAfterSeconds: 300 };

function hook(name: string, more: Partial<ReleaseHook> = {}): ReleaseHook {
  return {
    name,
    kind: 'Job',
    path: `web/templates/${name}.yaml`,
    events: ['pre-upgrade'],
    weight: 0,
    deletePolicies: ['before-hook-creation'],
    outputLogPolicies: [],
    lastRunPhase: '',
    lastRunStartedAt: undefined,
    lastRunCompletedAt: undefined,
    namespace: undefined,
    ...more,
  };
}

function release(more: Partial<HelmRelease> = {}): HelmRelease {
  return {
    name: 'web',
    namespace: 'shop',
    version: 3,
    status: 'deployed',
    description: 'Upgrade complete',
    firstDeployed: '2026-11-27T09:00:00Z',
    lastDeployed: '2026-11-27T10:50:00Z',
    chart: 'web-1.2.0',
    hooks: [],
    ...more,
  };
}

function live(name: string, state: HookExplanation['state'], more: Partial<HookExplanation> = {}): HookExplanation {
  return {
    kind: 'Job',
    namespace: 'shop',
    name,
    state,
    reason: state === 'Failed' ? 'ContainerFailed' : state === 'Stuck' ? 'ImagePullBackOff' : 'Running',
    message: `${name} is ${state}`,
    nextStep: state === 'Failed' ? `Read its log: kubectl logs -n shop ${name}-x -c main` : 'Wait.',
    ...more,
  };
}

const evidence = (
  h: ReleaseHook,
  object: HookExplanation | null | undefined,
  created?: string,
): ReleaseHookEvidence => ({
  hook: h,
  namespace: 'shop',
  live: object,
  ...(created !== undefined ? { created } : {}),
});

describe('summarizeReleaseHook: the record read with the object', () => {
  const rel = release();
  it.each([
    [
      'succeeded, deleted by hook-succeeded',
      evidence(hook('web-cache', { lastRunPhase: 'Succeeded', deletePolicies: ['hook-succeeded'] }), null),
      'Succeeded, then deleted by its delete policy hook-succeeded, as Helm does',
    ],
    [
      'succeeded, gone without a policy that deletes it',
      evidence(hook('web-cache', { lastRunPhase: 'Succeeded' }), null),
      "Succeeded; its Job is gone since (deleted by hand, a TTL, or the next run's before-hook-creation)",
    ],
    [
      'failed, deleted by hook-failed',
      evidence(hook('web-migrate', { lastRunPhase: 'Failed', deletePolicies: ['hook-failed'] }), null),
      'Failed, then deleted by its delete policy hook-failed: its Pods and Events went with it',
    ],
    [
      'recorded Running, object gone',
      evidence(hook('web-migrate', { lastRunPhase: 'Running' }), null),
      'Helm recorded it as Running, and its Job is gone: deleted before Helm saw it end',
    ],
    [
      'failed and kept',
      evidence(hook('web-migrate', { lastRunPhase: 'Failed' }), live('web-migrate', 'Failed')),
      'Helm recorded it as Failed; its Job is Failed',
    ],
    [
      'not run in this revision, an earlier run left',
      evidence(hook('web-setup', { events: ['pre-install'] }), live('web-setup', 'Succeeded'), '2026-11-27T09:00:01Z'),
      'not run in revision 3; a Job of this name exists from another run (created 2026-11-27T09:00:01Z): Succeeded',
    ],
    ['not run, no object', evidence(hook('web-delete', { events: ['pre-delete'] }), null), 'not run in revision 3'],
    [
      'a hook of a kind hookguard does not explain',
      evidence(hook('web-config', { kind: 'ConfigMap', lastRunPhase: 'Succeeded' }), undefined),
      'Helm recorded it as Succeeded',
    ],
  ])('%s', (_name, item, expected) => {
    expect(summarizeReleaseHook(item, rel)).toBe(expected);
  });

  it('a hook of the pending operation: Helm records Running as it starts one; not started yet', () => {
    const pending = release({ status: 'pending-upgrade' });
    expect(
      summarizeReleaseHook(
        evidence(hook('web-migrate', { lastRunPhase: 'Running' }), live('web-migrate', 'Stuck')),
        pending,
      ),
    ).toBe('Helm recorded it as Running; its Job is Stuck');
    expect(summarizeReleaseHook(evidence(hook('web-migrate'), null), pending)).toBe('not started: no Job exists');
    expect(
      summarizeReleaseHook(
        evidence(hook('web-migrate'), live('web-migrate', 'Failed'), '2026-11-27T09:00:00Z'),
        pending,
      ),
    ).toBe('not started; a Job of this name exists from another run (created 2026-11-27T09:00:00Z): Failed');
  });
});

describe('explainRelease: the release as a whole', () => {
  it("failed on a pre-upgrade hook whose Job is kept: the hook's own next step, then upgrade or roll back", () => {
    const rel = release({
      status: 'failed',
      description:
        'Upgrade "web" failed: pre-upgrade hooks failed: 1 error occurred:\n\t* job web-migrate failed: BackoffLimitExceeded\n\n',
      hooks: [],
    });
    const out = explainRelease(
      {
        release: rel,
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [
          evidence(
            hook('web-cache', { lastRunPhase: 'Succeeded', deletePolicies: ['hook-succeeded'], weight: -5 }),
            null,
          ),
          evidence(hook('web-migrate', { lastRunPhase: 'Failed' }), live('web-migrate', 'Failed')),
        ],
      },
      options,
    );
    expect(out.state).toBe('Failed');
    expect(out.message).toBe(
      'revision 3 failed: Upgrade "web" failed: pre-upgrade hooks failed: 1 error occurred: * job web-migrate failed: BackoffLimitExceeded',
    );
    expect(out.nextStep).toBe(
      'Fix hook Job web-migrate (below: Read its log: kubectl logs -n shop web-migrate-x -c main), then upgrade again; or go back: helm rollback web -n shop.',
    );
    expect(out.since).toBe('2026-11-27T10:50:00Z');
    expect(out.forSeconds).toBe(600);
    expect(out.hooks.map((h) => h.name)).toEqual(['web-cache', 'web-migrate']);
  });

  it('failed on a hook deleted by hook-failed: nothing to read, so keep it next time', () => {
    const out = explainRelease(
      {
        release: release({ status: 'failed', description: 'pre-upgrade hooks failed' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [evidence(hook('web-migrate', { lastRunPhase: 'Failed', deletePolicies: ['hook-failed'] }), null)],
      },
      options,
    );
    expect(out.nextStep).toBe(
      'Hook Job web-migrate left nothing to read (Failed, then deleted by its delete policy hook-failed: its Pods and Events went with it): run the operation again with a delete policy that keeps a failed hook (leave out hook-failed) to read why; or go back: helm rollback web -n shop.',
    );
  });

  it("pending-upgrade waiting on a stuck hook: Stuck, with the hook's next step and how Helm ends it", () => {
    const out = explainRelease(
      {
        release: release({ status: 'pending-upgrade', description: 'Preparing upgrade' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [
          evidence(
            hook('web-migrate', { lastRunPhase: 'Running' }),
            live('web-migrate', 'Stuck', { nextStep: 'Check that image registry.example/web:1 exists.' }),
          ),
        ],
      },
      options,
    );
    expect(out.state).toBe('Stuck');
    expect(out.message).toBe('pending-upgrade: Helm waits on hook Job web-migrate, which is Stuck (ImagePullBackOff)');
    expect(out.nextStep).toBe(
      'Check that image registry.example/web:1 exists; Helm fails the release at its --timeout, or if no helm is still at work on it: helm rollback web -n shop (back to revision 2; it ends the pending state), then upgrade again.',
    );
  });

  it('pending-upgrade with a hook running: Running, exit 0', () => {
    const out = explainRelease(
      {
        release: release({ status: 'pending-upgrade' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [evidence(hook('web-migrate', { lastRunPhase: 'Running' }), live('web-migrate', 'Running'))],
      },
      options,
    );
    expect(out.state).toBe('Running');
    expect(out.message).toBe('pending-upgrade: Helm waits on hook Job web-migrate, which is Running (Running)');
  });

  it('pending-install with no hook running for longer than stuckAfterSeconds: Stuck, uninstall (no revision to roll back to)', () => {
    const out = explainRelease(
      {
        release: release({ status: 'pending-install', version: 1, lastDeployed: '2026-11-27T10:48:00Z' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v1',
        hooks: [
          evidence(
            hook('web-setup', { events: ['pre-install'], lastRunPhase: 'Running' }),
            live('web-setup', 'Succeeded'),
            '2026-11-27T10:48:01Z',
          ),
        ],
      },
      options,
    );
    expect(out.state).toBe('Stuck');
    expect(out.forSeconds).toBe(720);
    expect(out.message).toBe(
      'pending-install with no hook running: the Helm that started it has not finished it, and Helm refuses any other install, upgrade or rollback ("another operation (install/upgrade/rollback) is in progress") until it ends',
    );
    expect(out.nextStep).toBe(
      'If no helm is still at work on it: helm uninstall web -n shop (a first install has no revision to roll back to), then install again.',
    );
  });

  it('pending for less than stuckAfterSeconds with no hook running: Running', () => {
    const out = explainRelease(
      {
        release: release({ status: 'pending-upgrade', lastDeployed: '2026-11-27T10:59:00Z' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [],
      },
      options,
    );
    expect(out.state).toBe('Running');
    expect(out.nextStep).toBe('Wait: it is called stuck after 300s.');
  });

  it('pending under Flux: helm-controller unlocks it, and flux reconcile asks for that now', () => {
    const out = explainRelease(
      {
        release: release({ status: 'pending-upgrade' }),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [],
        helmRelease: { namespace: 'flux-system', name: 'web', conditions: [] },
      },
      options,
    );
    expect(out.nextStep).toBe(
      "helm-controller marks a pending release failed on its next reconcile, then upgrades it (its history does not hold the pending revision), running the upgrade's hooks: flux reconcile helmrelease web -n flux-system; by hand: helm rollback web -n shop (back to revision 2; it ends the pending state), then upgrade again.",
    );
  });

  describe('pending under Flux, a hook ended as its output log policy names, Helm never recorded it: #1562', () => {
    const flux = { namespace: 'flux-system', name: 'web', conditions: [] };
    const crashed = (outputLogPolicies: string[], state: HookExplanation['state'], helmRelease?: typeof flux) =>
      explainRelease(
        {
          release: release({ status: 'pending-install', version: 1, lastDeployed: '2026-11-27T10:59:50Z' }),
          storedIn: 'Secret shop/sh.helm.release.v1.web.v1',
          hooks: [
            evidence(
              hook('migrate', { events: ['pre-install', 'pre-upgrade'], lastRunPhase: 'Running', outputLogPolicies }),
              live('migrate', state),
            ),
          ],
          ...(helmRelease ? { helmRelease } : {}),
        },
        options,
      );

    it('failed under hook-failed: helm-controller crashed; take the policy off, fix the hook, and what a restart does', () => {
      const out = crashed(['hook-failed'], 'Failed', flux);
      expect(out.state).toBe('Failed');
      expect(out.message).toBe(
        'pending-install: hook Job migrate failed, and Helm never recorded it: helm-controller most likely crashed (SIGSEGV) writing its logs for helm.sh/hook-output-log-policy: hook-failed (fluxcd/helm-controller#1562)',
      );
      expect(out.nextStep).toBe(
        "Take helm.sh/hook-output-log-policy off the chart's hooks (hookguard check --fix --flux-version with the helm-controller's version adds none), fix hook Job migrate (below: Read its log: kubectl logs -n shop migrate-x -c main), then publish the chart again: restarted, helm-controller marks the release failed and upgrades it, and crashes again on any upgrade hook that still carries the policy and ends as it names.",
      );
    });

    it('succeeded under hook-succeeded: the same crash, nothing to fix in the hook', () => {
      const out = crashed(['hook-succeeded'], 'Succeeded', flux);
      expect(out.state).toBe('Failed');
      expect(out.message).toBe(
        'pending-install: hook Job migrate succeeded, and Helm never recorded it: helm-controller most likely crashed (SIGSEGV) writing its logs for helm.sh/hook-output-log-policy: hook-succeeded (fluxcd/helm-controller#1562)',
      );
      expect(out.nextStep).toMatch(
        /^Take helm.sh\/hook-output-log-policy off the chart's hooks \([^)]*\), then publish/,
      );
    });

    it('not under Flux, or no policy that matches: no crash is read into it', () => {
      expect(crashed(['hook-failed'], 'Failed').message).toBe(
        'pending-install: Helm waits on hook Job migrate, which is Failed (ContainerFailed)',
      );
      expect(crashed(['hook-succeeded'], 'Failed', flux).message).toBe(
        'pending-install: Helm waits on hook Job migrate, which is Failed (ContainerFailed)',
      );
      expect(crashed([], 'Failed', flux).message).toBe(
        'pending-install: Helm waits on hook Job migrate, which is Failed (ContainerFailed)',
      );
    });
  });

  it("deployed: Succeeded, an earlier run's failed object judges nothing", () => {
    const out = explainRelease(
      {
        release: release(),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [evidence(hook('web-delete', { events: ['pre-delete'] }), live('web-delete', 'Failed'))],
      },
      options,
    );
    expect(out.state).toBe('Succeeded');
    expect(out.message).toBe('revision 3 deployed: Upgrade complete');
  });

  it('deployed, but a test hook failed since (helm test records its phase)', () => {
    const out = explainRelease(
      {
        release: release(),
        storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
        hooks: [evidence(hook('web-test', { events: ['test'], lastRunPhase: 'Failed' }), live('web-test', 'Failed'))],
      },
      options,
    );
    expect(out.state).toBe('Failed');
    expect(out.message).toBe(
      'revision 3 deployed: Upgrade complete, but hook Job web-test failed (Helm recorded it as Failed; its Job is Failed)',
    );
  });
});

describe('rendering a release', () => {
  const explanation = explainRelease(
    {
      release: release({ status: 'failed', description: 'pre-upgrade hooks failed' }),
      storedIn: 'Secret shop/sh.helm.release.v1.web.v3',
      hooks: [
        evidence(
          hook('web-cache', { lastRunPhase: 'Succeeded', deletePolicies: ['hook-succeeded'], weight: -5 }),
          null,
        ),
        evidence(hook('web-migrate', { lastRunPhase: 'Failed' }), live('web-migrate', 'Failed')),
      ],
      helmRelease: {
        namespace: 'flux-system',
        name: 'web',
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'UpgradeFailed',
            message: 'Helm upgrade failed for release shop/web',
          },
        ],
      },
    },
    options,
  );
  const report = {
    scope: 'HelmRelease flux-system/web, Release shop/web',
    releases: [explanation],
    hooks: [live('web-migrate', 'Failed')],
    examined: 1,
    notShown: 0,
    overCap: 0,
  };

  it('text: the HelmRelease, the release, each declared hook, then each object', () => {
    expect(renderWhyText(report)).toBe(
      [
        'HelmRelease flux-system/web: release shop/web',
        '  Ready False (UpgradeFailed): Helm upgrade failed for release shop/web',
        '',
        'Release shop/web revision 3: Failed (failed) since 2026-11-27T10:50:00Z (10m00s)',
        '  revision 3 failed: pre-upgrade hooks failed',
        '  chart web-1.2.0, read from Secret shop/sh.helm.release.v1.web.v3',
        '  next step: Fix hook Job web-migrate (below: Read its log: kubectl logs -n shop web-migrate-x -c main), then upgrade again; or go back: helm rollback web -n shop.',
        '  hooks, as Helm recorded them:',
        '    Job web-cache [pre-upgrade; weight -5; delete policy hook-succeeded; last run Succeeded]: Succeeded, then deleted by its delete policy hook-succeeded, as Helm does',
        '    Job web-migrate [pre-upgrade; weight 0; delete policy before-hook-creation; last run Failed]: Helm recorded it as Failed; its Job is Failed',
        '',
        'Job shop/web-migrate: Failed (ContainerFailed)',
        '  web-migrate is Failed',
        '  next step: Read its log: kubectl logs -n shop web-migrate-x -c main',
        '',
      ].join('\n'),
    );
  });

  it('JSON: the release in one field order, its hooks without the objects, which `hooks` holds', () => {
    const json = JSON.parse(renderWhyJson(report)) as { releases: Record<string, unknown>[] };
    const release = json.releases[0]!;
    expect(Object.keys(release)).toEqual([
      'helmRelease',
      'namespace',
      'name',
      'revision',
      'chart',
      'status',
      'description',
      'state',
      'message',
      'nextStep',
      'since',
      'forSeconds',
      'storedIn',
      'hooks',
    ]);
    expect((release.hooks as Record<string, unknown>[])[1]).toEqual({
      kind: 'Job',
      namespace: 'shop',
      name: 'web-migrate',
      events: ['pre-upgrade'],
      deletePolicies: ['before-hook-creation'],
      weight: 0,
      lastRunPhase: 'Failed',
      summary: 'Helm recorded it as Failed; its Job is Failed',
    });
  });
});

describe('releasesToExplain: what why -A looks into', () => {
  it('the newest revision of each release, when it failed or is pending, in namespace and name order', () => {
    expect(
      releasesToExplain([
        { namespace: 'shop', name: 'web', version: 1, status: 'superseded' },
        { namespace: 'shop', name: 'web', version: 3, status: 'failed' },
        { namespace: 'shop', name: 'web', version: 2, status: 'deployed' },
        { namespace: 'shop', name: 'api', version: 4, status: 'deployed' },
        { namespace: 'shop', name: 'api', version: 3, status: 'failed' },
        { namespace: 'billing', name: 'db', version: 1, status: 'pending-install' },
      ]),
    ).toEqual([
      { namespace: 'billing', name: 'db', version: 1, status: 'pending-install' },
      { namespace: 'shop', name: 'web', version: 3, status: 'failed' },
    ]);
  });
});
