// PromQL checked with Prometheus' own grammar (@prometheus-io/lezer-promql, the parser of Prometheus' web UI).
import { parser } from '@prometheus-io/lezer-promql';

/** Where the grammar could not parse `expression` (error nodes), as `at <offset>`; empty when it parses. */
export function promqlErrors(expression: string): string[] {
  const errors: string[] = [];
  parser.parse(expression).iterate({
    enter: (node) => {
      if (node.type.isError)
        errors.push(`at ${node.from}: ${JSON.stringify(expression.slice(node.from, node.to + 5))}`);
    },
  });
  return errors;
}

/** The metric names `expression` selects (each vector selector's name), in order, each once. */
export function metricNames(expression: string): string[] {
  const names = new Set<string>();
  parser.parse(expression).iterate({
    enter: (node) => {
      if (node.type.name === 'Identifier' && node.node.parent?.type.name === 'VectorSelector')
        names.add(expression.slice(node.from, node.to));
    },
  });
  return [...names];
}
