import { NO_INSTANCES } from '../core/argocd-instances.js';
import { advisoriesOfTool, normalizeArgoVersion } from '../core/argocd-version.js';
import { NO_HELM_CONTROLLERS, type HelmControllers } from '../core/flux.js';
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

/** The helm-controller `flux.helmControllerVersion` names, else none: discovery adds what it finds at admission. */
export function pinnedHelmControllers(config: Readonly<Config>): HelmControllers {
  const version = normalizeArgoVersion(config.flux.helmControllerVersion ?? undefined);
  return version === undefined ? NO_HELM_CONTROLLERS : { versions: [version], unknownVersion: false };
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
    advisories: advisoriesOfTool(config.advisories, 'argocd'),
    helmAdvisories: advisoriesOfTool(config.advisories, 'helm'),
    helmVersion: normalizeArgoVersion(config.helm.version ?? undefined),
    helmControllerAdvisories: advisoriesOfTool(config.advisories, 'helm-controller'),
    helmControllers: pinnedHelmControllers(config),
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
