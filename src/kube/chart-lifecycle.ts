// The API calls of the Helm chart's lifecycle hooks (`hookguard chart-hook`): the CRD applied before an upgrade
// (Helm installs crds/ on first install only, and never upgrades it), and both webhook configurations deleted before
// an uninstall (Helm 3 deletes kinds it does not know last, after the Service: helm v3.21.4
// pkg/releaseutil/kind_sorter.go UninstallOrder; Helm 4 deletes them first, v4.3.2 pkg/release/v1/util/kind_sorter.go).
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { apiFailure } from './api-failure.js';

/** Server-side apply's field manager: the CRD's fields are hookguard's chart's. */
const FIELD_MANAGER = 'hookguard-chart';

export interface ChartLifecycleClient {
  /** Server-side apply of a CRD that exists (the upgrade's), taking over the fields it sets. */
  applyCrd(crd: V1CustomResourceDefinition): Promise<void>;
  /** Deletes the Mutating- and ValidatingWebhookConfiguration `name`; those already gone count as deleted. */
  deleteWebhookConfigurations(name: string): Promise<void>;
}

export function kubeChartLifecycleClient(kubeConfig: KubeConfig): ChartLifecycleClient {
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const goneIsDone = (error: unknown) => {
    if (apiFailure(error).status !== 404) throw error;
  };
  return {
    async applyCrd(crd) {
      await extensions.patchCustomResourceDefinition(
        { name: crd.metadata?.name ?? '', body: crd, fieldManager: FIELD_MANAGER, force: true },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      );
    },
    async deleteWebhookConfigurations(name) {
      await admission.deleteValidatingWebhookConfiguration({ name }).catch(goneIsDone);
      await admission.deleteMutatingWebhookConfiguration({ name }).catch(goneIsDone);
    },
  };
}
