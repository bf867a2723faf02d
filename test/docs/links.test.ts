// Every relative link of the project's markdown leads somewhere: to a file or folder that exists and, for an
// `#anchor`, to a heading of the target with that GitHub anchor. The README sends readers to docs/ and
// ARCHITECTURE.md for everything it no longer holds, so a broken link loses them a fact.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { marked, type Token } from 'marked';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/k8s-tools.js';

/**
 * The markdown a reader follows: the files at the root and in docs/, the README of each top-level folder, and the
 * Helm chart's README (where the README's install sends readers).
 */
function markdownFiles(): string[] {
  const atRoot = readdirSync(repoRoot).filter((name) => name.endsWith('.md'));
  const inDocs = readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  const folderReadmes = readdirSync(repoRoot, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !['node_modules', 'dist', 'dist-bench', '.git'].includes(entry.name))
    .map((entry) => `${entry.name}/README.md`)
    .filter((path) => existsSync(join(repoRoot, path)));
  return [...atRoot, ...inDocs, ...folderReadmes, 'charts/hookguard/README.md'].sort();
}

/** Visits every token of a markdown text, nested ones (table cells, list items) included; code blocks are leaves. */
function eachToken(markdown: string, visit: (token: Token) => void): void {
  // walkTokens returns what the callbacks return, for asynchronous ones; these are synchronous.
  void marked.walkTokens(marked.lexer(markdown), visit);
}

/** A heading's text as GitHub renders it (code spans, emphasis and link texts kept, markup dropped). */
function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((token) => ('tokens' in token && token.tokens ? plainText(token.tokens) : 'text' in token ? token.text : ''))
    .join('');
}

/** The anchors GitHub gives the headings of one markdown text, repeated headings numbered as it numbers them. */
function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  eachToken(markdown, (token) => {
    if (token.type === 'heading') anchors.add(slugger.slug(plainText(token.tokens)));
  });
  return anchors;
}

function linksOf(markdown: string): string[] {
  const hrefs: string[] = [];
  eachToken(markdown, (token) => {
    if (token.type === 'link' || token.type === 'image') hrefs.push((token as { href: string }).href);
  });
  return hrefs;
}

/**
 * The relative links of `markdown` (a file at `path`, relative to `root`) that lead nowhere, each with why.
 * Links with a scheme (https:, mailto:) are not followed.
 */
function brokenLinks(markdown: string, path: string, root: string): string[] {
  const broken: string[] = [];
  for (const href of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    const [target = '', anchor] = href.split('#', 2);
    if (target === '') {
      if (anchor !== undefined && !anchorsOf(markdown).has(anchor))
        broken.push(`${href}: no heading #${anchor} in ${path}`);
      continue;
    }
    const file = resolve(root, dirname(path), decodeURIComponent(target));
    if (relative(root, file).startsWith('..')) broken.push(`${href}: leads outside the repository`);
    else if (!existsSync(file)) broken.push(`${href}: no file ${relative(root, file)}`);
    else if (anchor !== undefined) {
      if (statSync(file).isDirectory() || !file.endsWith('.md'))
        broken.push(`${href}: an anchor into a non-markdown target`);
      else if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
        broken.push(`${href}: no heading #${anchor} in ${relative(root, file)}`);
      }
    }
  }
  return broken;
}

describe('markdown links', () => {
  const files = markdownFiles();

  it("covers the README, ARCHITECTURE.md, docs/ and the chart's README", () => {
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'docs/configuration.md', 'charts/hookguard/README.md']),
    );
  });

  it.each(files)('every relative link of %s resolves', (path) => {
    expect(brokenLinks(readFileSync(join(repoRoot, path), 'utf8'), path, repoRoot)).toEqual([]);
  });

  it.each([
    ['a missing file', '[x](docs/nope.md)', ['docs/nope.md: no file docs/nope.md']],
    [
      'a missing heading',
      '[x](README.md#no-such-heading)',
      ['README.md#no-such-heading: no heading #no-such-heading in README.md'],
    ],
    ['a missing heading of the same file', '# Title\n\n[x](#other)', ['#other: no heading #other in README.md']],
    ['an anchor into a folder', '[x](docs#a)', ['docs#a: an anchor into a non-markdown target']],
    ['a path out of the repository', '[x](../shared/DOMAIN.md)', ['../shared/DOMAIN.md: leads outside the repository']],
    ['a link inside a code block', '```sh\n# [x](nope.md)\n```', []],
    ['an absolute URL', '[x](https://example.com/nope.md)', []],
    ['a heading with code and punctuation', '## `hookguard sweep`: hooks\n\n[x](#hookguard-sweep-hooks)', []],
    ['a repeated heading, numbered', '## RBAC\n\n## RBAC\n\n[x](#rbac-1)', []],
  ])('finds %s', (_case, markdown, expected) => {
    expect(brokenLinks(markdown, 'README.md', repoRoot)).toEqual(expected);
  });
});
