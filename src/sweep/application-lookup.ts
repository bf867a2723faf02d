// The configuration's part of finding a hook's Applications, kept apart so that qualify.ts imports the core alone.
import type { Config } from '../config/keys.js';
import { ARGOCD_INSTANCE_LABEL } from '../core/annotations.js';
import type { ApplicationLookup } from './qualify.js';

/** How the sweep, `hookguard why` and the hook watcher find a hook's Applications, from the configuration. */
export function applicationLookupOf(config: Readonly<Config>): ApplicationLookup {
  return {
    instanceLabels: [ARGOCD_INSTANCE_LABEL, ...(config.argocd.trackingLabel ? [config.argocd.trackingLabel] : [])],
    controlPlaneNamespaces: config.sweep.applicationNamespaces,
  };
}
