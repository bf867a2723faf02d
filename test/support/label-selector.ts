// A `labelSelector` query parameter read as kube-apiserver reads it, for the stand-in API servers: the grammar, the
// matching and the error text of k8s.io/apimachinery v0.36.3 pkg/labels/selector.go (Lexer, Parser.parse,
// parseRequirement, NewRequirement, Requirement.Matches), with the label key and value checks of
// pkg/api/validate/content (IsLabelKey, IsLabelValue, RegexError). kube-apiserver decodes the query into
// metainternalversion.ListOptions (apiserver pkg/endpoints/handlers/get.go, ListResource →
// ParameterCodec.DecodeParameters → metav1 Convert_string_To_labels_Selector → labels.Parse) and answers a parse error
// with errors.NewBadRequest(err.Error()): a 400 BadRequest Status whose message is the parser's text, for a list and a
// watch alike. Every form is read: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a)`, `k>1`, `k<1`,
// comma-joined (AND).
import { statusBody } from './api-status.js';

export type Operator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

export interface Requirement {
  key: string;
  operator: Operator;
  /** Sorted and unique, as sets.String.List() hands them to NewRequirement. */
  values: string[];
}

type Token = 'error' | 'end' | ')' | ',' | '!' | '==' | '=' | '>' | 'identifier' | 'in' | '<' | '!=' | 'notin' | '(';

/** string2token: the literals that are tokens of their own. */
const KEYWORDS = new Map<string, Token>([
  [')', ')'],
  [',', ','],
  ['!', '!'],
  ['==', '=='],
  ['=', '='],
  ['>', '>'],
  ['in', 'in'],
  ['<', '<'],
  ['!=', '!='],
  ['notin', 'notin'],
  ['(', '('],
]);
const SPECIAL = new Set(['=', '!', '(', ')', ',', '>', '<']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);
/** binaryOperators in selector.go, in its order, for "expected:" messages. */
const BINARY_OPERATORS = ['in', 'notin', '=', '==', '!=', 'gt', 'lt'];

interface Scanned {
  token: Token;
  literal: string;
}

/** Lexer.Lex over the whole string (Parser.scan). Go indexes bytes; label text is ASCII where it is valid. */
function scan(text: string): Scanned[] {
  const items: Scanned[] = [];
  let position = 0;
  for (;;) {
    while (position < text.length && WHITESPACE.has(text[position] as string)) position += 1;
    if (position >= text.length) {
      items.push({ token: 'end', literal: '' });
      return items;
    }
    if (SPECIAL.has(text[position] as string)) {
      // scanSpecialSymbol: the longest run of special symbols that is still a token.
      let buffer = '';
      let last: Scanned | undefined;
      while (position < text.length && SPECIAL.has(text[position] as string)) {
        buffer += text[position];
        position += 1;
        const token = KEYWORDS.get(buffer);
        if (token !== undefined) last = { token, literal: buffer };
        else if (last !== undefined) {
          position -= 1;
          break;
        }
      }
      items.push(last ?? { token: 'error', literal: `error expected: keyword found '${buffer}'` });
      continue;
    }
    let buffer = '';
    while (
      position < text.length &&
      !SPECIAL.has(text[position] as string) &&
      !WHITESPACE.has(text[position] as string)
    ) {
      buffer += text[position];
      position += 1;
    }
    items.push({ token: KEYWORDS.get(buffer) ?? 'identifier', literal: buffer });
  }
}

const LABEL_KEY_FORMAT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY = new RegExp(`^${LABEL_KEY_FORMAT}$`);
const LABEL_VALUE_FORMAT = `(${LABEL_KEY_FORMAT})?`;
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FORMAT}$`);
const DNS1123_LABEL_FORMAT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FORMAT = `${DNS1123_LABEL_FORMAT}(\\.${DNS1123_LABEL_FORMAT})*`;
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FORMAT}$`);

/** content.RegexError. */
function regexError(message: string, format: string, ...examples: string[]): string {
  // Each example is followed by "', " and joined by " or ", hence the two spaces before "or" in kube-apiserver's text.
  return `${message} (e.g. ${examples.map((example) => `'${example}', `).join(' or ')}regex used for validation is '${format}')`;
}

const LABEL_KEY_NAME_ERROR = regexError(
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  LABEL_KEY_FORMAT,
  'MyName',
  'my.name',
  '123-abc',
);

