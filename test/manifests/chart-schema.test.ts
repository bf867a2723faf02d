// The chart's `config` value is checked by Helm itself, with the schema generated from src/config/keys.ts
// (src/config/chart-schema.ts, written by `npm run chart:schema`): issue 28.2 and 28.3.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { CHART_OWNED, chartConfigSchema } from '../../src/config/chart-schema.js';
import { KEYS } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { defaultsOf } from '../../src/config/schema.js';
import { ConfigError } from '../../src/errors.js';
import { CHART, helmTemplate } from '../support/manifests.js';

const committed = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as {
  properties: { config: unknown };
};

describe("the chart's config schema", () => {
  it('is the one src/config/keys.ts generates (run `npm run chart:schema` after changing keys.ts)', () => {
    expect(committed.properties.config).toEqual(chartConfigSchema());
  });

  it("accepts every key's default but those the chart's values set, and nothing else", () => {
    const validate = new Ajv({ strict: false }).compile(chartConfigSchema());
    const defaults = defaultsOf(KEYS) as Record<string, any>;
    for (const path of Object.keys(CHART_OWNED)) {
      const names = path.split('.');
      const last = names.pop()!;
      delete names.reduce((at, name) => at[name], defaults)[last];
    }
    expect(validate(defaults), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ rules: { bogusRule: { enabled: false } } })).toBe(false);
    expect(validate({ server: { bodyLimitBytes: 'big' } })).toBe(false);
  });

  it.each([4, 3] as const)('helm %s refuses an unknown rule and a rule by its id, naming the key', async (major) => {
    const stderr = async (config: Record<string, unknown>) =>
      (await helmTemplate({ values: { config }, helm: major })).stderr;
    const bogus = await stderr({ rules: { bogusRule: { enabled: false } } });
    const byId = await stderr({ rules: { 'min-runtime': { enabled: false } } });
    // helm v3.21.4 checks values with the library Helm 4 uses (santhosh-tekuri/jsonschema/v6, pkg/chartutil/
    // jsonschema.go), and words its refusals alike.
    expect([bogus, byId]).toEqual([
      "Error: values don't meet the specifications of the schema(s) in the following chart(s):\nhookguard:\n- at '/config/rules': additional properties 'bogusRule' not allowed\n\n",
      "Error: values don't meet the specifications of the schema(s) in the following chart(s):\nhookguard:\n- at '/config/rules/min-runtime': value must be '(keys are camelCase: rules.minRuntime)'\n\n",
    ]);
    expect(
      (await helmTemplate({ values: { config: { rules: { minRuntime: { enabled: false } } } }, helm: major })).status,
    ).toBe(0);
  });
});

describe('a rule switched off by its id (issue 28.3)', () => {
  it("names the key to write: hookguard's own error", () => {
    const error = (() => {
      try {
        loadConfig({ overrides: { 'rules.min-runtime.enabled': false } });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'invalid config: rules.min-runtime: unknown key; keys are camelCase: rules.minRuntime',
    );
  });

  it('says only "unknown key" when no key is spelled so', () => {
    expect(() => loadConfig({ overrides: { 'rules.bogus-rule.enabled': false } })).toThrow(
      /^invalid config: rules\.bogus-rule: unknown key$/,
    );
  });
});
