// ESLint flat config: typescript-eslint's type-checked recommendations, Prettier for layout, and the import
// boundaries ARCHITECTURE.md describes.
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first (ARCHITECTURE.md): a module may import its own layer and the layers below,
 * never one above. Each name is a folder of src/ or a module at its root (errors.ts).
 */
const LAYERS = [
  ['core'],
  ['rules'],
  ['config', 'errors'],
  ['kube', 'tls', 'offline', 'report', 'policies'],
  ['discovery', 'sweep', 'controllers'],
  ['http'],
  ['cli'],
];

/**
 * Every folder of src/ and module at its root must stand in LAYERS: one left out would be silently unconstrained, so
 * the lint fails at once, naming it.
 */
const unlayered = readdirSync(new URL('./src/', import.meta.url), { withFileTypes: true })
  .map((entry) => (entry.isDirectory() ? entry.name : entry.name.replace(/\.ts$/, '')))
  .filter((name) => !LAYERS.flat().includes(name));
if (unlayered.length > 0) {
  throw new Error(`eslint.config.js: src/${unlayered.join(', src/')} stands in no layer of LAYERS (ARCHITECTURE.md)`);
}

/** Modules of higher layers that are pure by choice: ARCHITECTURE.md names them, test/docs/architecture.test.ts holds the two equal. */
const PURE_MODULES = ['src/sweep/qualify.ts', 'src/discovery/controller-version.ts'];

/** Packages the pure layers may import: everything else (fastify, pino, client-node, node:*) is out of bounds. */
const PURE_PACKAGES = { core: ['semver', 'fast-json-patch'], rules: [] };

const escape = (name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function boundaries() {
  return LAYERS.flatMap((layer, level) => {
    const above = LAYERS.slice(level + 1).flat();
    return layer.map((name) => {
      const patterns = [];
      if (above.length > 0) {
        patterns.push({
          regex: `^\\.{1,2}/(\\.\\./)*(${above.join('|')})(/|\\.js$)`,
          message: `src/${name} may not import ${above.join(', ')}: dependencies point down (ARCHITECTURE.md).`,
        });
      }
      const allowed = PURE_PACKAGES[name];
      if (allowed) {
        patterns.push({
          regex: `^(?!\\.)(?!(${allowed.map(escape).join('|') || '$^'})(/|$))`,
          message: `src/${name} is pure: it imports no packages but ${allowed.join(', ') || 'none'} (no fastify, pino, @kubernetes/client-node or node: modules).`,
        });
      }
      return {
        files: [`src/${name}/**/*.ts`, `src/${name}.ts`],
        rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
      };
    });
  });
}

export default tseslint.config(
  { ignores: ['dist/', 'dist-bench/', 'node_modules/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Fastify route handlers and CLI commands share an async signature whether or not they wait on anything.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  ...boundaries(),
  {
    // Pure by choice in higher layers (ARCHITECTURE.md): they import the core and nothing else, no package, not even
    // their own folder, so they stay tables of tests. (This replaces their layer's patterns, which it is stricter than.)
    files: PURE_MODULES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\.\\./core/)',
              message: 'this module is pure by choice (ARCHITECTURE.md): it imports only src/core.',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests read parsed JSON and YAML (any) and assert on it with expect: the unsafe-any rules would only add casts.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // Harnesses hand out closures (next(), stop()) that tests destructure.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  { files: ['**/*.js', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
  prettier,
);
