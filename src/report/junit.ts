// `hookguard check --output junit`: JUnit XML, the test report GitLab, Jenkins and Azure DevOps read. One test suite
// per input file, one test case per object, one <failure> per denial; what hookguard would change or warns about is
// the test case's <system-out>, so a passing object still says it.
import type { CheckResult } from '../offline/check.js';
import { reportLocation, type CheckReport } from './report.js';

/** Text and attribute values as XML 1.0 allows them: markup escaped, characters it cannot carry dropped. */
function xml(text: string): string {
  return (
    text
      // eslint-disable-next-line no-control-regex -- the C0 controls XML 1.0 forbids are exactly what is removed.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
      .replaceAll('&', '&amp;')
      .replaceAll('<', '&lt;')
      .replaceAll('>', '&gt;')
      .replaceAll('"', '&quot;')
      .replaceAll("'", '&apos;')
  );
}

function testCase(result: CheckResult): string {
  const name = result.label;
  const { file, line, rendered } = reportLocation(result.source);
  const document = `document ${result.source.document}${result.source.item === undefined ? '' : `, item ${result.source.item}`}`;
  const where = rendered === undefined ? `${file}:${line} (${document})` : `${file} (${rendered}, ${document})`;
  const failures = result.findings
    .filter((finding) => finding.action === 'deny')
    .map(
      (finding) =>
        `      <failure type="${xml(finding.rule)}" message="${xml(`${finding.rule}: ${finding.message}`)}">${xml(
          [`${name} at ${where}`, finding.message, ...(finding.note ? [finding.note] : [])].join('\n'),
        )}</failure>\n`,
    );
  const others = result.findings
    .filter((finding) => finding.action !== 'deny')
    .map(
      (finding) => `${finding.action} ${finding.rule}: ${finding.message}${finding.note ? `\n  ${finding.note}` : ''}`,
    );
  const out = others.length > 0 ? `      <system-out>${xml(others.join('\n'))}</system-out>\n` : '';
  const attributes = `name="${xml(name)}" classname="${xml(file)}" file="${xml(file)}" line="${line}"`;
  return failures.length === 0 && out === ''
    ? `    <testcase ${attributes}/>\n`
    : `    <testcase ${attributes}>\n${failures.join('')}${out}    </testcase>\n`;
}

/** The JUnit XML report of one `hookguard check` run. */
export function renderJunit({ results }: CheckReport): string {
  const fileOf = (result: CheckResult): string => reportLocation(result.source).file;
  const files = [...new Set(results.map(fileOf))];
  // As JUnit counts them: test cases that failed, however many <failure> each holds.
  const failuresOf = (of: readonly CheckResult[]) =>
    of.filter((result) => result.findings.some((finding) => finding.action === 'deny')).length;
  const suites = files.map((file) => {
    const inFile = results.filter((result) => fileOf(result) === file);
    return `  <testsuite name="${xml(file)}" tests="${inFile.length}" failures="${failuresOf(inFile)}" errors="0" skipped="0">\n${inFile.map(testCase).join('')}  </testsuite>\n`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="hookguard check" tests="${results.length}" failures="${failuresOf(results)}" errors="0">\n${suites.join('')}</testsuites>\n`;
}