/** content.IsLabelKey. */
function labelKeyProblems(key: string): string[] {
  const problems: string[] = [];
  const parts = key.split('/');
  if (parts.length > 2)
    return [
      `a valid label key ${LABEL_KEY_NAME_ERROR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  const name = parts.length === 2 ? (parts[1] as string) : (parts[0] as string);
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix === '') problems.push('prefix part must be non-empty');
    else {
      if (Buffer.byteLength(prefix) > 253) problems.push('prefix part must be no more than 253 bytes');
      if (!DNS1123_SUBDOMAIN.test(prefix))
        problems.push(
          `prefix part ${regexError(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FORMAT,
            'example.com',
          )}`,
        );
    }
  }
  if (name === '') problems.push('name part must be non-empty');
  else if (Buffer.byteLength(name) > 63) problems.push('name part must be no more than 63 bytes');
  if (!LABEL_KEY.test(name)) problems.push(`name part ${LABEL_KEY_NAME_ERROR}`);
  return problems;
}

/** content.IsLabelValue. */
function labelValueProblems(value: string): string[] {
  const problems: string[] = [];
  if (Buffer.byteLength(value) > 63) problems.push('must be no more than 63 bytes');
  if (!LABEL_VALUE.test(value))
    problems.push(
      regexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        LABEL_VALUE_FORMAT,
        'MyValue',
        'my_value',
        '12345',
      ),
    );
  return problems;
}

/** A field.Invalid error's text for a string value: `<path>: Invalid value: "<value>": <detail>`. */
function invalid(path: string, value: string, detail: string): string {
  return `${path}: Invalid value: ${JSON.stringify(value)}: ${detail}`;
}

class SelectorError extends Error {}

/** The parser of selector.go, token for token; each throw carries the text kube-apiserver puts in its 400. */
class Parser {
  private position = 0;
  constructor(private readonly items: Scanned[]) {}

  /** lookahead/consume in the Values context: `in` and `notin` are identifiers there. */
  private peek(asValue = true): Scanned {
    const item = this.items[this.position] as Scanned;
    return asValue && (item.token === 'in' || item.token === 'notin') ? { ...item, token: 'identifier' } : item;
  }

  private next(asValue = true): Scanned {
    const item = this.peek(asValue);
    this.position += 1;
    return item;
  }

  parse(): Requirement[] {
    const requirements: Requirement[] = [];
    for (;;) {
      const { token, literal } = this.peek();
      if (token === 'end') return requirements;
      if (token !== 'identifier' && token !== '!')
        throw new SelectorError(`found '${literal}', expected: !, identifier, or 'end of string'`);
      try {
        requirements.push(this.requirement());
      } catch (error) {
        throw new SelectorError(`unable to parse requirement: ${(error as Error).message}`);
      }
      const after = this.next();
      if (after.token === 'end') return requirements;
      if (after.token !== ',') throw new SelectorError(`found '${after.literal}', expected: ',' or 'end of string'`);
      const following = this.peek();
      if (following.token !== 'identifier' && following.token !== '!')
        throw new SelectorError(`found '${following.literal}', expected: identifier after ','`);
    }
  }

  private requirement(): Requirement {
    let unary: Operator | undefined;
    let item = this.next();
    if (item.token === '!') {
      unary = '!';
      item = this.next();
    }
    if (item.token !== 'identifier') throw new SelectorError(`found '${item.literal}', expected: identifier`);
    const key = item.literal;
    const keyProblems = labelKeyProblems(key);
    if (keyProblems.length > 0) throw new SelectorError(invalid('<nil>', key, keyProblems.join('; ')));
    const ahead = this.peek().token;
    if (ahead === 'end' || ahead === ',') return newRequirement(key, unary ?? 'exists', []);
    if (unary !== undefined) return newRequirement(key, unary, []);
    const operator = this.operator();
    const values = operator === 'in' || operator === 'notin' ? this.valueSet() : this.exactValue();
    return newRequirement(key, operator, [...new Set(values)].sort());
  }

  private operator(): Operator {
    const { token, literal } = this.next(false);
    const operators: Partial<Record<Token, Operator>> = {
      in: 'in',
      '=': '=',
      '==': '==',
      '>': 'gt',
      '<': 'lt',
      notin: 'notin',
      '!=': '!=',
    };
    const operator = operators[token];
    if (operator === undefined) throw new SelectorError(`found '${literal}', expected: ${BINARY_OPERATORS.join(', ')}`);
    return operator;
  }

  /** parseValues and parseIdentifiersList: `(a,b)`, where `()`, `(,` and `,,` stand for the empty value. */
  private valueSet(): string[] {
    const open = this.next();
    if (open.token !== '(') throw new SelectorError(`found '${open.literal}' expected: '('`);
    const first = this.peek();
    if (first.token === ')') {
      this.next();
      return [''];
    }
    if (first.token !== 'identifier' && first.token !== ',')
      throw new SelectorError(`found '${first.literal}', expected: ',', ')' or identifier`);
    const values: string[] = [];
    for (;;) {
      const item = this.next();
      if (item.token === 'identifier') {
        values.push(item.literal);
        const ahead = this.peek();
        if (ahead.token === ',') continue;
        if (ahead.token === ')') break;
        throw new SelectorError(`found '${ahead.literal}', expected: ',' or ')'`);
      } else if (item.token === ',') {
        if (values.length === 0) values.push('');
        const ahead = this.peek().token;
        if (ahead === ')') {
          values.push('');
          break;
        }
        if (ahead === ',') values.push('');
      } else throw new SelectorError(`found '${item.literal}', expected: ',', or identifier`);
    }
    if (this.next().token !== ')') throw new SelectorError(`found '${first.literal}', expected: ')'`);
    return values;
  }

  private exactValue(): string[] {
    const ahead = this.peek().token;
    if (ahead === 'end' || ahead === ',') return [''];
    const item = this.next();
    if (item.token === 'identifier') return [item.literal];
    throw new SelectorError(`found '${item.literal}', expected: identifier`);
  }
}

/** NewRequirement's value checks (the key was checked by the parser), aggregated as utilerrors.NewAggregate does. */
function newRequirement(key: string, operator: Operator, values: string[]): Requirement {
  const problems: string[] = [];
  if ((operator === 'gt' || operator === 'lt') && !/^[+-]?\d+$/.test(values[0] ?? ''))
    problems.push(invalid('values[0]', values[0] ?? '', "for 'Gt', 'Lt' operators, the value must be an integer"));
  values.forEach((value, index) => {
    const valueProblems = labelValueProblems(value);
    if (valueProblems.length > 0) problems.push(invalid(`values[${index}][${key}]`, value, valueProblems.join('; ')));
  });
  const unique = [...new Set(problems)];
  if (unique.length === 1) throw new SelectorError(unique[0]);
  if (unique.length > 1) throw new SelectorError(`[${unique.join(', ')}]`);
  return { key, operator, values };
}

/**
 * kube-apiserver's answer to a selector it cannot parse: errors.NewBadRequest (apimachinery pkg/api/errors/errors.go),
 * a Status without details.
 */
export function badRequestStatus(message: string): Record<string, unknown> {
  return statusBody(400, message, null);
}

/** The requirements of a selector, sorted by key as selector.go sorts them; or the 400 message kube-apiserver sends. */
export function parseLabelSelector(text: string): { requirements: Requirement[] } | { error: string } {
  try {
    const requirements = new Parser(scan(text)).parse();
    return { requirements: requirements.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) };
  } catch (error) {
    if (error instanceof SelectorError) return { error: error.message };
    throw error;
  }
}

/** Requirement.Matches, every requirement (AND). */
export function selectorMatches(
  requirements: readonly Requirement[],
  labels: Readonly<Record<string, string>>,
): boolean {
  return requirements.every(({ key, operator, values }) => {
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    switch (operator) {
      case 'in':
      case '=':
      case '==':
        return has && values.includes(value as string);
      case 'notin':
      case '!=':
        return !has || !values.includes(value as string);
      case 'exists':
        return has;
      case '!':
        return !has;
      case 'gt':
      case 'lt': {
        if (!has || !/^[+-]?\d+$/.test(value as string)) return false;
        const [left, right] = [BigInt(value as string), BigInt(values[0] as string)];
        return operator === 'gt' ? left > right : left < right;
      }
    }
  });
}

/**
 * The one value a selector requires `key` to have (`key=v`, `key==v`, `key in (v)`), for an index lookup: what
 * RequiresExactMatch answers in selector.go.
 */
export function requiredValue(requirements: readonly Requirement[], key: string): string | undefined {
  const found = requirements.find(
    (requirement) =>
      requirement.key === key &&
      (requirement.operator === '=' || requirement.operator === '==' || requirement.operator === 'in') &&
      requirement.values.length === 1,
  );
  return found?.values[0];
}
