// The `config` value of the Helm chart's values.schema.json, generated from the declaration (src/config/keys.ts):
// `npm run chart:schema` writes it into charts/hookguard/values.schema.json, and test/manifests/chart-schema.test.ts
// fails when the committed schema is not the one generated here. So `helm install --set config.rules.bogusRule…`
// is refused by Helm itself, before any pod crash-loops on it.
import { ADVISORIES_DOC } from './advisories.js';
import { KEYS } from './keys.js';
import { camelCaseKey, jsonSchemaOf, type JsonSchema } from './schema.js';

/**
 * The config keys the chart's own values set (templates/_helpers.tpl, hookguard.config), and the value to use; or,
 * starting with "the ", what the chart fixes them to.
 */
export const CHART_OWNED: Readonly<Record<string, string>> = {
  mode: 'mode',
  excludedNamespaces: 'excludedNamespaces',
  certificates: 'certificates',
  'server.port': 'webhook.port',
  'server.probePort': 'probePort',
  'server.tls': 'certificates',
  'argocd.version': 'argocd.version',
  'argocd.instanceVersions': 'argocd.instanceVersions',
  'argocd.remote': 'argocd.remote',
  'leaderElection.leaseNamespace': 'the release namespace',
  'selfTest.enabled': 'selfTest.enabled',
  'selfTest.namespace': 'selfTest.namespace',
  // templates/self-test.yaml creates the HookGuard object `hookguard` and grants `update` of its status by that name.
  'selfTest.statusObject': "the chart's HookGuard object, hookguard",
  'sweep.profiles': 'sweep.profiles',
  'policyParams.enabled': 'admission.mode',
  'policyParams.namespace': 'the release namespace',
};

/** A property that only takes a message as its value: Helm's error then names what to write instead. */
function refused(message: string): JsonSchema {
  return { enum: [message] };
}

type Properties = Record<string, JsonSchema>;

function propertiesOf(schema: JsonSchema): Properties {
  return schema.properties as Properties;
}

/** Each rule's id as `hookguard rules` shows it (`min-runtime`) is refused, naming its key (`rules.minRuntime`). */
function withRuleIds(schema: JsonSchema): void {
  const rules = propertiesOf(propertiesOf(schema).rules!);
  for (const key of Object.keys(KEYS.rules)) {
    const id = key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
    if (id !== key && camelCaseKey(id) === key) rules[id] = refused(`(keys are camelCase: rules.${key})`);
  }
}

/** The JSON Schema of the chart's `config` value. */
export function chartConfigSchema(): JsonSchema {
  const schema = structuredClone<JsonSchema>(jsonSchemaOf(KEYS));
  withRuleIds(schema);
  propertiesOf(schema)[ADVISORIES_DOC.key] = {
    description: ADVISORIES_DOC.doc,
    type: 'array',
    items: { type: 'object' },
  };
  for (const [path, value] of Object.entries(CHART_OWNED)) {
    const names = path.split('.');
    const last = names.pop()!;
    const parent = names.reduce((at, name) => propertiesOf(at)[name]!, schema);
    const message = value.startsWith('the ') ? `(not here: ${value})` : `(not here: set ${value})`;
    propertiesOf(parent)[last] = refused(message);
  }
  return {
    description:
      "hookguard's config file (docs/configuration.md), generated from src/config/keys.ts by `npm run chart:schema`; the keys the chart's values set are refused here.",
    ...schema,
  };
}
