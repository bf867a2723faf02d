// The bench runs from dist-bench/bench/ and measures the built package in dist/, the code `npm start` runs,
// not a second compilation of src/ (whose data files would not resolve from dist-bench/).
import type { AdmissionRequest } from '../src/core/types.js';

type ConfigKeysModule = typeof import('../src/config/keys.js');
type ConfigLoadModule = typeof import('../src/config/load.js');
type DecisionContextModule = typeof import('../src/config/decision-context.js');
type DecideModule = typeof import('../src/core/decide.js');
type TlsModule = typeof import('../src/tls/certificates.js');

/** A module of the built package, typed as its source. */
export function fromDist<T>(path: string): Promise<T> {
  return import(new URL(`../../dist/${path}`, import.meta.url).href) as Promise<T>;
}

/** The built decision as the benches run it: the default configuration, with Argo CD at `argocdVersion`. */
export async function builtDecision(argocdVersion: string) {
  const { DEFAULTS } = await fromDist<ConfigKeysModule>('config/keys.js');
  const { loadConfig } = await fromDist<ConfigLoadModule>('config/load.js');
  const { decisionContext } = await fromDist<DecisionContextModule>('config/decision-context.js');
  const { decide } = await fromDist<DecideModule>('core/decide.js');
  const context = decisionContext(loadConfig(), argocdVersion);
  return {
    DEFAULTS,
    decide,
    context,
    argocdController: DEFAULTS.argocd.controllerUsernames[0] as string,
    /** What hookguard answers /mutate with: the patch the API server applies before it calls /validate. */
    mutatePatch: (request: AdmissionRequest) => decide(request, 'mutate', context).patch,
  };
}

/** The built package's development certificate generator (a self-signed pair for localhost and 127.0.0.1). */
export async function builtCertificateGenerator(): Promise<TlsModule['generateDevCertificate']> {
  return (await fromDist<TlsModule>('tls/certificates.js')).generateDevCertificate;
}
