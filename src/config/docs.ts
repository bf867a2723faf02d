// docs/configuration.md's table of keys, rendered from the declaration (src/config/keys.ts). `npm run docs:config`
// rewrites it between the markers; test/docs/configuration.test.ts fails when the two disagree.
import { isRecord } from '../core/objects.js';
import { ADVISORIES_DOC } from './advisories.js';
import { KEYS } from './keys.js';
import { scalarText, settingsOf, type Setting } from './schema.js';

export const TABLE_START = '<!-- configuration table: generated from src/config/keys.ts by `npm run docs:config` -->';
export const TABLE_END = '<!-- end of the configuration table -->';

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

function defaultText(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `\`[${value.join(', ')}]\``;
  if (isRecord(value))
    return `\`{${Object.entries(value)
      .map(([name, item]) => `${name}: ${item === null ? 'null' : scalarText(item)}`)
      .join(', ')}}\``;
  return typeof value === 'string' ? `\`${value}\`` : scalarText(value);
}

function envText(setting: Setting<unknown>): string {
  const { env, type } = setting.spec;
  if (env === undefined) return '';
  return type === 'list of strings' ? `\`${env}\` (comma-separated)` : `\`${env}\``;
}

/** One row per key: the key, its default, the values it accepts, its environment variable, its doc line. */
export function configurationTable(): string {
  const rows = settingsOf(KEYS).map(([path, setting]) => [
    `\`${path}\``,
    defaultText(setting.spec.default),
    setting.spec.accepts,
    envText(setting),
    setting.spec.doc,
  ]);
  const { key, default: byDefault, accepts, doc } = ADVISORIES_DOC;
  rows.push([`\`${key}\``, byDefault, accepts, '', doc]);
  return [
    '| key | default | accepts | env | what it does |',
    '|---|---|---|---|---|',
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** `markdown` with the text between the table markers replaced by the table; throws when the markers are missing. */
export function withConfigurationTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start === -1 || end < start) throw new Error(`the markers are missing: ${TABLE_START} ... ${TABLE_END}`);
  return `${markdown.slice(0, start + TABLE_START.length)}\n${configurationTable()}\n${markdown.slice(end)}`;
}
