// The stand-ins' label selector (test/support/label-selector.ts) against kube-apiserver's own: the selectors and
// label sets of k8s.io/apimachinery v0.36.3 pkg/labels/selector_test.go (TestSelectorParse, TestSelectorMatches,
// TestSetSelectorParser), and the error text its parser builds (selector.go Parser.parse, parseRequirement,
// NewRequirement; content.IsLabelKey/IsLabelValue, RegexError; field.Error.Error with the nil path "<nil>").
import { describe, expect, it } from 'vitest';
import { parseLabelSelector, requiredValue, selectorMatches } from '../support/label-selector.js';

function requirementsOf(text: string) {
  const parsed = parseLabelSelector(text);
  if ('error' in parsed) throw new Error(`${text}: ${parsed.error}`);
  return parsed.requirements;
}

const errorOf = (text: string) => {
  const parsed = parseLabelSelector(text);
  return 'error' in parsed ? parsed.error : undefined;
};

const VALUE_RULE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and " +
  "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is " +
  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const KEY_NAME_RULE =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric " +
  "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " +
  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

describe('label selector parsing, as kube-apiserver', () => {
  it.each(['x=a,y=b,z=c', '', 'x!=a,y=b', 'x=', 'x= ', 'x=,z= ', 'x= ,z= ', '!x', 'x>1', 'x>1,z<5'])(
    'accepts %j (TestSelectorParse)',
    (text) => expect(errorOf(text)).toBeUndefined(),
  );

  it('reads each form into requirements sorted by key (TestSetSelectorParser)', () => {
    expect(requirementsOf('x notin (abc,,def),bar,z in (),w')).toEqual([
      { key: 'bar', operator: 'exists', values: [] },
      { key: 'w', operator: 'exists', values: [] },
      { key: 'x', operator: 'notin', values: ['', 'abc', 'def'] },
      { key: 'z', operator: 'in', values: [''] },
    ]);
    expect(requirementsOf('a in (x,y,notin, z,in)')).toEqual([
      { key: 'a', operator: 'in', values: ['in', 'notin', 'x', 'y', 'z'] },
    ]);
    expect(requirementsOf('x in (a,,a,,a,,a,,)')).toEqual([{ key: 'x', operator: 'in', values: ['', 'a'] }]);
    expect(requirementsOf('this-is-a-dns.domain.com/key-with-dash')).toEqual([
      { key: 'this-is-a-dns.domain.com/key-with-dash', operator: 'exists', values: [] },
    ]);
    expect(requirementsOf('hookguard.io/hook=admitted')).toEqual([
      { key: 'hookguard.io/hook', operator: '=', values: ['admitted'] },
    ]);
    expect(requirementsOf('x=a,y!=b,!z')).toEqual([
      { key: 'x', operator: '=', values: ['a'] },
      { key: 'y', operator: '!=', values: ['b'] },
      { key: 'z', operator: '!', values: [] },
    ]);
  });

  it.each([
    ['x=a||y=b', `unable to parse requirement: values[0][x]: Invalid value: "a||y": ${VALUE_RULE}`],
    ['x==a==b', "found '==', expected: ',' or 'end of string'"],
    ['!x=a', "found '=', expected: ',' or 'end of string'"],
    ['a=b=c', "found '=', expected: ',' or 'end of string'"],
    [
      'x<a',
      `unable to parse requirement: values[0]: Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer`,
    ],
    ['x,,y', "found ',', expected: identifier after ','"],
    [',x,y', "found ',', expected: !, identifier, or 'end of string'"],
    ['a in (xyz),', "found '', expected: identifier after ','"],
    ['(', "found '(', expected: !, identifier, or 'end of string'"],
    ['x nott in (y)', "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"],
    ['a in (xyz abc)', "unable to parse requirement: found 'abc', expected: ',' or ')'"],
    ['-bad=x', `unable to parse requirement: <nil>: Invalid value: "-bad": ${KEY_NAME_RULE}`],
    ['x=-a-', `unable to parse requirement: values[0][x]: Invalid value: "-a-": ${VALUE_RULE}`],
  ])('refuses %j with the text kube-apiserver puts in its 400', (text, message) => {
    expect(errorOf(text)).toBe(message);
  });
});

describe('label selector matching, as kube-apiserver (TestSelectorMatches)', () => {
  it.each([
    ['', { x: 'y' }],
    ['x=y', { x: 'y' }],
    ['x=y,z=w', { x: 'y', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'a' }],
    ['notin=in', { notin: 'in' }],
    ['x', { x: 'z' }],
    ['!x', { y: 'z' }],
    ['x>1', { x: '2' }],
    ['x<1', { x: '0' }],
    ['foo=bar,baz=blah', { foo: 'bar', baz: 'blah' }],
  ])('%j matches %j', (text, labels) => expect(selectorMatches(requirementsOf(text), labels)).toBe(true));

  it.each([
    ['x=z', {}],
    ['x=y', { x: 'z' }],
    ['x=y,z=w', { x: 'w', z: 'w' }],
    ['x!=y,z!=w', { x: 'z', z: 'w' }],
    ['x', { y: 'z' }],
    ['!x', { x: 'z' }],
    ['x>1', { x: '0' }],
    ['x<1', { x: '2' }],
    ['foo=bar,foobar=bar,baz=blah', { foo: 'bar', baz: 'blah' }],
  ])('%j does not match %j', (text, labels) => expect(selectorMatches(requirementsOf(text), labels)).toBe(false));

  it('names the one value a selector pins a key to, for an index', () => {
    expect(requiredValue(requirementsOf('job-name=job-3,x'), 'job-name')).toBe('job-3');
    expect(requiredValue(requirementsOf('job-name in (job-3)'), 'job-name')).toBe('job-3');
    expect(requiredValue(requirementsOf('job-name in (job-3,job-4)'), 'job-name')).toBeUndefined();
    expect(requiredValue(requirementsOf('job-name!=job-3'), 'job-name')).toBeUndefined();
  });
});
