// `hookguard check --output sarif`: SARIF 2.1.0 (OASIS), the format code scanning reads (GitHub, GitLab, Azure
// DevOps). One run; the rules in tool.driver.rules with their help; one result per finding, at the file and line of
// the document it was found in.
import type { FindingAction } from '../core/types.js';
import type { CheckResult } from '../offline/check.js';
import { reportLocation, type CheckReport } from './report.js';

/** What a SARIF rule is made from: a rule of the catalog (one id may act in both webhooks, e.g. mutate and deny). */
export interface SarifRuleSource {
  id: string;
  /** Each side of the rule (`side`: "mutating, CREATE, at render time"), in its own words. */
  sides: readonly { side: string; doc: string }[];
}

/**
 * Where each rule's help sends the reader: the catalog in hookguard's own source. hookguard has no published home
 * (no repository address, no site: package.json names none), so the SARIF log carries no informationUri or helpUri,
 * which would name an address that may not exist; the path holds in every checkout and release tarball.
 */
export const RULES_DOC = 'docs/rules.md, "The rule catalog", in hookguard\'s source';

const SARIF_SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';

/** error: would be denied; warning: warned about; note: changed. */
const LEVELS: Record<FindingAction, 'error' | 'warning' | 'note'> = { deny: 'error', warn: 'warning', mutate: 'note' };

/**
 * A SARIF artifact URI for a report's file: relative paths (as named on the command line, or a template's path under
 * the chart root) stay relative, so code scanning resolves them from the repository's root; absolute ones become
 * file: URIs.
 */
function artifactUri(file: string): string {
  const path = file.replaceAll('\\', '/');
  return path.startsWith('/') ? `file://${encodeURI(path)}` : encodeURI(path);
}

function location(result: CheckResult) {
  const { file, line, rendered } = reportLocation(result.source);
  // The snippet is the rendered document's first line: only where the location is that document.
  const snippet =
    rendered === undefined && result.source.firstLine ? { snippet: { text: result.source.firstLine } } : {};
  return {
    physicalLocation: { artifactLocation: { uri: artifactUri(file) }, region: { startLine: line, ...snippet } },
    logicalLocations: [{ fullyQualifiedName: result.label, kind: 'object' }],
  };
}

/** Where the object is in the rendered manifests, when the location is its template. */
function rendered(result: CheckResult): { rendered?: string } {
  const { rendered: at } = reportLocation(result.source);
  return at === undefined ? {} : { rendered: at };
}

/** The first sentence of a doc line: SARIF's short description. */
function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end < 0 ? text : text.slice(0, end + 1);
}

/** The SARIF log of one `hookguard check` run. */
export function renderSarif({ results }: CheckReport, rules: readonly SarifRuleSource[], version: string): string {
  const ruleIndex = new Map(rules.map((rule, index) => [rule.id, index]));
  const sarif = {
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'hookguard',
            version,
            rules: rules.map((rule) => {
              const full = rule.sides.map(({ side, doc }) => `${side}: ${doc}`).join('\n');
              return {
                id: rule.id,
                shortDescription: { text: firstSentence(rule.sides[0]?.doc ?? rule.id) },
                fullDescription: { text: full },
                help: { text: `${full}\nSee ${RULES_DOC}.` },
              };
            }),
          },
        },
        results: results.flatMap((result) =>
          result.findings.map((finding) => ({
            ruleId: finding.rule,
            ...(ruleIndex.has(finding.rule) ? { ruleIndex: ruleIndex.get(finding.rule) } : {}),
            level: LEVELS[finding.action],
            message: { text: finding.note ? `${finding.message}\n${finding.note}` : finding.message },
            locations: [location(result)],
            properties: {
              object: result.label,
              document: result.source.document,
              ...(result.source.item === undefined ? {} : { item: result.source.item }),
              ...(finding.advisory ? { advisory: finding.advisory } : {}),
              ...rendered(result),
            },
          })),
        ),
      },
    ],
  };
  return `${JSON.stringify(sarif, null, 2)}\n`;
}
