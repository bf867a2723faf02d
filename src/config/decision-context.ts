import { NO_INSTANCES } from '../core/argocd-instances.js';
import { normalizeArgoVersion } from '../core/argocd-version.js';
import type { DecisionContext } from '../core/context.js';
import type { Stage } from '../core/rule.js';
import { builtInRules, catalogOf, ruleConfigKey, withoutRules } from '../rules/index.js';
import type { Config } from './keys.js';

/** The ids of the rules the config switches off: `rules.<rule>.enabled: false`. */
function switchedOff(config: Readonly<Config>): Set<string> {
  const settings = config.rules as unknown as Readonly<Record<string, { enabled: boolean }>>;
  return new Set(
    catalogOf(builtInRules)
      .map((rule) => rule.id)
      .filter((id) => !settings[ruleConfigKey(id)]!.enabled),
  );
}

/**
 * What the pure core needs from the config. `argocdVersion` pins the version (it defaults to `argocd.version`);
 * discovered instances are added per snapshot with `withInstances`. The webhooks decide at admission,
 * `hookguard check` at render time.
 */
export function decisionContext(
  config: Readonly<Config>,
  argocdVersion = config.argocd.version ?? undefined,
  stage: Stage = 'admission',
): DecisionContext {
  return {
    stage,
    config: {
      mode: config.mode,
      excludedNamespaces: config.excludedNamespaces,
      hookDetection: {
        // A remote Argo CD's identity counts as Argo CD's, as a controller's does.
        argocdControllerUsernames: [
          ...new Set([...config.argocd.controllerUsernames, ...Object.keys(config.argocd.remote)]),
        ],
        ...(config.argocd.trackingLabel ? { argocdTrackingLabel: config.argocd.trackingLabel } : {}),
      },
      rules: config.rules,
    },
    ruleSet: withoutRules(builtInRules, switchedOff(config)),
    advisories: config.advisories.filter((advisory) => advisory.tool !== 'helm'),
    helmAdvisories: config.advisories.filter((advisory) => advisory.tool === 'helm'),
    helmVersion: normalizeArgoVersion(config.helm.version ?? undefined),
    pinnedArgocdVersion: argocdVersion,
    argocdInstances: NO_INSTANCES,
    namespaces: undefined,
    cluster: undefined,
    remoteArgo: Object.entries(config.argocd.remote).map(([username, version]) => ({
      username,
      version: normalizeArgoVersion(version ?? undefined),
    })),
  };
}
