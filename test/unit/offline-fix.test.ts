// --fix's text edits (src/offline/fix.ts): each kind of JSON Patch operation hookguard makes, on the shapes charts
// write, with the exact text that comes out; everything the patch does not touch keeps its bytes.
import fc from 'fast-check';
import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { charactersSliced as countSliced } from '../support/work.js';
import { fixDocumentText, renderDocument } from '../../src/offline/fix.js';
import { kubeValue, PARSE_OPTIONS } from '../../src/offline/yaml11.js';
import type { Operation } from '../../src/core/types.js';

function fix(text: string, operations: Operation[]): string {
  return fixDocumentText(text, operations, kubeValue(parseDocument(text, PARSE_OPTIONS))).text;
}

const JOB = `# a hook
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate   # kept
  annotations:
    helm.sh/hook: pre-install
spec:
  backoffLimit: 0x2
  template:
    spec:
      containers:
        - name: main
          image: alpine:3.20
          command:
            - sh
            - -c
            - |
              set -e
              kubectl delete pod x
      volumes:
        - name: scripts
          configMap: {name: scripts, defaultMode: 0777}
`;

describe('edits in place', () => {
  it.each<[string, Operation[], string]>([
    [
      'a key added after the last pair of a block mapping, at its indentation',
      [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-delete-policy', value: 'before-hook-creation' }],
      JOB.replace(
        '    helm.sh/hook: pre-install\n',
        '    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: before-hook-creation\n',
      ),
    ],
    [
      'a nested value added after a block scalar, and a number that would read as octal quoted',
      [{ op: 'add', path: '/spec/template/spec/initContainers', value: [{ name: 'guard', args: ['0777', 'yes'] }] }],
      `${JOB}      initContainers:\n        - name: guard\n          args:\n            - "0777"\n            - "yes"\n`,
    ],
    [
      'a scalar replaced, its neighbours as written',
      [{ op: 'replace', path: '/spec/backoffLimit', value: 3 }],
      JOB.replace('backoffLimit: 0x2', 'backoffLimit: 3'),
    ],
    [
      'a literal block replaced as a literal block at its indentation',
      [
        {
          op: 'replace',
          path: '/spec/template/spec/containers/0/command/2',
          value: 'set -e\nkubectl delete --ignore-not-found pod x\n',
        },
      ],
      JOB.replace('kubectl delete pod x', 'kubectl delete --ignore-not-found pod x'),
    ],
    [
      'a key added to a flow mapping',
      [{ op: 'add', path: '/spec/template/spec/volumes/0/configMap/optional', value: true }],
      JOB.replace('defaultMode: 0777}', 'defaultMode: 0777, "optional": true}'),
    ],
    [
      'a sequence item inserted before another, and one appended',
      [
        { op: 'add', path: '/spec/template/spec/containers/0/command/0', value: 'exec' },
        { op: 'add', path: '/spec/template/spec/containers/0/command/-', value: 'on' },
      ],
      JOB.replace('            - sh\n', '            - exec\n            - sh\n').replace(
        '              kubectl delete pod x\n',
        '              kubectl delete pod x\n            - "on"\n',
      ),
    ],
    [
      'a key removed with its lines',
      [{ op: 'remove', path: '/metadata/annotations' }],
      JOB.replace('  annotations:\n    helm.sh/hook: pre-install\n', ''),
    ],
  ])('%s', (_name, operations, expected) => {
    expect(fix(JOB, operations)).toBe(expected);
  });
});

describe('what the document does not own', () => {
  it('a mapping reached through an alias is written out where the alias was', () => {
    const text =
      'apiVersion: v1\nkind: List\nitems:\n  - metadata: {annotations: &a {x: "1"}}\n  - metadata: {annotations: *a}\n';
    expect(fix(text, [{ op: 'add', path: '/items/1/metadata/annotations/y', value: '0777' }])).toBe(
      'apiVersion: v1\nkind: List\nitems:\n  - metadata: {annotations: &a {x: "1"}}\n  - metadata: {annotations: {"x": "1", "y": "0777"}}\n',
    );
  });

  it('a key a merge brings in is set after the merge, which it then overrides', () => {
    const text = 'metadata:\n  annotations:\n    <<: {"helm.sh/hook": pre-install}\n    team: a\n';
    expect(fix(text, [{ op: 'replace', path: '/metadata/annotations/helm.sh~1hook', value: 'post-install' }])).toBe(
      'metadata:\n  annotations:\n    <<: {"helm.sh/hook": pre-install}\n    team: a\n    helm.sh/hook: post-install\n',
    );
  });

  it.each([
    [
      'an edit that would change what an alias reads',
      '# kept\na: &x {b: 1}\nc: *x\n',
      { op: 'add', path: '/a/d', value: 2 },
      '# kept\na:\n  b: 1\n  d: 2\nc:\n  b: 1\n',
      'the text edited in place would not read back as the patched object',
    ],
    [
      'an anchored node the patch replaces',
      'a: &x 1\nc: *x\n',
      { op: 'replace', path: '/a', value: 2 },
      'a: 2\nc: 1\n',
      'it could not be edited in place (an anchored node (its aliases would change))',
    ],
  ] as const)('%s makes the document written anew, and says why', (_name, text, operation, fixed, why) => {
    const before = kubeValue(parseDocument(text, PARSE_OPTIONS));
    expect(fixDocumentText(text, [operation as Operation], before)).toEqual({ text: fixed, rewritten: why });
  });
});

describe('work linear in the document', () => {
  // Counted, not timed: the characters String.prototype.slice copies (the yaml package's lexer slices what it reads,
  // so a parse counts as much as the text it reads). Parsing the whole List once per operation (issue 25: 20 Jobs of
  // 300 KB in a List took 14.9 s) made 4x the items 16x the work.
  const item = (index: number) =>
    `  - apiVersion: batch/v1\n    kind: Job\n    metadata:\n      name: job-${index}\n      annotations:\n        helm.sh/hook: pre-install\n    spec:\n      backoffLimit: 0x2\n      template:\n        spec:\n          containers:\n            - name: main\n              command: [sh, -c, "${'x'.repeat(2_000)}"]\n`;
  function charactersSliced(items: number): number {
    const text = `apiVersion: v1\nkind: List\nitems:\n${Array.from({ length: items }, (_, index) => item(index)).join('')}`;
    const operations = Array.from({ length: items }, (_, index): Operation[] => [
      { op: 'add', path: `/items/${index}/metadata/annotations/helm.sh~1hook-delete-policy`, value: 'hook-succeeded' },
      { op: 'replace', path: `/items/${index}/spec/backoffLimit`, value: 3 },
      { op: 'add', path: `/items/${index}/spec/ttlSecondsAfterFinished`, value: 600 },
    ]).flat();
    const before = kubeValue(parseDocument(text, PARSE_OPTIONS));
    return countSliced(() => {
      const fixed = fixDocumentText(text, operations, before);
      expect(fixed.rewritten).toBeUndefined();
      expect(fixed.text.match(/ttlSecondsAfterFinished: 600/g)).toHaveLength(items);
    });
  }

  it('4x the items of a List copy at most ~5x the characters', () => {
    expect(charactersSliced(40) / charactersSliced(10)).toBeLessThanOrEqual(5);
  });
});

describe('renderDocument', () => {
  it('quotes what go-yaml would read as something else, and keeps multi-line strings literal', () => {
    expect(
      renderDocument({
        a: ['0777', 'yes', 'on', '1e3', '0o17', '~', '', 'plain text', 'a: b', '#x'],
        b: 'line 1\nline 2\n',
        c: {},
        d: [],
        e: null,
      }),
    ).toBe(
      'a:\n  - "0777"\n  - "yes"\n  - "on"\n  - "1e3"\n  - "0o17"\n  - "~"\n  - ""\n  - plain text\n  - "a: b"\n  - "#x"\n' +
        'b: |\n  line 1\n  line 2\nc: {}\nd: []\ne: null\n',
    );
  });
});

describe('what is written reads back as what was meant', () => {
  it('any JSON value, keys and strings of any characters, rendered anew, reads back as Kubernetes reads it', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.jsonValue({ maxDepth: 3 })), (value) => {
        const expected = JSON.parse(JSON.stringify(value)) as unknown;
        expect(kubeValue(parseDocument(renderDocument(expected), PARSE_OPTIONS))).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('any value added under a key, in place, reads back as the patched object', () => {
    fc.assert(
      // Any key but __proto__: fast-json-patch refuses a patch that writes it, and no rule writes one.
      fc.property(
        fc.string({ unit: 'binary' }).filter((key) => key !== '__proto__'),
        fc.jsonValue({ maxDepth: 2 }),
        (key, value) => {
          const added = JSON.parse(JSON.stringify(value)) as unknown;
          const text = fix(JOB, [
            {
              op: 'add',
              path: `/metadata/annotations/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`,
              value: added,
            },
          ]);
          const read = kubeValue(parseDocument(text, PARSE_OPTIONS)) as {
            metadata: { annotations: Record<string, unknown> };
          };
          expect(read.metadata.annotations[key]).toEqual(added);
        },
      ),
      { numRuns: 200 },
    );
  });
});
